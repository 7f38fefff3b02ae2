"""The words users say for the values of the profile's enumerated attributes.

Each table maps a canonical value to the words and phrases that name it (lower case; hyphens
are read as spaces). They are data only: :mod:`agent.learning.profile` builds each
attribute's normaliser and grounding check from them, and the offline extraction rules read
the same tables, so a word that proposes a value is always one the check accepts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RISK: dict[str, tuple[str, ...]] = {
    "conservative": (
        "low",
        "cautious",
        "careful",
        "risk averse",
        "low risk",
        "defensive",
        "capital preservation",
        "safe",
        "play it safe",
        "side of caution",
        # common misspellings
        "conservitive",
        "conservatve",
        "consevative",
        "conservativ",
    ),
    "moderate": (
        "balanced",
        "medium",
        "medium risk",
        "middle of the road",
        "in the middle",
        "moderat",
        "modarate",
    ),
    "aggressive": (
        "high",
        "growth",
        "high risk",
        "risk seeking",
        "risk taking",
        "adventurous",
        "bold",
        # common misspellings
        "agressive",
        "aggresive",
        "agresive",
        "aggressiv",
    ),
}
STYLE: dict[str, tuple[str, ...]] = {
    "brief": (
        "short",
        "concise",
        "succinct",
        "terse",
        "quick",
        "compact",
        "tl dr",
        "tldr",
        "tl;dr",
        "bullet points",
        "highlights",
        "key points",
        "headlines",
        "gist",
        "shorter",
        "briefer",
        "more concise",
    ),
    "detailed": (
        "long",
        "longer",
        "more detailed",
        "deeper",
        "thorough",
        "in depth",
        "comprehensive",
        "full",
        "deep",
        "extensive",
        "lots of detail",
        "all the details",
        "all the detail",
        "every detail",
        "full detail",
        "in detail",
    ),
}


GOAL: dict[str, tuple[str, ...]] = {
    "retirement": (
        "retire",
        "retiring",
        "pension",
        "pension pot",
        "nest egg",
        "stop working",
        "stop work",
        "quit working",
        "golden years",
    ),
    "home_purchase": (
        "home",
        "house",
        "apartment",
        "flat",
        "condo",
        "property",
        "buy a house",
        "buying a house",
        "buy a home",
        "buying a home",
        "buy an apartment",
        "house purchase",
        "home purchase",
        "down payment",
        "deposit",
    ),
    "education": (
        "college",
        "university",
        "tuition",
        "school",
        "school fees",
        "college fund",
        "studies",
    ),
    "income": ("passive income", "regular income", "steady income", "cash flow", "cashflow"),
    "growth": (
        "grow",
        "growing",
        "capital growth",
        "long term growth",
        "build wealth",
        "building wealth",
        "wealth building",
        "appreciation",
    ),
    "preservation": (
        "preserve",
        "preserving",
        "capital preservation",
        "preservation of capital",
        "protect",
        "protecting",
        "protection",
        "safety",
        "keep what i have",
        "not to lose what",
        "not losing what",
    ),
}
INCOME: dict[str, tuple[str, ...]] = {
    "dividends": (
        "dividend",
        "dividend payers",
        "dividend stocks",
        "dividend income",
        "income",
        "yield",
        "payouts",
    ),
    "growth": ("growers", "growth stocks", "capital gains", "appreciation"),
    "balanced": ("mix", "mixed", "a mix", "both", "half and half", "blend"),
}
EXCLUDED_SECTORS: dict[str, tuple[str, ...]] = {
    "tobacco": ("cigarettes", "cigarette", "smoking", "vaping", "tobacco companies"),
    "weapons": (
        "weapon",
        "arms",
        "guns",
        "firearms",
        "defence",
        "defense",
        "munitions",
        "arms dealers",
        "military",
    ),
    "crypto": ("cryptocurrency", "cryptocurrencies", "bitcoin", "crypto currency", "coins"),
    "fossil_fuels": (
        "fossil fuel",
        "fossil",
        "oil",
        "coal",
        "oil and gas",
        "petroleum",
    ),
    "gambling": ("casinos", "casino", "betting", "gaming", "bookmakers"),
    "alcohol": ("booze", "liquor", "spirits", "beer", "brewers", "breweries", "wine"),
}
SECTORS: dict[str, tuple[str, ...]] = {
    "semiconductors": (
        "semiconductor",
        "semis",
        "chips",
        "chip",
        "chipmakers",
        "chip makers",
        "chip stocks",
    ),
    "software": ("saas", "software companies", "cloud", "cloud software"),
    "healthcare": (
        "health care",
        "health",
        "pharma",
        "pharmaceuticals",
        "biotech",
        "medical",
        "medtech",
    ),
    "energy": ("oil and gas", "renewables", "clean energy", "power"),
    "financials": (
        "financial",
        "finance",
        "banks",
        "banking",
        "bank",
        "insurance",
        "insurers",
        "fintech",
    ),
    "consumer": (
        "consumer goods",
        "consumer staples",
        "consumer discretionary",
        "retail",
        "retailers",
    ),
    "industrials": ("industrial", "manufacturing", "aerospace", "transport"),
    "utilities": ("utility",),
    "real_estate": ("real estate", "reits", "reit", "property", "properties"),
    "telecom": ("telecoms", "telecommunications", "telco", "telcos"),
    "materials": ("mining", "miners", "chemicals", "metals", "basic materials"),
}


def alternation(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first, a space matching spaces or a hyphen."""
    ordered = sorted(set(words), key=lambda w: (-len(w), w))
    return "|".join(re.escape(w).replace(r"\ ", r"[\s-]+") for w in ordered)
