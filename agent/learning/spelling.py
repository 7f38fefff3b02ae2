"""Words misspelt by one letter, read as the word they misspell.

People type in a hurry: "wnat agressive growht", "pls folow nvida", "horizn 30 yrs". The rules
of :mod:`agent.learning.phrasing` need their cue words and company names spelt right, so
:func:`respell` puts back, in a message, each word one edit (a letter left out, added,
changed, or two swapped) from exactly one word of :data:`LEXICON`: the words the rules and the
vocabulary tables read, and the companies the ticker table knows. A word that is itself an
English word is never changed ("wait" is not "want", "gold" is not "hold"): English is the
whole-word part of the bundled MiniLM tokenizer's vocabulary. Without that file nothing is
respelt. Nor is a first letter ("cant" is not "want"): a slip is rarely there.

The understanding reads the respelt message and quotes the words the user typed
(:meth:`Respelt.original`); the registry's grounding check (:mod:`agent.learning.profile`)
reads a quote respelt the same way, so a typo that proposes a value is one the check accepts.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from agent.learning import vocabulary
from agent.research.tickers import COMPANY_NAMES

#: Cue words the rules read, beyond the vocabulary tables' own words.
_CUES = """want wanna need prefer rather follow following track tracking watch watching
monitor keep already own owned hold holding holdings shares stock stocks portfolio watchlist
horizon timeframe timeline years months decades decade invest investing investment
investments investor savings money retire retiring retirement pension currency dividend
dividends income growth drawdown percent maximum limit lose losing loss losses exclude never
avoid interested interest sector sectors report reports summary summaries detailed brief
short tolerance risk aggressive conservative moderate cautious careful safe please work
employer salary address name actually sorry correction instead anymore sold bought""".split()
#: Contractions typed without their apostrophe are words too ("cant" is not "want").
_CONTRACTIONS = frozenset(
    """cant dont wont isnt arent wasnt werent didnt doesnt hasnt havent hadnt wouldnt couldnt
    shouldnt mustnt aint thats whats lets youre theyre hes shes ive youve weve theyve id youd
    hed shed wed theyd ill youll hell shell well theyll""".split()
)
_WORD = re.compile(r"[A-Za-z]+")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: Shorter words are too close to too many others to respell.
_SHORTEST = 4


def _lexicon() -> frozenset[str]:
    tables = (
        vocabulary.RISK,
        vocabulary.STYLE,
        vocabulary.GOAL,
        vocabulary.INCOME,
        vocabulary.EXCLUDED_SECTORS,
        vocabulary.SECTORS,
    )
    phrases = [p for table in tables for value, words in table.items() for p in (value, *words)]
    # A table's short words are ordinary ones ("what", "flow"), too near the cues to put back.
    told = {w for p in phrases for w in re.findall(r"[a-z]+", p.lower()) if len(w) > _SHORTEST}
    names = {w for p in COMPANY_NAMES for w in re.findall(r"[a-z]+", p.lower())}
    return frozenset({*told, *names, *_CUES})


#: The words a misspelling is put back to.
LEXICON = _lexicon()


class _English:
    """The tokenizer's whole words, read once on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._words: frozenset[str] | None = None

    def words(self) -> frozenset[str]:
        with self._lock:
            if self._words is None:
                self._words = _read_english()
            return self._words


def _read_english() -> frozenset[str]:
    from memory.embeddings import minilm_model_path
    from memory.errors import EmbeddingError

    try:
        lines = (minilm_model_path() / "vocab.txt").read_text(encoding="utf-8").split()
    except (EmbeddingError, OSError):
        return frozenset()
    words = {w for w in lines if w.isalpha() and w.islower()} | _CONTRACTIONS
    # A lexicon word's inflections are words too ("retiree", "owns"), never its misspellings.
    return frozenset(words | {w + end for w in LEXICON for end in ("s", "e", "d", "r", "es", "ed")})


_ENGLISH = _English()


def _edits(word: str) -> set[str]:
    """Every string one edit from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return {
        *(a + b[1:] for a, b in splits if b),
        *(a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1),
        *(a + c + b[1:] for a, b in splits if b for c in _LETTERS),
        *(a + c + b for a, b in splits for c in _LETTERS),
    }


def _meant(word: str, english: frozenset[str]) -> str | None:
    """The one lexicon word ``word`` misspells, or None."""
    lower = word.lower()
    if len(word) < _SHORTEST or lower in LEXICON or lower in english or word.isupper():
        return None
    near = {w for w in _edits(lower) & LEXICON if w[0] == lower[0]}
    if len(near) != 1:
        return None
    fixed = near.pop()
    if word[0].isupper() and len(fixed) <= _SHORTEST:
        return None  # "Mehta" is a name, not "Meta"
    return fixed.capitalize() if word[0].isupper() else fixed


@dataclass(frozen=True)
class Respelt:
    """A text with its misspellings put back, and where each character came from."""

    text: str
    #: For each character of ``text``: the first and last index of the original it stands for.
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    source: str

    def original(self, quote: str) -> str:
        """The words the user typed where ``quote`` (a span of :attr:`text`) stands."""
        at = self.text.find(quote)
        if at < 0 or not quote:
            return quote
        return self.source[self.starts[at] : self.ends[at + len(quote) - 1] + 1]


def respell(text: str) -> Respelt:
    """``text`` with each word one edit from exactly one lexicon word put back to it."""
    english = _ENGLISH.words()
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for match in _WORD.finditer(text) if english else ():
        fixed = _meant(match.group(0), english)
        if fixed is None:
            continue
        gap = range(at, match.start())
        out.append(text[at : match.start()] + fixed)
        starts += [*gap, *([match.start()] * len(fixed))]
        ends += [*gap, *([match.end() - 1] * len(fixed))]
        at = match.end()
    rest = range(at, len(text))
    return Respelt("".join([*out, text[at:]]), (*starts, *rest), (*ends, *rest), text)


def respelled(text: str) -> str:
    """``text`` with its misspellings put back (:func:`respell`)."""
    return respell(text).text
