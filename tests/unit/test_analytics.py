"""Every analytics metric, recomputed independently for every bundled ticker.

The reference implementation lives in ``tests/support/reference.py``: it reads the CSVs with the
``csv`` module and uses only plain Python, importing neither numpy nor any helper from
``agent.research.analytics``, so a shared bug cannot make both sides agree.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from agent.market import PriceHistory, SampleDataProvider
from agent.research import analytics
from tests.support.reference import (
    TICKERS,
    load,
    ref_beta,
    ref_drawdown,
    ref_last_cross,
    ref_rsi,
    ref_sma,
    ref_trailing,
    ref_volatility,
    ref_ytd,
)

REL = 1e-9


@pytest.fixture(scope="module")
def provider() -> SampleDataProvider:
    return SampleDataProvider()


@pytest.fixture(scope="module")
def basket(provider: SampleDataProvider) -> list[PriceHistory]:
    return [provider.history(t) for t in TICKERS]


@pytest.mark.parametrize("ticker", TICKERS)
def test_returns_metrics(provider: SampleDataProvider, ticker: str) -> None:
    dates, close = load(ticker)
    got = analytics.returns_metrics(provider.history(ticker))
    assert set(got) == {"return_1m", "return_3m", "return_1y", "return_ytd"}
    assert got["return_1m"] == pytest.approx(ref_trailing(close, 21), rel=REL)
    assert got["return_3m"] == pytest.approx(ref_trailing(close, 63), rel=REL)
    assert got["return_1y"] == pytest.approx(ref_trailing(close, 252), rel=REL)
    assert got["return_ytd"] == pytest.approx(ref_ytd(dates, close), rel=REL)


@pytest.mark.parametrize("ticker", TICKERS)
def test_risk_metrics(provider: SampleDataProvider, ticker: str) -> None:
    dates, close = load(ticker)
    got = analytics.risk_metrics(provider.history(ticker))
    depth, peak, trough = ref_drawdown(dates, close)
    assert got == {
        "volatility_1y": pytest.approx(ref_volatility(close), rel=REL),
        "max_drawdown_1y": pytest.approx(depth, rel=REL),
        "drawdown_peak_date": peak,
        "drawdown_trough_date": trough,
    }
    assert depth < 0


@pytest.mark.parametrize("ticker", TICKERS)
def test_trend_metrics(provider: SampleDataProvider, ticker: str) -> None:
    dates, close = load(ticker)
    got = analytics.trend_metrics(provider.history(ticker))
    sma_50, sma_200 = ref_sma(close, 50), ref_sma(close, 200)
    assert got == {
        "last_close": pytest.approx(close[-1], rel=REL),
        "sma_50": pytest.approx(sma_50, rel=REL),
        "sma_200": pytest.approx(sma_200, rel=REL),
        "crossover": "bullish" if sma_50 > sma_200 else "bearish",
        "last_cross_date": ref_last_cross(dates, close),
        "price_vs_sma200": pytest.approx(close[-1] / sma_200 - 1, rel=REL),
        "rsi_14": pytest.approx(ref_rsi(close), rel=REL),
    }
    assert got["last_cross_date"] is not None


@pytest.mark.parametrize("ticker", TICKERS)
def test_beta_metrics(
    provider: SampleDataProvider, basket: list[PriceHistory], ticker: str
) -> None:
    got = analytics.beta_metrics(provider.history(ticker), basket)
    beta, correlation = ref_beta(ticker, TICKERS)
    assert got == {
        "beta": pytest.approx(beta, rel=REL),
        "basket": list(TICKERS),
        "correlation": pytest.approx(correlation, rel=REL),
    }
    assert analytics.beta(provider.history(ticker), basket) == pytest.approx(beta, rel=REL)


def test_beta_against_a_basket_that_excludes_the_ticker(
    provider: SampleDataProvider,
) -> None:
    peers = ("AAPL", "MSFT", "GOOGL")
    got = analytics.beta_metrics(provider.history("NVDA"), [provider.history(t) for t in peers])
    beta, correlation = ref_beta("NVDA", peers)
    assert got["beta"] == pytest.approx(beta, rel=REL)
    assert got["correlation"] == pytest.approx(correlation, rel=REL)


def test_peer_table(basket: list[PriceHistory]) -> None:
    rows = analytics.peer_table(basket)
    expected: list[tuple[float, dict[str, object]]] = []
    for ticker in TICKERS:
        dates, close = load(ticker)
        expected.append(
            (
                ref_trailing(close, 252),
                {
                    "ticker": ticker,
                    "last_close": pytest.approx(close[-1], rel=REL),
                    "return_1y": pytest.approx(ref_trailing(close, 252), rel=REL),
                    "return_ytd": pytest.approx(ref_ytd(dates, close), rel=REL),
                    "volatility_1y": pytest.approx(ref_volatility(close), rel=REL),
                    "max_drawdown_1y": pytest.approx(ref_drawdown(dates, close)[0], rel=REL),
                    "rsi_14": pytest.approx(ref_rsi(close), rel=REL),
                    "crossover": "bullish"
                    if ref_sma(close, 50) > ref_sma(close, 200)
                    else "bearish",
                    "as_of": dates[-1].isoformat(),
                },
            )
        )
    expected.sort(key=lambda pair: -pair[0])
    assert rows == [row for _, row in expected]


def test_outputs_are_plain_json_values(basket: list[PriceHistory]) -> None:
    h = basket[0]
    outputs = [
        analytics.returns_metrics(h),
        analytics.risk_metrics(h),
        analytics.trend_metrics(h),
        analytics.beta_metrics(h, basket),
        analytics.peer_table(basket),
    ]
    json.dumps(outputs, allow_nan=False)

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        else:
            assert value is None or type(value) in (float, str), (value, type(value))

    walk(outputs)


def test_short_history_gives_none_rather_than_a_guess(tmp_path: Path) -> None:
    days = [datetime.date(2023, 1, 2) + datetime.timedelta(days=i) for i in range(30)]
    close = [100.0 + i for i in range(30)]
    lines = [f"{d.isoformat()},{c},{c},{c},{c},1000" for d, c in zip(days, close, strict=True)]
    (tmp_path / "TINY.csv").write_text(
        "Date,Open,High,Low,Close,Volume\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    h = SampleDataProvider(tmp_path).history("TINY")
    assert analytics.returns_metrics(h) == {
        "return_1m": pytest.approx(close[-1] / close[-22] - 1, rel=REL),
        "return_3m": None,
        "return_1y": None,
        "return_ytd": None,
    }
    assert analytics.risk_metrics(h)["volatility_1y"] is None
    trend = analytics.trend_metrics(h)
    assert trend["sma_200"] is None and trend["crossover"] is None
    assert trend["rsi_14"] == 100.0  # only gains: average loss is zero
    assert analytics.beta_metrics(h, [h])["beta"] is None


def test_ytd_uses_the_last_close_of_the_previous_year() -> None:
    dates = [datetime.date(2022, 12, 29), datetime.date(2022, 12, 30), datetime.date(2023, 1, 3)]
    assert analytics.ytd_return(dates, [50.0, 80.0, 100.0]) == pytest.approx(0.25, rel=REL)
    assert analytics.ytd_return(dates[2:], [100.0]) is None


def test_max_drawdown_without_decline_is_zero() -> None:
    dates = [datetime.date(2023, 1, 2) + datetime.timedelta(days=i) for i in range(5)]
    result = analytics.max_drawdown(dates, [1.0, 2.0, 3.0, 4.0, 5.0], window=4)
    assert result == (0.0, "2023-01-02", "2023-01-02")
