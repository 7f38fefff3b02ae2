"""Which bundled tickers pay a dividend: a small reference table, since prices carry no yield.

The sample data is daily OHLCV only, so an income preference is matched against what the
companies are documented to pay, never against a measured yield. ``kind`` is ``regular`` (a
long-standing quarterly dividend), ``recent`` (a dividend begun after the sample data ends),
``token`` (a dividend too small to matter for income) or ``none``. A ticker missing from the
table (an open-universe provider) has no known dividend: nothing is inferred for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

DividendKind = Literal["regular", "recent", "token", "none"]


@dataclass(frozen=True)
class Dividend:
    """What a company pays, and the sentence that says so."""

    kind: DividendKind
    note: str


DIVIDENDS: Mapping[str, Dividend] = {
    "AAPL": Dividend("regular", "pays a regular quarterly dividend (since 2012)"),
    "MSFT": Dividend("regular", "pays a regular quarterly dividend (since 2003)"),
    "GOOGL": Dividend("recent", "began a quarterly dividend in 2024, after this data ends"),
    "META": Dividend("recent", "began a quarterly dividend in 2024, after this data ends"),
    "NVDA": Dividend("token", "pays only a token dividend (well under 1% a year)"),
    "AMZN": Dividend("none", "pays no dividend"),
    "TSLA": Dividend("none", "pays no dividend"),
}


def dividend_of(ticker: str) -> Dividend | None:
    """The table's entry for ``ticker`` (any case), or ``None`` when it is not known."""
    return DIVIDENDS.get(ticker.strip().upper())
