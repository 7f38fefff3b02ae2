"""A company a sentence names by a pronoun, for the one company the sentence before it names.

"Apple had a rough quarter. I own a good chunk of it.", "Nvidia reports tomorrow. Could you
watch it for me?", "Amazon? No thanks, leave them out of anything you suggest.": the second
sentence names an item of a ticker list (:data:`LISTS`) only by "it" or "them".
:func:`resolved` gives the sentence with the company in the pronoun's place, which
:mod:`agent.learning.understanding` reads as the user's words and quotes with the sentence
before, so the quote names the company.
"""

from __future__ import annotations

import re

from agent.learning import symbols

#: The lists whose item a pronoun may name.
LISTS = ("holdings", "watchlist", "excluded_tickers")
#: "it" or "them" as an object, not the subject of what follows ("it's", "it was").
_OBJECT = re.compile(r"\b(?:it|them)\b(?!\s*(?:'s|is|was|are|were)\b)", re.IGNORECASE)


def resolved(span: str, sentence: str, known: set[str]) -> tuple[str, str] | None:
    """``(symbol, sentence with the symbol for its pronoun)`` when ``span`` (the sentence
    before, then ``sentence``) names exactly one company before ``sentence``, which names
    none and refers to it by a pronoun; else None."""
    named = {s for s, _ in symbols.tickers_in(span[: len(span) - len(sentence)], known)}
    if len(named) != 1 or symbols.tickers_in(sentence, known):
        return None
    symbol = named.pop()
    said = _OBJECT.sub(symbol, sentence)
    return None if said == sentence else (symbol, said)
