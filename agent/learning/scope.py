"""How far a list cue reaches: the names a cue for a list attribute takes are those of its own
clause, where a clause ends at a semicolon, a dash, a comma before a new subject ("watch NVDA
for me, I own AAPL"), or a conjunction that opens a new statement with a subject or a request ("I hold AAPL and MSFT, and please watch AMZN": the holdings are
AAPL and MSFT, the watchlist AMZN). A conjunction inside a list of names ("NVDA and AMD",
"NVDA and also AMD") does not end it."""

from __future__ import annotations

import re

_TURN = re.compile(
    r"\s*(?:;|\s-+\s|,?\s+\b(?:and|but|while|whereas|though|although)\b(?=\s+(?:i|i'd|i'm|"
    r"i'll|i've|im|we|we're|please|pls|can|could|would|you|my)\b)"
    # a comma before a new subject ("follow NVDA for me, I own AAPL already")
    r"|,\s*(?=(?:i|i'd|i'm|i'll|i've|im|we|we're|we've)\s))",
    re.IGNORECASE,
)


def clause_around(part: str, at: int) -> tuple[int, int]:
    """The span of the clause of ``part`` that holds position ``at``."""
    start, end = 0, len(part)
    for cut in _TURN.finditer(part):
        if cut.end() <= at:
            start = cut.end()
        elif cut.start() >= at:
            end = cut.start()
            break
    return start, end


def within(named: list[tuple[str, int]], span: tuple[int, int]) -> list[tuple[str, int]]:
    """The names of ``named`` (symbol, position) that stand inside ``span``."""
    return [(symbol, at) for symbol, at in named if span[0] <= at < span[1]]
