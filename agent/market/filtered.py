"""A provider view that hides tickers the user's constraints exclude.

Used by the executor when the user has said e.g. "never include TSLA": the ticker disappears
from peer tables and beta baskets, and asking for it directly is a clear error.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.errors import UnknownTickerError
from agent.market.base import MarketDataProvider, PriceHistory


class FilteredProvider:
    def __init__(self, inner: MarketDataProvider, excluded: Mapping[str, str]) -> None:
        self.inner = inner
        self.excluded = dict(excluded)
        self.name = inner.name
        self.open_universe = bool(getattr(inner, "open_universe", False))

    def available_tickers(self) -> tuple[str, ...]:
        return tuple(t for t in self.inner.available_tickers() if t not in self.excluded)

    def history(self, ticker: str) -> PriceHistory:
        symbol = ticker.strip().upper()
        if symbol in self.excluded:
            raise UnknownTickerError(symbol, self.available_tickers())
        return self.inner.history(symbol)
