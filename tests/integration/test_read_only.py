"""Commands that only read work on a read-only data folder; nothing they open is created.

A read-only folder for root (whom file modes do not stop): a tmpfs mounted for the test and
remounted read-only (``mount -o remount,ro``) after the files are written. Where ``mount``
is not permitted the tests skip with mount's own message.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
from memory.embeddings import HashingEmbedder, text_hash

pytestmark = [pytest.mark.integration]


class Folder:
    """A tmpfs folder that can be made read-only (and writable again)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def remount(self, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.path)], check=True)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Folder]:
    path = tmp_path / "ro"
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield Folder(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def test_the_embeddings_cache_reads_through_on_a_read_only_folder(folder: Folder) -> None:
    path = folder.path / "embeddings.sqlite"
    inner = HashingEmbedder(dims=32)
    warm = CachedEmbedder(inner, store=SqliteEmbeddingCache(path))
    assert warm.store is not None
    warm.store.setup()
    stored = warm.embed_documents(["cached text"])
    folder.remount("ro")

    cache = SqliteEmbeddingCache(path)
    cache.setup()  # no error: nothing to create or migrate
    assert not cache.writable
    embedder = CachedEmbedder(inner, store=cache)
    assert embedder.embed_documents(["cached text"]) == stored  # read from the file
    assert embedder.misses == 0
    assert len(embedder.embed_documents(["new text"])[0]) == 32  # computed, not kept
    assert embedder.misses == 1
    assert cache.get_many(inner.model_id, [text_hash("new text")]) == {}
    assert sorted(p.name for p in folder.path.iterdir()) == ["embeddings.sqlite"]


def test_no_embeddings_cache_on_a_read_only_folder_is_created(folder: Folder) -> None:
    folder.remount("ro")
    cache = SqliteEmbeddingCache(folder.path / "embeddings.sqlite")
    cache.setup()
    embedder = CachedEmbedder(HashingEmbedder(dims=16), store=cache)
    assert len(embedder.embed_query("anything")) == 16
    assert list(folder.path.iterdir()) == []
