"""The market-data contract: one immutable price series and the provider protocol.

``PriceHistory`` is what every provider returns and what ``agent.research.analytics`` and
``agent.research.chart`` consume. Its invariants are checked once, on construction, so consumers can
rely on them without re-checking:

- at least one row;
- ``dates`` and the five OHLCV arrays have the same length;
- ``dates`` are strictly increasing (ascending, no duplicates);
- every close is finite and positive (returns divide by it).

The arrays are stored as read-only ``float64`` copies, so a history cannot change after it
has been handed out (providers cache and share them).

``MarketDataProvider`` is the interface a backend implements: tickers are case-insensitive and
normalised to upper case; an unknown ticker raises ``agent.errors.UnknownTickerError`` listing
what is available; a provider that cannot deliver prices raises
``agent.errors.MarketDataUnavailableError``. A provider whose ``open_universe`` attribute is
true (yfinance) fetches any symbol: ``available_tickers()`` is then only its default basket
(peers, beta) and requests may name other tickers.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_SERIES = ("open", "high", "low", "close", "volume")


def _frozen_float_array(values: npt.ArrayLike, name: str, ticker: str) -> FloatArray:
    array = np.array(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(
            f"PriceHistory for {ticker}: '{name}' must be one-dimensional, got shape "
            f"{array.shape}. Pass one value per trading day."
        )
    array.setflags(write=False)
    return array


# eq=False: numpy arrays have no single truth value, so the generated __eq__ would raise;
# identity equality is the honest answer for a bulk data container.
@dataclass(frozen=True, eq=False)
class PriceHistory:
    """Daily OHLCV for one ticker, ascending by date, with its provenance in ``source``."""

    ticker: str
    dates: tuple[datetime.date, ...]
    open: FloatArray
    high: FloatArray
    low: FloatArray
    close: FloatArray
    volume: FloatArray
    source: str

    def __post_init__(self) -> None:
        ticker = self.ticker
        if not ticker or not ticker.strip():
            raise ValueError("PriceHistory needs a non-empty ticker symbol, got an empty string.")
        dates = tuple(self.dates)
        if not dates:
            raise ValueError(
                f"PriceHistory for {ticker} has no rows. A history needs at least one trading "
                "day; check the data source returned prices for this ticker."
            )
        object.__setattr__(self, "dates", dates)
        for name in _SERIES:
            array = _frozen_float_array(getattr(self, name), name, ticker)
            if len(array) != len(dates):
                raise ValueError(
                    f"PriceHistory for {ticker}: '{name}' has {len(array)} values but there are "
                    f"{len(dates)} dates. Every series needs exactly one value per date."
                )
            object.__setattr__(self, name, array)
        for i in range(1, len(dates)):
            if dates[i] <= dates[i - 1]:
                raise ValueError(
                    f"PriceHistory for {ticker}: dates must be strictly increasing, but "
                    f"{dates[i].isoformat()} (row {i}) follows {dates[i - 1].isoformat()}. "
                    "Sort the rows by date and remove duplicate days."
                )
        bad = np.flatnonzero(~(np.isfinite(self.close) & (self.close > 0)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"PriceHistory for {ticker}: close on {dates[i].isoformat()} is {self.close[i]!r}; "
                "closes must be finite and positive. Drop or repair that row."
            )

    @property
    def as_of(self) -> datetime.date:
        """The date of the most recent row."""
        return self.dates[-1]

    def __len__(self) -> int:
        return len(self.dates)


@runtime_checkable
class MarketDataProvider(Protocol):
    """A source of daily price histories.

    ``name`` identifies the backend (``"sample"``, ``"yfinance"``). ``history`` accepts tickers
    in any case and returns a ``PriceHistory`` whose ``ticker`` is upper case; tickers outside
    ``available_tickers()`` raise ``UnknownTickerError``; delivery failures raise
    ``MarketDataUnavailableError``.
    """

    name: str

    def available_tickers(self) -> tuple[str, ...]:
        """Upper-case tickers this provider can serve, sorted."""
        ...

    def history(self, ticker: str) -> PriceHistory:
        """The full daily history of ``ticker``."""
        ...
