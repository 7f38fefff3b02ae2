"""The critic reads the figures in the model's prose, not only the table and the cited metrics:
a figure no computed one backs (within rounding, for the metric its words name) is an error
naming it; the offline report, whose prose is all computed, passes as before."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from agent.market import SampleDataProvider
from agent.reasoning.schemas import ReportNarrative
from agent.research.critic import critique, prose_figures
from agent.research.figures import computed_figures, unbacked_figures
from agent.research.planning import deep_plan
from agent.research.report import compose_report, fmt
from agent.research.routing import route_query
from agent.research.steps import run_step
from agent.research.suitability import Profile
from agent.state import Draft

TODAY = date(2024, 1, 5)


def results() -> dict[str, Any]:
    market = SampleDataProvider()
    route = route_query("Analyze NVDA", market.available_tickers())
    return {s["id"]: dict(run_step(s, market)) for s in deep_plan(route)}


def metrics() -> dict[str, Any]:
    return compose_report(ticker="NVDA", mode="deep", results=results())["metrics"]


def model_draft(profile: Profile | None = None, **prose: Any) -> Draft:
    narrative = ReportNarrative(
        summary=prose.get("summary", "NVDA is in a strong uptrend."),
        analysis=prose.get("analysis", "Momentum and trend agree."),
        risk_factors=prose.get("risk_factors", ["Volatility is high."]),
        rating="Buy",
        confidence=0.8,
        rationale=prose.get("rationale", "Trend and momentum."),
        cited_metrics=[],
    )
    return compose_report(
        ticker="NVDA", mode="deep", results=results(), narrative=narrative, profile=profile
    )


def errors(draft: Draft) -> list[str]:
    found = critique(draft, today=TODAY)["findings"]
    return [f["message"] for f in found if f["severity"] == "error"]


def test_an_offline_draft_has_no_model_prose_and_passes_as_before() -> None:
    draft = compose_report(ticker="NVDA", mode="deep", results=results())
    assert "prose" not in draft
    assert prose_figures(draft) == []
    assert errors(draft) == []


@pytest.mark.parametrize("style", ["brief", "standard", "detailed"])
def test_offline_drafts_of_every_style_pass(style: str) -> None:
    profile = Profile.of({"report_style": {"value": style, "memory_id": "f1"}})
    draft = compose_report(ticker="NVDA", mode="deep", results=results(), profile=profile)
    assert errors(draft) == []


def test_prose_quoting_the_computed_figures_passes() -> None:
    m = metrics()
    summary = (
        f"NVDA closed at ${m['last_close']:,.2f} and returned {fmt(m['return_1y'], 'pct')} over "
        f"the last year, with volatility of {m['volatility_1y'] * 100:.1f}% and a beta of "
        f"{m['beta']:.2f}."
    )
    analysis = (
        f"RSI(14) at {m['rsi_14']:.0f} is below 70; the price fell "
        f"{abs(m['max_drawdown_1y']) * 100:.1f}% from its peak in 2023 and returned "
        f"{m['return_1y']} as a fraction. It ranks 1 of 7 by one-year return (step 2)."
    )
    draft = model_draft(summary=summary, analysis=analysis)
    assert draft["prose"][:2] == [summary, analysis]
    assert prose_figures(draft) == []
    assert errors(draft) == []


def test_a_made_up_growth_figure_is_named() -> None:
    draft = model_draft(summary="NVDA revenue grew 250% last year, so the stock is a buy.")
    [message] = errors(draft)
    assert "250%" in message and "revenue" in message
    assert "does not compute" in message
    assert critique(draft, today=TODAY)["verdict"] == "fail"


def test_a_valuation_multiple_is_named_whatever_its_value() -> None:
    draft = model_draft(rationale="At a P/E of 12 the shares look cheap.")
    [message] = errors(draft)
    assert "12" in message and "p/e" in message


def test_a_misremembered_metric_is_named_for_that_metric() -> None:
    m = metrics()
    wrong = abs(m["volatility_1y"]) * 100 + 9
    draft = model_draft(risk_factors=[f"Volatility of {wrong:.1f}% is high."])
    [message] = errors(draft)
    assert f"{wrong:.1f}%" in message and "volatility" in message
    assert "matches no computed volatility figure" in message


def test_a_figure_right_for_another_metric_is_still_wrong_for_the_one_named() -> None:
    m = metrics()
    # The one-year return stated as the volatility: a computed figure, but not this metric's.
    draft = model_draft(analysis=f"Volatility stands at {m['return_1y'] * 100:.2f}%.")
    [message] = errors(draft)
    assert "volatility" in message


def test_rounding_within_the_stated_precision_is_accepted_and_beyond_it_is_not() -> None:
    m = metrics()
    r = m["return_1y"] * 100
    fine = model_draft(summary=f"NVDA returned {round(r)}% over the year.")
    assert errors(fine) == []
    off = model_draft(summary=f"NVDA returned {round(r) + 2}% over the year.")
    assert len(errors(off)) == 1


def test_years_dates_windows_steps_thresholds_and_quotes_are_not_figures() -> None:
    text = (
        "Since 2024-01-02 (and all of 2023) the 50-day and 200-day averages over 12 months, "
        "step 3 of the plan, RSI above 70, the Q3 report, and the user's \"no more than 15% "
        'drawdown" are not figures; 3 risks remain.'
    )
    assert unbacked_figures([text], computed_figures(metrics(), {}, "")) == []


def test_peer_figures_from_the_report_tables_back_the_prose() -> None:
    draft = model_draft()
    peer = next(line for line in draft["markdown"].splitlines() if line.startswith("| AAPL |"))
    aapl_1y = peer.split("|")[3].strip()  # the peer table's Return 1Y cell, e.g. "+12.34%"
    backed = model_draft(analysis=f"AAPL returned {aapl_1y} over the same year.")
    assert errors(backed) == []


def test_the_users_limit_from_the_profile_fit_is_not_a_made_up_figure() -> None:
    profile = Profile.of({"max_drawdown_pct": {"value": 20, "memory_id": "f2"}})
    draft = model_draft(profile, rationale="This is too volatile for a 20% drawdown limit.")
    assert "a 20% drawdown limit" in draft["recommendation"]["profile_fit"]["statement"]
    assert errors(draft) == []


def test_prose_a_brief_style_cut_from_the_report_is_not_checked() -> None:
    profile = Profile.of({"report_style": {"value": "brief", "memory_id": "f1"}})
    draft = model_draft(profile, analysis="Revenue grew 250%.")
    assert "Revenue grew 250%." not in draft["markdown"]
    assert "Revenue grew 250%." not in draft["prose"]
    assert errors(draft) == []
