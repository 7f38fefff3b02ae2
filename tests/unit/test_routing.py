"""The router decides from the query alone, and refuses bad queries before anything runs."""

from __future__ import annotations

import pytest

from agent.errors import InvalidQueryError, UnknownTickerError
from agent.research.planning import deep_plan, snapshot_plan
from agent.research.routing import route_query

AVAILABLE = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")


@pytest.mark.parametrize(
    ("query", "mode", "tickers"),
    [
        ("Analyze NVDA", "deep", ("NVDA",)),
        ("analyse nvda please", "deep", ("NVDA",)),
        ("Quick snapshot of TSLA", "flash", ("TSLA",)),
        ("What's the price of $AAPL?", "flash", ("AAPL",)),
        ("How is Nvidia doing vs Microsoft", "deep", ("NVDA", "MSFT")),
        ("Compare META and GOOGL", "deep", ("META", "GOOGL")),
        ("GIVE ME A QUICK LOOK AT AMZN", "flash", ("AMZN",)),
        ("Is NVDA's RSI overbought YTD?", "deep", ("NVDA",)),
    ],
)
def test_routes(query: str, mode: str, tickers: tuple[str, ...]) -> None:
    route = route_query(query, AVAILABLE)
    assert (route.mode, route.tickers) == (mode, tickers)
    assert route.reason


def test_mode_can_be_forced() -> None:
    assert route_query("Analyze NVDA", AVAILABLE, "flash").mode == "flash"
    assert route_query("quick look at NVDA", AVAILABLE, "deep").mode == "deep"


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_empty_query_is_refused(query: str) -> None:
    with pytest.raises(InvalidQueryError, match="empty"):
        route_query(query, AVAILABLE)


def test_unknown_ticker_lists_available() -> None:
    with pytest.raises(UnknownTickerError) as info:
        route_query("Analyze XYZQ", AVAILABLE)
    assert info.value.tickers == ["XYZQ"]
    assert "AAPL, AMZN, GOOGL, META, MSFT, NVDA, TSLA" in str(info.value)


def test_unknown_ticker_next_to_a_known_one_is_still_an_error() -> None:
    with pytest.raises(UnknownTickerError, match="AMD"):
        route_query("Compare NVDA with AMD", AVAILABLE)


def test_no_ticker_at_all() -> None:
    with pytest.raises(InvalidQueryError, match="No ticker"):
        route_query("what should I buy?", AVAILABLE)


def test_plans() -> None:
    route = route_query("Compare NVDA and TSLA", AVAILABLE)
    assert [s["id"] for s in deep_plan(route)] == [
        "returns:NVDA",
        "risk:NVDA",
        "trend:NVDA",
        "beta:NVDA",
        "peers:NVDA",
        "snapshot:TSLA",
    ]
    assert [s["id"] for s in snapshot_plan(route)] == ["snapshot:NVDA"]


@pytest.mark.parametrize(
    ("query", "topic"),
    [
        ("Forget that I like dividend stocks.", "I like dividend stocks"),
        ("forget about TSLA", "TSLA"),
        ("Please forget what I told you about options trading!", "options trading"),
        ("Forget everything about my horizon", "my horizon"),
        ("forget it", None),  # nothing named
        ("I never forget NVDA", None),  # not a request to forget
        ("Analyze NVDA", None),
    ],
)
def test_a_message_that_starts_with_forget_names_what_to_forget(
    query: str, topic: str | None
) -> None:
    from agent.research.routing import check_request, forget_topic

    assert forget_topic(query) == topic
    if topic is not None:  # valid without a ticker, and no research
        assert check_request(query, AVAILABLE) is None
