"""Ticker symbols in what users write: normalising a list, checking a quote names a symbol,
and finding the tickers a message names.

A word is a ticker when it is written with ``$``, in upper case (not a common abbreviation or a
currency code), names a company (:data:`agent.research.tickers.COMPANY_NAMES`), or is a
known symbol in any case. The profile registry (:mod:`agent.learning.profile`) and the
phrasing rules (:mod:`agent.learning.phrasing`) share these readings.
"""

from __future__ import annotations

import re

from pydantic import JsonValue

from agent.learning import quantities
from agent.research.routing import NOT_TICKERS
from agent.research.tickers import COMPANY_NAMES

_SYMBOL = re.compile(r"[A-Z][A-Z0-9]{0,5}(?:[.-][A-Z]{1,2})?")


def ticker_symbol(word: str) -> str:
    """``word`` as a ticker symbol: '$nvda' -> 'NVDA', 'Nvidia' -> 'NVDA', 'brk.b' -> 'BRK.B';
    ``ValueError`` when it is none."""
    bare = word.strip().lstrip("$").strip()
    symbol = COMPANY_NAMES.get(bare.lower()) or bare.upper()
    if not _SYMBOL.fullmatch(symbol):
        raise ValueError(f"{word!r} is not a ticker symbol")
    return symbol


def normalise_tickers(value: object) -> JsonValue:
    """A list of symbols without repeats from a list or a text ('NVDA, msft and aapl')."""
    if isinstance(value, str):
        items: list[object] = [w for w in re.split(r"\s*(?:,|;|\band\b|\s)\s*", value) if w]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ValueError(f"expected a list of ticker symbols, got {type(value).__name__}")
    symbols: list[JsonValue] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"{item!r} is not a ticker symbol")
        symbol = ticker_symbol(item)
        if symbol not in symbols:
            symbols.append(symbol)
    return symbols


def mentions_ticker(symbol: str, text: str) -> bool:
    """Whether ``text`` names ``symbol``: the symbol in any case (``$`` allowed) or its company."""
    for word in re.findall(r"\$?[A-Za-z][A-Za-z0-9]*(?:[.-][A-Za-z]{1,2}\b)?", text):
        bare = word.lstrip("$")
        if bare.upper() == symbol or COMPANY_NAMES.get(bare.lower()) == symbol:
            return True
    return False


def tickers_stated(value: JsonValue, text: str) -> bool:
    """Whether ``text`` names every symbol of the (non-empty) list ``value``."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(s, str) and mentions_ticker(s, text) for s in value)
    )


#: A word joined to another by "&" is one name ("S&P 500", "AT&T", "R&D"), no symbols.
_TOKEN = re.compile(r"(?<![\w$&])\$?[A-Za-z][A-Za-z0-9]*(?:[.-][A-Za-z]{1,2}\b)?(?!&\w)")
_CURRENCY_CODES = frozenset(quantities.CURRENCY_NAMES.values())
_NOT_SYMBOLS = NOT_TICKERS | {"TBH", "LOL", "FYI", "BTW", "IMO", "IMHO", "ETC", "OK", "PLS"}


def tickers_in(text: str, known: set[str]) -> list[tuple[str, int]]:
    """The tickers ``text`` names, with their positions: ``$``-prefixed or upper-case symbols,
    company names and known symbols in any case."""
    out: list[tuple[str, int]] = []
    for match in _TOKEN.finditer(text):
        word = match.group(0)
        bare = word.lstrip("$")
        if bare.lower() in COMPANY_NAMES:
            symbol = COMPANY_NAMES[bare.lower()]
        elif word.startswith("$") or (bare.isupper() and len(bare) <= 5):
            if bare.upper() in _NOT_SYMBOLS or (
                not word.startswith("$") and bare.upper() in _CURRENCY_CODES
            ):
                continue
            symbol = bare.upper()
        elif bare.upper() in known and bare.lower() not in {"all", "now", "it", "on"}:
            symbol = bare.upper()
        else:
            continue
        if symbol not in [s for s, _ in out]:
            out.append((symbol, match.start()))
    return out
