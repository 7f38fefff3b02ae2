"""Deterministic request routing: which tickers, and deep research or a quick snapshot.

The router sees the query text and nothing else (no memory, no history), so the same words
always route the same way. It is also the analyst's first line of input validation: the CLI
calls :func:`route_query` before it creates a thread, so a bad request writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agent.errors import InvalidQueryError, NoTickerError, UnknownTickerError
from agent.records import Mode, ModeChoice
from agent.research.constraints import split_constraints
from agent.research.tickers import COMPANY_NAMES

# Upper-case words that appear in finance questions but are not tickers.
NOT_TICKERS = frozenset(
    """
    A I AI AM AN AND ARE AS AT BE BUT BY CEO CFO CPI DO EPS ETF EU FAQ FED FOR FX FY GDP HOW
    IN IPO IS IT ME MY NO OF OK ON OR PE PLS Q1 Q2 Q3 Q4 RSI SEC SMA SO TL DR THE TO UK UP US
    USA USD VS WHAT YTD YOY QOQ MOM ATH ESG API PDF
    """.split()
)

FLASH_WORDS = ("quick", "snapshot", "brief", "glance", "flash", "tl;dr", "tldr", "price of")
DEEP_WORDS = ("analy", "research", "deep", "report", "thesis", "due diligence", "compare")

_TOKEN = re.compile(r"(?<![A-Za-z0-9$])\$?[A-Za-z][A-Za-z.]*")


@dataclass(frozen=True)
class Route:
    mode: Mode
    tickers: tuple[str, ...]
    reason: str


def route_query(query: str, available: Iterable[str], mode: ModeChoice = "auto") -> Route:
    """Route ``query``; raise :class:`InvalidQueryError` / :class:`UnknownTickerError`.

    Tickers are found as upper-case symbols (``NVDA``, ``$NVDA``), known symbols in any case,
    or company names. An upper-case symbol the provider does not carry is an error listing the
    available tickers, never silently dropped.
    """
    text = (query or "").strip()
    if not text:
        raise InvalidQueryError(
            'The query is empty. Ask for an analysis, for example: analyst run "Analyze NVDA"'
        )
    known = {t.upper() for t in available}
    tickers, unknown = extract_tickers(text, known)
    if unknown:
        raise UnknownTickerError(unknown, known)
    if not tickers:
        raise NoTickerError(
            f"No ticker found in '{text}'. Name one of: {', '.join(sorted(known))} "
            '(for example: analyst run "Analyze NVDA").'
        )
    if mode != "auto":
        return Route(mode=mode, tickers=tickers, reason=f"mode forced to {mode}")
    lowered = text.lower()
    flash_hit = next((w for w in FLASH_WORDS if w in lowered), None)
    if flash_hit:
        return Route("flash", tickers, f"'{flash_hit}' asks for a quick snapshot")
    deep_hit = next((w for w in DEEP_WORDS if w in lowered), None)
    reason = f"'{deep_hit}' asks for research" if deep_hit else "default is deep research"
    return Route("deep", tickers, reason)


def extract_tickers(text: str, known: set[str]) -> tuple[tuple[str, ...], list[str]]:
    """Return (known tickers in order of mention, unknown upper-case symbols)."""
    shouting = text.upper() == text
    found: list[str] = []
    unknown: list[str] = []
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        dollar = raw.startswith("$")
        word = raw.lstrip("$").rstrip(".")
        upper = word.upper()
        if upper in known:
            symbol: str | None = upper
        elif word.lower() in COMPANY_NAMES:
            symbol = COMPANY_NAMES[word.lower()]
        elif (dollar or (word.isupper() and not shouting)) and upper not in NOT_TICKERS:
            if len(upper) <= 5 and upper.isalpha():
                unknown.append(upper)
            symbol = None
        else:
            symbol = None
        if symbol and symbol in known and symbol not in found:
            found.append(symbol)
    return tuple(found), sorted(set(unknown))


def request_universe(
    query: str, available: Iterable[str], *, open_universe: bool = False
) -> tuple[str, ...]:
    """The tickers ``query`` may name: the provider's list and, for a provider that fetches any
    symbol (``open_universe``: yfinance), also the upper-case symbols the query names."""
    known = tuple(t.upper() for t in available)
    if not open_universe:
        return known
    _, named = extract_tickers(query, set(known))
    return (*known, *(t for t in named if t not in known))


_IDEAS = re.compile(
    r"\b(?:what|which)\s+(?:\w+\s+){0,2}(?:should|shall|could|can|would|do you think)\s+"
    r"(?:i|we)\s+(?:buy|invest\s+in|own|pick|add|get)\b|"
    r"\bwhat\s+(?:to|would\s+you)\s+buy\b|"
    r"\b(?:where|how)\s+should\s+(?:i|we)\s+(?:put|invest|park|place)\b|"
    r"\bany\s+(?:\w+\s+)?(?:ideas?|suggestions?|picks?|recommendations?|tips?)\b|"
    r"\b(?:ideas?|suggestions?|picks?|recommendations?)\s+for\s+(?:me|us|a|an|my|our)\b|"
    r"\b(?:suggest|recommend)\s+(?:me\s+|us\s+)?(?:some|a\s+few|a\s+couple(?:\s+of)?|"
    r"few|any|one|a|\d+|two|three|five)?\s*(?:good\s+)?(?:stocks?|shares?|companies|names|"
    r"ideas?|picks?|investments?)\b|"
    r"\bwhat\s+do\s+you\s+(?:recommend|suggest)\b|"
    r"^\s*anything\s+(?:for|to\s+buy|worth|good|you)\b|"
    r"\b(?:good|best)\s+(?:stocks?|shares?|picks?|investments?)\s+(?:for|to|right)\b",
    re.IGNORECASE,
)


def ideas_request(query: str, available: Iterable[str]) -> bool:
    """Whether ``query`` asks for ideas rather than about a named stock ("what should I buy?",
    "anything for a dividend investor?", "suggest a few stocks"): it asks for picks and names
    no ticker (a known one or an unknown upper-case symbol). Such a request is answered from
    the profile and the covered universe (:mod:`agent.research.ideas`), never researched."""
    text = (query or "").strip()
    if not text or forget_topic(text) is not None or not _IDEAS.search(text):
        return False
    tickers, unknown = extract_tickers(text, {t.upper() for t in available})
    return not tickers and not unknown


_FORGET = re.compile(
    r"^\s*(?:please\s+)?(?:forget|stop\s+remembering|(?:delete|erase|remove)\s+(?:what|"
    r"everything)\s+you\s+(?:know|remember|have)\s+(?:about|on))\s+(?:about\s+|that\s+|"
    r"what\s+i\s+(?:said|told\s+you)\s+about\s+|everything\s+about\s+)?(?P<topic>.+?)[\s.!]*$",
    re.IGNORECASE | re.DOTALL,
)


#: A part of what the user has just said ("forget the Tesla part", "the horizon bit"): taking
#: it back is a revision the learner reads, not a request to search memory and forget.
_PART_JUST_SAID = re.compile(r"^(?:the|that|my)\s+[\w' -]+?\s+(?:part|bit|piece)\b", re.IGNORECASE)


def forget_topic(query: str) -> str | None:
    """What a message that starts with "forget" asks to forget ("Forget that I like dividend
    stocks" -> "I like dividend stocks"), or ``None`` for any other message and for a part of
    what was just said ("forget the Tesla part": a retraction). Such a message is no research
    request: the graph proposes what it finds and asks the user to confirm."""
    found = _FORGET.match(query or "")
    topic = found.group("topic").strip() if found else ""
    return topic if len(topic) >= 3 and not _PART_JUST_SAID.match(topic) else None


def check_request(
    query: str, available: Iterable[str], mode: ModeChoice = "auto", *, strict: bool = True
) -> Route | None:
    """Validate a request before anything is written; return its offline route if it has one.

    A request to forget (:func:`forget_topic`) or for ideas (:func:`ideas_request`) is valid
    and routes nowhere (None). Constraint
    sentences ("never include TSLA") are split off first: a message made only of
    constraints is valid and routes nowhere (None). Unknown upper-case symbols are always an
    error. With ``strict`` (the offline analyst) the rest must name a ticker; a model may
    still resolve requests such as "the biggest chip maker", so it is not strict.
    """
    if not (query or "").strip():
        route_query(query, available, mode)  # raises the empty-query error
    if forget_topic(query) is not None:
        return None  # a request to forget: valid, and no research
    rules, request = split_constraints(query)
    if ideas_request(request, available):
        return None  # ideas from the profile: valid, and no research
    if not request.strip():
        if rules:
            return None
        route_query(request, available, mode)
    known = {t.upper() for t in available}
    tickers, unknown = extract_tickers(request, known)
    if unknown:
        raise UnknownTickerError(unknown, known)
    if strict or tickers:
        return route_query(request, available, mode)
    return None
