"""The shared engine of the Qdrant-format stores (:class:`QdrantFormatStore`).

A LangGraph ``BaseStore`` whose batches are validated, planned (puts de-duplicated, every text
and query embedded once, the vectors checked) and run over a few engine primitives: retrieve,
query, scroll, scan, facet, upsert, delete, count and the filter conditions they take. Gets,
puts, searches, namespace listing, TTL refresh and sweeps are implemented here once; each
engine (:mod:`memory.store.edge`, :mod:`memory.store.qdrant`) supplies its connection and
primitives (:mod:`memory.store.primitives`); planning is :mod:`memory.store.planning`. Format
and semantics: ``docs/architecture.md``, "Long-term memory store".
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    tokenize_path,
)

from memory.embeddings import check_vectors
from memory.sealing import PLAIN, MemoryCipher
from memory.store.common import (
    BM25_AVG_LEN,
    namespace_matches,
    now_us,
    point_id,
    point_payload,
    search_item,
    stored_item,
    value_matches,
)
from memory.store.planning import BatchPlan, plan_batch, validate_op
from memory.store.primitives import EnginePrimitives, H, NewPoint, Payload, Terms
from memory.store.scoring import CANDIDATES, Hit, ScoredItem, UnreadViews, idf

logger = logging.getLogger(__name__)

#: The payload fields that order a listing (:meth:`QdrantFormatStore._newest`) and name its
#: points.
_ORDER_FIELDS = ["updated_us", "ns_key", "namespace", "key"]


class QdrantFormatStore(BaseStore, EnginePrimitives[H]):
    """What the Qdrant-format stores share (see the module docstring).

    Subclasses implement the connection (:meth:`_connected`) and the primitives of
    :class:`~memory.store.primitives.EnginePrimitives`, and set :attr:`hybrid` when query searches fuse a dense and a BM25 ranking.

    BM25 statistics are per search scope: a stored item's BM25 vector holds its terms'
    saturated frequencies only, and the IDF of each query term is computed at query time over
    the items under the searched namespace prefix (:meth:`_scope_terms`), so what other
    principals store never changes how one principal's search ranks (``docs/architecture.md``,
    "Hybrid search").
    """

    #: names the TTL sweeper's thread and its log lines
    engine = "qdrant"
    ttl_config: TTLConfig | None = None
    #: query searches take BM25 candidates and the lexical part of the score too
    hybrid: bool = False
    #: a query search leaves its hits' sentence views unread (:class:`~memory.store.scoring.
    #: UnreadViews`): a ranking reads them (:meth:`read_views`) for the hits that can still
    #: reach its page. Otherwise the engine scores them with the search.
    views_apart: bool = False

    def __init__(self, index: IndexConfig | None, cipher: MemoryCipher | None = None) -> None:
        #: Seals item values at rest (``ANALYST_MEMORY_KEY``; :mod:`memory.store.common`).
        self.cipher: MemoryCipher = cipher or PLAIN
        #: The store's clock, microseconds since the epoch: item times, TTL expiry and refresh
        #: (a test sets a fake one to expire items without waiting).
        self.clock: Callable[[], int] = now_us
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        self._bm25: Any = None
        self.index_config: IndexConfig | None = None
        self.embeddings: Embeddings | None = None
        #: the embedded fields of the index config: (path, tokenized path)
        self.fields: list[tuple[str, Any]] = []
        if index:
            if not index.get("dims"):
                raise ValueError("index config needs 'dims' (the embedding size)")
            self.index_config = cast(IndexConfig, dict(index))
            self.embeddings = ensure_embeddings(index.get("embed"))
            self.fields = [
                (p, "$" if p == "$" else tokenize_path(p)) for p in (index.get("fields") or ["$"])
            ]

    @property
    def dims(self) -> int | None:
        return self.index_config["dims"] if self.index_config else None

    @property
    def model_id(self) -> str | None:
        return getattr(self.embeddings, "model_id", None) if self.embeddings else None

    @property
    def bm25(self) -> Any:
        """Qdrant's BM25 tokenizer and term weighting (from qdrant-edge-py, imported on first
        use; the same term ids on every engine)."""
        if self._bm25 is None:
            import qdrant_edge

            self._bm25 = qdrant_edge.Bm25(qdrant_edge.Bm25Config(avg_len=BM25_AVG_LEN))
        return self._bm25

    def keeps_terms(self) -> bool:
        """Whether embedded items get a BM25 vector (the collection or shard declares one)."""
        return self.hybrid

    def keeps_views(self) -> bool:
        """Whether embedded items get sentence views (:mod:`memory.store.views`): the shard or
        collection declares their vector."""
        return False

    def document_terms(self, texts: Sequence[str]) -> Terms:
        """The BM25 document vector of an item's embedded texts (no IDF: see the class doc)."""
        vector = self.bm25.embed_document(" \n".join(texts))
        return Terms([int(i) for i in vector.indices], [float(v) for v in vector.values])

    # -- planning and embedding ---------------------------------------------------------------

    def plan(self, ops: Iterable[Op]) -> BatchPlan:
        """Validate ``ops`` and split them into a :class:`BatchPlan` (the last put of a key wins)."""
        embeds = self.embeddings is not None
        return plan_batch(ops, self.fields, embeds=embeds, views=embeds and self.keeps_views())

    def _vectors(
        self, plan: BatchPlan, docs: list[list[float]], queries: list[list[float]]
    ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        dims = cast(int, self.dims)
        source = self.model_id or type(self.embeddings).__name__
        docs = check_vectors(docs, count=len(plan.texts), dims=dims, source=source)
        queries = check_vectors(queries, count=len(plan.queries), dims=dims, source=source)
        return dict(zip(plan.texts, docs, strict=True)), dict(
            zip(plan.queries, queries, strict=True)
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self.plan(ops)
        docs: list[list[float]] = []
        queries: list[list[float]] = []
        if self.embeddings is not None:
            if plan.texts:
                docs = self.embeddings.embed_documents(plan.texts)
            queries = [self.embeddings.embed_query(q) for q in plan.queries]
        return self.execute(plan, *self._vectors(plan, docs, queries))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self.plan(ops)
        docs: list[list[float]] = []
        queries: list[list[float]] = []
        if self.embeddings is not None:
            if plan.texts:
                docs = await self.embeddings.aembed_documents(plan.texts)
            queries = list(
                await asyncio.gather(*(self.embeddings.aembed_query(q) for q in plan.queries))
            )
        doc_vectors, query_vectors = self._vectors(plan, docs, queries)
        return await asyncio.to_thread(self.execute, plan, doc_vectors, query_vectors)

    def execute(
        self,
        plan: BatchPlan,
        doc_vectors: dict[str, list[float]],
        query_vectors: dict[str, list[float]],
    ) -> list[Result]:
        """Run a planned, embedded batch on one connection: reads see the state before the
        batch's writes; TTLs the reads refresh are pushed forward, then the puts run."""
        results: list[Result] = [None] * len(plan.ops)
        with self._connected() as handle:
            now = self.clock()
            refresh: dict[str, float] = {}
            if plan.gets:
                self._gets(handle, plan.gets, results, now, refresh)
            for i, op in plan.searches:
                results[i] = self._search(
                    handle, op, query_vectors.get(op.query or ""), now, refresh
                )
            for i, lop in plan.lists:
                results[i] = self._list_namespaces(handle, lop, now)
            if refresh:
                self._refresh(handle, refresh, now)
            if plan.puts:
                self._puts(handle, plan, doc_vectors, now)
        return results

    # -- filters ------------------------------------------------------------------------------

    def omit_expired(self) -> bool:
        """Whether reads hide expired items before a sweep (``ttl_config["omit_expired"]``)."""
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    def live_filter(self, now: int, must: list[Any]) -> Any:
        """The engine filter of ``must`` that also drops items expired at ``now`` when reads
        omit them; ``None`` when there is nothing to filter."""
        must_not = [self._expired_condition(now)] if self.omit_expired() else []
        if not must and not must_not:
            return None
        return self._filter(must, must_not)

    def namespace_conditions(self, prefix: tuple[str, ...]) -> list[Any]:
        """The conditions selecting namespaces under ``prefix`` (none for the empty prefix)."""
        return [self._namespace_condition(prefix)] if prefix else []

    def value_filter(self, filter: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The part of a search filter the engine may apply: none when values are sealed
        (the engine sees only tokens); :meth:`matches` then checks every candidate."""
        return None if self.cipher.sealing else filter

    def matches(self, payload: Mapping[str, Any] | None, filter: Mapping[str, Any] | None) -> bool:
        """Whether the stored item passes ``filter``, checked on its opened value."""
        if not filter:
            return True
        return value_matches(self.cipher.open_object((payload or {}).get("value", {})), filter)

    # -- reads --------------------------------------------------------------------------------

    def _live(self, payload: Mapping[str, Any], now: int) -> bool:
        expires = payload.get("expires_us")
        return not (self.omit_expired() and expires is not None and expires <= now)

    def _gets(
        self,
        handle: H,
        gets: Sequence[tuple[int, GetOp]],
        results: list[Result],
        now: int,
        refresh: dict[str, float],
    ) -> None:
        """Answer each get: None unless the point is this very (namespace, key) and not
        expired; note the TTLs a read refreshes."""
        ids = list(dict.fromkeys(point_id(op.namespace, op.key) for _, op in gets))
        by_id = self._retrieve(handle, ids)
        for i, op in gets:
            pid = point_id(op.namespace, op.key)
            payload = by_id.get(pid)
            if (
                payload is None
                or tuple(payload.get("namespace", ())) != op.namespace
                or payload.get("key") != op.key
                or not self._live(payload, now)
            ):
                results[i] = None
                continue
            results[i] = stored_item(payload, self.cipher)
            if op.refresh_ttl and payload.get("ttl_minutes") is not None:
                refresh[pid] = float(payload["ttl_minutes"])

    def _search(
        self,
        handle: H,
        op: SearchOp,
        query_vector: list[float] | None,
        now: int,
        refresh: dict[str, float],
    ) -> list[SearchItem]:
        want = op.offset + op.limit
        if op.limit <= 0 or want <= 0:
            return []
        must = self.namespace_conditions(op.namespace_prefix) + self._value_conditions(
            self.value_filter(op.filter)
        )
        flt = self.live_filter(now, must)
        found: list[tuple[Hit | None, Payload]] = []
        if op.query and query_vector is not None:
            lexical = self._scope_terms(handle, op.query, op.namespace_prefix, now)
            depth = max(want if not op.filter else 2 * want, CANDIDATES)
            while True:
                hits = self._query(handle, query_vector, lexical, flt, depth)
                kept = [h for h in hits if self.matches(h.payload, op.filter)]
                if len(kept) >= want or len(hits) < depth:
                    break
                depth *= 2
            kept.sort(key=Hit.order)
            found = [(hit, dict(hit.payload)) for hit in kept]
        elif not op.filter:
            listing = self._newest(handle, flt, want, (op.namespace_prefix, want), now)
            found = [(None, payload) for payload in listing]
        else:
            matches = [p for p in self._scan(handle, flt) if self.matches(p, op.filter)]
            matches.sort(key=lambda p: (-int(p["updated_us"]), p["ns_key"], p["key"]))
            found = [(None, p) for p in matches]
        page = found[op.offset : want]
        if op.refresh_ttl:
            for _, payload in page:
                if payload.get("ttl_minutes") is not None:
                    refresh[point_id(payload["namespace"], payload["key"])] = float(
                        payload["ttl_minutes"]
                    )
        apart = query_vector is not None and self.views_apart and self.keeps_views()
        return [
            search_item(payload, None, self.cipher)
            if hit is None
            else scored_item(
                hit,
                self.cipher,
                UnreadViews(self, query_vector, hit.point) if apart and query_vector else None,
            )
            for hit, payload in page
        ]

    # -- sentence views read apart ------------------------------------------------------------

    def read_views(self, unread: Sequence[UnreadViews]) -> list[float | None]:
        """The best sentence-view cosine of each hit this store left ``unread`` (None: the
        hit has no view), one exact read per query vector, on one connection."""
        found: list[float | None] = [None] * len(unread)
        by_vector: dict[int, list[int]] = {}
        for i, hit in enumerate(unread):
            by_vector.setdefault(id(hit.vector), []).append(i)
        with self._connected() as handle:
            for at in by_vector.values():
                vector = list(unread[at[0]].vector)
                seen = self._view_cosines(handle, vector, [unread[i].point for i in at])
                for i in at:
                    found[i] = seen.get(unread[i].point)
        return found

    async def aread_views(self, unread: Sequence[UnreadViews]) -> list[float | None]:
        return await asyncio.to_thread(self.read_views, unread)

    def _view_cosines(self, handle: H, vector: list[float], points: list[Any]) -> dict[Any, float]:
        """Point → its best sentence-view cosine to ``vector``, for the points among
        ``points`` that have views (an engine with :attr:`views_apart`)."""
        return {}

    def _scope_terms(
        self, handle: H, query: str, prefix: tuple[str, ...], now: int
    ) -> Terms | None:
        """The query's BM25 terms (stop words removed), each weighted by its IDF among the
        live embedded items under ``prefix``; ``None`` when the store keeps no BM25, the query
        has no term, or no item in the scope holds any term.

        Counted from the ``terms`` payload index (:meth:`_scope_count`, which a store may keep
        while its items are unchanged): the statistics of one principal's
        search are those of the principal's own items (the scope), whatever others store."""
        if not self.hybrid:
            return None
        terms = sorted({int(i) for i in self.bm25.embed_query(query).indices})
        if not terms:
            return None
        must = self.namespace_conditions(prefix)
        must_not = [self._expired_condition(now)] if self.omit_expired() else []
        count = self._scope_count(
            handle, (prefix, None), self._filter(must, [*must_not, self._no_terms_condition()]), now
        )
        if not count:
            return None
        weights = [
            idf(
                count,
                self._scope_count(
                    handle,
                    (prefix, t),
                    self._filter([*must, self._term_condition(t)], must_not),
                    now,
                ),
            )
            for t in terms
        ]
        return Terms(terms, weights)

    def _scope_count(self, handle: H, key: tuple[Any, ...], flt: Any, now: int) -> int:
        """The items matching ``flt``, a statistic of the scope named by ``key`` (its prefix
        and term) at ``now``; a store may keep it while its items cannot have changed."""
        return self._count(handle, flt)

    def _newest(
        self, handle: H, flt: Any, want: int, key: tuple[Any, ...], now: int
    ) -> list[Payload]:
        """The ``want`` newest points (:meth:`_scope_newest`), read whole."""
        ids = self._scope_newest(handle, key, flt, want, now)
        found = self._retrieve(handle, ids)
        return [found[pid] for pid in ids if pid in found]

    def _scope_newest(
        self, handle: H, key: tuple[Any, ...], flt: Any, want: int, now: int
    ) -> list[str]:
        """The ids of the ``want`` newest points passing ``flt`` (the listing of the scope
        named by ``key``: its prefix and ``want``, at ``now``), ties on the update time broken
        by namespace and key; a store may keep them while its items cannot have changed.

        The engine's list is extended until it holds every point tied with the last one, so
        the result does not depend on the engine's order among ties or on ``want``. Only the
        fields that order it are read: the items of one write batch share an update time, so
        the newest item of a store filled by batches of 1,000 is chosen among 1,000 ties."""
        limit = want
        while True:
            rows = self._recent(handle, flt, limit, _ORDER_FIELDS)
            if len(rows) < limit or rows[-1]["updated_us"] != rows[want - 1]["updated_us"]:
                break
            limit *= 2
        rows.sort(key=lambda p: (-int(p["updated_us"]), p["ns_key"], p["key"]))
        return [point_id(p["namespace"], p["key"]) for p in rows[:want]]

    def _list_namespaces(self, handle: H, op: ListNamespacesOp, now: int) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        must: list[Any] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                literal: list[str] = []
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                must.extend(self.namespace_conditions(tuple(literal)))
        keys = self._namespace_keys(handle, self.live_filter(now, must))
        namespaces = {tuple(json.loads(key)) for key in keys}
        matched = [ns for ns in namespaces if all(namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        return sorted(matched)[op.offset : op.offset + op.limit]

    # -- writes -------------------------------------------------------------------------------

    def _refresh(self, handle: H, refresh: dict[str, float], now: int) -> None:
        by_ttl: dict[float, list[str]] = {}
        for pid, minutes in refresh.items():
            by_ttl.setdefault(minutes, []).append(pid)
        for minutes, ids in by_ttl.items():
            self._set_payload(handle, ids, {"expires_us": now + int(minutes * 60_000_000)})

    def _puts(
        self, handle: H, plan: BatchPlan, doc_vectors: dict[str, list[float]], now: int
    ) -> None:
        deletes = [point_id(ns, key) for (ns, key), op in plan.puts.items() if op.value is None]
        upserts = [(ident, op) for ident, op in plan.puts.items() if op.value is not None]
        if upserts:
            ids = [point_id(ns, key) for (ns, key), _ in upserts]
            existing = self._retrieve(handle, ids, ["created_us"])
            created = {pid: int(payload["created_us"]) for pid, payload in existing.items()}
            points: list[NewPoint] = []
            for (ident, op), pid in zip(upserts, ids, strict=True):
                texts = plan.put_texts.get(ident, [])
                terms = self.document_terms(texts) if texts and self.keeps_terms() else None
                payload = point_payload(
                    op, created.get(pid, now), now, self.cipher, terms.indices if terms else ()
                )
                vectors = [doc_vectors[t] for t in texts]
                views = [doc_vectors[v] for v in plan.put_views.get(ident, [])]
                points.append(NewPoint(pid, payload, texts, vectors, terms, views))
            self._upsert(handle, points)
        if deletes:
            self._delete(handle, deletes)

    # -- TTL and counts -----------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now; return how many were deleted."""
        with self._connected() as handle:
            expired = self._filter([self._expired_condition(self.clock())], [])
            count = self._count(handle, expired)
            if count:
                self._delete_where(handle, expired)
            return int(count)

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def related(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        keys: Sequence[str] = (),
        episodes: Sequence[str] = (),
    ) -> list[Item]:
        """The live items under ``namespace_prefix`` whose key is one of ``keys`` or whose
        value's ``episode_ids`` holds one of ``episodes``: what forgetting those ids can touch,
        found through the payload indexes instead of reading every item (an extension, not
        part of ``BaseStore``). Sealed values are opened and checked one by one."""
        if not keys and not episodes:
            return []
        wanted, cited = set(keys), set(episodes)
        with self._connected() as handle:
            must = self.namespace_conditions(namespace_prefix)
            if not self.cipher.sealing:
                parts = [self._any_of("key", sorted(wanted))] if wanted else []
                if cited:
                    parts.append(self._any_of("value.episode_ids", sorted(cited)))
                must.append(self._either(parts))
            found: list[Item] = []
            for payload in self._scan(handle, self.live_filter(self.clock(), must)):
                item = stored_item(payload, self.cipher)
                if item.key in wanted or cited.intersection(item.value.get("episode_ids") or ()):
                    found.append(item)
        found.sort(key=lambda i: (i.namespace, i.key))
        return found

    async def arelated(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        keys: Sequence[str] = (),
        episodes: Sequence[str] = (),
    ) -> list[Item]:
        return await asyncio.to_thread(self.related, namespace_prefix, keys=keys, episodes=episodes)

    def items(self, namespace_prefix: tuple[str, ...]) -> list[SearchItem]:
        """Every live item under ``namespace_prefix``, in the order a search without a query
        lists them (newest first), read in one scan: a listing by ``search`` pages by offset,
        and every page orders and reads again the items before it (an extension, not part of
        ``BaseStore``; no TTL is refreshed)."""
        with self._connected() as handle:
            flt = self.live_filter(self.clock(), self.namespace_conditions(namespace_prefix))
            found = list(self._scan(handle, flt))
        found.sort(key=lambda p: (-int(p["updated_us"]), p["ns_key"], p["key"]))
        return [search_item(payload, None, self.cipher) for payload in found]

    async def aitems(self, namespace_prefix: tuple[str, ...]) -> list[SearchItem]:
        return await asyncio.to_thread(self.items, namespace_prefix)

    def remove_all(self, namespace_prefix: tuple[str, ...]) -> list[SearchItem]:
        """Delete every item under ``namespace_prefix`` (expired ones too) and return them as
        :meth:`items` lists them (an extension, not part of ``BaseStore``: account deletion).
        Listed and deleted by the same filter on one connection: where the engine's lease
        keeps other processes out (Qdrant Edge, local mode) nothing is written in between;
        on a server, an item written in between is deleted too, unlisted. The empty prefix
        is refused."""
        if not namespace_prefix:
            raise ValueError("remove_all() needs a namespace prefix; it never empties a store")
        with self._connected() as handle:
            flt = self._filter(self.namespace_conditions(namespace_prefix), [])
            found = list(self._scan(handle, flt))
            if found:
                self._delete_where(handle, flt)
        found.sort(key=lambda p: (-int(p["updated_us"]), p["ns_key"], p["key"]))
        return [search_item(payload, None, self.cipher) for payload in found]

    async def aremove_all(self, namespace_prefix: tuple[str, ...]) -> list[SearchItem]:
        return await asyncio.to_thread(self.remove_all, namespace_prefix)

    def count(self, namespace_prefix: tuple[str, ...] = ()) -> int:
        """How many items live under ``namespace_prefix`` (expired ones included until swept)."""
        with self._connected() as handle:
            flt = (
                self._filter(self.namespace_conditions(namespace_prefix), [])
                if namespace_prefix
                else None
            )
            return int(self._count(handle, flt))

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep on a daemon thread every interval (default: ttl_config's, else 5 minutes)."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        interval = (
            sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        )
        self._sweeper_stop.clear()

        def loop() -> None:
            while not self._sweeper_stop.wait(float(interval) * 60):
                try:
                    self.sweep_ttl()
                except Exception:  # a failed sweep must not kill the thread; it retries
                    logger.exception("%s store TTL sweep failed", self.engine)

        self._sweeper = threading.Thread(
            target=loop, name=f"{self.engine}-ttl-sweeper", daemon=True
        )
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it is not running afterwards."""
        if self._sweeper is None:
            return True
        self._sweeper_stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped


def scored_item(hit: Hit, cipher: MemoryCipher, unread: UnreadViews | None = None) -> ScoredItem:
    """The ``SearchItem`` of a query hit: its score and the score's parts; with ``unread``
    (its sentence views not read), its view part is its text's cosine, the least it can be."""
    item = search_item(hit.payload, hit.score, cipher)
    return ScoredItem(
        item.namespace,
        item.key,
        item.value,
        item.created_at,
        item.updated_at,
        item.score,
        dense=hit.dense,
        lexical=hit.lexical,
        fused=hit.fused,
        view=hit.dense if unread is not None else hit.view,
        unread=unread,
    )


#: ``BatchPlan``, ``NewPoint``, ``Payload``, ``Terms`` and ``validate_op`` live in
#: :mod:`memory.store.planning` and :mod:`memory.store.primitives`; named here as before.
__all__ = [
    "BatchPlan",
    "NewPoint",
    "Payload",
    "QdrantFormatStore",
    "Terms",
    "scored_item",
    "validate_op",
]
