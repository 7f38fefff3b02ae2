"""An independent reference for every figure the analyst reports, and a reader for its tables.

The computations read the bundled CSVs with the ``csv`` module and use only plain Python
(loops, ``statistics``, ``math``); they import neither numpy nor anything from ``agent``, so a
shared bug cannot make both sides agree. They follow the definitions in the
``agent.research.analytics`` module docstring and the recommendation rules in ``agent.research.report.recommend``.

The formatting helpers spell out, again independently, how the report renders each kind of
figure, so a test can compare the Markdown a reader sees with the reference value.
"""

from __future__ import annotations

import csv
import datetime
import math
import re
import statistics
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "agent" / "market" / "data"
TICKERS = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
#: The last trading day in every bundled CSV.
AS_OF = "2023-12-29"


# -- the series ---------------------------------------------------------------------------


@cache
def _read(ticker: str) -> tuple[tuple[datetime.date, ...], tuple[float, ...]]:
    with (DATA_DIR / f"{ticker}.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return (
        tuple(datetime.date.fromisoformat(r["Date"]) for r in rows),
        tuple(float(r["Close"]) for r in rows),
    )


def load(ticker: str) -> tuple[list[datetime.date], list[float]]:
    """(dates, closes) of one bundled CSV, ascending."""
    dates, close = _read(ticker)
    return list(dates), list(close)


# -- metrics ------------------------------------------------------------------------------


def ref_returns(close: list[float]) -> list[float]:
    return [close[i] / close[i - 1] - 1 for i in range(1, len(close))]


def ref_trailing(close: list[float], n: int) -> float:
    return close[-1] / close[-1 - n] - 1


def ref_ytd(dates: list[datetime.date], close: list[float]) -> float | None:
    prior = [c for d, c in zip(dates, close, strict=True) if d.year < dates[-1].year]
    return close[-1] / prior[-1] - 1 if prior else None


def ref_volatility(close: list[float], window: int = 252) -> float:
    return statistics.stdev(ref_returns(close[-(window + 1) :])) * math.sqrt(252)


def ref_drawdown(
    dates: list[datetime.date], close: list[float], window: int = 252
) -> tuple[float, str, str]:
    start = len(close) - (window + 1)
    best = (0.0, start, start)
    peak_index = start
    for i in range(start, len(close)):
        if close[i] > close[peak_index]:
            peak_index = i
        depth = close[i] / close[peak_index] - 1
        if depth < best[0]:
            best = (depth, peak_index, i)
    depth, peak, trough = best
    return depth, dates[peak].isoformat(), dates[trough].isoformat()


def ref_sma(close: list[float], n: int) -> float:
    return sum(close[-n:]) / n


def ref_last_cross(dates: list[datetime.date], close: list[float]) -> str | None:
    def sign(x: float) -> int:
        return (x > 0) - (x < 0)

    previous: int | None = None
    last: str | None = None
    for t in range(199, len(close)):
        gap = sum(close[t - 49 : t + 1]) / 50 - sum(close[t - 199 : t + 1]) / 200
        s = sign(gap)
        if previous is not None and s != previous:
            last = dates[t].isoformat()
        previous = s
    return last


def ref_rsi(close: list[float], period: int = 14) -> float:
    gains, losses = [], []
    for i in range(1, len(close)):
        change = close[i] - close[i - 1]
        gains.append(change if change > 0 else 0.0)
        losses.append(-change if change < 0 else 0.0)
    avg_gain = sum(gains[:period]) / period
    avg_loss = sum(losses[:period]) / period
    for i in range(period, len(gains)):
        avg_gain = (avg_gain * (period - 1) + gains[i]) / period
        avg_loss = (avg_loss * (period - 1) + losses[i]) / period
    if avg_loss == 0:
        return 100.0
    return 100 - 100 / (1 + avg_gain / avg_loss)


def ref_beta(ticker: str, basket: tuple[str, ...], window: int = 252) -> tuple[float, float]:
    series = {t: dict(zip(*load(t), strict=True)) for t in {ticker, *basket}}
    common = set(series[ticker])
    for t in basket:
        common &= set(series[t])
    days = sorted(common)

    def aligned_returns(t: str) -> list[float]:
        return ref_returns([series[t][d] for d in days])

    r = aligned_returns(ticker)
    members = [aligned_returns(t) for t in basket]
    rb = [sum(m[i] for m in members) / len(members) for i in range(len(r))]
    r, rb = r[-window:], rb[-window:]
    beta = statistics.covariance(r, rb) / statistics.variance(rb)
    return beta, statistics.correlation(r, rb)


