"""Market data: the ``PriceHistory`` contract, the provider protocol and its backends.

``SampleDataProvider`` reads the bundled CSVs (no network); ``YFinanceProvider`` downloads from
Yahoo Finance when the optional ``yfinance`` extra is installed. ``provider_from_name`` picks
one by name. Importing this package reads no files and imports no optional dependency.
"""

from agent.market.base import MarketDataProvider, PriceHistory
from agent.market.factory import PROVIDER_NAMES, provider_from_name
from agent.market.sample import SampleDataProvider

__all__ = [
    "PROVIDER_NAMES",
    "MarketDataProvider",
    "PriceHistory",
    "SampleDataProvider",
    "provider_from_name",
]
