"""``QdrantStore``: a LangGraph ``BaseStore`` over one Qdrant collection.

(Longer than 600 lines on purpose: one engine's complete ``BaseStore``, its storage format
documented here for both Qdrant stores; what they share as code is :mod:`memory.store.common`.)

Local mode (``QdrantClient(path=...)``, an on-disk folder: ``qdrant+local://local``, the
default before :mod:`memory.store.edge`; it scans every point) and a Qdrant server
(``QdrantClient(url=..., api_key=...)``) run the same code; only the client differs. Local
mode lets one process open the folder at a time: :func:`open_qdrant_client` waits a little
for it, then raises :class:`~agent.errors.StoreLockedError` saying what to do. So that CLI
commands, scripts and a ``langgraph dev`` server can share one folder, the store can open it
per operation instead of holding it (``connect=...``; ``QdrantStore.local(access="shared")``).

Storage format (version 1):

- One point per item. Its id is a UUID made from the first 16 bytes of
  ``sha256(json.dumps([list(namespace), key]))`` (compact separators, UTF-8), so distinct
  ``(namespace, key)`` pairs cannot collide the way a joined string could (``("a.b", "c")``
  vs ``("a", "b.c")``); a read also checks the stored namespace and key.
- Payload: ``namespace`` (list), ``key``, ``value`` (the item), ``ns_key`` (the namespace as
  compact JSON), ``ns_prefixes`` (JSON of every leading part of the namespace, for prefix
  search), ``created_us`` / ``updated_us`` (microseconds since the epoch, UTC), and for items
  with a TTL ``ttl_minutes`` and ``expires_us``. Keyword indexes on ``ns_key`` and
  ``ns_prefixes``, integer indexes on ``updated_us`` and ``expires_us`` (local mode ignores
  payload indexes; the calls are the same).
- With an index config, a sparse vector ``bm25`` per point (Qdrant's BM25 document weights of
  the embedded fields, IDF applied by the engine; collections created before it have none and
  are searched by cosine only). A query search then fuses a dense and a BM25 prefetch by
  reciprocal rank (``RrfQuery``, k = :data:`RRF_K`; a server needs Qdrant 1.16 or later) and
  reports the fused score normalised to [0, 1], as :mod:`memory.store.edge` does.
- With an index config, one named multivector ``text`` per point holding one vector per
  embedded field (``fields`` / ``index=[...]`` paths, ``[*]`` giving one vector per element).
  Cosine distance with ``MAX_SIM`` pooling: an item scores as its best-matching field, like
  ``InMemoryStore`` and ``PostgresStore``. Items put with ``index=False`` (or whose fields are
  absent) have no vector: ``get``/filtered ``search`` find them, a query search does not.
  The collection's metadata records the embedder's ``model_id`` and ``dims``; opening it with
  different embeddings raises :class:`~agent.errors.StoreIndexMismatchError`.

Operation semantics follow ``InMemoryStore`` (the reference) and ``PostgresStore``:

- In one ``batch``, reads (get, search, list_namespaces) see the state before the batch's
  writes; puts to the same ``(namespace, key)`` are de-duplicated, the last one wins; a put
  with ``value=None`` deletes.
- A put keeps the item's ``created_at`` and sets ``updated_at`` to now.
- ``search`` without a query returns items newest ``updated_at`` first; with a query (and an
  index) by cosine similarity, highest first. ``filter`` keys address top-level value fields:
  a plain value is JSON equality (``True`` is not ``1``; ``1 == 1.0``), a dict without
  operators matches nested fields, ``$eq $ne $gt $gte $lt $lte`` compare numbers numerically
  and strings lexically (other type pairs never match; ``$ne`` matches a missing field). Qdrant
  pre-filters what it can express; the exact test runs here, so results are exact.
- ``list_namespaces``: prefix/suffix conditions with ``*`` matching one label, ``max_depth``
  truncation, sorted, then offset/limit.
- TTL (minutes, :data:`supports_ttl`): ``expires_us = now + ttl``; reads with
  ``refresh_ttl`` push it forward again; ``ttl_config["omit_expired"]`` hides expired items
  before a sweep; :meth:`QdrantStore.sweep_ttl` deletes them, :meth:`start_ttl_sweeper` runs
  that on a background thread every ``sweep_interval_minutes``.

Namespaces are tuples of non-empty strings without ``.`` or NUL (LangGraph's rules, checked
for every op, including ops passed straight to ``batch``); anything else raises
``InvalidNamespaceError`` naming the bad label.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from langgraph.store.base import (
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from memory.errors import StoreIndexMismatchError, StoreLockedError
from memory.sealing import MemoryCipher
from memory.store.common import (
    BM25_AVG_LEN,
    FORMAT_VERSION,
    RRF_K,
    RRF_WEIGHTS,
    SPARSE,
    VECTOR,
    LocalAccess,
    PlannedStore,
    _namespace_matches,
    _now_us,
    _Plan,
    _search_item,
    json_equal,
    namespace_text,
    point_id,
    point_payload,
    prefilter,
    value_matches,
)

logger = logging.getLogger(__name__)

DEFAULT_COLLECTION = "analyst_store"
_FACET_LIMIT = 1_000_000
_SCAN_PAGE = 512


def _prefilter(filter: Mapping[str, Any] | None) -> list[qm.Condition]:
    """Qdrant conditions selecting a superset of what :func:`value_matches` accepts."""

    def equal(path: str, value: Any) -> qm.Condition:
        if isinstance(value, bool | str):
            return qm.FieldCondition(key=path, match=qm.MatchValue(value=value))
        return qm.FieldCondition(key=path, range=qm.Range(gte=float(value), lte=float(value)))

    def compare(path: str, name: str, bound: float) -> qm.Condition:
        return qm.FieldCondition(key=path, range=qm.Range(**{name: bound}))

    return prefilter(filter, equal=equal, compare=compare)


# -- the client -------------------------------------------------------------------------------


def open_qdrant_client(
    *,
    path: Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    lock_timeout: float = 10.0,
    timeout: int = 30,
) -> QdrantClient:
    """A client for local mode (``path``) or a server (``url``): the only place they differ.

    Local mode waits up to ``lock_timeout`` seconds for another process to release the folder.
    """
    if (path is None) == (url is None):
        raise ValueError("give exactly one of path (local mode) or url (server)")
    if url is not None:
        # No version probe in the constructor: the first real call reports an unreachable server.
        return QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
    assert path is not None
    path.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            return QdrantClient(path=str(path))
        except RuntimeError as e:
            if "already accessed" not in str(e):
                raise
            if time.monotonic() >= deadline:
                raise StoreLockedError(path, lock_timeout) from e
            time.sleep(0.05)


# -- the store --------------------------------------------------------------------------------


class QdrantStore(PlannedStore):
    """LangGraph ``BaseStore`` over a Qdrant collection (see the module docstring).

    Give either ``client`` (held open; the store does not close it: whoever opened it does,
    e.g. ``open_store`` in :mod:`memory.store.factory` or :meth:`local`) or ``connect`` (a
    function returning a new client, called for each operation and closed after it). Call
    :meth:`setup` once before use.
    """

    supports_ttl = True

    def __init__(
        self,
        client: QdrantClient | None = None,
        *,
        connect: Callable[[], QdrantClient] | None = None,
        collection: str = DEFAULT_COLLECTION,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        cipher: MemoryCipher | None = None,
    ) -> None:
        if (client is None) == (connect is None):
            raise ValueError("give either client (held open) or connect (opened per operation)")
        self._client = client
        self._connect = connect
        self._active: QdrantClient | None = None
        self.collection = collection
        self.ttl_config = ttl
        super().__init__(index, cipher)
        #: whether the collection has the BM25 vector (set by :meth:`setup`)
        self.hybrid = False
        self._bm25: Any = None
        self._lock = threading.RLock()

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def client(self) -> QdrantClient:
        """The client of the operation in progress (or the one held open)."""
        client = self._client if self._client is not None else self._active
        if client is None:
            raise RuntimeError("QdrantStore: no client outside an operation")
        return client

    @contextmanager
    def _connected(self) -> Iterator[QdrantClient]:
        """Hold the store's lock with a client: the held one, or one opened for this operation
        and closed after it (``connect`` mode, so other processes can take turns)."""
        with self._lock:
            if self._client is not None or self._active is not None:
                yield self.client
                return
            assert self._connect is not None
            self._active = self._connect()
            try:
                yield self._active
            finally:
                active, self._active = self._active, None
                active.close()

    @classmethod
    @contextmanager
    def local(
        cls,
        path: Path,
        *,
        access: LocalAccess = "exclusive",
        lock_timeout: float = 10.0,
        collection: str = DEFAULT_COLLECTION,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> Iterator[QdrantStore]:
        """The store in local-mode folder ``path``, set up; the folder is released on exit.

        ``access="exclusive"`` holds the folder while the store is open (fastest; other
        processes wait, then get :class:`~agent.errors.StoreLockedError`). ``"shared"`` opens
        it for each operation and closes it after, so several processes (CLI commands, a
        ``langgraph dev`` server) take turns; each operation then reloads the collection
        (about 50 µs per stored item: 15 ms for 300, 150 ms for 3,000 on two cores).
        """
        folder = Path(path)
        if access == "shared":
            store = cls(
                connect=lambda: open_qdrant_client(path=folder, lock_timeout=lock_timeout),
                collection=collection,
                index=index,
                ttl=ttl,
            )
            store.setup()
            yield store
            return
        if access != "exclusive":
            raise ValueError(f"access={access!r}: use 'exclusive' or 'shared'")
        client = open_qdrant_client(path=folder, lock_timeout=lock_timeout)
        try:
            store = cls(client, collection=collection, index=index, ttl=ttl)
            store.setup()
            yield store
        finally:
            client.close()

    def setup(self) -> None:
        """Create the collection and its payload indexes if missing (idempotent); check that an
        existing collection was built for the same embeddings."""
        with self._connected():
            if self.client.collection_exists(self.collection):
                self._check_collection()
            else:
                vectors: dict[str, qm.VectorParams] = {}
                if self.dims:
                    vectors[VECTOR] = qm.VectorParams(
                        size=self.dims,
                        distance=qm.Distance.COSINE,
                        multivector_config=qm.MultiVectorConfig(
                            comparator=qm.MultiVectorComparator.MAX_SIM
                        ),
                    )
                sparse: dict[str, qm.SparseVectorParams] = {}
                if self.dims:
                    sparse[SPARSE] = qm.SparseVectorParams(modifier=qm.Modifier.IDF)
                self.client.create_collection(
                    self.collection,
                    vectors_config=vectors,
                    sparse_vectors_config=sparse or None,
                    metadata={
                        "format": FORMAT_VERSION,
                        "embedder": self.model_id,
                        "dims": self.dims,
                    },
                )
                self.hybrid = bool(sparse)
            with warnings.catch_warnings():
                # Local mode warns that payload indexes have no effect there; a server uses them.
                warnings.simplefilter("ignore", UserWarning)
                for name, schema in (
                    ("ns_key", qm.PayloadSchemaType.KEYWORD),
                    ("ns_prefixes", qm.PayloadSchemaType.KEYWORD),
                    ("updated_us", qm.PayloadSchemaType.INTEGER),
                    ("expires_us", qm.PayloadSchemaType.INTEGER),
                ):
                    self.client.create_payload_index(self.collection, name, field_schema=schema)

    def _check_collection(self) -> None:
        info = self.client.get_collection(self.collection)
        self.hybrid = bool(self.dims) and SPARSE in (info.config.params.sparse_vectors or {})
        vectors = info.config.params.vectors
        existing = vectors.get(VECTOR) if isinstance(vectors, dict) else None
        meta = info.config.metadata or {}
        where = f"Qdrant collection '{self.collection}'"
        if self.dims and existing is None:
            raise StoreIndexMismatchError(
                f"{where} was created without embeddings, so it cannot be searched by meaning. "
                "Use a new data directory (ANALYST_DATA_DIR) or collection for semantic memory."
            )
        if self.dims and existing is not None and existing.size != self.dims:
            raise StoreIndexMismatchError(
                f"{where} holds {existing.size}-dimensional embeddings "
                f"({meta.get('embedder') or 'unknown model'}), but the configured embedder "
                f"({self.model_id or 'unknown'}) makes {self.dims}. Set ANALYST_EMBEDDINGS back, "
                "or use a new data directory (ANALYST_DATA_DIR) for the new embeddings."
            )
        stored_model = meta.get("embedder")
        if self.dims and stored_model and self.model_id and stored_model != self.model_id:
            raise StoreIndexMismatchError(
                f"{where} was embedded with {stored_model}, but the configured embedder is "
                f"{self.model_id}; their vectors are not comparable. Set ANALYST_EMBEDDINGS "
                "back, or use a new data directory (ANALYST_DATA_DIR) for the new embeddings."
            )

    # -- batch ----------------------------------------------------------------------------

    def _execute(
        self,
        plan: _Plan,
        doc_vectors: dict[str, list[float]],
        query_vectors: dict[str, list[float]],
    ) -> list[Result]:
        results: list[Result] = [None] * len(plan.ops)
        with self._connected():
            now = _now_us()
            refresh: dict[str, float] = {}
            if plan.gets:
                self._gets(plan.gets, results, now, refresh)
            for i, op in plan.searches:
                results[i] = self._search(op, query_vectors.get(op.query or ""), now, refresh)
            for i, lop in plan.lists:
                results[i] = self._list_namespaces(lop, now)
            if refresh:
                self._refresh(refresh, now)
            if plan.puts:
                self._puts(plan, doc_vectors, now)
        return results

    # -- reads ----------------------------------------------------------------------------

    def _base_filter(self, now: int, must: list[qm.Condition] | None = None) -> qm.Filter | None:
        must = list(must or [])
        must_not: list[qm.Condition] = []
        if self._omit_expired():
            must_not.append(qm.FieldCondition(key="expires_us", range=qm.Range(lte=now)))
        if not must and not must_not:
            return None
        return qm.Filter(must=must or None, must_not=must_not or None)

    def _gets(
        self,
        gets: list[tuple[int, GetOp]],
        results: list[Result],
        now: int,
        refresh: dict[str, float],
    ) -> None:
        ids = list(dict.fromkeys(point_id(op.namespace, op.key) for _, op in gets))
        records = self.client.retrieve(self.collection, ids=ids, with_payload=True)
        by_id = {str(r.id): r.payload or {} for r in records}
        self._resolve_gets(gets, by_id, now, results, refresh)

    def _namespace_condition(self, prefix: tuple[str, ...]) -> list[qm.Condition]:
        if not prefix:
            return []
        return [
            qm.FieldCondition(key="ns_prefixes", match=qm.MatchValue(value=namespace_text(prefix)))
        ]

    def _search(
        self,
        op: SearchOp,
        query_vector: list[float] | None,
        now: int,
        refresh: dict[str, float],
    ) -> list[SearchItem]:
        want = op.offset + op.limit
        if op.limit <= 0 or want <= 0:
            return []
        flt = self._base_filter(
            now,
            self._namespace_condition(op.namespace_prefix)
            + _prefilter(self._value_filter(op.filter)),
        )
        found: list[tuple[float | None, dict[str, Any]]] = []
        if op.query and query_vector is not None:
            fetch = want if not op.filter else max(2 * want, 16)
            # Hybrid: RRF scores are at most sum(weights) / RRF_K; scaled to [0, 1].
            scale = RRF_K / sum(RRF_WEIGHTS) if self.hybrid else 1.0
            while True:
                points = self._query(op.query, query_vector, flt, fetch)
                found = [
                    (min(1.0, p.score * scale) if self.hybrid else p.score, p.payload or {})
                    for p in points
                    if self._matches(p.payload, op.filter)
                ]
                if len(found) >= want or len(points) < fetch:
                    break
                fetch *= 2
        elif not op.filter:
            records, _ = self.client.scroll(
                self.collection,
                scroll_filter=flt,
                limit=want,
                order_by=qm.OrderBy(key="updated_us", direction=qm.Direction.DESC),
                with_payload=True,
            )
            found = [(None, r.payload or {}) for r in records]
        else:
            matches = [payload for payload in self._scan(flt) if self._matches(payload, op.filter)]
            matches.sort(key=lambda p: (-int(p["updated_us"]), p["ns_key"], p["key"]))
            found = [(None, p) for p in matches]
        page = found[op.offset : want]
        if op.refresh_ttl:
            for _, payload in page:
                if payload.get("ttl_minutes") is not None:
                    refresh[point_id(payload["namespace"], payload["key"])] = float(
                        payload["ttl_minutes"]
                    )
        return [_search_item(payload, score, self.cipher) for score, payload in page]

    @property
    def bm25(self) -> Any:
        """Qdrant's BM25 embedder (from qdrant-edge-py; the same tokens on every engine)."""
        if self._bm25 is None:
            import qdrant_edge

            self._bm25 = qdrant_edge.Bm25(qdrant_edge.Bm25Config(avg_len=BM25_AVG_LEN))
        return self._bm25

    def _query(
        self, query: str, vector: list[float], flt: qm.Filter | None, fetch: int
    ) -> list[qm.ScoredPoint]:
        """Dense only, or (hybrid) dense and BM25 prefetches fused by reciprocal rank."""
        sparse = self.bm25.embed_query(query) if self.hybrid else None
        if sparse is None or not sparse.indices:
            return self.client.query_points(
                self.collection,
                query=[vector],
                using=VECTOR,
                query_filter=flt,
                limit=fetch,
                with_payload=True,
            ).points
        return self.client.query_points(
            self.collection,
            prefetch=[
                qm.Prefetch(query=[vector], using=VECTOR, filter=flt, limit=fetch),
                qm.Prefetch(
                    query=qm.SparseVector(indices=list(sparse.indices), values=list(sparse.values)),
                    using=SPARSE,
                    filter=flt,
                    limit=fetch,
                ),
            ],
            query=qm.RrfQuery(rrf=qm.Rrf(k=RRF_K, weights=list(RRF_WEIGHTS))),
            query_filter=flt,
            limit=fetch,
            with_payload=True,
        ).points

    def _scan(self, flt: qm.Filter | None) -> Iterator[dict[str, Any]]:
        offset: Any = None
        while True:
            records, offset = self.client.scroll(
                self.collection,
                scroll_filter=flt,
                limit=_SCAN_PAGE,
                offset=offset,
                with_payload=True,
            )
            for record in records:
                yield record.payload or {}
            if offset is None:
                return

    def _list_namespaces(self, op: ListNamespacesOp, now: int) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        must: list[qm.Condition] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                literal: list[str] = []
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                must.extend(self._namespace_condition(tuple(literal)))
        facets = self.client.facet(
            self.collection,
            key="ns_key",
            facet_filter=self._base_filter(now, must),
            limit=_FACET_LIMIT,
            exact=True,
        )
        namespaces = {tuple(json.loads(str(hit.value))) for hit in facets.hits}
        matched = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        return sorted(matched)[op.offset : op.offset + op.limit]

    # -- writes ---------------------------------------------------------------------------

    def _refresh(self, refresh: dict[str, float], now: int) -> None:
        by_ttl: dict[float, list[str]] = {}
        for pid, minutes in refresh.items():
            by_ttl.setdefault(minutes, []).append(pid)
        for minutes, ids in by_ttl.items():
            self.client.set_payload(
                self.collection,
                payload={"expires_us": now + int(minutes * 60_000_000)},
                points=cast(list[Any], ids),
                wait=True,
            )

    def _puts(self, plan: _Plan, doc_vectors: dict[str, list[float]], now: int) -> None:
        deletes = [point_id(ns, key) for (ns, key), op in plan.puts.items() if op.value is None]
        upserts = [(ident, op) for ident, op in plan.puts.items() if op.value is not None]
        if upserts:
            ids = [point_id(ns, key) for (ns, key), _ in upserts]
            existing = self.client.retrieve(
                self.collection, ids=ids, with_payload=["created_us", "namespace", "key"]
            )
            created = {str(r.id): int((r.payload or {})["created_us"]) for r in existing}
            points: list[qm.PointStruct] = []
            for ((namespace, key), op), pid in zip(upserts, ids, strict=True):
                payload = point_payload(op, created.get(pid, now), now, self.cipher)
                texts = plan.put_texts.get((namespace, key), [])
                vector: dict[str, Any] = {}
                if texts:
                    vector[VECTOR] = [doc_vectors[t] for t in texts]
                    if self.hybrid:
                        sparse = self.bm25.embed_document(" \n".join(texts))
                        vector[SPARSE] = qm.SparseVector(
                            indices=list(sparse.indices), values=list(sparse.values)
                        )
                points.append(qm.PointStruct(id=pid, vector=vector, payload=payload))
            self.client.upsert(self.collection, points=points, wait=True)
        if deletes:
            self.client.delete(
                self.collection,
                points_selector=qm.PointIdsList(points=cast(list[Any], deletes)),
                wait=True,
            )

    # -- TTL ------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now; return how many were deleted."""
        with self._connected():
            expired = qm.Filter(
                must=[qm.FieldCondition(key="expires_us", range=qm.Range(lte=_now_us()))]
            )
            count = self.client.count(self.collection, count_filter=expired, exact=True).count
            if count:
                self.client.delete(
                    self.collection, points_selector=qm.FilterSelector(filter=expired), wait=True
                )
            return int(count)

    # -- diagnostics ----------------------------------------------------------------------

    def count(self, namespace_prefix: tuple[str, ...] = ()) -> int:
        """How many items live under ``namespace_prefix`` (expired ones included until swept)."""
        with self._connected():
            flt = None
            if namespace_prefix:
                flt = qm.Filter(must=self._namespace_condition(namespace_prefix))
            return int(self.client.count(self.collection, count_filter=flt, exact=True).count)


__all__ = [
    "BM25_AVG_LEN",
    "DEFAULT_COLLECTION",
    "FORMAT_VERSION",
    "RRF_K",
    "RRF_WEIGHTS",
    "SPARSE",
    "VECTOR",
    "LocalAccess",
    "QdrantStore",
    "json_equal",
    "namespace_text",
    "open_qdrant_client",
    "point_id",
    "value_matches",
]