def ref_peer_order() -> list[str]:
    """Every bundled ticker, best one-year return first."""
    return sorted(TICKERS, key=lambda t: -ref_trailing(load(t)[1], 252))


def ref_recommendation(ticker: str) -> tuple[str, float, str]:
    """(rating, confidence, confidence label) by the rules in ``agent.research.report.recommend``."""
    _, close = load(ticker)
    r3, r1y, rsi = ref_trailing(close, 63), ref_trailing(close, 252), ref_rsi(close)
    score = 1 if ref_sma(close, 50) > ref_sma(close, 200) else -1
    score += 1 if r3 > 0 and r1y > 0 else -1 if r3 < 0 and r1y < 0 else 0
    score += -1 if rsi > 70 else 1 if rsi < 30 else 0
    order = ref_peer_order()
    position = order.index(ticker) / (len(order) - 1)
    score += 1 if position <= 1 / 3 else -1 if position >= 2 / 3 else 0
    rating = "Buy" if score >= 2 else "Sell" if score <= -2 else "Hold"
    confidence = 0.5 + 0.1 * abs(score) - (0.1 if ref_volatility(close) > 0.5 else 0.0)
    confidence = round(min(max(confidence, 0.3), 0.9), 2)
    label = "high" if confidence >= 0.75 else "medium" if confidence >= 0.6 else "low"
    return rating, confidence, label


# -- how the report renders figures -------------------------------------------------------


def pct(value: float) -> str:
    """A signed percentage: 0.12345 -> '+12.35%'."""
    return f"{value * 100:+.2f}%"


def unsigned_pct(value: float) -> str:
    """A percentage without sign, as the peer table shows volatility: '48.37%'."""
    return f"{abs(value) * 100:.2f}%"


def price(value: float) -> str:
    return f"{value:,.2f}"


def ref_key_metrics(ticker: str) -> dict[str, str]:
    """The rows of the report's key-metrics table (label -> rendered value), recomputed."""
    dates, close = load(ticker)
    sma_50, sma_200 = ref_sma(close, 50), ref_sma(close, 200)
    ytd = ref_ytd(dates, close)
    assert ytd is not None
    beta, _ = ref_beta(ticker, tuple(t for t in TICKERS if t != ticker))
    return {
        "Last close": price(close[-1]),
        "Return 1M": pct(ref_trailing(close, 21)),
        "Return 3M": pct(ref_trailing(close, 63)),
        "Return 1Y": pct(ref_trailing(close, 252)),
        "Return YTD": pct(ytd),
        "Volatility (1Y, annualised)": unsigned_pct(ref_volatility(close)),
        "Max drawdown (1Y)": pct(ref_drawdown(dates, close)[0]),
        "50-day moving average": price(sma_50),
        "200-day moving average": price(sma_200),
        "Moving-average crossover": "bullish" if sma_50 > sma_200 else "bearish",
        "RSI (14)": f"{ref_rsi(close):.1f}",
        "Beta vs equal-weighted basket": f"{beta:.2f}",
    }


def ref_peer_rows(highlight: str) -> list[list[str]]:
    """The rows of the report's peer table, best 1Y return first; ``highlight`` in bold."""
    rows = []
    for ticker in ref_peer_order():
        dates, close = load(ticker)
        ytd = ref_ytd(dates, close)
        assert ytd is not None
        rows.append(
            [
                f"**{ticker}**" if ticker == highlight else ticker,
                price(close[-1]),
                pct(ref_trailing(close, 252)),
                pct(ytd),
                unsigned_pct(ref_volatility(close)),
                pct(ref_drawdown(dates, close)[0]),
                f"{ref_rsi(close):.1f}",
                "bullish" if ref_sma(close, 50) > ref_sma(close, 200) else "bearish",
            ]
        )
    return rows


# -- reading the Markdown -----------------------------------------------------------------


def section(markdown: str, heading: str) -> str:
    """The text under ``## heading`` up to the next ``## `` heading (empty if absent)."""
    match = re.search(
        rf"^## {re.escape(heading)}[ \t]*\n(.*?)(?=^## |\Z)", markdown, re.MULTILINE | re.DOTALL
    )
    return match.group(1) if match else ""


def table_rows(text: str) -> list[list[str]]:
    """Cells of every Markdown table row in ``text``, without the header and rule rows."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.strip().startswith("|")
    ]
    return [r for r in rows[1:] if not all(set(c) <= set("-: ") for c in r)]
