"""The score of a query search on the Qdrant-format stores, and its parts.

A query hit has three parts (:class:`Hit`): ``dense``, the cosine similarity of the item's
best embedded field to the query (in [-1, 1]); ``lexical``, the share of the query's BM25
terms (stop words removed) that occur in the item's embedded fields, each term counting with
``ln(1 + idf)``, its IDF in the searched scope dampened (in [0, 1]; 0 without BM25);
``fused``, the reciprocal-rank fusion of the dense and BM25 rankings scaled to [0, 1] (1 =
first in both), reported for information. The reported ``score`` is

    score = 1 − (1 − d) · (1 − lexical),    d = max(dense, 0)

a similarity in [0, 1] (a noisy-OR of meaning and words): the cosine similarity when no query
term occurs (or the store has no BM25), raised toward 1 by the share of terms that do; 1 for an
item equal to the query or containing every query term. Results are
ordered by score, then dense, then lexical, then namespace and key: the order is the score's
order, and it depends on the data only (not on the engine's order among ties). Details: ``docs/architecture.md``, "Hybrid search".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from langgraph.store.base import SearchItem

from memory.ranking import KNOBS
from memory.store.common import RRF_K, RRF_WEIGHTS, SPARSE, VECTOR
from memory.store.views import VIEWS

#: How many candidates each ranking (dense, BM25) contributes at least
#: (:attr:`memory.ranking.Knobs.store_candidates`).
CANDIDATES = KNOBS.store_candidates


@dataclass(frozen=True)
class Hit:
    """One candidate of a query search, with the parts of its score (module docstring)."""

    payload: Mapping[str, Any]
    dense: float | None
    lexical: float = 0.0
    fused: float | None = None
    #: the best cosine of the query to the item's text or one of its sentence views
    #: (:mod:`memory.store.views`); None where the store keeps no views
    view: float | None = None
    #: the engine's id of the point, where the engine reads the view part after the search
    point: Any = None

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


def best_cosines(
    query: Sequence[float], vectors: Sequence[Sequence[Sequence[float]]]
) -> list[float | None]:
    """For each candidate's vectors, the cosine similarity of ``query`` to the closest of
    them, rounded to :data:`COSINE_DIGITS` places (None: no usable vector).

    All candidates in one matrix product (numpy, imported on first use as the embedder does):
    as Python loops, the cosines of a hybrid search's 128 candidates of 384 dimensions took
    most of its time."""
    import numpy as np

    owners = [i for i, own in enumerate(vectors) for _ in own]
    best: list[float | None] = [None] * len(vectors)
    q = np.asarray(query, dtype=np.float64)
    qn = float(np.linalg.norm(q))
    if not owners or qn == 0:
        return best
    matrix = np.asarray([v for own in vectors for v in own], dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    valid = norms > 0
    cosines = np.full(len(owners), -np.inf)
    cosines[valid] = (matrix[valid] @ q) / (norms[valid] * qn)
    for owner, cosine, ok in zip(owners, cosines.tolist(), valid.tolist(), strict=True):
        if ok:
            current = best[owner]
            best[owner] = cosine if current is None else max(current, cosine)
    return [None if b is None else round(b, COSINE_DIGITS) for b in best]


def term_weight(idf: float) -> float:
    """How much a query term counts in the lexical part: ``ln(1 + idf)``, its IDF in the
    searched scope dampened, so that a rare term (a name, a place) counts more than a common
    one without one rare word deciding alone."""
    return math.log1p(max(idf, 0.0))


def term_share(
    query_terms: Sequence[int], item_terms: Iterable[int], weights: Sequence[float] = ()
) -> float:
    """The share of the query's terms that the item contains, each term counting with its
    :func:`term_weight` (``weights``: the terms' IDF in the searched scope, same order as
    ``query_terms``; equal weights without them); 0 for no query term."""
    return term_sharer(query_terms, weights)(item_terms)


def term_sharer(
    query_terms: Sequence[int], weights: Sequence[float] = ()
) -> Callable[[Iterable[int]], float]:
    """:func:`term_share` of ``query_terms`` as a function of an item's terms, the weights
    computed once for all the candidates of a search."""
    if not query_terms:
        return lambda _terms: 0.0
    if not weights:
        wanted = set(query_terms)
        return lambda terms: len(wanted & set(terms)) / len(wanted)
    counted = dict(zip(query_terms, map(term_weight, weights), strict=True))
    total = sum(counted.values())
    if total <= 0:
        return lambda _terms: 0.0

    def share(terms: Iterable[int]) -> float:
        held = set(terms)
        return sum(w for t, w in counted.items() if t in held) / total

    return share


def fused_hits(
    points: Iterable[Any],
    query: Sequence[float],
    query_terms: Sequence[int],
    weights: Sequence[float] = (),
    *,
    views: bool = False,
) -> list[Hit]:
    """The :class:`Hit` of each point a fused (dense + BM25) query returned with its vectors:
    its payload, best cosine to ``query``, :func:`term_share` of ``query_terms`` (weighted by
    their IDF ``weights``) and fused score. The engines' points have the same shape
    (``payload``, ``vector`` by name, ``score``). With ``views`` (the store keeps them), each
    hit's ``view`` is its best cosine over its text and its sentence views."""
    points = list(points)
    named = [p.vector if isinstance(p.vector, dict) else {} for p in points]
    cosines = best_cosines(query, [v.get(VECTOR) or [] for v in named])
    seen = best_cosines(query, [v.get(VIEWS) or [] for v in named]) if views else []
    share = term_sharer(query_terms, weights)
    hits = []
    for i, (point, vectors, cosine) in enumerate(zip(points, named, cosines, strict=True)):
        terms = vectors.get(SPARSE)
        hits.append(
            Hit(
                point.payload or {},
                cosine,
                share(terms.indices if terms is not None else ()),
                fused_score(point.score),
                best_view(cosine, seen[i]) if views else None,
            )
        )
    return hits


