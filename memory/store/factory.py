"""Open the long-term store (cold memory) from a URL; the context manager owns its lifetime.

``open_store(url, ...)`` yields a ready LangGraph ``BaseStore`` (set up on entry, one TTL
sweep run, a periodic sweeper while it is open) and closes every connection, thread and folder
lock on exit. URLs: ``qdrant://local`` (the default, :class:`~memory.store.edge.EdgeStore`),
``qdrant+local://local``, ``qdrant+http(s)://host:port``, ``memory://``, ``postgres://``.
An index embeds the whole value unless told otherwise (LangGraph's default, ``["$"]``); the
principal's memories embed ``text`` and ``about`` (:data:`~memory.store.scoped.TEXT_FIELDS`,
applied by the scoped view). With a ``cipher`` the Qdrant stores seal values, and Postgres (values in clear) is refused. The
backends in detail: ``docs/architecture.md``, "Opening a store".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, IndexConfig, TTLConfig

from memory.embedding_cache import embedder_from_settings
from memory.embeddings import Embedder
from memory.errors import (
    ConfigurationError,
    MissingDependencyError,
    MissingExtensionError,
    StoreUnavailableError,
)
from memory.sealing import KEY_VARIABLE, MemoryCipher
from memory.urls import backend_for, examples, redact

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from memory.config import StorageSettings
    from memory.store.common import LocalAccess

SCHEMES = examples("store")


#: TTL behaviour of the stores that support it: reads refresh, expired items are hidden
#: before the sweep removes them, and an open store sweeps hourly (and once on opening).
DEFAULT_TTL: TTLConfig = {
    "refresh_on_read": True,
    "omit_expired": True,
    "sweep_interval_minutes": 60,
}


def index_config(embedder: Embedder | None, fields: list[str] | None = None) -> IndexConfig | None:
    """The index config for ``embedder`` (``None``: no semantic search), embedding ``fields``
    (default: the whole value, as LangGraph's stores do)."""
    if embedder is None:
        return None
    config: IndexConfig = {"dims": embedder.dims, "embed": cast(Embeddings, embedder)}
    if fields is not None:
        config["fields"] = list(fields)
    return config


def store_url(settings: StorageSettings) -> str:
    """The store URL the settings select (``QDRANT_URL`` turns local mode into a server)."""
    url = settings.store
    if url == "qdrant://local" and settings.qdrant_url:
        server = settings.qdrant_url.strip()
        if server.startswith(("http://", "https://")):
            return f"qdrant+{server}"
        raise ConfigurationError(
            f"QDRANT_URL='{server}' is not an http(s) URL; use e.g. http://localhost:6333"
        )
    return url


def qdrant_server_url(url: str) -> str:
    """``qdrant+https://h:6333`` → ``https://h:6333`` (clear error if there is no host)."""
    server = url[len("qdrant+") :]
    if not urlsplit(server).hostname:
        raise ConfigurationError(
            f"Store URL '{redact(url)}' names no host; use e.g. qdrant+http://localhost:6333"
        )
    return server


@asynccontextmanager
async def open_store(
    url: str,
    *,
    embedder: Embedder | None,
    qdrant_path: Path | None = None,
    qdrant_api_key: str | None = None,
    ttl: TTLConfig | None = DEFAULT_TTL,
    collection: str | None = None,
    lock_timeout: float = 10.0,
    local_access: LocalAccess = "shared",
    cipher: MemoryCipher | None = None,
) -> AsyncIterator[BaseStore]:
    """Open the store at ``url``; ``embedder=None`` opens it without semantic search.
    ``cipher`` seals item values at rest (see the module docstring).

    ``local_access`` applies to the embedded stores (``EdgeStore``, ``QdrantStore.local``):
    ``"shared"`` (default) lets several processes take turns; ``"exclusive"`` holds the shard
    or folder while the store is open. ``lock_timeout``: seconds to wait for it.
    """
    index = index_config(embedder)
    backend = backend_for("store", url)
    if backend == "qdrant-edge":
        async with _open_edge(
            qdrant_path,
            index=index,
            ttl=ttl,
            lock_timeout=lock_timeout,
            local_access=local_access,
            cipher=cipher,
        ) as edge:
            yield edge
        return
    if backend in ("qdrant-local", "qdrant-server"):
        async with _open_qdrant(
            url,
            index=index,
            qdrant_path=qdrant_path,
            api_key=qdrant_api_key,
            ttl=ttl,
            collection=collection,
            lock_timeout=lock_timeout,
            local_access=local_access,
            cipher=cipher,
        ) as store:
            yield store
        return
    if backend == "memory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=index)
        return
    if cipher is not None and cipher.sealing:
        raise ConfigurationError(
            f"{KEY_VARIABLE} seals long-term memories in the Qdrant stores only; the Postgres "
            f"store ({redact(url)}) would keep them in clear. Use ANALYST_STORE=qdrant://local "
            f"(or a Qdrant server), or unset {KEY_VARIABLE}."
        )
    async with _open_postgres(url, index=index, ttl=ttl) as pg:
        yield pg


@asynccontextmanager
async def open_store_from_settings(
    settings: StorageSettings,
    *,
    embedder: Embedder | None = None,
    lock_timeout: float = 10.0,
    cipher: MemoryCipher | None = None,
) -> AsyncIterator[BaseStore]:
    """The configured store with the configured embedder (cached in the data directory).

    ``embedder`` overrides the configured one (tests inject a deterministic embedder).
    No model is loaded here: MiniLM loads on the first text that is not in the cache.
    """
    chosen = embedder if embedder is not None else embedder_from_settings(settings)
    async with open_store(
        store_url(settings),
        embedder=chosen,
        qdrant_path=settings.qdrant_path,
        qdrant_api_key=settings.qdrant_api_key,
        lock_timeout=lock_timeout,
        cipher=cipher,
    ) as store:
        yield store


# -- Qdrant -----------------------------------------------------------------------------------


def edge_path(qdrant_path: Path) -> Path:
    """The Qdrant Edge shard folder beside local mode's: ``<data dir>/qdrant-edge``."""
    folder = Path(qdrant_path)
    return folder.with_name(folder.name + "-edge")


@asynccontextmanager
async def _open_edge(
    qdrant_path: Path | None,
    *,
    index: IndexConfig | None,
    ttl: TTLConfig | None,
    lock_timeout: float,
    local_access: LocalAccess,
    cipher: MemoryCipher | None,
) -> AsyncIterator[BaseStore]:
    from memory.store.edge import EdgeStore

    if qdrant_path is None:
        raise ConfigurationError(
            "The embedded Qdrant store needs a folder; set ANALYST_DATA_DIR (the store lives "
            "in <data dir>/qdrant-edge)"
        )
    store = EdgeStore(
        edge_path(qdrant_path),
        access=local_access,
        lock_timeout=lock_timeout,
        index=index,
        ttl=ttl,
        cipher=cipher,
    )
    try:
        await asyncio.to_thread(store.setup, import_from=Path(qdrant_path))
        await store.asweep_ttl()
        if ttl and ttl.get("sweep_interval_minutes"):
            store.start_ttl_sweeper()
        yield store
    finally:
        await asyncio.to_thread(store.close)


@asynccontextmanager
async def _open_qdrant(
    url: str,
    *,
    index: IndexConfig | None,
    qdrant_path: Path | None,
    api_key: str | None,
    ttl: TTLConfig | None,
    collection: str | None,
    lock_timeout: float,
    local_access: LocalAccess,
    cipher: MemoryCipher | None,
) -> AsyncIterator[BaseStore]:
    from memory.store.qdrant import DEFAULT_COLLECTION, QdrantStore, open_qdrant_client

    held: QdrantClient | None = None
    options: dict[str, Any] = {
        "collection": collection or DEFAULT_COLLECTION,
        "index": index,
        "ttl": ttl,
        "cipher": cipher,
    }
    if backend_for("store", url) == "qdrant-local":
        if qdrant_path is None:
            raise ConfigurationError(
                "qdrant+local://local needs a folder; set ANALYST_DATA_DIR (the store lives in "
                "<data dir>/qdrant)"
            )
        folder = Path(qdrant_path)
        where = f"the Qdrant folder {folder}"
        if local_access == "shared":
            store = QdrantStore(
                connect=lambda: open_qdrant_client(path=folder, lock_timeout=lock_timeout),
                **options,
            )
        else:
            held = await asyncio.to_thread(
                open_qdrant_client, path=folder, lock_timeout=lock_timeout
            )
            store = QdrantStore(held, **options)
    else:
        server = qdrant_server_url(url)
        where = f"the Qdrant server at {redact(server)}"
        held = open_qdrant_client(url=server, api_key=api_key)
        store = QdrantStore(held, **options)
    try:
        try:
            await asyncio.to_thread(store.setup)
            await store.asweep_ttl()
        except Exception as e:
            if _is_connection_error(e):
                raise StoreUnavailableError(
                    f"Cannot reach {where}: {e}. Start the server (e.g. docker compose up -d "
                    "qdrant), check QDRANT_URL / QDRANT_API_KEY, or unset QDRANT_URL to use "
                    "local mode."
                ) from e
            raise
        if ttl and ttl.get("sweep_interval_minutes"):
            store.start_ttl_sweeper()
        try:
            yield store
        finally:
            store.stop_ttl_sweeper(timeout=5)
    finally:
        if held is not None:
            held.close()


def _is_connection_error(error: BaseException) -> bool:
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if isinstance(error, UnexpectedResponse):
        return error.status_code in (401, 403, 502, 503, 504)
    return isinstance(error, ResponseHandlingException | httpx.TransportError | ConnectionError)


# -- Postgres ---------------------------------------------------------------------------------


@asynccontextmanager
async def _open_postgres(
    url: str, *, index: IndexConfig | None, ttl: TTLConfig | None
) -> AsyncIterator[BaseStore]:
    try:
        import psycopg
        from langgraph.store.postgres.aio import AsyncPostgresStore
    except ImportError as e:
        raise MissingDependencyError(
            "The Postgres store", "langgraph-checkpoint-postgres", "postgres"
        ) from e
    where = redact(url)
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as e:
        raise StoreUnavailableError(
            f"Cannot connect to the Postgres store at {where}: {str(e).strip()}. Check "
            "ANALYST_STORE and that the server is running."
        ) from e
    async with conn:
        if index is not None:
            await _require_pgvector(conn, where)
    pg_index: Any = None
    if index is not None:
        pg_index = {**index, "distance_type": "cosine"}
    async with AsyncPostgresStore.from_conn_string(url, index=pg_index, ttl=ttl) as store:
        await store.setup()
        if ttl:
            await store.sweep_ttl()
        if ttl and ttl.get("sweep_interval_minutes"):
            await store.start_ttl_sweeper()
        try:
            yield store
        finally:
            if ttl:
                with contextlib.suppress(Exception):
                    await store.stop_ttl_sweeper(timeout=5)


async def _require_pgvector(conn: Any, where: str) -> None:
    cur = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
    )
    row = await cur.fetchone()
    if not row or not row[0]:
        raise MissingExtensionError(where, "vector", "semantic search in the Postgres store")


async def sweep_expired(store: BaseStore) -> int:
    """Delete expired items now on any store that supports TTL; returns how many (0 if none)."""
    if not store.supports_ttl:
        return 0
    asweep = getattr(store, "asweep_ttl", None)
    if asweep is not None:
        return int(await asweep())
    sweep = getattr(store, "sweep_ttl", None)
    if sweep is None:
        return 0
    result = sweep()
    if asyncio.iscoroutine(result):
        result = await result
    return int(result)
