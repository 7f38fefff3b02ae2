"""Price analytics: pure functions over numpy arrays and ``PriceHistory``.

Every function is deterministic and side-effect free. Numbers come back as plain Python
``float`` (JSON-serialisable) and dates as ISO ``YYYY-MM-DD`` strings. A metric whose window
needs more data than the history has is ``None`` rather than a guess.

Definitions (``c`` is the close series, ``c[-1]`` the latest close; a daily simple return is
``r[t] = c[t] / c[t-1] - 1``):

- ``TRADING_DAYS = 252`` trading days per year.
- Trailing return over ``n`` days: ``c[-1] / c[-1-n] - 1``; 1M, 3M, 1Y use n = 21, 63, 252.
- Year-to-date return: ``c[-1] / p - 1`` where ``p`` is the last close dated before 1 January
  of the year of the latest date; ``None`` if there is no such close.
- Annualised volatility: sample standard deviation (ddof=1) of the last ``window`` daily
  simple returns, times ``sqrt(252)``.
- Maximum drawdown: over the last ``window + 1`` closes, ``min(c / running_max(c) - 1)``
  (0 or negative). The trough is the first day attaining that minimum; the peak is the first
  day, at or before the trough, whose close equals the running maximum in force at the trough.
  With no decline both are the first day of the window.
- Simple moving average ``SMA_n``: mean of the last ``n`` closes.
- Crossover: ``"bullish"`` if SMA50 > SMA200 else ``"bearish"``. The last cross date is the
  most recent day ``t`` (among days where both rolling SMAs exist) on which
  ``sign(SMA50[t] - SMA200[t])`` differs from ``sign(SMA50[t-1] - SMA200[t-1])``, with
  sign in {-1, 0, +1}; ``None`` if that never happens.
- RSI (Wilder, period 14) over the whole series: ``d = diff(c)``; gains ``max(d, 0)``, losses
  ``max(-d, 0)``; the first average gain/loss is the simple mean of the first 14 gains/losses;
  each later delta updates ``avg = (avg * 13 + current) / 14``; ``RSI = 100 - 100 / (1 +
  avg_gain / avg_loss)``, or 100 when ``avg_loss == 0``.
- Beta against a basket: align on the dates common to the ticker and every basket member;
  compute daily simple returns of each aligned series; the basket return is the equal-weighted
  mean of the members' returns; over the last ``window`` returns,
  ``beta = cov(r, rb, ddof=1) / var(rb, ddof=1)`` and ``correlation`` is Pearson's r.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from agent.market.base import PriceHistory

TRADING_DAYS = 252
RETURN_WINDOWS = {"return_1m": 21, "return_3m": 63, "return_1y": 252}

FloatArray = npt.NDArray[np.float64]


class Drawdown(NamedTuple):
    """The deepest peak-to-trough decline in a window, as a fraction (0 or negative)."""

    depth: float
    peak_date: str
    trough_date: str


def _closes(close: npt.ArrayLike) -> FloatArray:
    return np.asarray(close, dtype=np.float64)


def daily_returns(close: npt.ArrayLike) -> FloatArray:
    """Daily simple returns ``c[t] / c[t-1] - 1`` (one shorter than ``close``)."""
    c = _closes(close)
    return c[1:] / c[:-1] - 1.0


def trailing_return(close: npt.ArrayLike, n: int) -> float | None:
    """``close[-1] / close[-1-n] - 1``; ``None`` if there are not ``n + 1`` closes."""
    if n < 1:
        raise ValueError(f"trailing_return needs n >= 1 trading days, got {n}.")
    c = _closes(close)
    if len(c) < n + 1:
        return None
    return float(c[-1] / c[-1 - n] - 1.0)


def ytd_return(dates: Sequence[datetime.date], close: npt.ArrayLike) -> float | None:
    """``close[-1]`` over the last close before 1 January of the latest year, minus 1."""
    c = _closes(close)
    if not dates:
        return None
    year_start = datetime.date(dates[-1].year, 1, 1)
    for i in range(len(dates) - 1, -1, -1):
        if dates[i] < year_start:
            return float(c[-1] / c[i] - 1.0)
    return None


def returns_metrics(h: PriceHistory) -> dict[str, float | None]:
    """Keys: return_1m, return_3m, return_1y, return_ytd."""
    metrics: dict[str, float | None] = {
        key: trailing_return(h.close, n) for key, n in RETURN_WINDOWS.items()
    }
    metrics["return_ytd"] = ytd_return(h.dates, h.close)
    return metrics


def annualised_volatility(close: npt.ArrayLike, window: int = TRADING_DAYS) -> float | None:
    """Sample std (ddof=1) of the last ``window`` daily returns times sqrt(252)."""
    if window < 2:
        raise ValueError(f"annualised_volatility needs window >= 2 returns, got {window}.")
    c = _closes(close)
    if len(c) < window + 1:
        return None
    r = daily_returns(c[-(window + 1) :])
    return float(np.std(r, ddof=1) * math.sqrt(TRADING_DAYS))


def max_drawdown(
    dates: Sequence[datetime.date], close: npt.ArrayLike, window: int = TRADING_DAYS
) -> Drawdown | None:
    """Deepest decline over the last ``window + 1`` closes; ``None`` if fewer closes exist."""
    if window < 1:
        raise ValueError(f"max_drawdown needs window >= 1 trading day, got {window}.")
    c = _closes(close)
    if len(dates) != len(c):
        raise ValueError(
            f"max_drawdown needs one date per close, got {len(dates)} dates and {len(c)} "
            "closes. Pass history.dates and history.close from the same PriceHistory."
        )
    if len(c) < window + 1:
        return None
    offset = len(c) - (window + 1)
    tail = c[offset:]
    running_max = np.maximum.accumulate(tail)
    drawdowns = tail / running_max - 1.0
    trough = int(np.argmin(drawdowns))
    peak = int(np.argmax(tail[: trough + 1] == running_max[trough]))
    return Drawdown(
        depth=float(drawdowns[trough]),
        peak_date=dates[offset + peak].isoformat(),
        trough_date=dates[offset + trough].isoformat(),
    )


def risk_metrics(h: PriceHistory) -> dict[str, float | str | None]:
    """Keys: volatility_1y, max_drawdown_1y, drawdown_peak_date, drawdown_trough_date."""
    drawdown = max_drawdown(h.dates, h.close)
    return {
        "volatility_1y": annualised_volatility(h.close),
        "max_drawdown_1y": drawdown.depth if drawdown else None,
        "drawdown_peak_date": drawdown.peak_date if drawdown else None,
        "drawdown_trough_date": drawdown.trough_date if drawdown else None,
    }


def sma(close: npt.ArrayLike, n: int) -> float | None:
    """Mean of the last ``n`` closes; ``None`` if there are fewer than ``n``."""
    if n < 1:
        raise ValueError(f"sma needs n >= 1 closes, got {n}.")
    c = _closes(close)
    if len(c) < n:
        return None
    return float(np.mean(c[-n:]))


def crossover(sma_50: float | None, sma_200: float | None) -> str | None:
    """``"bullish"`` if SMA50 > SMA200, else ``"bearish"``; ``None`` if either is missing."""
    if sma_50 is None or sma_200 is None:
        return None
    return "bullish" if sma_50 > sma_200 else "bearish"


def rolling_sma(close: npt.ArrayLike, n: int) -> FloatArray:
    """SMA_n for every day, NaN for the first ``n - 1`` days (each value is an exact mean)."""
    c = _closes(close)
    out = np.full(len(c), np.nan)
    if len(c) >= n:
        # A mean per window, not a running cumsum: cumsum drift could flip the sign of a
        # near-zero SMA gap and move the reported cross date.
        out[n - 1 :] = np.lib.stride_tricks.sliding_window_view(c, n).mean(axis=1)
    return out


def last_cross_date(
    dates: Sequence[datetime.date], close: npt.ArrayLike, fast: int = 50, slow: int = 200
) -> str | None:
    """Most recent day the sign of SMA_fast - SMA_slow changed; ``None`` if it never did."""
    gap = rolling_sma(close, fast) - rolling_sma(close, slow)
    start = max(fast, slow) - 1
    signs = np.sign(gap[start:])
    changes = np.flatnonzero(signs[1:] != signs[:-1])
    if changes.size == 0:
        return None
    return dates[start + int(changes[-1]) + 1].isoformat()


def rsi(close: npt.ArrayLike, period: int = 14) -> float | None:
    """Wilder's RSI over the whole series; ``None`` with fewer than ``period + 1`` closes."""
    if period < 1:
        raise ValueError(f"rsi needs period >= 1, got {period}.")
    c = _closes(close)
    if len(c) < period + 1:
        return None
    deltas = np.diff(c)
    gains = np.maximum(deltas, 0.0).tolist()
    losses = np.maximum(-deltas, 0.0).tolist()
    avg_gain = sum(gains[:period]) / period
    avg_loss = sum(losses[:period]) / period
    # Wilder smoothing is a recursion; a plain loop over Python floats is exact and fast
    # enough for decades of daily data.
    for gain, loss in zip(gains[period:], losses[period:], strict=True):
        avg_gain = (avg_gain * (period - 1) + gain) / period
        avg_loss = (avg_loss * (period - 1) + loss) / period
    if avg_loss == 0:
        return 100.0
    return float(100.0 - 100.0 / (1.0 + avg_gain / avg_loss))


