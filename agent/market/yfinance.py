"""Live daily prices from Yahoo Finance through the optional ``yfinance`` package.

Contracts:

- Importing this module never imports ``yfinance``; the package is imported inside
  ``history()``, so the analyst runs without it. If it is missing, ``history()`` raises
  ``MissingDependencyError`` naming the ``yfinance`` extra.
- Any ticker symbol is fetched (``open_universe``): ``available_tickers()`` is only the
  default basket (the seven tickers of the bundled sample unless configured) that peer tables
  and beta are computed against, and a request may name any other symbol. A string that
  cannot be a symbol raises ``InvalidQueryError``.
- ``history()`` returns daily OHLCV adjusted for splits and dividends. Any download failure
  (no network, timeout, Yahoo error, empty answer) raises ``MarketDataUnavailableError``
  naming the ticker, the cause and the fix, chained to the original exception.
- Requests time out after ``timeout`` seconds, so a machine without network fails fast.
"""

from __future__ import annotations

import datetime
import logging
import re
from collections.abc import Iterable
from typing import Any

from agent.errors import (
    ConfigurationError,
    InvalidQueryError,
    MarketDataUnavailableError,
    MissingDependencyError,
)
from agent.market.base import PriceHistory

DEFAULT_TICKERS = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
#: What a Yahoo symbol looks like: NVDA, BRK.B, RDS-A, ^GSPC, EURUSD=X, 7203.T.
_SYMBOL = re.compile(r"^[A-Z0-9^][A-Z0-9.\-=^]{0,14}$")
VALID_PERIODS = ("1d", "5d", "1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "ytd", "max")

_FIX = (
    "check your network connection, or use the bundled sample data with "
    "ANALYST_MARKET_PROVIDER=sample"
)


def _import_yfinance() -> Any:
    try:
        import yfinance
    except ImportError as e:
        raise MissingDependencyError(
            "The yfinance market-data provider", "yfinance", "yfinance"
        ) from e
    # yfinance logs every failed request on its own; the error raised below says it once.
    logging.getLogger("yfinance").setLevel(logging.CRITICAL)
    return yfinance


class YFinanceProvider:
    """Daily adjusted OHLCV downloaded from Yahoo Finance for any ticker symbol."""

    name = "yfinance"
    open_universe = True

    def __init__(self, tickers: Iterable[str] = DEFAULT_TICKERS, *, timeout: float = 10.0) -> None:
        normalised = tuple(sorted({t.strip().upper() for t in tickers if t.strip()}))
        if not normalised:
            raise ConfigurationError(
                "The yfinance provider needs at least one ticker, got none. Pass tickers such "
                f"as {', '.join(DEFAULT_TICKERS)}."
            )
        if timeout <= 0:
            raise ConfigurationError(
                f"The yfinance timeout must be a positive number of seconds, got {timeout!r}."
            )
        self._tickers = normalised
        self._timeout = timeout

    def available_tickers(self) -> tuple[str, ...]:
        return self._tickers

    def history(self, ticker: str, period: str = "max") -> PriceHistory:
        key = ticker.strip().upper()
        if not _SYMBOL.match(key):
            raise InvalidQueryError(
                f"{ticker!r} is not a ticker symbol; use one such as NVDA, BRK.B or ^GSPC."
            )
        if period not in VALID_PERIODS:
            raise ConfigurationError(
                f"Unknown yfinance period {period!r}. Use one of: {', '.join(VALID_PERIODS)}."
            )
        yf = _import_yfinance()

        def unavailable(cause: str) -> MarketDataUnavailableError:
            return MarketDataUnavailableError(
                f"Could not download prices for {key} from Yahoo Finance: "
                f"{cause.rstrip('. ')}. To fix: {_FIX}."
            )

        try:
            frame = yf.Ticker(key).history(
                period=period,
                interval="1d",
                auto_adjust=True,
                actions=False,
                timeout=self._timeout,
            )
        # yfinance surfaces network trouble as exceptions from curl_cffi, requests or its own
        # YFException hierarchy depending on version; every one of them means "no prices".
        except Exception as e:
            raise unavailable(f"{type(e).__name__}: {e}") from e

        if frame is None or len(frame) == 0:
            raise unavailable("the download returned no rows (network failure or delisted symbol)")
        frame = frame.dropna(subset=["Close"])
        if len(frame) == 0:
            raise unavailable("every downloaded row lacks a close price")

        # The index is tz-aware at the exchange's local time; .date gives the trading day.
        dates: tuple[datetime.date, ...] = tuple(frame.index.date)
        try:
            return PriceHistory(
                ticker=key,
                dates=dates,
                open=frame["Open"].to_numpy(dtype="float64"),
                high=frame["High"].to_numpy(dtype="float64"),
                low=frame["Low"].to_numpy(dtype="float64"),
                close=frame["Close"].to_numpy(dtype="float64"),
                volume=frame["Volume"].to_numpy(dtype="float64"),
                source=(
                    f"Yahoo Finance via yfinance: daily OHLCV adjusted for splits and dividends "
                    f"(period={period}, downloaded {datetime.date.today().isoformat()})"
                ),
            )
        except (KeyError, ValueError) as e:
            raise unavailable(f"the downloaded table is unusable ({e})") from e
