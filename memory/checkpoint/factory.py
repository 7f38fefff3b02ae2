"""Open a LangGraph checkpointer from a URL, set up its schema, and say what it can do.

Contract: ``open_checkpointer(url)`` is an async context manager that owns the connections'
lifetime and yields a ready ``BaseCheckpointSaver``. Every backend deserialises with the
strict allowlist of :mod:`memory.serde` -- LangGraph's safe types plus the dataclasses, enums
and named tuples of ``allowed_modules``, which the application names (memory knows no
application module). With ``encryption_key`` every channel value and pending write is sealed
(:class:`~memory.checkpoint.sealed.SealedSaver`) before the backend stores it.

Schema setup is explicit and idempotent: :func:`setup_checkpointer` (``analyst db setup``)
creates or migrates tables and indexes and says what it did; ``open_checkpointer`` applies
it only when the schema is missing or behind (``ensure_schema=True``, what the CLI does).
Backend modules are imported only when their URL is opened (Postgres and Redis are extras).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from memory.checkpoint.sealed import SealedSaver
from memory.checkpoint.url import CheckpointerURL, parse_checkpointer_url

if TYPE_CHECKING:
    from memory.serde import ValueCipher


@asynccontextmanager
async def open_checkpointer(
    url: str,
    *,
    encryption_key: str | bytes | None = None,
    ensure_schema: bool = True,
    allowed_modules: Sequence[str] = (),
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open the saver for ``url``; closed (connections, pools) when the block exits.

    ``encryption_key`` (16/24/32 bytes or base64 of them) seals every stored value.
    ``ensure_schema`` applies :func:`setup_checkpointer` when the schema is missing or behind.
    ``allowed_modules``: the application's modules whose dataclasses, enums and named tuples
    a checkpoint may rebuild; any other non-LangGraph type is read back as plain data.
    """
    spec = parse_checkpointer_url(url)
    cipher = _cipher(encryption_key, allowed_modules)
    async with _open_backend(spec, allowed_modules, ensure_schema=ensure_schema) as saver:
        yield saver if cipher is None else SealedSaver(saver, cipher)


async def setup_checkpointer(url: str) -> str:
    """Create or migrate the backend's schema (idempotent); describe what was done."""
    from memory.serde import strict_redis_serializer, strict_serializer

    spec = parse_checkpointer_url(url)
    if spec.backend == "memory":
        return f"{spec.display}: in-process memory, nothing to set up"
    if spec.backend == "sqlite":
        from memory.checkpoint.sqlite import setup_sqlite

        return await setup_sqlite(spec, strict_serializer())
    if spec.backend == "postgres":
        from memory.checkpoint.postgres import setup_postgres

        return await setup_postgres(spec)
    from memory.checkpoint.redis import setup_redis

    return await setup_redis(spec, strict_redis_serializer())


@dataclass(frozen=True)
class Capabilities:
    """What a checkpointer offers: its backend, whether it keeps history, whether it seals."""

    backend: str
    history: bool
    sealed: bool = False


def capabilities(saver_or_url: BaseCheckpointSaver[Any] | str) -> Capabilities:
    """The :class:`Capabilities` of an open saver, or of the saver a URL would open."""
    if isinstance(saver_or_url, str):
        scheme = parse_checkpointer_url(saver_or_url).backend
        return Capabilities(scheme, history=scheme != "redis+shallow")
    sealed = isinstance(saver_or_url, SealedSaver)
    inner = saver_or_url.inner if isinstance(saver_or_url, SealedSaver) else saver_or_url
    backend = getattr(inner, "backend", None) or _backend_of(inner)
    return Capabilities(backend, history=not getattr(inner, "shallow", False), sealed=sealed)


async def delete_threads(saver: BaseCheckpointSaver[Any], thread_ids: Sequence[str]) -> None:
    """Delete every checkpoint, write and blob of each of ``thread_ids``, in one transaction
    where the backend can: the SQLite saver's ``adelete_threads``, and on Postgres LangGraph's
    ``aprune(..., strategy="delete")`` (the same three deletes as its ``adelete_thread``, for
    every thread at once). Other savers delete through ``adelete_thread``, thread by thread.
    A sealed saver's records are deleted as they are (no value is read)."""
    ids = sorted({str(t) for t in thread_ids})
    if not ids:
        return
    backend = capabilities(saver).backend
    if backend == "sqlite":
        from memory.checkpoint.sqlite import SqliteSaver

        inner = saver.inner if isinstance(saver, SealedSaver) else saver
        if isinstance(inner, SqliteSaver):
            await inner.adelete_threads(ids)
            return
    if backend == "postgres":
        await saver.aprune(ids, strategy="delete")
        return
    for thread_id in ids:
        await saver.adelete_thread(thread_id)


def keeps_history(saver: BaseCheckpointSaver[Any]) -> bool:
    """False for savers that store only each thread's latest checkpoint (shallow)."""
    return capabilities(saver).history


def _backend_of(saver: BaseCheckpointSaver[Any]) -> str:
    from langgraph.checkpoint.memory import InMemorySaver

    return "memory" if isinstance(saver, InMemorySaver) else type(saver).__name__


def _cipher(key: str | bytes | None, modules: Sequence[str]) -> ValueCipher | None:
    if not key:
        return None
    from memory.serde import ValueCipher, parse_key, strict_serializer

    return ValueCipher(parse_key(key), strict_serializer(modules))


@asynccontextmanager
async def _open_backend(
    spec: CheckpointerURL, modules: Sequence[str], *, ensure_schema: bool
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    from memory.serde import strict_redis_serializer, strict_serializer

    if spec.backend == "sqlite":
        from memory.checkpoint.sqlite import open_sqlite

        async with open_sqlite(
            spec, strict_serializer(modules), ensure_schema=ensure_schema
        ) as saver:
            yield saver
    elif spec.backend == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver(serde=strict_serializer(modules))
    elif spec.backend == "postgres":
        from memory.checkpoint.postgres import open_postgres

        async with open_postgres(
            spec, strict_serializer(modules), ensure_schema=ensure_schema
        ) as pg:
            yield pg
    else:
        from memory.checkpoint.redis import open_redis

        async with open_redis(spec, strict_redis_serializer(modules), setup=True) as rs:
            yield rs
