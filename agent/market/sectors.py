"""What business each bundled ticker is in: its sector, industry and screened activities.

A small reference table for the seven sample tickers, so a user's excluded sectors can be
enforced like excluded tickers and a sector of interest or a concentration in one sector can be
named. ``screens`` lists the activities an exclusion screen looks for (the profile's
``excluded_sectors`` vocabulary: tobacco, weapons, crypto, fossil_fuels, gambling, alcohol)
that the company has a documented exposure to, with the reason. A ticker missing from the table
(an open-universe provider) has no known sector: nothing is inferred for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: The activities an exclusion screen names (``excluded_sectors`` values).
SCREENED_ACTIVITIES: tuple[str, ...] = (
    "tobacco",
    "weapons",
    "crypto",
    "fossil_fuels",
    "gambling",
    "alcohol",
)


@dataclass(frozen=True)
class Sector:
    """A ticker's sector (GICS-style), its industry, and the screened activities it is exposed
    to, each mapped to the documented reason."""

    sector: str
    industry: str
    #: The profile's sector names (``sectors_of_interest`` vocabulary) this ticker belongs to.
    tags: tuple[str, ...] = ()
    screens: Mapping[str, str] = field(default_factory=dict)

    def words(self) -> set[str]:
        """Lower-case names a user may use for it: its tags, sector, industry and their words."""
        names = {self.sector.lower(), self.industry.lower(), *self.tags}
        return names | {w for n in names for w in n.replace("-", " ").split() if len(w) > 3}


SECTORS: Mapping[str, Sector] = {
    "AAPL": Sector("Information Technology", "Consumer electronics", ("consumer",)),
    "AMZN": Sector("Consumer Discretionary", "E-commerce and cloud computing", ("consumer",)),
    "GOOGL": Sector("Communication Services", "Internet search and advertising", ("telecom",)),
    "META": Sector("Communication Services", "Social media and advertising", ("telecom",)),
    "MSFT": Sector("Information Technology", "Software and cloud computing", ("software",)),
    "NVDA": Sector("Information Technology", "Semiconductors", ("semiconductors",)),
    "TSLA": Sector(
        "Consumer Discretionary",
        "Electric vehicles and energy storage",
        ("consumer",),
        {"crypto": "holds bitcoin on its balance sheet (bought in 2021)"},
    ),
}


def sector_of(ticker: str) -> Sector | None:
    """The table's entry for ``ticker`` (any case), or ``None`` when it is not known."""
    return SECTORS.get(ticker.strip().upper())


def screened(ticker: str, activities: Iterable[str]) -> dict[str, str]:
    """Which of ``activities`` (screen names or sector words) ``ticker`` is exposed to, each
    with the reason: a screened activity the table documents, or the ticker's own sector or
    industry named. Empty when the ticker is not in the table."""
    entry = sector_of(ticker)
    if entry is None:
        return {}
    out: dict[str, str] = {}
    for raw in activities:
        name = str(raw).strip().lower().replace(" ", "_")
        if name in entry.screens:
            out[name] = entry.screens[name]
        elif name.replace("_", " ") in entry.words():
            out[name] = f"its sector is {entry.sector} ({entry.industry})"
    return out
