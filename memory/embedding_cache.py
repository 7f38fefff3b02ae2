"""The embeddings cache: vectors by (``model_id``, sha256 of text), so text embedded once (in
any process) is never embedded again.

:class:`CachedEmbedder` wraps any embedder of :mod:`memory.embeddings` with an in-process LRU
and, optionally, an :class:`SqliteEmbeddingCache` file; :func:`embedder_from_settings` builds
the configured embedder behind ``<data dir>/embeddings.sqlite``.

The cache never fails a read: where it cannot write (a read-only data folder, a full disk)
it becomes read-through -- vectors it holds are served, the others are computed and not
kept -- so commands that only read work on a read-only folder.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings

from memory.config import private_file
from memory.embeddings import Embedder, base_embedder_from_settings, check_vectors, text_hash
from memory.errors import StorageCorruptError, StorageFullError, StorageReadOnlyError
from memory.health import guarded
from memory.sql.connect import enable_wal, truncate_wal
from memory.sql.user_version import Migrations, migrate

if TYPE_CHECKING:
    from memory.config import StorageSettings


# -- the cache file -------------------------------------------------------------------------


def _in_chunks(hashes: Sequence[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """``hashes`` in chunks of at most ``size`` (under SQLite's limit on bound parameters),
    each with its ``?,?,...`` placeholders for an ``IN (...)``."""
    for start in range(0, len(hashes), size):
        chunk = list(hashes[start : start + size])
        yield chunk, ",".join("?" * len(chunk))


class SqliteEmbeddingCache:
    """Embeddings by (model_id, sha256 of text) in one SQLite file shared by processes.

    Vectors are stored as float32 (what MiniLM computes; OpenAI's floats lose nothing that
    matters for ranking). ``setup()`` creates the table; it is explicit and idempotent.
    Once a write is refused for lack of space or permission, ``writable`` is False and the
    file is only read (see the module docstring).
    """

    MIGRATIONS: Migrations = (
        (
            """CREATE TABLE IF NOT EXISTS embeddings (
                model      TEXT NOT NULL,
                hash       TEXT NOT NULL,
                dims       INTEGER NOT NULL,
                vector     BLOB NOT NULL,
                created_at REAL NOT NULL,
                PRIMARY KEY (model, hash)
            )""",
        ),
    )

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.writable = True

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection; a damaged cache is moved aside and started again (it is derived
        data), with a warning on stderr; other storage faults name the file."""
        try:
            with guarded("embeddings cache", self.path):
                private_file(self.path)
                conn = sqlite3.connect(self.path, timeout=30)
                # Deleted rows' bytes are overwritten with zeros (see delete).
                conn.execute("PRAGMA secure_delete=ON")
                try:
                    with conn:
                        yield conn
                finally:
                    conn.close()
        except StorageCorruptError:
            self._move_aside()
            raise

    def _move_aside(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        sys.stderr.write(
            f"warning: the embeddings cache {self.path} was damaged; moved it aside to {aside} "
            "and started a new one (it only holds vectors, which are computed again).\n"
        )

    def setup(self) -> None:
        try:
            try:
                self._setup()
            except StorageCorruptError:
                self._setup()
        except (StorageReadOnlyError, StorageFullError):
            self.writable = False  # read through: nothing created, nothing migrated

    def _setup(self) -> None:
        with self._connect() as conn:
            enable_wal(conn)
            migrate(conn, self.MIGRATIONS)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        if not hashes:
            return {}
        if not self.writable:
            return self._read_through(model, hashes)
        try:
            with self._connect() as conn:
                return self._select(conn, model, hashes)
        except StorageCorruptError:  # moved aside: a new, empty cache has nothing yet
            self._setup()
            return {}
        except (StorageReadOnlyError, StorageFullError):
            self.writable = False
            return self._read_through(model, hashes)

    def _read_through(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """What the file holds, read without creating or changing anything beside it (in a
        read-only folder SQLite cannot make its WAL index: the file is opened immutable).
        Anything unreadable is a miss: the vectors are computed again."""
        if not self.path.is_file():
            return {}
        mode = "ro" if os.access(self.path.parent, os.W_OK) else "ro&immutable=1"
        try:
            conn = sqlite3.connect(f"file:{self.path}?mode={mode}", uri=True, timeout=30)
            try:
                return self._select(conn, model, hashes)
            finally:
                conn.close()
        except sqlite3.Error:
            return {}

    @staticmethod
    def _select(
        conn: sqlite3.Connection, model: str, hashes: Sequence[str]
    ) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for chunk, marks in _in_chunks(hashes):
            rows = conn.execute(
                f"SELECT hash, dims, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                (model, *chunk),
            ).fetchall()
            for digest, dims, blob in rows:
                found[digest] = list(struct.unpack(f"<{dims}f", blob))
        return found

    def put_many(self, model: str, vectors: dict[str, list[float]]) -> None:
        """Keep ``vectors``; where the cache cannot be written they are simply not kept."""
        if not self.writable:
            return
        try:
            try:
                self._put_many(model, vectors)
            except StorageCorruptError:  # moved aside: store them in the new cache
                self._setup()
                self._put_many(model, vectors)
        except (StorageReadOnlyError, StorageFullError):
            self.writable = False

    def _put_many(self, model: str, vectors: dict[str, list[float]]) -> None:
        if not vectors:
            return
        now = time.time()
        with self._connect() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings (model, hash, dims, vector, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (model, digest, len(v), struct.pack(f"<{len(v)}f", *v), now)
                    for digest, v in vectors.items()
                ],
            )

    def delete(self, hashes: Sequence[str]) -> int:
        """Delete the rows of ``hashes`` under every model (account deletion): the
        connection's ``secure_delete`` overwrites their bytes with zeros and the WAL is then
        emptied into the file and truncated (:func:`~memory.sql.connect.truncate_wal`), so no
        page keeps the vectors and the cost follows the rows deleted, not the file's size.
        Returns how many rows were deleted."""
        if not hashes or not self.path.exists():
            return 0
        deleted = 0
        with self._connect() as conn:
            # By model, then hash: the primary key's order, so each row is found through the
            # key (a lookup by hash alone read the whole table once per 500 hashes).
            models = [row[0] for row in conn.execute("SELECT DISTINCT model FROM embeddings")]
            for model in models:
                for chunk, marks in _in_chunks(hashes):
                    cursor = conn.execute(
                        f"DELETE FROM embeddings WHERE model = ? AND hash IN ({marks})",
                        (model, *chunk),
                    )
                    deleted += cursor.rowcount
        with self._connect() as conn:
            truncate_wal(conn, "embeddings cache", self.path)
        return deleted

    def count(self, model: str | None = None) -> int:
        with self._connect() as conn:
            if model is None:
                return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            return int(
                conn.execute(
                    "SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)
                ).fetchone()[0]
            )


def _float32(vector: list[float]) -> list[float]:
    """Round through float32 so a vector reads the same from memory as from the file."""
    return list(struct.unpack(f"<{len(vector)}f", struct.pack(f"<{len(vector)}f", *vector)))


class CachedEmbedder(Embeddings):
    """Any embedder behind a content-hash cache: unchanged text is never embedded twice.

    Lookups go LRU (this process) → SQLite file (every process, when given) → the wrapped
    embedder for what is left, in one call. Counters: ``hits`` (texts served from a cache),
    ``misses`` (texts sent to the embedder).
    """

    def __init__(
        self, inner: Embedder, *, store: SqliteEmbeddingCache | None = None, lru_size: int = 4096
    ) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dims = inner.dims
        self.store = store
        self.lru_size = lru_size
        self._lru: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _lookup(self, texts: Sequence[str]) -> tuple[dict[str, list[float]], list[str]]:
        """(vectors found by hash, distinct texts still to embed)."""
        found: dict[str, list[float]] = {}
        wanted: dict[str, str] = {}
        with self._lock:
            for text in texts:
                digest = text_hash(text)
                if digest in found or digest in wanted:
                    continue
                vector = self._lru.get(digest)
                if vector is not None:
                    self._lru.move_to_end(digest)
                    found[digest] = vector
                else:
                    wanted[digest] = text
        if wanted and self.store is not None:
            stored = self.store.get_many(self.model_id, list(wanted))
            for digest, vector in stored.items():
                if len(vector) == self.dims:
                    found[digest] = vector
                    del wanted[digest]
            self._remember(stored)
        return found, list(wanted.values())

    def _remember(self, vectors: dict[str, list[float]]) -> None:
        with self._lock:
            for digest, vector in vectors.items():
                self._lru[digest] = vector
                self._lru.move_to_end(digest)
            while len(self._lru) > self.lru_size:
                self._lru.popitem(last=False)

    def _finish(
        self,
        texts: Sequence[str],
        found: dict[str, list[float]],
        missing: list[str],
        computed: list[list[float]],
    ) -> list[list[float]]:
        fresh = {
            text_hash(t): _float32(v)
            for t, v in zip(
                missing,
                check_vectors(computed, count=len(missing), dims=self.dims, source=self.model_id),
                strict=True,
            )
        }
        if fresh and self.store is not None:
            self.store.put_many(self.model_id, fresh)
        self._remember(fresh)
        found.update(fresh)
        with self._lock:
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
        return [list(found[text_hash(t)]) for t in texts]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._lookup(texts)
        computed = self.inner.embed_documents(missing) if missing else []
        return self._finish(texts, found, missing, computed)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.store is None:  # memory only: nothing here blocks
            found, missing = self._lookup(texts)
            computed = await self.inner.aembed_documents(missing) if missing else []
            return self._finish(texts, found, missing, computed)
        # The SQLite file is read and written off the event loop (an API server's loop must
        # not wait on disk; ``langgraph dev`` fails any request that does).
        found, missing = await asyncio.to_thread(self._lookup, texts)
        computed = await self.inner.aembed_documents(missing) if missing else []
        return await asyncio.to_thread(self._finish, texts, found, missing, computed)

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]

    def forget(self, texts: Sequence[str]) -> list[str]:
        """Drop the cached vectors of ``texts`` (this process's LRU and the SQLite file);
        return their content hashes. The cache holds hashes and vectors, never the text."""
        hashes = sorted({text_hash(t) for t in texts})
        self.forget_hashes(hashes)
        return hashes

    def forget_hashes(self, hashes: Sequence[str]) -> None:
        """Drop the cached vectors of these content hashes (LRU and file)."""
        with self._lock:
            for digest in hashes:
                self._lru.pop(digest, None)
        if self.store is not None:
            self.store.delete(hashes)

    def cached(self, text: str) -> bool:
        """Whether ``text`` would be served without calling the embedder."""
        _, missing = self._lookup([text])
        return not missing


# -- from settings ----------------------------------------------------------------------------


def embedding_cache_path(settings: StorageSettings) -> Path:
    return settings.data_dir / "embeddings.sqlite"


def embedder_from_settings(
    settings: StorageSettings, *, persistent_cache: bool = True
) -> CachedEmbedder:
    """The configured embedder behind the cache (``<data dir>/embeddings.sqlite`` when persistent).

    Creates the cache file's table (idempotent); loads no model.
    """
    store: SqliteEmbeddingCache | None = None
    if persistent_cache:
        store = SqliteEmbeddingCache(embedding_cache_path(settings))
        store.setup()
    return CachedEmbedder(base_embedder_from_settings(settings), store=store)
