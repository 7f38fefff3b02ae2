"""Parts of a query on the Qdrant Edge shard (:mod:`memory.store.edge`): the engine
conditions a search filter becomes, and the exact reads of a query's candidates -- their
cosines to the dense vector, and (when a ranking asks for them) to their sentence views
(:mod:`memory.store.views`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import qdrant_edge as qe

from memory.store.common import VECTOR, prefilter
from memory.store.scoring import COSINE_DIGITS

# -- filters ------------------------------------------------------------------------------------


def edge_prefilter(filter: Mapping[str, Any] | None) -> list[Any]:
    """:func:`memory.store.common.prefilter` for the shard. Booleans are left to the exact
    check (the binding reads ``True`` as the integer 1)."""

    def equal(path: str, value: Any) -> Any:
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            return qe.FieldCondition(path, match=qe.MatchValue(value))
        return qe.FieldCondition(path, range=qe.RangeFloat(gte=float(value), lte=float(value)))

    def compare(path: str, name: str, bound: float) -> Any:
        return qe.FieldCondition(path, range=qe.RangeFloat(**{name: bound}))

    return prefilter(filter, equal=equal, compare=compare)


# -- exact reads of a query's candidates ---------------------------------------------------


def exact_cosines(
    shard: qe.EdgeShard, vector: list[float], ids: list[Any], using: str = VECTOR
) -> dict[Any, float]:
    """Point id → cosine of ``vector`` to the point's closest vector named ``using`` (the
    engine's MaxSim score of an exact query over ``ids``), rounded as :func:`best_cosines`
    rounds; points without such a vector are absent."""
    if not ids or not any(vector):
        return {}
    request = qe.QueryRequest(
        limit=len(ids),
        query=qe.Query.Nearest([vector], using=using),
        filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
        params=qe.SearchParams(exact=True),
        with_payload=False,
    )
    return {p.id: round(float(p.score), COSINE_DIGITS) for p in shard.query(request)}


__all__ = ["edge_prefilter", "exact_cosines"]
