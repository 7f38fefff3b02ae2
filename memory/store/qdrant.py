"""``QdrantStore``: the long-term store on one collection of a Qdrant server, or of
qdrant-client's local mode (``qdrant+local://local``, an on-disk folder one process opens at a
time; the store can hold it or open it per operation so that processes take turns).

Only the client differs between the two; the storage format is :mod:`memory.store.common`'s
and the shared logic :class:`~memory.store.engine.QdrantFormatStore`. Details in
``docs/architecture.md``, "Long-term memory store".
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from langgraph.store.base import IndexConfig, TTLConfig
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
    TERMS,
    VECTOR,
    LocalAccess,
    json_equal,
    namespace_text,
    point_id,
    prefilter,
    value_matches,
)
from memory.store.engine import QdrantFormatStore
from memory.store.primitives import NewPoint, Payload, Terms
from memory.store.scoring import Hit, fused_hits
from memory.store.views import VIEWS

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


class QdrantStore(QdrantFormatStore[QdrantClient]):
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
        #: the collection keeps sentence views (:mod:`memory.store.views`): made since them
        self.views = False
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
                    # Sentence views: on disk, float16, no HNSW graph (never searched, only read
                    # for a query's candidates; memory.store.views).
                    vectors[VIEWS] = qm.VectorParams(
                        size=self.dims,
                        distance=qm.Distance.COSINE,
                        multivector_config=qm.MultiVectorConfig(
                            comparator=qm.MultiVectorComparator.MAX_SIM
                        ),
                        on_disk=True,
                        datatype=qm.Datatype.FLOAT16,
                        hnsw_config=qm.HnswConfigDiff(m=0),
                    )
                sparse: dict[str, qm.SparseVectorParams] = {}
                if self.dims:
                    # No IDF modifier: the server would count every principal's items; the
                    # query carries its scope's IDF (QdrantFormatStore._scope_terms).
                    sparse[SPARSE] = qm.SparseVectorParams(modifier=qm.Modifier.NONE)
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
                self.views = bool(self.dims)
            with warnings.catch_warnings():
                # Local mode warns that payload indexes have no effect there; a server uses them.
                warnings.simplefilter("ignore", UserWarning)
                for name, schema in (
                    ("ns_key", qm.PayloadSchemaType.KEYWORD),
                    ("ns_prefixes", qm.PayloadSchemaType.KEYWORD),
                    (TERMS, qm.PayloadSchemaType.INTEGER),
                    ("updated_us", qm.PayloadSchemaType.INTEGER),
                    ("expires_us", qm.PayloadSchemaType.INTEGER),
                ):
                    self.client.create_payload_index(self.collection, name, field_schema=schema)

    def _check_collection(self) -> None:
        info = self.client.get_collection(self.collection)
        sparse = (info.config.params.sparse_vectors or {}).get(SPARSE)
        self.hybrid = bool(self.dims) and sparse is not None
        named = info.config.params.vectors
        # A collection made before sentence views keeps none (no view part in its ranking).
        self.views = bool(self.dims) and isinstance(named, dict) and VIEWS in named
        if sparse is not None and sparse.modifier == qm.Modifier.IDF:
            self._drop_collection_idf()
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

    def _drop_collection_idf(self) -> None:
        """Upgrade a collection from before per-scope BM25 statistics: its items get their
        ``terms`` payload from their stored BM25 vectors, then the server's IDF modifier
        (computed over every principal's items) is removed. Stored vectors stay as they are."""
        offset: Any = None
        while True:
            records, offset = self.client.scroll(
                self.collection,
                limit=_SCAN_PAGE,
                offset=offset,
                with_payload=False,
                with_vectors=[SPARSE],
            )
            for record in records:
                vectors = record.vector if isinstance(record.vector, dict) else {}
                sparse = vectors.get(SPARSE)
                indices = getattr(sparse, "indices", None)
                if indices:
                    self.client.set_payload(
                        self.collection,
                        payload={TERMS: sorted({int(i) for i in indices})},
                        points=[record.id],
                        wait=True,
                    )
            if offset is None:
                break
        self.client.update_collection(
            self.collection,
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.NONE)},
        )
        logger.warning(
            "Qdrant collection '%s': BM25 statistics are now computed per search scope (the "
            "collection-wide IDF modifier was removed).",
            self.collection,
        )

    # -- primitives ---------------------------------------------------------------------

    def _retrieve(
        self, handle: QdrantClient, ids: list[str], fields: list[str] | None = None
    ) -> dict[str, Payload]:
        payload: Any = True if fields is None else fields
        records = handle.retrieve(self.collection, ids=ids, with_payload=payload)
        return {str(r.id): r.payload or {} for r in records}

    def keeps_views(self) -> bool:
        return self.views

    def _query(
        self, handle: QdrantClient, vector: list[float], lexical: Terms | None, flt: Any, depth: int
    ) -> list[Hit]:
        """Dense candidates, and (with ``lexical``: the query's terms weighted by their IDF in
        the scope) BM25 candidates, fused by reciprocal rank; the parts are computed from each
        candidate's vectors."""
        if lexical is None:
            points = handle.query_points(
                self.collection,
                query=[vector],
                using=VECTOR,
                query_filter=flt,
                limit=depth,
                with_payload=True,
            ).points
            return [Hit(p.payload or {}, float(p.score)) for p in points]
        points = handle.query_points(
            self.collection,
            prefetch=[
                qm.Prefetch(query=[vector], using=VECTOR, filter=flt, limit=depth),
                qm.Prefetch(
                    query=qm.SparseVector(indices=lexical.indices, values=lexical.values),
                    using=SPARSE,
                    filter=flt,
                    limit=depth,
                ),
            ],
            query=qm.RrfQuery(rrf=qm.Rrf(k=RRF_K, weights=list(RRF_WEIGHTS))),
            query_filter=flt,
            limit=2 * depth,
            with_payload=True,
            with_vectors=True,
        ).points
        return fused_hits(points, vector, lexical.indices, lexical.values, views=self.views)

    def _recent(
        self, handle: QdrantClient, flt: Any, limit: int, fields: list[str] | None = None
    ) -> list[Payload]:
        records, _ = handle.scroll(
            self.collection,
            scroll_filter=flt,
            limit=limit,
            order_by=qm.OrderBy(key="updated_us", direction=qm.Direction.DESC),
            with_payload=True if fields is None else fields,
        )
        return [r.payload or {} for r in records]

    def _scan(self, handle: QdrantClient, flt: Any) -> Iterator[Payload]:
        offset: Any = None
        while True:
            records, offset = handle.scroll(
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

    def _namespace_keys(self, handle: QdrantClient, flt: Any) -> Iterable[str]:
        facets = handle.facet(
            self.collection, key="ns_key", facet_filter=flt, limit=_FACET_LIMIT, exact=True
        )
        return [str(hit.value) for hit in facets.hits]

    def _set_payload(self, handle: QdrantClient, ids: list[str], payload: Payload) -> None:
        handle.set_payload(self.collection, payload=payload, points=cast(list[Any], ids), wait=True)

    def _upsert(self, handle: QdrantClient, points: list[NewPoint]) -> None:
        rows: list[qm.PointStruct] = []
        for point in points:
            vector: dict[str, Any] = {}
            if point.texts:
                vector[VECTOR] = point.vectors
            if point.views and self.views:
                vector[VIEWS] = point.views
            if point.terms is not None:
                vector[SPARSE] = qm.SparseVector(
                    indices=point.terms.indices, values=point.terms.values
                )
            rows.append(qm.PointStruct(id=point.id, vector=vector, payload=point.payload))
        handle.upsert(self.collection, points=rows, wait=True)

    def _delete(self, handle: QdrantClient, ids: list[str]) -> None:
        handle.delete(
            self.collection,
            points_selector=qm.PointIdsList(points=cast(list[Any], ids)),
            wait=True,
        )

    def _delete_where(self, handle: QdrantClient, flt: Any) -> None:
        handle.delete(self.collection, points_selector=qm.FilterSelector(filter=flt), wait=True)

    def _count(self, handle: QdrantClient, flt: Any) -> int:
        return int(handle.count(self.collection, count_filter=flt, exact=True).count)

    def _namespace_condition(self, prefix: tuple[str, ...]) -> Any:
        return qm.FieldCondition(
            key="ns_prefixes", match=qm.MatchValue(value=namespace_text(prefix))
        )

    def _value_conditions(self, filter: Mapping[str, Any] | None) -> list[Any]:
        return _prefilter(filter)

    def _term_condition(self, term: int) -> Any:
        return qm.FieldCondition(key=TERMS, match=qm.MatchValue(value=term))

    def _no_terms_condition(self) -> Any:
        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=TERMS))

    def _expired_condition(self, now: int) -> Any:
        return qm.FieldCondition(key="expires_us", range=qm.Range(lte=now))

    def _filter(self, must: list[Any], must_not: list[Any]) -> qm.Filter:
        return qm.Filter(must=must or None, must_not=must_not or None)

    def _any_of(self, field: str, values: list[str]) -> Any:
        return qm.FieldCondition(key=field, match=qm.MatchAny(any=values))

    def _either(self, conditions: list[Any]) -> Any:
        return qm.Filter(should=conditions)


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
