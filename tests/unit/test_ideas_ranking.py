"""Ideas from the profile: which messages ask for them, and how the covered stocks are ranked,
each reason citing its fact, exclusions never named."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from agent.errors import NoTickerError
from agent.research.ideas import asked_for, data_age, named_exclusions, rank, render
from agent.research.routing import check_request, ideas_request
from agent.research.suitability import Profile

TICKERS = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
AS_OF = datetime.date(2023, 12, 29)
TODAY = datetime.date(2026, 12, 6)


def figures(vol: float, drawdown: float, ret: float) -> dict[str, Any]:
    return {
        "volatility_1y": vol,
        "max_drawdown_1y": drawdown,
        "return_1y": ret,
        "last_close": 100.0,
        "as_of": AS_OF,
    }


#: The bundled data's figures on 2023-12-29 (rounded).
MARKET = {
    "AAPL": figures(0.2039, -0.1505, 0.5275),
    "AMZN": figures(0.3299, -0.1964, 0.8570),
    "GOOGL": figures(0.3034, -0.1727, 0.6239),
    "META": figures(0.3988, -0.1297, 2.0614),
    "MSFT": figures(0.2513, -0.1317, 0.6034),
    "NVDA": figures(0.4837, -0.1829, 2.5282),
    "TSLA": figures(0.5440, -0.3272, 1.2046),
}


def facts(**values: Any) -> Profile:
    return Profile.of(
        {
            k: {"value": v, "memory_id": f"f-{k}", "episode_ids": [f"ep-{k}"]}
            for k, v in values.items()
        }
    )


RETIREE = facts(
    risk_tolerance="conservative",
    max_drawdown_pct=15,
    income_preference="dividends",
    excluded_tickers=["TSLA"],
    excluded_sectors=["crypto"],
)
YOUNG = facts(
    risk_tolerance="aggressive",
    horizon_years=30,
    goal="growth",
    sectors_of_interest=["semiconductors"],
    excluded_tickers=["META"],
)


@pytest.mark.parametrize(
    "query",
    [
        "what should I buy?",
        "anything for a dividend investor?",
        "any ideas for me?",
        "where should I put money now?",
        "suggest a few stocks",
        "Which stocks should I buy?",
        "What do you recommend?",
    ],
)
def test_a_request_for_ideas_names_no_ticker_and_is_valid_offline(query: str) -> None:
    assert ideas_request(query, TICKERS)
    assert check_request(query, TICKERS) is None  # valid, and no research route


@pytest.mark.parametrize(
    "query",
    [
        "Analyze NVDA",
        "should I buy NVDA?",
        "what should I buy, Nvidia or Apple?",
        "what did you recommend last time?",
        "what do you know about me?",
        "analyze the thing",
        "forget any ideas for me",
    ],
)
def test_a_named_ticker_a_memory_question_or_anything_else_is_no_request_for_ideas(
    query: str,
) -> None:
    assert not ideas_request(query, TICKERS)


def test_a_request_that_is_neither_still_has_no_ticker() -> None:
    with pytest.raises(NoTickerError, match="No ticker found in 'analyze the thing'"):
        check_request("analyze the thing", TICKERS)


def test_opposite_profiles_get_different_shortlists_each_reason_citing_its_fact() -> None:
    careful = rank(RETIREE, MARKET, {"TSLA": ("ep-excluded_tickers",)})
    bold = rank(YOUNG, MARKET, {"META": ("ep-excluded_tickers",)})

    assert [c.ticker for c in careful.shortlist] == ["MSFT"]  # the only one within every limit
    assert [c.ticker for c in bold.shortlist] == ["NVDA", "TSLA", "AMZN"]
    msft = careful.shortlist[0]
    assert msft.fits and {r.cites for r in msft.reasons} == {
        ("ep-max_drawdown_pct",),
        ("ep-risk_tolerance",),
        ("ep-income_preference",),
    }
    said = [r.said() for r in msft.reasons]
    assert (
        "its deepest fall over the last year, -13.17%, stayed within your 15% drawdown limit "
        "[ep-max_drawdown_pct]" in said
    )
    assert any("regular quarterly dividend" in s for s in said)
    nvda = bold.shortlist[0]
    assert any(
        "a sector you follow" in r.text and r.cites == ("ep-sectors_of_interest",)
        for r in nvda.reasons
    )
    # The others are considered with the limit they break, cited.
    aapl = next(c for c in careful.others if c.ticker == "AAPL")
    assert aapl.breaches[0].said() == (
        "its deepest fall over the last year, -15.05%, is deeper than your 15% drawdown limit "
        "[ep-max_drawdown_pct]"
    )
    for ideas in (careful, bold):
        assert all(r.cites for c in ideas.ranked for r in c.reasons)


def test_exclusions_are_counted_never_named() -> None:
    excluded = {"TSLA": ("ep-excluded_tickers",)}
    ideas = rank(RETIREE, MARKET, excluded)
    assert "TSLA" not in [c.ticker for c in ideas.ranked]
    assert ideas.excluded == 1 and ideas.excluded_cites == ("ep-excluded_tickers",)
    assert ideas.forbidden == {"TSLA", "tesla", "crypto"}
    text = render(ideas, TODAY, len(MARKET))
    assert named_exclusions(text, ideas.forbidden) == []
    assert "Left out: 1 stock your exclusions rule out [ep-excluded_tickers]." in text
    # The check finds them in any case, as a company name or with a dollar sign.
    assert named_exclusions("Buy $tsla", ideas.forbidden) == ["TSLA"]
    assert named_exclusions("Tesla's crypto bet", ideas.forbidden) == ["crypto", "tesla"]
    assert named_exclusions("cryptography and TSLAX", ideas.forbidden) == []


def test_holdings_are_said_and_ranked_down_for_diversification() -> None:
    held = facts(risk_tolerance="aggressive", holdings=["NVDA"])
    ideas = rank(held, MARKET, {})
    nvda = next(c for c in ideas.ranked if c.ticker == "NVDA")
    assert any(
        r.text.startswith("you already hold it") and r.cites == ("ep-holdings",)
        for r in nvda.reasons
    )
    alone = next(
        c for c in rank(facts(risk_tolerance="aggressive"), MARKET, {}).ranked if c.ticker == "NVDA"
    )
    assert nvda.score < alone.score
    msft = next(c for c in ideas.ranked if c.ticker == "MSFT")
    assert any("you already hold NVDA in Information Technology" in r.text for r in msft.reasons)


def test_without_a_profile_it_ranks_on_data_alone_and_says_how_to_tell_it() -> None:
    ideas = rank(Profile(), MARKET, {})
    assert not ideas.profiled
    assert [c.ticker for c in ideas.shortlist] == ["NVDA", "META", "AMZN"]  # return per risk
    text = render(ideas, TODAY, len(MARKET))
    assert "on the price data alone" in text
    assert '"my drawdown limit is 15%"' in text
    assert "Data: daily prices up to 2023-12-29" in text


def test_the_data_age_names_the_last_price_date_and_its_age() -> None:
    assert data_age([AS_OF], TODAY) == (
        "Data: daily prices up to 2023-12-29, the last price date of the data used: "
        "1,073 days before today (2026-12-06)."
    )
    assert "between 2023-12-28 and 2023-12-29" in data_age(
        [datetime.date(2023, 12, 28), AS_OF], TODAY
    )


def test_what_the_request_asks_for_counts_and_cites_the_request() -> None:
    asked = asked_for("anything for a dividend investor?", "ep-request")
    assert asked == {
        "income_preference": {
            "value": "dividends",
            "source": "request",
            "episode_ids": ["ep-request"],
        }
    }
    ideas = rank(Profile.of(asked), MARKET, {})
    assert [c.ticker for c in ideas.shortlist] == ["AAPL", "MSFT", "META"]
    assert ideas.shortlist[0].reasons[0].cites == ("ep-request",)
    assert "regular quarterly dividend" in ideas.shortlist[0].reasons[0].text
    assert set(asked_for("any semiconductor or software picks for growth?")) == {
        "goal",
        "sectors_of_interest",
    }
    assert asked_for("any semiconductor picks?")["sectors_of_interest"]["value"] == [
        "semiconductors"
    ]
    assert asked_for("what should I buy?") == {}


def test_a_reason_that_would_name_an_exclusion_is_dropped() -> None:
    held = facts(risk_tolerance="aggressive", holdings=["TSLA", "NVDA"], excluded_tickers=["TSLA"])
    ideas = rank(held, MARKET, {"TSLA": ("ep-excluded_tickers",)})
    amzn = next(c for c in ideas.ranked if c.ticker == "AMZN")  # TSLA's sector
    assert not [r for r in amzn.reasons if "hold" in r.text]
    msft = next(c for c in ideas.ranked if c.ticker == "MSFT")  # NVDA's sector
    assert any("you already hold NVDA" in r.text for r in msft.reasons)
    assert named_exclusions(render(ideas, TODAY, len(MARKET)), ideas.forbidden) == []
