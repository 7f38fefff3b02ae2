"""How quotes are compared: the one normalisation every quote check reads text with.

A quote matches a text when, both case-folded, with typographic quotes, apostrophes and dashes
made plain and whitespace collapsed, the quote occurs in the text. :func:`locate` returns the
matching span verbatim; the offline extraction rules and the grounding check both use it, so
a quote a rule emits always passes the check.
"""

from __future__ import annotations

import unicodedata

_PUNCTUATION = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
    }
)


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` case-folded, with typographic quotes, apostrophes and dashes made plain and
    every run of whitespace one space (none at either end); with, for each character of the
    result, the index of the character of ``text`` it came from."""
    out: list[str] = []
    origin: list[int] = []
    pending_space = False
    for index, char in enumerate(text):
        for c in unicodedata.normalize("NFKC", char.translate(_PUNCTUATION)).casefold():
            if c.isspace():
                pending_space = bool(out)
                continue
            if pending_space:
                out.append(" ")
                origin.append(index)
                pending_space = False
            out.append(c)
            origin.append(index)
    return "".join(out), origin


def plain(text: str) -> str:
    """``text`` with typographic quotes, apostrophes and dashes made plain (same length), so
    rules written with ``'`` also read "I’m" and "don’t"."""
    return text.translate(_PUNCTUATION)


def normalise_text(text: str) -> str:
    """The form quotes are compared in: case-folded, plain quotes and dashes, single spaces."""
    return _normalised(text)[0]


def locate(quote: str, text: str) -> str | None:
    """The span of ``text`` that ``quote`` matches once both are normalised, verbatim, or None.

    ``locate("it’s  NVDA", "It's NVDA today")`` is ``"It's NVDA"``. A quote with no letter or
    digit matches nothing.
    """
    needle = normalise_text(quote)
    if not any(c.isalnum() for c in needle):
        return None
    haystack, origin = _normalised(text)
    at = haystack.find(needle)
    if at < 0:
        return None
    return text[origin[at] : origin[at + len(needle) - 1] + 1]
