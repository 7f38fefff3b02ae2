"""``EdgeStore``: the long-term store on Qdrant Edge, the Qdrant engine in-process.

One on-disk shard (HNSW, payload indexes, a write-ahead log) holds every item in the format
of :mod:`memory.store.common`, with a BM25 vector next to the dense one; query searches are
hybrid (dense and BM25 fused by reciprocal rank). One process opens the shard at a time: the
store takes ``<folder>.lock`` and, with ``access="shared"``, gives it up when idle so that
processes take turns. The shared logic is :class:`~memory.store.engine.QdrantFormatStore`;
details in ``docs/architecture.md``, "Long-term memory store".

The shard's vector index (HNSW) is built out of place: once ``index_after`` vectors are
unindexed, a write starts the detached indexer (:mod:`memory.store.indexing`), which builds it
on a copy and swaps it in, so no process waits minutes for ``optimize``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

import qdrant_edge as qe
from langgraph.store.base import IndexConfig, TTLConfig

import memory.store.erasing as erasing
from memory.errors import StorageReadOnlyError, StoreIndexMismatchError
from memory.health import ensure_mapped_space, read_only_view
from memory.sealing import MemoryCipher
from memory.store.common import (
    BM25_AVG_LEN,
    FORMAT_VERSION,
    RRF_K,
    RRF_WEIGHTS,
    SPARSE,
    TERMS,
    VECTOR,
    LocalAccess,
    namespace_text,
)
from memory.store.edge_parts import edge_prefilter, exact_cosines, read_ahead, read_ahead_budget
from memory.store.edge_upgrade import add_views, import_local_mode
from memory.store.engine import QdrantFormatStore
from memory.store.erasing import META_FILE, create_indexes, has_views, live_copy, shard_config
from memory.store.indexing import (
    bump_generation,
    generation,
    recover,
    set_unindexed,
    start_indexer,
    swap_in,
    unindexed,
)
from memory.store.lock import folder_lock, others_waiting
from memory.store.primitives import NewPoint, Payload, Terms
from memory.store.scoring import Hit, fused_score, term_sharer
from memory.store.views import VIEWS

logger = logging.getLogger(__name__)

HNSW_EF = 128
#: Shared access (seconds): a lease is given up to a process waiting for the folder
#: (:func:`memory.store.lock.others_waiting`) once it has been idle for ``LINGER`` or in use
#: for ``MAX_LEASE``, and then this process waits ``YIELD_PAUSE`` before taking it again.
#: While nobody waits the lease goes on, up to ``KEEP_IDLE`` idle: a reload costs up to a
#: second at 100k memories and leaves the sentence views' pages cold (Qdrant drops the page
#: cache of a shard it loads), so a recall after a pause of a few seconds need not pay both.
LINGER = 0.2
MAX_LEASE = 1.0
YIELD_PAUSE = 0.05
KEEP_IDLE = 30.0
#: Unindexed vectors (written since the last index build) that start the indexer
#: (:mod:`memory.store.indexing`); below it, the unindexed segment is searched exactly.
INDEX_AFTER = 10_000
_SCAN_PAGE = 1024
_FACET_LIMIT = 1_000_000


# -- the store ----------------------------------------------------------------------------------


class EdgeStore(QdrantFormatStore[qe.EdgeShard]):
    """LangGraph ``BaseStore`` on a Qdrant Edge shard in ``path`` (see the module docstring).

    Call :meth:`setup` once (``open_store`` does), and :meth:`close` when done.
    """

    supports_ttl = True
    engine = "qdrant-edge"
    views_apart = True

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
        index_after: int | None = INDEX_AFTER,
    ) -> None:
        if access not in ("shared", "exclusive"):
            raise ValueError(f"access={access!r}: use 'exclusive' or 'shared'")
        self.path = Path(path)
        self.access = access
        self.lock_timeout = lock_timeout
        self.hybrid = hybrid
        #: Unindexed vectors that start a background index build (``None``: never); shared
        #: access only (an exclusive holder keeps the folder lock the swap needs).
        self.index_after = index_after
        self.ttl_config = ttl
        super().__init__(index, cipher)
        self._lock = threading.RLock()
        self._shard: qe.EdgeShard | None = None
        self._held: AbstractContextManager[None] | None = None
        self._timer: threading.Timer | None = None
        self._leased_at = self._last_use = self._resume_at = 0.0
        #: The lease's clock (seconds; a test's own to run a lease past ``MAX_LEASE``).
        self.monotonic: Callable[[], float] = time.monotonic
        self._wrote = False
        #: The private copy a read-only folder is read from (see :meth:`_open_shard`).
        self._view: tempfile.TemporaryDirectory[str] | None = None
        #: dense vectors written in the current operation (see _count_writes)
        self._new_vectors = 0
        #: BM25 statistics and newest ids of search scopes (see _kept): valid at one write
        #: generation, until the first expiry after they were computed
        self._kept_values: dict[tuple[Any, ...], Any] = {}
        self._kept_at: int | None = None
        self._kept_until = 0.0
        #: whether the shard keeps sentence views, by its config file's path and time
        self._views_known: tuple[tuple[str, int], bool] | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def _config(self) -> qe.EdgeConfig:
        """The shard's vectors and indexing threshold (:func:`~memory.store.erasing.
        shard_config`): a segment is indexed once it holds ``index_after`` vectors (Qdrant's
        own threshold is in kilobytes of vectors); smaller ones are searched exactly."""
        kilobytes = None
        if self.dims and self.index_after is not None:
            kilobytes = max(1, self.index_after * self.dims * 4 // 1024)
        return shard_config(self.dims or 0, kilobytes)

    def _open_shard(self) -> qe.EdgeShard:
        if (self.path / "segments").exists() and not os.access(self.path, os.W_OK):
            # A read-only folder: reads are served from a private copy; writes are refused.
            self._view = read_only_view(self.path)
            return _load(Path(self._view.name) / self.path.name)
        ensure_mapped_space("long-term memory folder", self.path)  # else a full disk is SIGBUS
        recover(self.path)
        if erasing.pending(self.path):  # an erasure a crash (or a busy folder) left: serve it
            erasing.start_eraser(self.path)
        if (self.path / "segments").exists():
            return _load(self.path)
        return qe.EdgeShard.create(str(self.path), self._config())

    @contextmanager
    def _connected(self) -> Iterator[qe.EdgeShard]:
        """The open shard: the held one (exclusive), or (shared) a lease on it.

        A shared lease takes the folder lock and opens the shard. It is given up to another
        process waiting for the lock (:func:`~memory.store.lock.others_waiting`) once it has
        been idle for ``LINGER`` seconds (so a burst, a recall or a batch of writes, opens the
        shard once) or in continuous use for ``MAX_LEASE`` seconds, so that the waiter gets its
        turn; while nobody waits it goes on (no reload, the page cache kept), up to
        ``KEEP_IDLE`` seconds idle. Writes are durable when ``update``
        returns (the shard's WAL), so releasing needs no flush.
        """
        with self._lock:
            if self.access == "exclusive":
                if self._shard is None:
                    raise RuntimeError("EdgeStore: closed (or setup() was not called)")
                try:
                    yield self._shard
                finally:
                    if self._wrote:  # no indexer: it could not take the folder to swap
                        self._count_writes(self._shard)
                return
            if self._shard is None:
                pause = self._resume_at - self.monotonic()
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
                self._leased_at = self.monotonic()
            try:
                yield self._shard
            finally:
                if self._wrote:
                    self._after_writes(self._shard)
                self._last_use = self.monotonic()
                if self._last_use - self._leased_at >= MAX_LEASE and others_waiting(self.path):
                    self._release()
                    self._resume_at = self.monotonic() + YIELD_PAUSE
                else:
                    self._schedule_release()

    def _count_writes(self, shard: qe.EdgeShard | None) -> int:
        """Bump the shard's write generation (an index build copied before it is stale) and
        its count of unindexed vectors; return that count (caller holds the lease)."""
        self._wrote = False
        new, self._new_vectors = self._new_vectors, 0
        bump_generation(self.path)
        before = unindexed(self.path)
        if before is None:  # never counted: every point may be unindexed, the new ones too
            pending = shard.info().points_count if shard is not None else new
        else:
            pending = before + new
        set_unindexed(self.path, pending)
        return pending

    def _after_writes(self, shard: qe.EdgeShard | None) -> None:
        """Count the writes, and start the indexer when ``index_after`` vectors are unindexed
        (caller holds the lease)."""
        pending = self._count_writes(shard)
        if self.dims and self.index_after is not None and pending >= self.index_after:
            start_indexer(self.path)

    def shard_info(self) -> dict[str, int]:
        """Points, indexed vectors and segments of the shard now (diagnostics, benchmarks)."""
        with self._connected() as shard:
            info = shard.info()
        return {
            "points": info.points_count,
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
        }

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
            idle = self.monotonic() - self._last_use
            if idle >= KEEP_IDLE or (idle >= LINGER and others_waiting(self.path)):
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
        upgrade = not fresh and bool(self.dims) and not has_views(self.path)
        if upgrade and self._view is None and os.access(self.path, os.W_OK):
            # A shard from before sentence views: rewritten with their vector, then each
            # item's views embedded (memory.store.edge_upgrade.add_views).
            self.rebuild()
            with self._connected() as shard:
                added = add_views(self, shard)
            logger.warning(
                "Gave the %d items of the Qdrant Edge shard %s their sentence views "
                "(memory.store.views).",
                added,
                self.path,
            )
        if not fresh and _has_store_idf(self.path):
            kept = self.rebuild()
            logger.warning(
                "Rebuilt the Qdrant Edge shard %s (%d items) so that BM25 statistics are "
                "computed per search scope instead of over every principal's memories.",
                self.path,
                kept,
            )
        with self._connected() as shard:
            self._check_meta()
            create_indexes(shard)
            if fresh and import_from is not None:
                copied = import_local_mode(self, shard, import_from)
                if copied:
                    logger.warning(
                        "Copied %d long-term memories from the local-mode folder %s into the "
                        "Qdrant Edge shard %s (the folder is left as it was).",
                        copied,
                        import_from,
                        self.path,
                    )

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

    # -- primitives -------------------------------------------------------------------------

    def _retrieve(
        self, handle: qe.EdgeShard, ids: list[str], fields: list[str] | None = None
    ) -> dict[str, Payload]:
        selector: Any = True if fields is None else qe.PayloadSelector.Include(fields)
        records = handle.retrieve(cast(list[Any], ids), selector, False)
        return {str(r.id): r.payload or {} for r in records}

    def keeps_terms(self) -> bool:
        return True  # the shard always declares the BM25 vector

    def keeps_views(self) -> bool:
        """Whether the open shard declares the views' vector (its ``edge_config.json``, read
        again only when that file changes: a rewrite by another process swaps it)."""
        if not self.dims:
            return False
        path = self._shard_path()
        try:
            stamp = (str(path), (path / "edge_config.json").stat().st_mtime_ns)
        except OSError:
            return False
        if self._views_known is None or self._views_known[0] != stamp:
            self._views_known = (stamp, has_views(path))
        return self._views_known[1]

    def _shard_path(self) -> Path:
        """The folder the open shard is read from (a read-only folder's private copy)."""
        if self._view is not None:
            return Path(self._view.name) / self.path.name
        return self.path

    def _query(
        self, handle: qe.EdgeShard, vector: list[float], lexical: Terms | None, flt: Any, depth: int
    ) -> list[Hit]:
        """Dense candidates, and (with ``lexical``: the query's terms weighted by their IDF in
        the scope) BM25 candidates, fused by reciprocal rank; the parts are each candidate's
        cosine (:func:`_cosines`) and its share of the query's terms (its ``terms`` payload)."""
        params = qe.SearchParams(hnsw_ef=max(HNSW_EF, depth))
        dense = qe.Query.Nearest([vector], using=VECTOR)
        if lexical is None:
            request = qe.QueryRequest(
                limit=depth, query=dense, filter=flt, params=params, with_payload=True
            )
            found = handle.query(request)
            return [Hit(p.payload or {}, float(p.score), point=p.id) for p in found]
        request = qe.QueryRequest(
            limit=2 * depth,
            prefetches=[
                qe.Prefetch(limit=depth, query=dense, filter=flt, params=params),
                qe.Prefetch(
                    limit=depth,
                    query=qe.Query.Nearest(
                        qe.SparseVector(lexical.indices, lexical.values), using=SPARSE
                    ),
                    filter=flt,
                ),
            ],
            query=cast(Any, qe.Fusion.Rrf(k=RRF_K, weights=list(RRF_WEIGHTS))),
            filter=flt,
            with_payload=True,
        )
        # The candidates come back without their vectors (copying 128 multivectors out of the
        # engine took three quarters of a search at 100k items); their cosines are the scores
        # of an exact dense query over their ids, and their terms are in the payload.
        points = handle.query(request)
        cosines = exact_cosines(handle, vector, [p.id for p in points])
        share = term_sharer(lexical.indices, lexical.values)
        return [
            Hit(
                p.payload or {},
                cosines.get(p.id),
                share((p.payload or {}).get(TERMS) or ()),
                fused_score(p.score),
                point=p.id,
            )
            for p in points
        ]

    def _view_cosines(
        self, handle: qe.EdgeShard, vector: list[float], points: list[Any]
    ) -> dict[Any, float]:
        """Read from the on-disk views vector for these points only (an exact query over
        their ids); none when the shard keeps no views."""
        if not self.keeps_views():
            return {}
        return exact_cosines(handle, vector, points, using=VIEWS)

    def _recent(
        self, handle: qe.EdgeShard, flt: Any, limit: int, fields: list[str] | None = None
    ) -> list[Payload]:
        records, _ = handle.scroll(
            qe.ScrollRequest(
                limit=limit,
                filter=flt,
                with_payload=True if fields is None else qe.PayloadSelector.Include(fields),
                order_by=qe.OrderBy("updated_us", direction=qe.Direction.Desc),
            )
        )
        found = [r.payload or {} for r in records]
        found.sort(key=lambda p: (-int(p["updated_us"]), p["ns_key"], p["key"]))
        return found

    def _scan(self, handle: qe.EdgeShard, flt: Any) -> Iterator[Payload]:
        offset: Any = None
        while True:
            records, offset = handle.scroll(
                qe.ScrollRequest(offset=offset, limit=_SCAN_PAGE, filter=flt, with_payload=True)
            )
            for record in records:
                yield record.payload or {}
            if offset is None:
                return

    def _namespace_keys(self, handle: qe.EdgeShard, flt: Any) -> Iterable[str]:
        facets = handle.facet(qe.FacetRequest("ns_key", limit=_FACET_LIMIT, exact=True, filter=flt))
        return [str(hit.value) for hit in facets.hits]

    def _set_payload(self, handle: qe.EdgeShard, ids: list[str], payload: Payload) -> None:
        if self._view is not None:
            return  # a TTL refresh by a read: nothing can be kept in a read-only folder
        # A TTL refresh is not a write for the indexer: it carries expiries into its copy.
        handle.update(qe.UpdateOperation.set_payload(cast(list[Any], ids), payload))

    def _upsert(self, handle: qe.EdgeShard, points: list[NewPoint]) -> None:
        self._check_writable()
        ensure_mapped_space("long-term memory folder", self.path)
        self._wrote = True
        self._new_vectors += sum(1 for point in points if point.vectors)
        rows: list[qe.Point] = []
        for point in points:
            vector: dict[str, Any] = {}
            if point.texts:
                vector[VECTOR] = point.vectors
            if point.terms is not None:
                vector[SPARSE] = qe.SparseVector(point.terms.indices, point.terms.values)
            if point.views:
                vector[VIEWS] = point.views
            rows.append(qe.Point(point.id, vector, point.payload))
        handle.update(qe.UpdateOperation.upsert_points(rows))

    def _scope_count(self, handle: qe.EdgeShard, key: tuple[Any, ...], flt: Any, now: int) -> int:
        """Kept while the shard is unchanged (:meth:`_kept`): 1 + one per query term counts
        took 11 ms of a 30 ms search at 100k items."""
        return cast(int, self._kept(handle, ("count", key), now, lambda: self._count(handle, flt)))

    def _scope_newest(
        self, handle: qe.EdgeShard, key: tuple[Any, ...], flt: Any, want: int, now: int
    ) -> list[str]:
        """Kept while the shard is unchanged (:meth:`_kept`): choosing the newest item among
        a write batch's 1,000 ties took half of a recall at 30k items (every recall lists
        one item first, to see that there is something to search)."""
        return cast(
            list[str],
            self._kept(
                handle,
                ("newest", key),
                now,
                lambda: super(EdgeStore, self)._scope_newest(handle, key, flt, want, now),
            ),
        )

    def _kept(
        self, handle: qe.EdgeShard, key: tuple[Any, ...], now: int, compute: Callable[[], Any]
    ) -> Any:
        """A statistic of a search scope (:meth:`_scope_count`, :meth:`_scope_newest`),
        computed once per write generation (any process's write batch bumps it) and kept
        until the first item expires after it was computed (a TTL refresh only moves an
        expiry later), so a search pays for it only after a change."""
        at = generation(self.path)
        if at != self._kept_at or now >= self._kept_until:
            self._kept_values = {}
            self._kept_at = at
            self._kept_until = self._next_expiry(handle, now)
        if key not in self._kept_values:
            self._kept_values[key] = compute()
        return self._kept_values[key]

    def _next_expiry(self, handle: qe.EdgeShard, now: int) -> float:
        """The earliest ``expires_us`` after ``now`` (infinity: none, or expired items are not
        hidden from reads)."""
        if not self.omit_expired():
            return float("inf")
        later = qe.Filter(
            must=[qe.FieldCondition("expires_us", range=qe.RangeFloat(gt=float(now)))]
        )
        records, _ = handle.scroll(
            qe.ScrollRequest(
                limit=1,
                filter=later,
                with_payload=True,
                order_by=qe.OrderBy("expires_us", direction=qe.Direction.Asc),
            )
        )
        return float((records[0].payload or {})["expires_us"]) if records else float("inf")

    def _check_writable(self) -> None:
        if self._view is not None:
            raise StorageReadOnlyError("long-term memory folder", self.path, "no write access")

    def _delete(self, handle: qe.EdgeShard, ids: list[str]) -> None:
        self._check_writable()
        self._wrote = True
        handle.update(qe.UpdateOperation.delete_points(cast(list[Any], ids)))

    def _delete_where(self, handle: qe.EdgeShard, flt: Any) -> None:
        self._check_writable()
        self._wrote = True
        handle.update(qe.UpdateOperation.delete_points_by_filter(flt))

    def _count(self, handle: qe.EdgeShard, flt: Any) -> int:
        return int(handle.count(qe.CountRequest(filter=flt, exact=True)))

    def _namespace_condition(self, prefix: tuple[str, ...]) -> Any:
        return qe.FieldCondition("ns_prefixes", match=qe.MatchValue(namespace_text(prefix)))

    def _value_conditions(self, filter: Mapping[str, Any] | None) -> list[Any]:
        return edge_prefilter(filter)

    def _term_condition(self, term: int) -> Any:
        return qe.FieldCondition(TERMS, match=qe.MatchValue(term))

    def _no_terms_condition(self) -> Any:
        return qe.IsEmptyCondition(TERMS)

    def _expired_condition(self, now: int) -> Any:
        return qe.FieldCondition("expires_us", range=qe.RangeFloat(lte=float(now)))

    def _filter(self, must: list[Any], must_not: list[Any]) -> qe.Filter:
        return qe.Filter(must=must or None, must_not=must_not or None)

    def _any_of(self, field: str, values: list[str]) -> Any:
        return qe.FieldCondition(field, match=qe.MatchAny(values))

    def _either(self, conditions: list[Any]) -> Any:
        return qe.Filter(should=conditions)

    # -- diagnostics --------------------------------------------------------------------------

    def rebuild(self) -> int:
        """Rewrite the shard with its live items only, now (:func:`~memory.store.erasing.
        live_copy`); return how many were kept. Runs under the folder lock; other processes
        wait, as for any operation. Serves any pending erasure request too."""
        with self._lock, self._connected() as shard:
            fresh, kept = live_copy(self.path, shard, self._config())
            shard.close()
            self._shard = None
            swap_in(self.path, fresh)
            self._shard = _load(self.path)
            return kept

    def erase_deleted(self) -> bool:
        """Make the bytes of deleted items leave the shard's files; True when that is done on
        return, False when the detached eraser does it (:mod:`memory.store.erasing`).

        An exclusive holder rewrites the shard now (it keeps the folder lock an eraser would
        need). Shared access records the request in the shard under the lease that deleted
        (once that lease has ended, under the folder lock alone: no reopening of the shard)
        and starts the eraser, which takes the folder when the lease ends (``LINGER`` after
        its last use, on the lease's timer thread): a forget waits neither for a rewrite whose
        cost is the whole shard's nor for the shard's close."""
        if self.access == "exclusive":
            self.rebuild()
            return True
        with self._lock:
            if self._shard is not None:  # the lease that deleted is still held
                erasing.request(self.path)
            else:  # the folder lock is enough to record it: the shard need not be reopened
                with folder_lock(self.path, self.lock_timeout):
                    erasing.request(self.path)
        erasing.start_eraser(self.path)
        return False

    def erasure_pending(self) -> bool:
        """Whether deleted items' bytes may still be in the shard's files."""
        return erasing.pending(self.path)

    def optimize(self) -> bool:
        """Build the HNSW index and merge segments now (else the optimizer does it as it goes)."""
        with self._connected() as shard:
            return bool(shard.optimize())


def _load(folder: Path) -> qe.EdgeShard:
    """The shard in ``folder``, loaded, its payload pages read back into the page cache in the
    background (:func:`~memory.store.edge_parts.read_ahead`: the load dropped them), as far
    as a quarter of the available memory goes."""
    shard = qe.EdgeShard.load(str(folder))
    read_ahead(folder, read_ahead_budget())
    return shard


def _has_store_idf(path: Path) -> bool:
    """Whether the shard in ``path`` was created with the engine's IDF modifier (before BM25
    statistics were per search scope), read from the shard's own ``edge_config.json``."""
    try:
        config = json.loads((path / "edge_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    sparse = (config.get("sparse_vectors") or {}).get(SPARSE) or {}
    return str(sparse.get("modifier") or "").lower() == "idf"


__all__ = ["EdgeStore", "folder_lock"]
