"""Cold memory: the long-term store, a LangGraph ``BaseStore`` on every backend.

- :mod:`memory.store.edge` — :class:`~memory.store.edge.EdgeStore`, the embedded default
  (``qdrant://local``): the Qdrant engine in-process (Qdrant Edge shard: HNSW, WAL, hybrid
  dense + BM25 search).
- :mod:`memory.store.qdrant` — :class:`QdrantStore` on a Qdrant server, or qdrant-client's
  local mode (``qdrant+local://local``, the former default).
- :mod:`memory.store.indexing` — the Edge shard's vector index, built by a detached process
  on a copy of the shard and swapped in.
- :mod:`memory.store.common` and :mod:`memory.store.engine` — the Qdrant format both engines
  write, and :class:`~memory.store.engine.QdrantFormatStore`, the base that runs their
  batches over a few engine primitives (``docs/architecture.md``, "Long-term memory store").
- :mod:`memory.store.factory` — :func:`open_store` / :func:`open_store_from_settings`: a store
  from a URL (``qdrant://local``, ``qdrant+http(s)://``, ``memory://``, ``postgres://``,
  ``qdrant+local://local``).
- :mod:`memory.store.scoped` — tenancy: :class:`ScopedStore` confines every operation to one
  principal's namespaces; the namespace layout is documented there.

Ranking and the remember/recall/forget helpers live in :mod:`memory.recall`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.store.factory import (
        DEFAULT_TTL,
        SCHEMES,
        index_config,
        open_store,
        open_store_from_settings,
        store_url,
        sweep_expired,
    )
    from memory.store.qdrant import DEFAULT_COLLECTION, QdrantStore, open_qdrant_client, point_id
    from memory.store.scoped import (
        MEMORIES,
        TEXT_FIELDS,
        ScopedStore,
        ScopeViolationError,
        memories_namespace,
        principal_label,
        principal_namespace,
        scoped,
    )

#: Where each name lives. Importing the package imports none of them: ``qdrant_client`` (a
#: second of imports) loads only for the backends that use it, not for the embedded default.
_HOME = {
    **dict.fromkeys(
        (
            "DEFAULT_TTL",
            "SCHEMES",
            "index_config",
            "open_store",
            "open_store_from_settings",
            "store_url",
            "sweep_expired",
        ),
        "memory.store.factory",
    ),
    **dict.fromkeys(
        ("DEFAULT_COLLECTION", "QdrantStore", "open_qdrant_client", "point_id"),
        "memory.store.qdrant",
    ),
    **dict.fromkeys(
        (
            "MEMORIES",
            "TEXT_FIELDS",
            "ScopedStore",
            "ScopeViolationError",
            "memories_namespace",
            "principal_label",
            "principal_namespace",
            "scoped",
        ),
        "memory.store.scoped",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'memory.store' has no attribute {name!r}")
    return getattr(import_module(_HOME[name]), name)


__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_TTL",
    "MEMORIES",
    "SCHEMES",
    "TEXT_FIELDS",
    "QdrantStore",
    "ScopeViolationError",
    "ScopedStore",
    "index_config",
    "memories_namespace",
    "open_qdrant_client",
    "open_store",
    "open_store_from_settings",
    "point_id",
    "principal_label",
    "principal_namespace",
    "scoped",
    "store_url",
    "sweep_expired",
]