def trend_metrics(h: PriceHistory) -> dict[str, float | str | None]:
    """Keys: last_close, sma_50, sma_200, crossover, last_cross_date, price_vs_sma200, rsi_14."""
    last_close = float(h.close[-1])
    sma_50 = sma(h.close, 50)
    sma_200 = sma(h.close, 200)
    price_vs_sma200: float | None = None
    if sma_200 is not None:
        price_vs_sma200 = last_close / sma_200 - 1.0
    return {
        "last_close": last_close,
        "sma_50": sma_50,
        "sma_200": sma_200,
        "crossover": crossover(sma_50, sma_200),
        "last_cross_date": last_cross_date(h.dates, h.close),
        "price_vs_sma200": price_vs_sma200,
        "rsi_14": rsi(h.close, 14),
    }


def _aligned_returns(
    h: PriceHistory, basket: Sequence[PriceHistory]
) -> tuple[FloatArray, FloatArray]:
    common = set(h.dates)
    for member in basket:
        common.intersection_update(member.dates)
    aligned = sorted(common)

    def returns_on(history: PriceHistory) -> FloatArray:
        position = {d: i for i, d in enumerate(history.dates)}
        return daily_returns(history.close[[position[d] for d in aligned]])

    if len(aligned) < 2:
        empty = np.empty(0, dtype=np.float64)
        return empty, empty
    r = returns_on(h)
    rb = np.mean(np.vstack([returns_on(member) for member in basket]), axis=0)
    return r, rb


