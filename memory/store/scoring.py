"""The score of a query search on the Qdrant-format stores, and its parts.

A query hit has three parts (:class:`Hit`): ``dense``, the cosine similarity of the item's
best embedded field to the query (in [-1, 1]); ``lexical``, the share of the query's BM25
terms (stop words removed) that occur in the item's embedded fields (in [0, 1]; 0 without
BM25); ``fused``, the reciprocal-rank fusion of the dense and BM25 rankings scaled to [0, 1]
(1 = first in both), reported for information. The reported ``score`` is

    score = 1 − (1 − d) · (1 − lexical),    d = max(dense, 0)

a similarity in [0, 1] (a noisy-OR of meaning and words): the cosine similarity when no query
term occurs (or the store has no BM25), raised toward 1 by the share of terms that do; 1 for an
item equal to the query or containing every query term. Results are
ordered by score, then dense, then lexical, then namespace and key: the order is the score's
order, and it depends on the data only (not on the engine's order among ties). Details: ``docs/architecture.md``, "Hybrid search".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import SearchItem

from memory.store.common import RRF_K, RRF_WEIGHTS, SPARSE, VECTOR

#: How many candidates each ranking (dense, BM25) contributes at least: the top-k of a search
#: does not depend on the limit asked for as long as offset + limit stays below this.
CANDIDATES = 64


@dataclass(frozen=True)
class Hit:
    """One candidate of a query search, with the parts of its score (module docstring)."""

    payload: Mapping[str, Any]
    dense: float | None
    lexical: float = 0.0
    fused: float | None = None

    @property
    def score(self) -> float:
        return similarity(self.dense, self.lexical)

    def order(self) -> tuple[float, float, float, str, str]:
        """The sort key: best score first, then dense, then lexical, then namespace and key."""
        return (
            -self.score,
            -(self.dense if self.dense is not None else -2.0),
            -self.lexical,
            str(self.payload.get("ns_key", "")),
            str(self.payload.get("key", "")),
        )


def similarity(dense: float | None, lexical: float) -> float:
    """``1 − (1 − d) · (1 − lexical)`` with ``d`` the dense part clipped to [0, 1]."""
    d = 0.0 if dense is None or not math.isfinite(dense) else min(max(dense, 0.0), 1.0)
    share = min(max(lexical, 0.0), 1.0)
    return min(1.0, d + (1.0 - d) * share)


def idf(count: int, frequency: int) -> float:
    """BM25's inverse document frequency of a term held by ``frequency`` of ``count`` items,
    as Qdrant's IDF modifier computes it: ``ln(1 + (N − df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (count - frequency + 0.5) / (frequency + 0.5))


def fused_score(raw: float) -> float:
    """An RRF score scaled to [0, 1] (``sum(weights) / RRF_K``: first in both rankings)."""
    return min(1.0, max(0.0, raw * (RRF_K / sum(RRF_WEIGHTS))))


#: Decimal places of the dense part: below the resolution of the float32 vectors the engines
#: store, so that a vector handed back with a different last bit (qdrant-client's local mode
#: does) cannot reorder near-ties.
COSINE_DIGITS = 9


def best_cosine(query: Sequence[float], vectors: Iterable[Sequence[float]]) -> float | None:
    """The cosine similarity of ``query`` to the closest of ``vectors``, rounded to
    :data:`COSINE_DIGITS` places (None: no vector)."""
    qn = math.sqrt(sum(x * x for x in query))
    best: float | None = None
    for vector in vectors:
        vn = math.sqrt(sum(x * x for x in vector))
        if qn == 0 or vn == 0:
            continue
        cosine = sum(a * b for a, b in zip(query, vector, strict=False)) / (qn * vn)
        best = cosine if best is None else max(best, cosine)
    return None if best is None else round(best, COSINE_DIGITS)


def term_share(query_terms: Iterable[int], item_terms: Iterable[int]) -> float:
    """The share of the distinct query terms that the item contains (0 for no query term)."""
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    return len(wanted & set(item_terms)) / len(wanted)


def fused_hit(point: Any, query: Sequence[float], query_terms: Iterable[int]) -> Hit:
    """The :class:`Hit` of one point a fused (dense + BM25) query returned with its vectors:
    its payload, best cosine to ``query``, share of ``query_terms`` and fused score. The
    engines' points have the same shape (``payload``, ``vector`` by name, ``score``)."""
    vectors: Any = point.vector if isinstance(point.vector, dict) else {}
    terms = vectors.get(SPARSE)
    return Hit(
        point.payload or {},
        best_cosine(query, vectors.get(VECTOR) or []),
        term_share(query_terms, terms.indices if terms is not None else ()),
        fused_score(point.score),
    )


class ScoredItem(SearchItem):
    """A ``SearchItem`` of a query search that also carries its score's parts:
    ``dense`` (cosine, raw), ``lexical`` (share of query terms) and ``fused`` (RRF in [0, 1])."""

    __slots__ = ("dense", "fused", "lexical")

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: float | None,
        *,
        dense: float | None = None,
        lexical: float | None = None,
        fused: float | None = None,
    ) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.dense = dense
        self.lexical = lexical
        self.fused = fused

    def parts(self) -> dict[str, float | None]:
        """The parts of the score, by name."""
        return {"dense": self.dense, "lexical": self.lexical, "fused": self.fused}


__all__ = [
    "CANDIDATES",
    "Hit",
    "ScoredItem",
    "best_cosine",
    "fused_score",
    "idf",
    "similarity",
    "term_share",
]
