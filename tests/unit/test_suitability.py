"""The suitability rules: how a profile orders the plan, shortens or lengthens the report, judges
the recommendation's fit, excludes sectors and adds notes, each change citing its cause."""

from __future__ import annotations

from typing import Any

import pytest

from agent.market.sectors import screened, sector_of
from agent.research.constraints import included_sections, required_sections
from agent.research.planning import deep_plan
from agent.research.routing import Route
from agent.research.suitability import Profile, fit, profile_notes, shape_plan

NVDA = {"volatility_1y": 0.4837, "max_drawdown_1y": -0.1829}


def facts(**values: Any) -> Profile:
    return Profile.of({k: {"value": v, "memory_id": f"f-{k}"} for k, v in values.items()})


def kinds(profile: Profile, *tickers: str) -> list[str]:
    steps, _ = shape_plan(deep_plan(Route("deep", tickers or ("NVDA",), "")), profile)
    return [s["id"] for s in steps]


def test_the_plan_puts_risk_first_for_a_cautious_user_and_growth_first_for_a_bold_one() -> None:
    assert kinds(Profile()) == [f"{k}:NVDA" for k in ("returns", "risk", "trend", "beta", "peers")]
    for cautious in (
        facts(risk_tolerance="conservative"),
        facts(horizon_years=2),
        facts(max_drawdown_pct=15),
    ):
        assert kinds(cautious)[:2] == ["risk:NVDA", "beta:NVDA"]
    assert kinds(facts(horizon_years=25))[:3] == ["returns:NVDA", "trend:NVDA", "peers:NVDA"]
    # Cautious wins over a long horizon: the limit is what the user cannot bear.
    assert kinds(facts(horizon_years=25, max_drawdown_pct=10))[0] == "risk:NVDA"
    _, notes = shape_plan(deep_plan(Route("deep", ("NVDA",), "")), facts(horizon_years=2))
    assert notes == [
        "Risk first because a short horizon, the fact horizon_years=2 (fact f-horizon_years): "
        "risk, then beta, before returns and trend."
    ]


def test_a_brief_plan_drops_the_peer_step_unless_a_procedure_requires_the_table() -> None:
    assert "peers:NVDA" not in kinds(facts(report_style="brief"))
    procedure = {"procedure_id": "proc-1", "text": "Always include the peer table", "rule": {}}
    keeps = Profile.of({"report_style": "brief"}, [procedure])
    assert "peers:NVDA" in kinds(keeps)


@pytest.mark.parametrize(
    ("text", "standing", "sections"),
    [
        ("Always include the peer table", False, ["Peer comparison"]),
        ("From now on, show the risks", False, ["Risk factors"]),
        ("Include the peer table.", False, []),
        ("Include the peer table.", True, ["Peer comparison"]),
        ("Never include TSLA", True, []),
        ("Always mention the data date", False, []),
    ],
)
def test_included_sections(text: str, standing: bool, sections: list[str]) -> None:
    assert included_sections(text, standing=standing) == sections


def test_required_sections_read_the_rule_or_the_procedures_words() -> None:
    ruled = {
        "procedure_id": "p1",
        "text": "peers please",
        "rule": {"include_section": "peer comparison"},
    }
    worded = {"procedure_id": "p2", "text": "Show the risk factors", "rule": {}}
    assert required_sections([ruled, worded]) == {
        "Peer comparison": 'procedure p1 ("peers please")',
        "Risk factors": 'procedure p2 ("Show the risk factors")',
    }


def test_the_fit_turns_a_buy_into_a_hold_for_a_profile_it_breaches() -> None:
    tight = fit("NVDA", NVDA, "Buy", facts(horizon_years=2, max_drawdown_pct=20))
    assert tight is not None and not tight.fits and tight.rating == "Hold"
    assert tight.statement.startswith(
        "For a 2-year horizon and a 20% drawdown limit, NVDA's 48.37% volatility"
    )
    assert "the fact max_drawdown_pct=20 (fact f-max_drawdown_pct)" in tight.statement
    loose = fit("NVDA", NVDA, "Buy", facts(risk_tolerance="aggressive", horizon_years=25))
    assert loose is not None and loose.fits and loose.rating == "Buy"
    assert "Buy stands." in loose.statement
    assert fit("NVDA", NVDA, "Buy", facts(report_style="brief")) is None


def test_sectors_exclusions_and_notes() -> None:
    assert sector_of("nvda") is not None and sector_of("XYZ") is None
    assert screened("TSLA", ["crypto"]) == {
        "crypto": "holds bitcoin on its balance sheet (bought in 2021)"
    }
    assert screened("NVDA", ["crypto", "tobacco"]) == {}
    profile = facts(excluded_sectors=["crypto"], excluded_tickers=["META"])
    assert set(profile.exclusions(["TSLA", "META", "NVDA"])) == {"TSLA", "META"}
    notes = profile_notes("NVDA", facts(holdings=["AAPL", "MSFT"], employer="Nvidia Corporation"))
    assert notes[0].startswith("Concentration: your holdings (fact f-holdings) include AAPL, MSFT")
    assert notes[1].startswith("Conflict of interest: you work for the company that issues NVDA")
    assert all("Nvidia" not in n for n in notes)


def test_a_plan_without_a_peer_step_gets_one_when_a_procedure_requires_the_table() -> None:
    procedure = {"procedure_id": "proc-1", "text": "Always include the peer table", "rule": {}}
    plan = [s for s in deep_plan(Route("deep", ("NVDA",), "")) if s["kind"] != "peers"]
    steps, _ = shape_plan(plan, Profile.of({}, [procedure]))
    assert [s["id"] for s in steps][-1] == "peers:NVDA"