def beta(
    h: PriceHistory, basket: Sequence[PriceHistory], window: int = TRADING_DAYS
) -> float | None:
    """``cov(r, rb) / var(rb)`` (ddof=1) over the last ``window`` aligned daily returns.

    ``None`` if fewer than ``window`` aligned returns exist or either return series is
    constant over the window (beta and correlation are then undefined).
    """
    result = _beta_and_correlation(h, basket, window)
    return result[0] if result else None


def _beta_and_correlation(
    h: PriceHistory, basket: Sequence[PriceHistory], window: int
) -> tuple[float, float] | None:
    if not basket:
        raise ValueError(
            f"beta for {h.ticker} needs a non-empty basket of price histories to compare with."
        )
    if window < 2:
        raise ValueError(f"beta needs window >= 2 returns, got {window}.")
    r, rb = _aligned_returns(h, basket)
    if len(r) < window:
        return None
    r, rb = r[-window:], rb[-window:]
    dr, drb = r - r.mean(), rb - rb.mean()
    cov = float(np.sum(dr * drb)) / (window - 1)
    var_b = float(np.sum(drb * drb)) / (window - 1)
    var_r = float(np.sum(dr * dr)) / (window - 1)
    if var_b == 0 or var_r == 0:
        return None
    return cov / var_b, cov / math.sqrt(var_b * var_r)


def beta_metrics(
    h: PriceHistory, basket: Sequence[PriceHistory], window: int = TRADING_DAYS
) -> dict[str, Any]:
    """Keys: beta, basket (list of tickers), correlation."""
    result = _beta_and_correlation(h, basket, window)
    return {
        "beta": result[0] if result else None,
        "basket": [member.ticker for member in basket],
        "correlation": result[1] if result else None,
    }


def peer_table(histories: Sequence[PriceHistory]) -> list[dict[str, Any]]:
    """One row per history, sorted by return_1y descending (missing returns last).

    Row keys: ticker, last_close, return_1y, return_ytd, volatility_1y, max_drawdown_1y,
    rsi_14, crossover, as_of.
    """
    rows: list[dict[str, Any]] = []
    for h in histories:
        drawdown = max_drawdown(h.dates, h.close)
        sma_50, sma_200 = sma(h.close, 50), sma(h.close, 200)
        rows.append(
            {
                "ticker": h.ticker,
                "last_close": float(h.close[-1]),
                "return_1y": trailing_return(h.close, TRADING_DAYS),
                "return_ytd": ytd_return(h.dates, h.close),
                "volatility_1y": annualised_volatility(h.close),
                "max_drawdown_1y": drawdown.depth if drawdown else None,
                "rsi_14": rsi(h.close, 14),
                "crossover": crossover(sma_50, sma_200),
                "as_of": h.as_of.isoformat(),
            }
        )
    rows.sort(key=lambda row: (row["return_1y"] is None, -(row["return_1y"] or 0.0)))
    return rows
