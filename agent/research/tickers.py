"""Names of companies as users write them, and the tickers they mean.

Shared by routing (which tickers a request is about) and constraints (which tickers a standing
instruction excludes), so neither has to import the other.
"""

from __future__ import annotations

COMPANY_NAMES: dict[str, str] = {
    "apple": "AAPL",
    "amazon": "AMZN",
    "alphabet": "GOOGL",
    "google": "GOOGL",
    "meta": "META",
    "facebook": "META",
    "microsoft": "MSFT",
    "nvidia": "NVDA",
    "tesla": "TSLA",
}
