"""Choose a market-data provider by name.

``provider_from_name`` maps the names users type (``ANALYST_MARKET_PROVIDER``; there
is no command-line flag) to provider instances. Names are case-insensitive and
surrounding whitespace is ignored; anything else raises ``ConfigurationError`` listing the
valid names. Constructing a provider does no I/O and imports no optional package.
"""

from __future__ import annotations

from agent.errors import ConfigurationError
from agent.market.base import MarketDataProvider
from agent.market.sample import SampleDataProvider
from agent.market.yfinance import YFinanceProvider

PROVIDER_NAMES = ("sample", "yfinance")


def provider_from_name(name: str) -> MarketDataProvider:
    """A fresh provider for ``name`` (one of ``PROVIDER_NAMES``)."""
    key = name.strip().lower()
    if key == "sample":
        return SampleDataProvider()
    if key == "yfinance":
        return YFinanceProvider()
    raise ConfigurationError(
        f"Unknown market-data provider {name!r}. Use one of: {', '.join(PROVIDER_NAMES)} "
        "in ANALYST_MARKET_PROVIDER."
    )
