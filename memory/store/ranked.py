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

Between the two, :class:`Context` adds the replies of the pool's dialogue turns to the pool
(:mod:`memory.recall_context`: a terse answer is found through the turn it answers), with one
more read of the wrapped store for those not already in it; then :class:`Views` reads the
sentence views a store left unread (:class:`memory.store.scoring.UnreadViews`) of the
candidates that can still reach the page (:func:`memory.ranking.reaching`, an exact bound:
the page, its order and its scores are those of reading every candidate's views).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from langgraph.store.base import BaseStore, Item, Op, Result, SearchItem, SearchOp

from memory.ranking import Plan, Ranking, plan, ranked, reaching
from memory.recall_context import Lift
from memory.store.scoring import ScoredItem, UnreadViews, ViewReader

#: An operation as the wrapped store runs it, with the plan of its ranking (:func:`widen`).
Widened = tuple[Op, Plan | None]


def widen(op: Op, ranking: Ranking) -> Widened:
    """``op`` as the wrapped store should run it, and the plan of its ranking: a query search
    asks for the ranking's pool from the first candidate (the page is cut after ranking);
    any other operation (a listing, a search without a query) runs as it is."""
    if not isinstance(op, SearchOp) or not (op.query or "").strip() or op.limit < 1:
        return op, None
    wanted = op.offset + op.limit
    planned = plan(op.query, wanted, ranking)
    return op._replace(limit=max(planned.pool, wanted), offset=0), planned


def _items(result: Result) -> list[Item]:
    """A search's result as the items it is (a search returns a list of items)."""
    assert isinstance(result, list)
    return cast(list[Item], result)


def narrow(op: Op, planned: Plan | None, result: Result) -> Result:
    """The result of ``op`` (as asked, before :func:`widen`): for a widened query search, its
    page of the ranked pool."""
    if planned is None or not isinstance(op, SearchOp):
        return result
    page = ranked(_items(result), planned)[op.offset : op.offset + op.limit]
    return cast(list[SearchItem], page)


@dataclass(frozen=True)
class Context:
    """The replies a batch's widened query searches lift (:class:`memory.recall_context.Lift`),
    by the position of their result, and the one read of the wrapped store they need."""

    lifts: dict[int, Lift]

    @classmethod
    def of(cls, ops: Sequence[Op], wide: Sequence[Widened], results: list[Result]) -> Context:
        """The lifts of ``results`` (the wrapped store's results of the widened ``wide`` of
        ``ops``): one per query search whose candidates have replies."""
        lifts: dict[int, Lift] = {}
        for i, (op, (_, planned), result) in enumerate(zip(ops, wide, results, strict=True)):
            if planned is not None and isinstance(op, SearchOp):
                lift = Lift.of(_items(result), op.offset + op.limit)
                if lift is not None:
                    lifts[i] = lift
        return cls(lifts)

    @property
    def reads(self) -> list[Op]:
        """The reads of the replies that no search found itself, every search's in one list."""
        return [read for lift in self.lifts.values() for read in lift.reads]

    def apply(self, results: list[Result], read: Sequence[Result]) -> list[Result]:
        """``results`` with each lifted search's replies added (``read``: :attr:`reads`'s)."""
        out, at = list(results), 0
        for i, lift in self.lifts.items():
            got = read[at : at + len(lift.reads)]
            at += len(lift.reads)
            out[i] = lift.apply(_items(results[i]), got)
        return out


def with_context(
    store: BaseStore, ops: Sequence[Op], wide: Sequence[Widened], results: list[Result]
) -> list[Result]:
    """``results`` with the replies their searches lift, read from ``store`` (sync)."""
    context = Context.of(ops, wide, results)
    if not context.lifts:
        return results
    return context.apply(results, store.batch(context.reads) if context.reads else [])


async def awith_context(
    store: BaseStore, ops: Sequence[Op], wide: Sequence[Widened], results: list[Result]
) -> list[Result]:
    """:func:`with_context` on the event loop."""
    context = Context.of(ops, wide, results)
    if not context.lifts:
        return results
    return context.apply(results, await store.abatch(context.reads) if context.reads else [])


@dataclass(frozen=True)
class Views:
    """The sentence views a batch's widened query searches read: those of the candidates that
    can still reach the page (``needed``, by the position of their result), in one list."""

    needed: dict[int, list[int]]
    reads: list[UnreadViews]

    @classmethod
    def of(
        cls, ops: Sequence[Op], wide: Sequence[Widened], results: list[Result], every: bool
    ) -> Views:
        """The views to read for ``results`` (as :meth:`Context.of`); ``every``: of every
        candidate whose views are unread, as if no bound were known."""
        needed: dict[int, list[int]] = {}
        reads: list[UnreadViews] = []
        for i, (op, (_, planned), result) in enumerate(zip(ops, wide, results, strict=True)):
            if planned is None or not isinstance(op, SearchOp):
                continue
            items = _items(result)
            unread = [getattr(item, "unread", None) for item in items]
            open_ = [u is not None for u in unread]
            reach = open_ if every else reaching(items, planned, op.offset + op.limit, open_)
            at = [j for j, wanted in enumerate(reach) if wanted]
            if at:
                needed[i] = at
                reads += [cast(UnreadViews, unread[j]) for j in at]
        return cls(needed, reads)

    def by_source(self) -> list[tuple[ViewReader, list[int]]]:
        """The reads grouped by the store that reads them (their positions in :attr:`reads`)."""
        groups: dict[int, tuple[ViewReader, list[int]]] = {}
        for k, unread in enumerate(self.reads):
            groups.setdefault(id(unread.source), (unread.source, []))[1].append(k)
        return list(groups.values())

    def apply(self, results: list[Result], seen: Sequence[float | None]) -> list[Result]:
        """``results`` with the views read (``seen``: the best cosine of each of :attr:`reads`)."""
        out, at = list(results), 0
        for i, positions in self.needed.items():
            items = list(_items(results[i]))
            for j in positions:
                items[j] = cast(ScoredItem, items[j]).seen(seen[at])
                at += 1
            out[i] = items
        return out


def with_views(
    ops: Sequence[Op], wide: Sequence[Widened], results: list[Result], *, every: bool = False
) -> list[Result]:
    """``results`` with the sentence views their pages need read (sync; :class:`Views`)."""
    views = Views.of(ops, wide, results, every)
    if not views.reads:
        return results
    seen: list[float | None] = [None] * len(views.reads)
    for source, at in views.by_source():
        for k, cosine in zip(at, source.read_views([views.reads[k] for k in at]), strict=True):
            seen[k] = cosine
    return views.apply(results, seen)


async def awith_views(
    ops: Sequence[Op], wide: Sequence[Widened], results: list[Result], *, every: bool = False
) -> list[Result]:
    """:func:`with_views` on the event loop."""
    views = Views.of(ops, wide, results, every)
    if not views.reads:
        return results
    seen: list[float | None] = [None] * len(views.reads)
    for source, at in views.by_source():
        got = await source.aread_views([views.reads[k] for k in at])
        for k, cosine in zip(at, got, strict=True):
            seen[k] = cosine
    return views.apply(results, seen)


class RankedStore(BaseStore):
    """``store`` whose query searches rank as recall does (module docstring); everything else
    passes through unchanged."""

    def __init__(self, store: BaseStore, ranking: Ranking | None = None) -> None:
        inner: BaseStore = store.store if isinstance(store, RankedStore) else store
        self.store: BaseStore = inner
        self.ranking = ranking or Ranking()
        self.supports_ttl = inner.supports_ttl
        self.ttl_config = inner.ttl_config

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        wide = [widen(op, self.ranking) for op in ops]
        results = with_context(self.store, ops, wide, self.store.batch([w for w, _ in wide]))
        results = with_views(ops, wide, results)
        return [narrow(op, p, r) for op, (_, p), r in zip(ops, wide, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        wide = [widen(op, self.ranking) for op in ops]
        results = await self.store.abatch([w for w, _ in wide])
        results = await awith_context(self.store, ops, wide, results)
        results = await awith_views(ops, wide, results)
        return [narrow(op, p, r) for op, (_, p), r in zip(ops, wide, results, strict=True)]


__all__ = [
    "Context",
    "RankedStore",
    "Views",
    "awith_context",
    "awith_views",
    "narrow",
    "widen",
    "with_context",
    "with_views",
]
