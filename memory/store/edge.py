"""``EdgeStore``: a LangGraph ``BaseStore`` on Qdrant Edge, the Qdrant engine in-process.

(Longer than 600 lines on purpose: one engine's complete ``BaseStore`` -- the per-process
shard lease, setup and migration from local mode, and the get/put/search/list/TTL operations
that share its lock -- reads best as one class; what both Qdrant stores share is in
:mod:`memory.store.common`.)

One on-disk shard (``qdrant-edge-py``: HNSW, payload indexes, a write-ahead log) holds every
item. The storage format is :mod:`memory.store.qdrant`'s (version 1: point ids, payload
fields, filter and TTL semantics are the same, and so are the helpers), plus:

- a sparse vector ``bm25`` per item (Qdrant's built-in BM25 document embedding of the embedded
  fields, IDF applied by the shard at query time), next to the dense multivector ``text``;
- ``search(query=...)`` is **hybrid**: a dense prefetch and a BM25 prefetch over the same
  filter, fused by reciprocal rank (``Fusion.Rrf``, k = :data:`RRF_K`, equal weights). The
  reported score is the fused score normalised to [0, 1] (1 = ranked first by both; 0.5 =
  first by one and absent from the other), so it stays comparable across queries.
  ``hybrid=False`` gives plain cosine. k = 10 rather than the usual 60: on the LoCoMo
  development split (``scripts/eval_recall.py``) evidence R@10 is 0.68–0.69 for k in 5–10
  and 0.61 at 60, and a small k keeps rank differences visible in the score.
- ``analyst-store.json`` in the shard folder records the format, the embedder and its size;
  opening the shard with other embeddings raises :class:`~memory.errors.StoreIndexMismatchError`.

Processes. Qdrant Edge lets one process open a shard at a time (its WAL is locked). The store
takes an advisory lock (``<folder>.lock``, ``fcntl.flock``) before it opens the shard and
writes its holder (pid and command line) into it:

- ``access="shared"`` (default): an operation waits for the lock (up to ``lock_timeout``
  seconds, then :class:`~memory.errors.StoreLockedError` naming the holder) and opens the
  shard; the process keeps this lease while it is busy and gives it up after ``LINGER``
  seconds idle or ``MAX_LEASE`` seconds of continuous use, whichever comes first. CLI
  commands, a chat REPL and ``langgraph dev`` therefore take turns and none starves; a write
  is durable when it returns (the WAL), whoever holds the shard next sees it;
- ``access="exclusive"``: the lock and the shard are held until :meth:`close` (benchmarks,
  bulk loads). Other processes wait, then get :class:`~memory.errors.StoreLockedError` naming
  the holder.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any, cast

import qdrant_edge as qe
from langgraph.store.base import (
    GetOp,
    IndexConfig,
    ListNamespacesOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
)

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
    namespace_text,
    point_id,
    point_payload,
    prefilter,
)

logger = logging.getLogger(__name__)

META_FILE = "analyst-store.json"
HNSW_EF = 128
#: Shared access: keep the shard this long after an operation, give it up after this long in use,
#: and then wait this long before taking it again (seconds).
LINGER = 0.2
MAX_LEASE = 1.0
YIELD_PAUSE = 0.05
_SCAN_PAGE = 1024
_FACET_LIMIT = 1_000_000


# -- the folder lock ----------------------------------------------------------------------------


def _holder(lock_path: Path) -> str:
    try:
        text = lock_path.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
    return text or "another process"


@contextmanager
def folder_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold ``<path>.lock`` (``flock``), waiting up to ``timeout`` seconds; the holder's pid
    and command line are written into it so a waiting process can say who holds the shard."""
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held across yield
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"{path} (held by {_holder(lock_path)})", timeout
                    ) from None
                time.sleep(0.01)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}: {' '.join(sys.argv)[:200]}")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


# -- filters ------------------------------------------------------------------------------------


def _edge_prefilter(filter: Mapping[str, Any] | None) -> list[Any]:
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