def best_view(dense: float | None, views: float | None) -> float | None:
    """The view part of a hit: the better of its text's cosine and its best sentence view's
    (a text of one sentence has no view: its own cosine is that sentence's)."""
    if views is None:
        return dense
    return views if dense is None else max(dense, views)


@dataclass(frozen=True)
class UnreadViews:
    """A query hit whose sentence views (:mod:`memory.store.views`) its store has not read:
    ``source`` reads them (:meth:`ViewReader.read_views`) for the query's ``vector`` (one
    object shared by the search's hits) and the hit's ``point``."""

    source: ViewReader
    vector: Sequence[float]
    point: Any


class ViewReader(Protocol):
    """A store that leaves its hits' sentence views unread until a ranking asks for them."""

    def read_views(self, unread: Sequence[UnreadViews]) -> list[float | None]:
        """The best sentence-view cosine of each hit (None: the hit has no view)."""
        ...

    async def aread_views(self, unread: Sequence[UnreadViews]) -> list[float | None]:
        """:meth:`read_views` on the event loop."""
        ...


class ScoredItem(SearchItem):
    """A ``SearchItem`` of a query search that also carries its score's parts:
    ``dense`` (cosine, raw), ``lexical`` (share of query terms), ``fused`` (RRF in [0, 1]) and
    ``view`` (best cosine over the text and its sentence views; None: the store keeps none).

    ``unread``: the store has not read the hit's sentence views yet; ``view`` is then the least
    the view part can be (its text's cosine, or what a reply is lifted to), and :meth:`seen`
    completes it. A ranking reads them only for the hits that can still reach its page
    (:mod:`memory.store.ranked`)."""

    __slots__ = ("dense", "fused", "lexical", "unread", "view")

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
        view: float | None = None,
        unread: UnreadViews | None = None,
    ) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.dense = dense
        self.lexical = lexical
        self.fused = fused
        self.view = view
        self.unread = unread

    def seen(self, views: float | None) -> ScoredItem:
        """This hit with its sentence views read: ``views`` is their best cosine (None: the
        hit has none), its view part the better of that and what it was."""
        return ScoredItem(
            self.namespace,
            self.key,
            self.value,
            self.created_at,
            self.updated_at,
            self.score,
            dense=self.dense,
            lexical=self.lexical,
            fused=self.fused,
            view=best_view(self.view, views),
        )

    def parts(self) -> dict[str, float | None]:
        """The parts of the score, by name."""
        return {
            "dense": self.dense,
            "lexical": self.lexical,
            "fused": self.fused,
            "view": self.view,
        }


__all__ = [
    "CANDIDATES",
    "Hit",
    "ScoredItem",
    "UnreadViews",
    "ViewReader",
    "best_cosines",
    "best_view",
    "fused_hits",
    "fused_score",
    "idf",
    "similarity",
    "term_share",
    "term_sharer",
    "term_weight",
]
