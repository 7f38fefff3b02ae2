"""Issue 23, side files: what the analyst creates is private to the user (folders 0700, files
0600), and a lock file names its holder by pid and program only, never the command line (which
can carry a memory being added), also after the holder is killed."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memory.backup import Embedded, backup
from memory.config import lock_holder
from memory.embedding_cache import SqliteEmbeddingCache
from memory.threads import ThreadIndex, ThreadLocks

pytestmark = pytest.mark.integration

SECRET = "my-secret-pin-is-4242"


def modes(top: Path) -> dict[str, int]:
    """Every folder and file under ``top`` (``top`` included) and its permission bits."""
    found = {str(top): stat.S_IMODE(top.stat().st_mode)}
    for root, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = Path(root, name)
            found[str(path)] = stat.S_IMODE(path.lstat().st_mode)
    return found


def assert_private(top: Path) -> None:
    found = modes(top)
    loose = {
        path: oct(mode)
        for path, mode in found.items()
        if mode != (0o700 if Path(path).is_dir() else 0o600)
    }
    assert not loose, loose
    assert len(found) > 1


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_everything_a_cli_session_creates_is_private(analyst: Any, tmp_path: Path) -> None:
    told = analyst("run", "My base currency is EUR", "--thread", "T1")
    assert told.code == 0, str(told)
    added = analyst("memory", "add", f"I prefer low debt; {SECRET}")
    assert added.code == 0, str(added)
    researched = analyst("run", "Analyze NVDA", "--thread", "T2")
    assert researched.code == 0, str(researched)
    published = analyst("approve", "T2")  # a research note in the document memory
    assert published.code == 0, str(published)
    snapshot = analyst("db", "snapshot", str(tmp_path / "snapshot"))
    assert snapshot.code == 0, str(snapshot)

    for top in (analyst.data_dir, analyst.memory_dir, tmp_path / "snapshot"):
        assert_private(top)
    assert (analyst.data_dir / "qdrant-edge.lock").is_file()
    for lock in [analyst.data_dir / "qdrant-edge.lock", *(analyst.data_dir / "locks").iterdir()]:
        assert SECRET not in lock.read_text(), lock


def test_the_tiers_set_private_modes_themselves_whatever_the_umask(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with umask(0o022):
        index = ThreadIndex(data / "threads.sqlite")
        index.setup()
        with ThreadLocks(data / "locks").hold("T1"):
            held = next((data / "locks").iterdir()).read_text()
        cache = SqliteEmbeddingCache(data / "cache" / "embeddings.sqlite")
        cache.setup()
        cache.put_many("m", {"h": [0.5, 0.25]})
        copied = backup(
            [
                Embedded("threads.sqlite", "thread index", data / "threads.sqlite", "sqlite"),
                Embedded("cache", "cache folder", data / "cache", "folder"),
            ],
            tmp_path / "backup",
        )
    assert [c.name for c in copied] == ["threads.sqlite", "cache"]
    # The holder's pid and program name, never its arguments (under pytest-xdist the program
    # is the interpreter: its argv[0] is "-c").
    assert held == lock_holder() and held.startswith(f"pid {os.getpid()}: ")
    assert " " not in held.removeprefix(f"pid {os.getpid()}: "), held
    assert next((data / "locks").iterdir()).read_text() == ""  # released: no stale holder
    assert_private(data)
    assert_private(tmp_path / "backup")


def test_an_older_readable_file_is_made_private_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    with umask(0o022):
        ThreadIndex(path).setup()
        path.chmod(0o644)
        ThreadIndex(path).setup()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


HOLDER = """
import sys
from pathlib import Path
from memory.threads import ThreadLocks
with ThreadLocks(Path(sys.argv[1])).hold("T1"):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_killed_holder_leaves_a_lock_file_without_its_arguments(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), "memory", "add", SECRET],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        [lock] = folder.iterdir()
        while_held = lock.read_text()
        assert ThreadLocks(folder).busy("T1")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    after = lock.read_text()
    assert while_held == after == f"pid {holder.pid}: {Path(sys.executable).name}"
    assert SECRET not in after and "memory" not in after
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert not ThreadLocks(folder).busy("T1")


async def test_in_process_as_the_server_runs_every_folder_is_private(
    open_app: Any, isolated_env: Path
) -> None:
    """Without the CLI's umask (the API server, a script), the folders the tiers create are
    0700, so no other user reaches a file in them, and the tiers' own files are 0600."""
    with umask(0o022):
        async with open_app("mira") as app:
            view = await app.start("My base currency is EUR", thread_id="T1")
            assert view.status == "noted"
    data = isolated_env / "data"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700  # nothing inside is reachable by others
    # Folders the Qdrant Edge engine makes inside its shard follow the umask (memory.store).
    folders = {
        p: oct(m)
        for p, m in modes(data).items()
        if Path(p).is_dir() and m != 0o700 and not Path(p).is_relative_to(data / "qdrant-edge")
    }
    assert not folders, folders
    for own in ("threads.sqlite", "embeddings.sqlite"):
        if (data / own).exists():
            assert stat.S_IMODE((data / own).stat().st_mode) == 0o600, own
    assert stat.S_IMODE((data / "threads.sqlite").stat().st_mode) == 0o600