def _ns_condition(prefix: tuple[str, ...]) -> list[Any]:
    if not prefix:
        return []
    return [qe.FieldCondition("ns_prefixes", match=qe.MatchValue(namespace_text(prefix)))]


# -- the store ----------------------------------------------------------------------------------


class EdgeStore(PlannedStore):
    """LangGraph ``BaseStore`` on a Qdrant Edge shard in ``path`` (see the module docstring).

    Call :meth:`setup` once (``open_store`` does), and :meth:`close` when done.
    """

    supports_ttl = True
    engine = "qdrant-edge"

    def __init__(
        self,
        path: Path,
        *,
        access: LocalAccess = "shared",
        lock_timeout: float = 10.0,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        cipher: MemoryCipher | None = None,
        hybrid: bool = True,
    ) -> None:
        if access not in ("shared", "exclusive"):
            raise ValueError(f"access={access!r}: use 'exclusive' or 'shared'")
        self.path = Path(path)
        self.access = access
        self.lock_timeout = lock_timeout
        self.hybrid = hybrid
        self.ttl_config = ttl
        super().__init__(index, cipher)
        self._bm25 = qe.Bm25(qe.Bm25Config(avg_len=BM25_AVG_LEN))
        self._lock = threading.RLock()
        self._shard: qe.EdgeShard | None = None
        self._held: AbstractContextManager[None] | None = None
        self._timer: threading.Timer | None = None
        self._leased_at = self._last_use = self._resume_at = 0.0

    # -- lifecycle ----------------------------------------------------------------------------

    def _config(self) -> qe.EdgeConfig:
        vectors: dict[str, qe.EdgeVectorParams] = {}
        sparse: dict[str, qe.EdgeSparseVectorParams] = {}
        if self.dims:
            vectors[VECTOR] = qe.EdgeVectorParams(
                size=self.dims,
                distance=qe.Distance.Cosine,
                multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
            )
            sparse[SPARSE] = qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)
        return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)

    def _open_shard(self) -> qe.EdgeShard:
        if (self.path / "segments").exists():
            return qe.EdgeShard.load(str(self.path))
        return qe.EdgeShard.create(str(self.path), self._config())

    @contextmanager
    def _connected(self) -> Iterator[qe.EdgeShard]:
        """The open shard: the held one (exclusive), or (shared) a lease on it.

        A shared lease takes the folder lock and opens the shard; it is kept for ``LINGER``
        seconds after the last operation, so a burst (a recall, a batch of writes) opens the
        shard once, and given up after ``MAX_LEASE`` seconds of continuous use so that other
        processes waiting for the lock get their turn. Writes are durable when ``update``
        returns (the shard's WAL), so releasing needs no flush.
        """
        with self._lock:
            if self.access == "exclusive":
                if self._shard is None:
                    raise RuntimeError("EdgeStore: closed (or setup() was not called)")
                yield self._shard
                return
            if self._shard is None:
                pause = self._resume_at - time.monotonic()
                if pause > 0:  # just gave the shard up: let a waiting process take it first
                    time.sleep(pause)
                lock = folder_lock(self.path, self.lock_timeout)
                lock.__enter__()
                try:
                    self._shard = self._open_shard()
                except BaseException:
                    lock.__exit__(*sys.exc_info())
                    raise
                self._held = lock
                self._leased_at = time.monotonic()
            try:
                yield self._shard
            finally:
                self._last_use = time.monotonic()
                if self._last_use - self._leased_at >= MAX_LEASE:
                    self._release()
                    self._resume_at = time.monotonic() + YIELD_PAUSE
                else:
                    self._schedule_release()

    def _schedule_release(self) -> None:
        if self._timer is not None:
            return
        timer = threading.Timer(LINGER, self._release_when_idle)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _release_when_idle(self) -> None:
        with self._lock:
            self._timer = None
            if self._shard is None:
                return
            idle = time.monotonic() - self._last_use
            if idle >= LINGER:
                self._release()
            else:
                self._schedule_release()

    def _release(self) -> None:
        """Close the shard and give up the folder lock (caller holds ``self._lock``)."""
        shard, self._shard = self._shard, None
        held, self._held = self._held, None
        try:
            if shard is not None:
                shard.close()
        finally:
            if held is not None:
                held.__exit__(None, None, None)

    def setup(self, *, import_from: Path | None = None) -> None:
        """Create the shard and its payload indexes if missing (idempotent); check that an
        existing shard was built for the same embeddings. Exclusive access takes the folder
        here and keeps it until :meth:`close`.

        ``import_from``: a qdrant-client local-mode folder (the embedded store before Qdrant
        Edge). When this call creates the shard and that folder holds the store's collection,
        every item is copied in (vectors as stored, BM25 weights computed from the item's
        embedded fields), so upgrading loses no memory; the folder is left as it was.
        """
        fresh = not (self.path / "segments").exists()
        if self.access == "exclusive" and self._shard is None:
            lock = folder_lock(self.path, self.lock_timeout)
            lock.__enter__()
            try:
                self._shard = self._open_shard()
            except BaseException:
                lock.__exit__(*sys.exc_info())
                raise
            self._held = lock
        with self._connected() as shard:
            self._check_meta()
            _create_indexes(shard)
            if fresh and import_from is not None:
                copied = self._import_local_mode(shard, import_from)
                if copied:
                    logger.warning(
                        "Copied %d long-term memories from the local-mode folder %s into the "
                        "Qdrant Edge shard %s (the folder is left as it was).",
                        copied,
                        import_from,
                        self.path,
                    )

    def _import_local_mode(self, shard: qe.EdgeShard, folder: Path) -> int:
        if not (folder / "collection").is_dir():
            return 0  # checked first: importing qdrant-client takes over a second
        from memory.store.qdrant import DEFAULT_COLLECTION, open_qdrant_client

        if not (folder / "collection" / DEFAULT_COLLECTION).exists():
            return 0
        client = open_qdrant_client(path=folder, lock_timeout=self.lock_timeout)
        copied = 0
        try:
            offset: Any = None
            while True:
                records, offset = client.scroll(
                    DEFAULT_COLLECTION,
                    limit=256,
                    offset=offset,
                    with_payload=True,
                    with_vectors=True,
                )
                points: list[qe.Point] = []
                for record in records:
                    payload = dict(record.payload or {})
                    vector: dict[str, Any] = {}
                    stored = record.vector if isinstance(record.vector, dict) else {}
                    if self.dims and stored.get(VECTOR):
                        vector[VECTOR] = stored[VECTOR]
                        texts: list[str] = []
                        for _, tokens in self._fields:
                            value = self.cipher.open_object(payload.get("value", {}))
                            texts.extend(get_text_at_path(value, tokens))
                        if texts:
                            vector[SPARSE] = self._bm25.embed_document(" \n".join(texts))
                    points.append(qe.Point(str(record.id), vector, payload))
                if points:
                    shard.update(qe.UpdateOperation.upsert_points(points))
                    copied += len(points)
                if offset is None:
                    return copied
        finally:
            client.close()

    def close(self) -> None:
        """Release the shard and the folder lock now (the store can be used again: shared
        access takes a new lease, exclusive access needs :meth:`setup`)."""
        self.stop_ttl_sweeper(timeout=5)
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._release()

    def _check_meta(self) -> None:
        meta_path = self.path / META_FILE
        where = f"Qdrant Edge shard {self.path}"
        meta: dict[str, Any] = {}
        if meta_path.exists():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        stored_dims = meta.get("dims")
        stored_model = meta.get("embedder")
        if meta and self.dims and not stored_dims:
            raise StoreIndexMismatchError(
                f"{where} was created without embeddings, so it cannot be searched by meaning. "
                "Use a new data directory (ANALYST_DATA_DIR) for semantic memory."
            )
        if self.dims and stored_dims and stored_dims != self.dims:
            raise StoreIndexMismatchError(
                f"{where} holds {stored_dims}-dimensional embeddings "
                f"({stored_model or 'unknown model'}), but the configured embedder "
                f"({self.model_id or 'unknown'}) makes {self.dims}. Set ANALYST_EMBEDDINGS back, "
                "or use a new data directory (ANALYST_DATA_DIR) for the new embeddings."
            )
        if self.dims and stored_model and self.model_id and stored_model != self.model_id:
            raise StoreIndexMismatchError(
                f"{where} was embedded with {stored_model}, but the configured embedder is "
                f"{self.model_id}; their vectors are not comparable. Set ANALYST_EMBEDDINGS "
                "back, or use a new data directory (ANALYST_DATA_DIR) for the new embeddings."
            )
        if not meta:
            meta = {
                "format": FORMAT_VERSION,
                "embedder": self.model_id,
                "dims": self.dims,
                "bm25_avg_len": BM25_AVG_LEN,
            }
            meta_path.write_text(json.dumps(meta), encoding="utf-8")

    # -- batch --------------------------------------------------------------------------------

    def _execute(
        self,
        plan: _Plan,
        doc_vectors: dict[str, list[float]],
        query_vectors: dict[str, list[float]],
    ) -> list[Result]:
        results: list[Result] = [None] * len(plan.ops)
        with self._connected() as shard:
            now = _now_us()
            refresh: dict[str, float] = {}
            if plan.gets:
                self._gets(shard, plan.gets, results, now, refresh)
            for i, op in plan.searches:
                results[i] = self._search(
                    shard, op, query_vectors.get(op.query or ""), now, refresh
                )
            for i, lop in plan.lists:
                results[i] = self._list_namespaces(shard, lop, now)
            if refresh:
                self._refresh(shard, refresh, now)
            if plan.puts:
                self._puts(shard, plan, doc_vectors, now)
        return results

    # -- reads --------------------------------------------------------------------------------

    def _filter(self, now: int, must: list[Any]) -> qe.Filter | None:
        must_not: list[Any] = []
        if self._omit_expired():
            must_not.append(qe.FieldCondition("expires_us", range=qe.RangeFloat(lte=float(now))))
        if not must and not must_not:
            return None
        return qe.Filter(must=must or None, must_not=must_not or None)

    def _gets(
        self,
        shard: qe.EdgeShard,
        gets: list[tuple[int, GetOp]],
        results: list[Result],
        now: int,
        refresh: dict[str, float],
    ) -> None:
        ids = list(dict.fromkeys(point_id(op.namespace, op.key) for _, op in gets))
        records = shard.retrieve(cast(list[Any], ids), True, False)
        by_id = {str(r.id): r.payload or {} for r in records}
        self._resolve_gets(gets, by_id, now, results, refresh)

    def _query(
        self, shard: qe.EdgeShard, query: str, vector: list[float], flt: Any, fetch: int
    ) -> list[qe.ScoredPoint]:
        params = qe.SearchParams(hnsw_ef=max(HNSW_EF, fetch))
        dense = qe.Query.Nearest([vector], using=VECTOR)
        if not self.hybrid:
            return shard.query(
                qe.QueryRequest(
                    limit=fetch, query=dense, filter=flt, params=params, with_payload=True
                )
            )
        sparse = self._bm25.embed_query(query)
        prefetches = [qe.Prefetch(limit=fetch, query=dense, filter=flt, params=params)]
        weights = [RRF_WEIGHTS[0]]
        if sparse.indices:
            prefetches.append(
                qe.Prefetch(limit=fetch, query=qe.Query.Nearest(sparse, using=SPARSE), filter=flt)
            )
            weights.append(RRF_WEIGHTS[1])
        points = shard.query(
            qe.QueryRequest(
                limit=fetch,
                prefetches=prefetches,
                query=cast(Any, qe.Fusion.Rrf(k=RRF_K, weights=weights)),
                filter=flt,
                with_payload=True,
            )
        )
        return points

    def _search(
        self,
        shard: qe.EdgeShard,
        op: SearchOp,
        query_vector: list[float] | None,
        now: int,
        refresh: dict[str, float],
    ) -> list[SearchItem]:
        want = op.offset + op.limit
        if op.limit <= 0 or want <= 0:
            return []
        must = _ns_condition(op.namespace_prefix) + _edge_prefilter(self._value_filter(op.filter))
        flt = self._filter(now, must)
        found: list[tuple[float | None, dict[str, Any]]] = []
        if op.query and query_vector is not None:
            fetch = want if not op.filter else max(2 * want, 16)
            # RRF scores are at most sum(weights) / RRF_K (first in both lists): scale to [0, 1].
            scale = RRF_K / sum(RRF_WEIGHTS) if self.hybrid else 1.0
            while True:
                points = self._query(shard, op.query, query_vector, flt, fetch)
                found = [
                    (min(1.0, p.score * scale), p.payload or {})
                    for p in points
                    if self._matches(p.payload, op.filter)
                ]
                if len(found) >= want or len(points) < fetch:
                    break
                fetch *= 2
        elif not op.filter:
            records, _ = shard.scroll(
                qe.ScrollRequest(
                    limit=want,
                    filter=flt,
                    with_payload=True,
                    order_by=qe.OrderBy("updated_us", direction=qe.Direction.Desc),
                )
            )
            found = [(None, r.payload or {}) for r in records]
            found.sort(key=lambda f: (-int(f[1]["updated_us"]), f[1]["ns_key"], f[1]["key"]))
        else:
            matches = [
                payload for payload in self._scan(shard, flt) if self._matches(payload, op.filter)
            ]
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

    def _scan(self, shard: qe.EdgeShard, flt: Any) -> Iterator[dict[str, Any]]:
        offset: Any = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(offset=offset, limit=_SCAN_PAGE, filter=flt, with_payload=True)
            )
            for record in records:
                yield record.payload or {}
            if offset is None:
                return

    def _list_namespaces(
        self, shard: qe.EdgeShard, op: ListNamespacesOp, now: int
    ) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        must: list[Any] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                literal: list[str] = []
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                must.extend(_ns_condition(tuple(literal)))
        facets = shard.facet(
            qe.FacetRequest(
                "ns_key", limit=_FACET_LIMIT, exact=True, filter=self._filter(now, must)
            )
        )
        namespaces = {tuple(json.loads(str(hit.value))) for hit in facets.hits}
        matched = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matched = list({ns[: op.max_depth] for ns in matched})
        return sorted(matched)[op.offset : op.offset + op.limit]

    # -- writes -------------------------------------------------------------------------------

    def _refresh(self, shard: qe.EdgeShard, refresh: dict[str, float], now: int) -> None:
        by_ttl: dict[float, list[str]] = {}
        for pid, minutes in refresh.items():
            by_ttl.setdefault(minutes, []).append(pid)
        for minutes, ids in by_ttl.items():
            shard.update(
                qe.UpdateOperation.set_payload(
                    cast(list[Any], ids), {"expires_us": now + int(minutes * 60_000_000)}
                )
            )

    def _puts(
        self, shard: qe.EdgeShard, plan: _Plan, doc_vectors: dict[str, list[float]], now: int
    ) -> None:
        deletes = [point_id(ns, key) for (ns, key), op in plan.puts.items() if op.value is None]
        upserts = [(ident, op) for ident, op in plan.puts.items() if op.value is not None]
        if upserts:
            ids = [point_id(ns, key) for (ns, key), _ in upserts]
            existing = shard.retrieve(
                cast(list[Any], ids), qe.PayloadSelector.Include(["created_us"]), False
            )
            created = {str(r.id): int((r.payload or {})["created_us"]) for r in existing}
            points: list[qe.Point] = []
            for ((namespace, key), op), pid in zip(upserts, ids, strict=True):
                payload = point_payload(op, created.get(pid, now), now, self.cipher)
                texts = plan.put_texts.get((namespace, key), [])
                vector: dict[str, Any] = {}
                if texts:
                    vector[VECTOR] = [doc_vectors[t] for t in texts]
                    vector[SPARSE] = self._bm25.embed_document(" \n".join(texts))
                points.append(qe.Point(pid, vector, payload))
            shard.update(qe.UpdateOperation.upsert_points(points))
        if deletes:
            shard.update(qe.UpdateOperation.delete_points(cast(list[Any], deletes)))

    # -- TTL ----------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item now; return how many were deleted."""
        with self._connected() as shard:
            expired = qe.Filter(
                must=[qe.FieldCondition("expires_us", range=qe.RangeFloat(lte=float(_now_us())))]
            )
            count = shard.count(qe.CountRequest(filter=expired, exact=True))
            if count:
                shard.update(qe.UpdateOperation.delete_points_by_filter(expired))
            return int(count)

    # -- diagnostics --------------------------------------------------------------------------

    def count(self, namespace_prefix: tuple[str, ...] = ()) -> int:
        """How many items live under ``namespace_prefix`` (expired ones included until swept)."""
        with self._connected() as shard:
            flt = qe.Filter(must=_ns_condition(namespace_prefix)) if namespace_prefix else None
            return int(shard.count(qe.CountRequest(filter=flt, exact=True)))

    def rebuild(self) -> int:
        """Rewrite the shard with its live items only; return how many were kept.

        Deleting a point in Qdrant Edge only marks it deleted: its payload stays in the
        segment's pages and the upsert stays in the write-ahead log, and ``optimize`` does not
        rewrite a small segment. After an erasure (account deletion) the deleted text must
        leave the disk, so the live points (payload and vectors as stored) are read, the
        shard folder is replaced by a new shard holding only them, and the old folder is
        removed. Runs under the folder lock; other processes wait, as for any operation."""
        import shutil

        with self._lock, self._connected() as shard:
            points: list[qe.Point] = []
            offset: Any = None
            while True:
                records, offset = shard.scroll(
                    qe.ScrollRequest(
                        offset=offset,
                        limit=_SCAN_PAGE,
                        with_payload=True,
                        with_vector=True,
                    )
                )
                points.extend(qe.Point(r.id, r.vector or {}, r.payload or {}) for r in records)
                if offset is None:
                    break
            shard.close()
            self._shard = None
            aside = self.path.with_name(f"{self.path.name}.rebuilding")
            shutil.rmtree(aside, ignore_errors=True)
            self.path.rename(aside)
            self.path.mkdir()
            meta = aside / META_FILE
            if meta.exists():
                shutil.copy2(meta, self.path / META_FILE)
            fresh = qe.EdgeShard.create(str(self.path), self._config())
            self._shard = fresh
            _create_indexes(fresh)
            for start in range(0, len(points), _SCAN_PAGE):
                fresh.update(qe.UpdateOperation.upsert_points(points[start : start + _SCAN_PAGE]))
            fresh.flush()
            shutil.rmtree(aside)
            return len(points)

    def optimize(self) -> bool:
        """Build the HNSW index and merge segments now (else the optimizer does it as it goes)."""
        with self._connected() as shard:
            return bool(shard.optimize())


def _create_indexes(shard: qe.EdgeShard) -> None:
    """The payload indexes every shard has (idempotent).

    No extra HNSW links per indexed value (Qdrant's default would build one more graph for
    every namespace prefix that holds many points: minutes at 100k items). A selective
    principal filter is answered from the payload index instead."""
    keyword = qe.KeywordIndexParams(enable_hnsw=False)
    integer = qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)
    schemas: tuple[tuple[str, Any], ...] = (
        ("ns_key", keyword),
        ("ns_prefixes", keyword),
        ("updated_us", integer),
        ("expires_us", integer),
    )
    existing = shard.info().payload_schema
    for name, schema in schemas:
        if name not in existing:
            shard.update(qe.UpdateOperation.create_field_index(name, schema))


__all__ = ["EdgeStore", "folder_lock"]
