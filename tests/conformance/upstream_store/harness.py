"""How the vendored upstream store tests open the project's stores (fixtures only).

Upstream's tests open ``InMemoryStore(index=...)`` inline (``libs/checkpoint``) or a
``PostgresStore`` through the fixtures ``store`` / ``vector_store`` and the helper
``_create_vector_store`` (``libs/checkpoint-postgres``). Here each of those opens the backend
under test instead (:data:`UPSTREAM_BACKENDS`), each store on a fresh folder or database that
is closed and removed after the test:

| backend | store |
|---|---|
| memory | LangGraph ``InMemoryStore`` itself (the control) |
| edge | ``EdgeStore`` (the embedded default), shared access as the application opens it |
| edge-sealed | the same with values sealed (``ANALYST_MEMORY_KEY``) |
| qdrant | ``QdrantStore`` on qdrant-client's local mode, held open |
| postgres | LangGraph ``PostgresStore`` with pgvector and cosine distance, as the factory |
| | configures it, on a PostgreSQL 18 from :mod:`tests.support.pgvector_server` |

The store class a test gets is a subclass of the backend's class, so upstream's
``mocker.spy(InMemoryStore, "batch")`` spies the store the test uses.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from langgraph.store.base import BaseStore, IndexConfig, TTLConfig
from langgraph.store.memory import InMemoryStore

from memory.sealing import MemoryCipher

UPSTREAM_BACKENDS = ["memory", "edge", "edge-sealed", "qdrant", "postgres"]
#: The key of the sealed backend (any 32 bytes).
SEALING_KEY = bytes(range(32))

#: upstream's Postgres ``store`` fixture: a 6-second TTL, refreshed on read, swept every 3 s
TTL_SECONDS = 6
STORE_TTL: TTLConfig = {
    "default_ttl": TTL_SECONDS / 60,
    "refresh_on_read": True,
    "sweep_interval_minutes": TTL_SECONDS / 60 / 2,
}


@dataclass
class Place:
    """Where the current test's stores live, and what closes them."""

    backend: str
    tmp_path: Path
    stack: ExitStack
    pgvector_admin: Callable[[], str]
    counter: Iterator[int] = field(default_factory=itertools.count)

    def folder(self) -> Path:
        return self.tmp_path / f"store-{next(self.counter)}"


#: Set for each test by the ``upstream_backend`` fixture (``conftest.py``).
current: Place | None = None


def place() -> Place:
    if current is None:
        raise RuntimeError("no upstream_backend fixture active")
    return current


def open_backend_store(
    where: Place, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
) -> BaseStore:
    """A new store of ``where.backend`` with ``index`` and ``ttl``, closed with the test."""
    return store_class(where)(index=index, ttl=ttl)


def store_class(where: Place) -> type[BaseStore]:
    """The class whose ``cls(index=..., ttl=...)`` opens a new store of the test's backend."""
    if where.backend == "memory":

        class MemoryStore(InMemoryStore):
            def __init__(self, *, index: IndexConfig | None = None, ttl: Any = None) -> None:
                super().__init__(index=index)

        return MemoryStore
    if where.backend in ("edge", "edge-sealed"):
        from memory.store.edge import EdgeStore

        cipher = MemoryCipher(SEALING_KEY) if where.backend == "edge-sealed" else None

        class Edge(EdgeStore):
            def __init__(self, *, index: IndexConfig | None = None, ttl: Any = None) -> None:
                super().__init__(where.folder(), index=index, ttl=ttl, cipher=cipher)
                self.setup()
                where.stack.callback(self.close)

        return Edge
    if where.backend == "qdrant":
        from memory.store.qdrant import QdrantStore, open_qdrant_client

        class Qdrant(QdrantStore):
            def __init__(self, *, index: IndexConfig | None = None, ttl: Any = None) -> None:
                client = open_qdrant_client(path=where.folder())
                where.stack.callback(client.close)
                super().__init__(client, index=index, ttl=ttl)
                self.setup()
                where.stack.callback(self.stop_ttl_sweeper, 5)

        return Qdrant
    if where.backend == "postgres":
        import psycopg
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row

        from tests.support.pgvector_server import fresh_database

        class Postgres(PostgresStore):
            def __init__(self, *, index: IndexConfig | None = None, ttl: Any = None) -> None:
                url = where.stack.enter_context(fresh_database(where.pgvector_admin()))
                conn = psycopg.connect(
                    url, autocommit=True, prepare_threshold=0, row_factory=dict_row
                )
                where.stack.callback(conn.close)
                pg_index: Any = {**index, "distance_type": "cosine"} if index else None
                super().__init__(conn, index=pg_index, ttl=ttl)
                self.setup()
                where.stack.callback(self.stop_ttl_sweeper, 5)

        return Postgres
    raise ValueError(f"unknown backend {where.backend!r}")


# -- the fixtures upstream's Postgres tests use ------------------------------------------------


@pytest.fixture
def store(upstream_backend: str) -> Iterator[BaseStore]:
    """Upstream's ``store``: the backend with upstream's TTL config and its sweeper running."""
    opened = open_backend_store(place(), ttl=STORE_TTL)
    if opened.supports_ttl:
        opened.start_ttl_sweeper()  # type: ignore[attr-defined]
    yield opened


@pytest.fixture
def vector_store(upstream_backend: str, fake_embeddings: Any) -> Iterator[BaseStore]:
    """Upstream's ``vector_store``: the backend with the character embeddings and a TTL."""
    with _create_vector_store("vector", "cosine", fake_embeddings) as opened:
        yield opened


@contextmanager
def _create_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> Iterator[BaseStore]:
    """Upstream's helper: a store with vector search on ``text_fields`` (cosine only)."""
    if (vector_type, distance_type) != ("vector", "cosine"):
        raise ValueError("the project's stores index float vectors by cosine")
    index: IndexConfig = {"dims": fake_embeddings.dims, "embed": fake_embeddings}
    if text_fields is not None:
        index["fields"] = text_fields
    ttl: TTLConfig | None = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    yield open_backend_store(place(), index=index, ttl=ttl)


# -- a small stand-in for pytest-mock -----------------------------------------------------------


class MockerFixture:
    """The part of pytest-mock's ``mocker`` upstream's store tests use (``spy``, ``stub``);
    every patch is undone after the test."""

    def __init__(self) -> None:
        self._patches: list[Any] = []

    def spy(self, obj: Any, name: str) -> mock.MagicMock:
        original = getattr(obj, name)
        autospec = isinstance(obj, type)
        patcher = mock.patch.object(obj, name, side_effect=original, autospec=autospec)
        spied = patcher.start()
        self._patches.append(patcher)
        return spied  # type: ignore[no-any-return]

    def stub(self, name: str | None = None) -> mock.MagicMock:
        return mock.MagicMock(spec=lambda *args, **kwargs: None, name=name)

    def stopall(self) -> None:
        for patcher in reversed(self._patches):
            patcher.stop()
        self._patches.clear()
