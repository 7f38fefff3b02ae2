"""Which profile attribute a clause speaks of, by meaning rather than by phrasing.

The detectors of :mod:`agent.learning.phrasing` need the words a rule was written for; a user
who says the same thing another way ("stocks crashing would wreck my nerves", "they sign my
paycheque at Nvidia") states nothing to them. Here each clause of the user's own words is
embedded with the bundled MiniLM (:class:`memory.embeddings.MiniLMEmbedder`, numpy, no
torch) and compared with a few descriptions of each attribute written for the purpose
(:mod:`agent.learning.senses`: generic sentences, none taken from a corpus case). A clause
close enough to an attribute (cosine at least :data:`THRESHOLD`, chosen on the develop split
by ``scripts/curve_meaning.py``) is read for that attribute's value **from its words** with
the same readers the rules use: tickers, currencies, durations, sector words, company names.
A clause that names no such value states nothing, however close its meaning.

Risk tolerance is the exception: a reaction to losses names no value word, so its value is
the level whose descriptions the clause is closest to; :func:`states_risk` is that same
judgment, which the registry's grounding check (:mod:`agent.learning.profile`) accepts as a
quote stating the level.

The model loads on the first message read, never at import (chat start stays fast); the
descriptions are embedded once per process, clauses are cached by text (a message is read
several times: as itself, and as context of the next).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from agent.learning import quantities, senses, symbols
from agent.learning.phrasing import Found, bare_value

#: Cosine similarity a clause needs to an attribute's nearest description (develop split:
#: the precision/recall curve of ``scripts/curve_meaning.py``).
THRESHOLD = 0.5
#: The same for a risk level, which is read from the meaning alone (no value word): higher.
RISK_THRESHOLD = 0.6
#: How much closer a risk level must be than the next one for the clause to state it.
RISK_MARGIN = 0.1
#: Clauses kept embedded (a message is read again as context of later messages).
_CACHE_SIZE = 512

_I = re.IGNORECASE
_SELF = re.compile(r"\b(?:i|i'm|im|i've|ive|i'd|i'll|me|my|mine|myself|we|our|us)\b", _I)
_NEGATION = re.compile(r"\b(?:not|never|no|nothing|none|without)\b|n't\b|\bcannot\b", _I)
_EXPERIENCE = re.compile(r"\b(?:been|past|last|ago|since|experience|already|for the)\b", _I)
_SOLD = re.compile(r"\b(?:sold|selling|sell|dumped|got rid of|exited|closed|used to)\b", _I)
#: Where one clause ends and the next begins: punctuation, a dash, a conjunction of reason.
_BREAK = re.compile(
    r"\s*(?:[,;:.!?]+|\s-+\s|\b(?:but|so|because|since|which means|although|though)\b)\s*", _I
)


def clauses(text: str) -> list[tuple[str, int]]:
    """The clauses of ``text`` with where each starts (verbatim spans)."""
    out, start = [], 0
    for cut in [*_BREAK.finditer(text), None]:
        end = len(text) if cut is None else cut.start()
        if text[start:end].strip():
            out.append((text[start:end], start))
        if cut is not None:
            start = cut.end()
    return out


class _Model:
    """The embedder and the descriptions' vectors, loaded once on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encode: Any = None
        self._failed = False
        self.senses: dict[str, np.ndarray] = {}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def ready(self) -> bool:
        with self._lock:
            if self._encode is None and not self._failed:
                self._load()
            return self._encode is not None

    def _load(self) -> None:
        from memory.embeddings import MiniLMEmbedder
        from memory.errors import EmbeddingError

        embedder = MiniLMEmbedder()
        try:
            embedder.load()
        except EmbeddingError:
            self._failed = True  # no model installed: the rules alone read the message
            return
        self._encode = embedder._model.encode
        for name, texts in senses.SENSES.items():
            self.senses[name] = self._encode(list(texts))

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``, embedding only those not cached."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                for text, row in zip(missing, self._encode(missing), strict=True):
                    self._cache[text] = row
            for text in texts:
                self._cache.move_to_end(text)
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
            return np.stack([self._cache[t] for t in texts])


