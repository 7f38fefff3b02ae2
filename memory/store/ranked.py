"""Query searches that rank as recall does, for whatever holds the store.

A store's own ``search(..., query=...)`` orders by similarity alone. Cold memory has one
ranking (:mod:`memory.ranking`: relevance, bounded recency and importance boosts, the
question's time window and keys), and every query search of it goes through it here:
:func:`widen` asks the wrapped store for the ranking's candidate pool instead of the page
asked for, :func:`narrow` ranks the pool and cuts the page out of the ranked order. The
principal's scoped view (:class:`memory.store.scoped.ScopedStore`) does it for recall,
``analyst memory search``, the answers from memory, LangMem's tools and a forget by topic;
:class:`RankedStore` does it for a store used without a principal's view, such as the
LangGraph server's store that Studio searches (``graphs/studio_store.py``).

A searched item comes back as a :class:`memory.ranking.RankedItem`: its ``score`` is the
ranking's total, its ``parts`` the score's parts, its ``similarity`` the store's own score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from langgraph.store.base import BaseStore, Item, Op, Result, SearchOp

from memory.ranking import Plan, Ranking, plan, ranked


def widen(op: Op, ranking: Ranking) -> tuple[Op, Plan | None]:
    """``op`` as the wrapped store should run it, and the plan of its ranking: a query search
    asks for the ranking's pool from the first candidate (the page is cut after ranking);
    any other operation (a listing, a search without a query) runs as it is."""
    if not isinstance(op, SearchOp) or not (op.query or "").strip() or op.limit < 1:
        return op, None
    wanted = op.offset + op.limit
    planned = plan(op.query, wanted, ranking)
    return op._replace(limit=max(planned.pool, wanted), offset=0), planned


def narrow(op: Op, planned: Plan | None, result: Result) -> Result:
    """The result of ``op`` (as asked, before :func:`widen`): for a widened query search, its
    page of the ranked pool."""
    if planned is None or not isinstance(op, SearchOp):
        return result
    assert isinstance(result, list)
    items: Sequence[Item] = result
    return list(ranked(items, planned)[op.offset : op.offset + op.limit])


class RankedStore(BaseStore):
    """``store`` whose query searches rank as recall does (module docstring); everything else
    passes through unchanged."""

    def __init__(self, store: BaseStore, ranking: Ranking | None = None) -> None:
        if isinstance(store, RankedStore):
            store = store.store
        self.store = store
        self.ranking = ranking or Ranking()
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        wide = [widen(op, self.ranking) for op in ops]
        results = self.store.batch([w for w, _ in wide])
        return [narrow(op, p, r) for op, (_, p), r in zip(ops, wide, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        wide = [widen(op, self.ranking) for op in ops]
        results = await self.store.abatch([w for w, _ in wide])
        return [narrow(op, p, r) for op, (_, p), r in zip(ops, wide, results, strict=True)]


__all__ = ["RankedStore", "narrow", "widen"]
