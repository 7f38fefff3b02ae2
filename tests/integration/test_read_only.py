"""Commands that only read work on a read-only data folder; nothing they open is created.

A read-only folder for root (whom file modes do not stop): a tmpfs mounted for the test and
remounted read-only (``mount -o remount,ro``) after the files are written, or, for a CLI
process, a read-only bind mount in its own user namespace (``unshare -rm``). Where neither is
permitted the tests skip with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache
from memory.embeddings import HashingEmbedder, text_hash
from tests.integration.conftest import Analyst, Run
from tests.support.mounts import tmpfs

pytestmark = [pytest.mark.integration]


class Folder:
    """A tmpfs folder that can be made read-only (and writable again)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def remount(self, mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.path)], check=True)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Folder]:
    with tmpfs(tmp_path / "ro", "16m") as path:
        yield Folder(path)


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


def test_memory_reads_work_on_a_read_only_data_folder_and_a_write_is_refused(
    analyst: Analyst, tmp_path: Path
) -> None:
    """``memory show|list|audit`` and ``memories list`` on a data folder bind-mounted
    read-only in a user namespace (``unshare -rm``: the mount is private to the command,
    and root's permission bypass does not apply to a read-only mount). Nothing is created
    in the folder; the Qdrant Edge shard is read from a private copy under TMPDIR, removed
    when the command ends."""
    if (
        shutil.which("unshare") is None
        or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode
    ):
        pytest.skip("no user namespaces (unshare -rm) for a private read-only bind mount")
    assert analyst("run", "Analyze NVDA", "--thread", "t-ro").code == 0
    assert analyst("memory", "add", "I prefer long-term holdings").code == 0
    folder = analyst.data_dir
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def read_only(*args: str) -> Run:
        script = (
            f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}" && '
            'exec "$@"'
        )
        done = subprocess.run(
            ["unshare", "-rm", "sh", "-c", script, "sh", str(analyst.exe), *args],
            env={**analyst.environ(), "TMPDIR": str(scratch)},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return Run(tuple(args), done.returncode, done.stdout, done.stderr)

    assert "long-term holdings" in read_only("memory", "show").out
    assert "long-term holdings" in read_only("memory", "list").out
    assert "long-term holdings" in read_only("memories", "list").out
    audit = read_only("memory", "audit")
    assert audit.code == 0 and "write" in audit.out, str(audit)
    refused = read_only("memory", "add", "another")
    assert refused.refused and "qdrant-edge" in refused.err and "read-only" in refused.err
    check = read_only("db", "check")  # intact files it cannot write: not "damaged"
    statuses = [line.split()[0] for line in check.out.splitlines() if not line[0].isspace()]
    assert check.code == 0 and "unwritable" in statuses and "damaged" not in statuses, check
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    assert list(scratch.iterdir()) == []