_MODEL = _Model()


def scores(texts: Sequence[str]) -> list[dict[str, float]]:
    """For each text, its similarity to each sense (the nearest of the sense's descriptions)."""
    if not texts or not _MODEL.ready():
        return [{} for _ in texts]
    rows = _MODEL.vectors(texts)
    table = {name: (rows @ vectors.T).max(axis=1) for name, vectors in _MODEL.senses.items()}
    return [{name: float(column[i]) for name, column in table.items()} for i in range(len(texts))]


def risk_level(clause: str, score: dict[str, float]) -> str | None:
    """The risk level ``clause`` states by its meaning, or None: a risk level must be the
    nearest of all senses, near enough (:data:`RISK_THRESHOLD`) and clearly nearer than the
    other levels. A negated clause states none: the embedding barely tells "I can handle big
    swings" from "I can't"."""
    if not score or _NEGATION.search(clause):
        return None
    top = max(score, key=lambda name: score[name])
    if not top.startswith("risk:") or score[top] < RISK_THRESHOLD:
        return None
    others = [score[f"risk:{v}"] for v in senses.RISK_LEVELS if f"risk:{v}" != top]
    return top.removeprefix("risk:") if score[top] - max(others) >= RISK_MARGIN else None


def states_risk(value: object, text: str) -> bool:
    """Whether a clause of ``text`` in the first person states the risk level ``value`` by
    its meaning (the grounding of a risk reading of :func:`detect`)."""
    own = [c for c, _ in clauses(text) if _SELF.search(c)]
    return any(risk_level(c, s) == value for c, s in zip(own, scores(own), strict=True))


def detect(part: str, known: set[str], skip: set[str]) -> list[Found]:
    """``(attribute, raw value, position)`` for each clause of ``part`` whose meaning is an
    attribute not in ``skip`` and whose words name a value of it."""
    pieces = [(c, at) for c, at in clauses(part) if len(re.findall(r"\w+", c)) >= 3]
    pieces = [(c, at) for c, at in pieces if _SELF.search(c)]
    found: list[Found] = []
    for (clause, at), score in zip(pieces, scores([c for c, _ in pieces]), strict=True):
        for attribute, raw in _values(clause, part, score, known):
            if attribute not in skip and all(f[0] != attribute for f in found):
                found.append((attribute, raw, at))
    return found


def _values(clause: str, part: str, score: dict[str, float], known: set[str]) -> list[Any]:
    """The values ``clause`` states for the sense it is nearest, read from its words."""
    level = risk_level(clause, score)
    if level is not None:
        return [("risk_tolerance", level)]
    if not score:
        return []
    sense = max(score, key=lambda name: score[name])
    if sense.startswith("risk:") or score[sense] < THRESHOLD:
        return []
    found = [(a, _value(a, clause, part, known)) for a in senses.ATTRIBUTES[sense]]
    return [(a, raw) for a, raw in found if raw is not None]


def _value(attribute: str, clause: str, part: str, known: set[str]) -> object | None:
    """The value of ``attribute`` the words of ``clause`` name, or None."""
    negated = _NEGATION.search(clause) is not None
    if attribute in ("excluded_tickers", "excluded_sectors"):
        # "I'm at Nvidia so I can't hold it": the ticker may be named in the part only.
        return bare_value(attribute, clause, known) or (
            bare_value(attribute, part, known) if attribute == "excluded_tickers" else None
        )
    if negated:
        return None
    if attribute == "horizon_years":
        if _EXPERIENCE.search(clause):
            return None
        spans = [years for _, years in quantities.durations(clause)]
        return spans[-1] if spans else None
    if attribute in ("holdings", "watchlist"):
        if _SOLD.search(clause):
            return None
        named = [s for s, _ in symbols.tickers_in(clause, known)]
        return named or None
    return bare_value(attribute, clause, known)
