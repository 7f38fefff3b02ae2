"""Embeddings: unchanged text is never embedded twice (in a process, across instances, across
processes through the SQLite cache), and no embedder may hand out a zero or malformed vector."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agent.errors import ConfigurationError, EmbeddingError
from agent.settings import Settings
from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache, embedder_from_settings
from memory.embeddings import (
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    parse_embeddings_setting,
)
from memory.sql.connect import enable_wal
from tests.support.waiting import blocked_at, wait_until

TEXTS = ["I prefer conservative positions", "My horizon is ten years", "Semiconductors"]


def sqlite_cache(tmp_path: Path) -> SqliteEmbeddingCache:
    cache = SqliteEmbeddingCache(tmp_path / "data" / "embeddings.sqlite")
    cache.setup()
    return cache


def test_in_process_cache_embeds_each_text_once() -> None:
    inner = HashingEmbedder(dims=32)
    cached = CachedEmbedder(inner)
    first = cached.embed_documents([*TEXTS, TEXTS[0]])
    assert inner.texts_embedded == 3  # the duplicate inside the batch too
    assert first[0] == first[3]
    again = cached.embed_documents(list(reversed(TEXTS)))
    assert inner.texts_embedded == 3
    assert again == list(reversed(first[:3]))
    assert cached.embed_query(TEXTS[1]) == first[1]
    assert asyncio.run(cached.aembed_documents(TEXTS)) == first[:3]
    assert asyncio.run(cached.aembed_query(TEXTS[2])) == first[2]
    assert inner.texts_embedded == 3
    assert (cached.misses, cached.hits) == (3, 1 + 3 + 1 + 3 + 1)
    cached.embed_documents(["a new text"])
    assert inner.texts_embedded == 4
    assert cached.cached("a new text") and not cached.cached("never seen")


def test_sqlite_cache_is_shared_by_instances(tmp_path: Path) -> None:
    first_inner = HashingEmbedder(dims=32)
    first = CachedEmbedder(first_inner, store=sqlite_cache(tmp_path)).embed_documents(TEXTS)
    second_inner = HashingEmbedder(dims=32)
    second = CachedEmbedder(second_inner, store=sqlite_cache(tmp_path))
    assert second.embed_documents(TEXTS) == first
    assert second_inner.texts_embedded == 0
    # Another model never reads these vectors.
    other_inner = HashingEmbedder(dims=32, seed=99)
    CachedEmbedder(other_inner, store=sqlite_cache(tmp_path)).embed_documents(TEXTS)
    assert other_inner.texts_embedded == 3
    cache = sqlite_cache(tmp_path)
    assert cache.count(first_inner.model_id) == 3 and cache.count() == 6


_PROCESS = textwrap.dedent(
    """
    import hashlib, json, sys
    from pathlib import Path
    from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
    from memory.embeddings import HashingEmbedder

    cache = SqliteEmbeddingCache(Path(sys.argv[1]))
    cache.setup()
    inner = HashingEmbedder(dims=48, seed=5)
    vectors = CachedEmbedder(inner, store=cache).embed_documents(json.loads(sys.argv[2]))
    digest = hashlib.sha256(json.dumps(vectors).encode()).hexdigest()
    print(json.dumps({"embedded": inner.texts_embedded, "digest": digest}))
    """
)


def run_process(path: Path, texts: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PROCESS, str(path), json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_new_process_reuses_the_sqlite_cache(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    first = run_process(path, TEXTS)
    assert first["embedded"] == 3
    second = run_process(path, TEXTS)
    assert second == {"embedded": 0, "digest": first["digest"]}
    third = run_process(path, [*TEXTS, "one more"])
    assert third["embedded"] == 1


def test_setup_waits_for_another_process_converting_a_new_file(tmp_path: Path) -> None:
    """Two CLIs started together both open a new cache: the one SQLite refuses at once
    ("database is locked", no busy wait) while the other holds the file waits for it instead
    of failing (it once crashed ``analyst run`` in CI)."""
    path = tmp_path / "data" / "embeddings.sqlite"
    path.parent.mkdir()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("CREATE TABLE converting (x)")
    other.execute("BEGIN IMMEDIATE")  # what a process switching the file to WAL holds
    errors: list[BaseException] = []

    def open_cache() -> None:
        try:
            sqlite_cache(tmp_path)
        except BaseException as e:  # reported to the test thread below
            errors.append(e)

    opener = threading.Thread(target=open_cache)
    opener.start()
    # SQLite refuses its switch at once; it then waits for the other's, instead of failing.
    wait_until(
        lambda: (
            blocked_at(opener, enable_wal, 'execute("BEGIN IMMEDIATE")') or not opener.is_alive()
        ),
        "the opener waiting for the other process's switch",
    )
    assert opener.is_alive() and not errors, errors
    other.execute("COMMIT")
    other.close()
    opener.join(timeout=120)
    assert not opener.is_alive() and not errors, errors
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


class Broken(HashingEmbedder):
    def __init__(self, vector: list[float]) -> None:
        super().__init__(dims=len(vector) if vector else 4)
        self.vector = vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(self.vector) for _ in texts]


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ([0.0, 0.0, 0.0, 0.0], "all-zero"),
        ([1.0, float("nan"), 0.0, 0.0], "NaN"),
        ([1.0, float("inf"), 0.0, 0.0], "NaN or infinite"),
    ],
)
def test_bad_vectors_are_refused_and_not_cached(
    tmp_path: Path, vector: list[float], message: str
) -> None:
    cache = sqlite_cache(tmp_path)
    cached = CachedEmbedder(Broken(vector), store=cache)
    with pytest.raises(EmbeddingError, match=message):
        cached.embed_documents(["text"])
    assert cache.count() == 0
    assert not cached.cached("text")


def test_wrong_size_is_refused() -> None:
    class Short(HashingEmbedder):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [v[:-1] for v in super().embed_documents(texts)]

    with pytest.raises(EmbeddingError, match="16-dimensional"):
        CachedEmbedder(Short(dims=17)).embed_documents(["x"])


def test_hashing_embedder_is_deterministic_and_never_zero() -> None:
    a, b = HashingEmbedder(dims=16, seed=1), HashingEmbedder(dims=16, seed=1)
    texts = ["", "!!!", "a", "the same words", "THE same, words!"]
    va, vb = a.embed_documents(texts), b.embed_documents(texts)
    assert va == vb
    assert va[3] == va[4]  # case and punctuation do not matter
    for vector in va:
        assert any(vector)
        assert sum(x * x for x in vector) == pytest.approx(1.0)
    assert HashingEmbedder(dims=16, seed=2).embed_query("a") != va[2]


def test_minilm_is_not_loaded_until_used() -> None:
    embedder = MiniLMEmbedder()
    assert not embedder.loaded and embedder.load_seconds is None
    assert embedder.embed_documents([]) == []
    assert not embedder.loaded
    assert (embedder.dims, embedder.model_id) == (384, "sentence-transformers/all-MiniLM-L6-v2")


def test_settings_choose_the_embedder(tmp_path: Path) -> None:
    assert parse_embeddings_setting("minilm") == ("minilm", None, None)
    assert parse_embeddings_setting("openai:text-embedding-3-small") == (
        "openai",
        "text-embedding-3-small",
        1536,
    )
    assert parse_embeddings_setting("openai:nomic-embed:768") == ("openai", "nomic-embed", 768)
    for bad in ("bert", "openai:", "openai:unknown-model", "openai:m:x", "openai:m:0"):
        with pytest.raises(ConfigurationError):
            parse_embeddings_setting(bad)

    settings = Settings.from_env({"ANALYST_DATA_DIR": str(tmp_path / "d")})
    chosen = embedder_from_settings(settings)
    assert isinstance(chosen.inner, MiniLMEmbedder) and not chosen.inner.loaded
    assert chosen.store is not None and chosen.store.path == tmp_path / "d" / "embeddings.sqlite"
    assert chosen.store.path.exists()

    no_key = Settings.from_env(
        {"ANALYST_DATA_DIR": str(tmp_path), "ANALYST_EMBEDDINGS": "openai:text-embedding-3-small"}
    )
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        embedder_from_settings(no_key)
    with_key = Settings.from_env(
        {
            "ANALYST_DATA_DIR": str(tmp_path),
            "ANALYST_EMBEDDINGS": "openai:my-model:8",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        }
    )
    openai = embedder_from_settings(with_key, persistent_cache=False)
    assert isinstance(openai.inner, OpenAIEmbedder)
    assert (openai.dims, openai.model_id) == (8, "openai:my-model:8")


def test_delete_leaves_no_byte_of_the_deleted_rows_in_the_file_or_its_wal(tmp_path: Path) -> None:
    cache = sqlite_cache(tmp_path)
    gone, kept = "c0ffee" * 10 + "dead", "c0ffee" * 10 + "beef"
    cache.put_many("m", {gone: [0.25] * 8, kept: [0.5] * 8})
    cache.put_many("other-model", {gone: [0.75] * 8})
    assert cache.delete([gone]) == 2  # under every model
    assert cache.get_many("m", [gone, kept]).keys() == {kept}
    files = list(cache.path.parent.glob("embeddings.sqlite*"))
    raw = b"".join(f.read_bytes() for f in files)
    assert gone.encode() not in raw and kept.encode() in raw
    assert not any(f.name.endswith("-wal") and f.stat().st_size for f in files)  # truncated
