"""Storage faults of the embedded files are one clear error, never a traceback.

Real files, damaged the way disks damage them: a bad header (the first bytes overwritten) and
damaged pages (every page after the first overwritten), a read-only data folder (a read-only
bind mount in a user namespace: root ignores file modes), a full disk (a file-size limit,
``RLIMIT_FSIZE``, on the CLI process). Plus ``analyst db check|backup|restore``.

One analysis is run once per module into a seed folder; each test works on its own copy.
"""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memory.embedding_cache import SqliteEmbeddingCache
from memory.errors import DocumentIndexError
from tests.integration.conftest import EXE, Run


def damage(path: Path, how: str) -> None:
    """``header``: the file's first 16 bytes (SQLite's magic string) overwritten;
    ``pages``: every page after the first overwritten with a pattern, header intact."""
    data = bytearray(path.read_bytes())
    if how == "header":
        data[:16] = b"garbage garbage!"
    else:
        size = int.from_bytes(data[16:18], "big") or 65536
        for at in range(size, len(data)):
            data[at] = 0xA5 if at % 7 else 0
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A data folder with one thread awaiting approval and one stated fact."""
    root = tmp_path_factory.mktemp("seed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANALYST_", "OPENAI_"))}
    env.update(
        ANALYST_DATA_DIR=str(root / "data"),
        ANALYST_MEMORY_DIR=str(root / "memory"),
        ANALYST_USER="tester",
        COLUMNS="200",
        LINES="50",
        TERM="dumb",
        NO_COLOR="1",
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(EXE), *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done

    import json

    view = json.loads(cli("run", "Analyze NVDA", "--thread", "t-seed", "--json").stdout)
    cli("facts", "record", "me", "horizon", '"long-term"')
    return {"data": root / "data", "memory": root / "memory", "draft": view["draft_hash"]}


@pytest.fixture
def copy(seed: dict[str, Any], analyst: Any) -> Any:
    """This test's analyst over its own copy of the seed folder."""
    shutil.copytree(seed["data"], analyst.data_dir)
    if seed["memory"].exists():
        shutil.copytree(seed["memory"], analyst.memory_dir)
    return analyst


def one_error(run: Run, *words: str) -> str:
    """The run failed with one ``error:`` line (no traceback) that contains ``words``."""
    assert run.refused, str(run)
    lines = [line for line in run.err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, str(run)
    for word in words:
        assert word in lines[0], str(run)
    return lines[0]


# -- damaged files -------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["header", "pages"])
@pytest.mark.parametrize("name", ["checkpoints.sqlite", "threads.sqlite"])
def test_a_damaged_checkpoints_or_thread_index_file_is_one_error_naming_it(
    copy: Any, name: str, how: str
) -> None:
    damage(copy.data_dir / name, how)
    for args in (("threads",), ("show", "t-seed"), ("history", "t-seed")):
        line = one_error(copy(*args), str(copy.data_dir / name), "damaged", "analyst db check")
        assert "restore" in line
    check = copy("db", "check")
    assert check.code == 1 and "Traceback" not in check.err, str(check)
    assert f"damaged  {'checkpoints file' if name.startswith('c') else 'thread index'}" in (
        check.out
    )


def test_a_damaged_checkpoint_value_is_one_error_for_its_owner_and_no_other(copy: Any) -> None:
    """A blob whose bytes no longer decode (ormsgpack: ``invalid UTF-8 string``), SQLite's
    pages intact: every command reading the thread names the file and the thread; another
    user's threads are listed as before."""
    path = copy.data_dir / "checkpoints.sqlite"
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT rowid, checkpoint FROM checkpoints WHERE thread_id = 't-seed'")
        for rowid, blob in rows.fetchall():
            damaged = blob.replace(b"NVDA", b"\xff\xfe\xff\xfe")
            conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (damaged, rowid))
    conn.close()
    for args in (("threads",), ("show", "t-seed"), ("history", "t-seed")):
        line = one_error(copy(*args), str(path), "damaged", "thread t-seed", "does not decode")
        assert "restore" in line
    other = subprocess.run(
        [str(EXE), "threads"],
        env={**copy.environ(), "ANALYST_USER": "carl"},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert other.returncode == 0 and "Traceback" not in other.stderr, other.stderr


@pytest.mark.parametrize("how", ["header", "pages"])
def test_a_damaged_fact_ledger_blocks_neither_threads_nor_show(copy: Any, how: str) -> None:
    damage(copy.data_dir / "facts.sqlite", how)
    assert "t-seed" in copy("threads").out
    assert copy("show", "t-seed").code == 0
    one_error(copy("facts", "profile", "me"), str(copy.data_dir / "facts.sqlite"))


@pytest.mark.parametrize("how", ["header", "pages"])
def test_a_damaged_embeddings_cache_is_moved_aside_and_rebuilt(tmp_path: Path, how: str) -> None:
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.sqlite")
    cache.setup()
    vectors = {f"{i:064x}": [float(i)] * 384 for i in range(200)}
    cache.put_many("m", vectors)
    damage(cache.path, how)

    again = SqliteEmbeddingCache(cache.path)
    again.setup()
    assert again.get_many("m", list(vectors)[:10]) == {}  # a miss: computed again
    again.put_many("m", {"ab": [1.0, 2.0]})
    assert again.get_many("m", ["ab"]) == {"ab": [1.0, 2.0]}
    aside = list(tmp_path.glob("embeddings.sqlite.damaged-*"))
    assert len(aside) == 1


def test_the_cli_warns_and_keeps_working_over_a_damaged_embeddings_cache(copy: Any) -> None:
    damage(copy.data_dir / "embeddings.sqlite", "header")
    run = copy("memory", "search", "investment horizon")
    assert run.code == 0 and "Traceback" not in run.err, str(run)
    assert "warning: the embeddings cache" in run.err and "moved it aside" in run.err
    assert copy("db", "check").code == 0


# -- read-only folder and full disk ----------------------------------------------------------


def _userns() -> bool:
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(shutil.which("unshare") is None or not _userns(), reason="no user namespaces")
def test_a_read_only_data_folder_serves_reads_and_refuses_writes_clearly(copy: Any) -> None:
    folder = copy.data_dir

    def read_only(*args: str) -> Run:
        script = (
            f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}" && '
            'exec "$@"'
        )
        done = subprocess.run(
            ["unshare", "-rm", "sh", "-c", script, "sh", str(EXE), *args],
            env=copy.environ(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return Run(tuple(args), done.returncode, done.stdout, done.stderr)

    first = read_only("threads")
    assert "t-seed" in first.out, (first.err, sorted(p.name for p in folder.iterdir()))
    assert read_only("show", "t-seed").code == 0
    assert read_only("facts", "profile", "me").code == 0
    assert read_only("db", "check").code == 0
    one_error(read_only("run", "Analyze AAPL"), "read-only")
    one_error(read_only("approve", "t-seed"), "read-only")
    assert copy("show", "t-seed", "--json").json()["status"] == "awaiting_approval"


def test_a_full_disk_fails_the_write_cleanly_and_loses_nothing(copy: Any, seed: Any) -> None:
    checkpoints = copy.data_dir / "checkpoints.sqlite"
    limit = checkpoints.stat().st_size + 16 * 1024  # room for a few pages, not a whole run

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [str(EXE), "run", "Analyze NVDA", "--thread", "t-full"],
        env=copy.environ(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        preexec_fn=limited,
    )
    run = Run(("run",), done.returncode, "", done.stderr)
    assert run.code != 0 and "Traceback" not in run.err, done.stderr
    line = one_error(run, "no space left", "intact")
    assert str(copy.data_dir) in line
    # Everything stored before is intact, and every file passes the integrity check.
    assert copy("db", "check").code == 0
    assert copy("show", "t-seed", "--json").json()["draft_hash"] == seed["draft"]
    assert "long-term" in copy("facts", "current", "me", "horizon").out


# -- db check, backup, restore -------------------------------------------------------------


def test_db_check_reports_every_embedded_file(copy: Any) -> None:
    checks = copy.json("db", "check")
    by_what = {c["what"]: c["status"] for c in checks}
    assert by_what["checkpoints file"] == "ok" and by_what["thread index"] == "ok"
    assert by_what["fact ledger"] == "ok" and by_what["embeddings cache"] == "ok"
    assert {"document index", "long-term memory folder"} <= set(by_what)


def test_backup_then_restore_brings_back_a_damaged_file(copy: Any, tmp_path: Path) -> None:
    dest = tmp_path / "backup"
    done = copy.json("db", "snapshot", str(dest))
    names = {f["name"] for f in done["files"]}
    assert {"checkpoints.sqlite", "threads.sqlite", "facts.sqlite"} <= names
    assert copy("db", "snapshot", str(dest)).code != 0  # never overwrites a backup

    damage(copy.data_dir / "checkpoints.sqlite", "pages")
    one_error(copy("show", "t-seed"), "damaged")
    restored = copy.json("db", "restore-snapshot", str(dest))
    assert Path(restored["previous_files_kept_in"]).is_dir()
    assert copy("db", "check").code == 0
    assert copy("show", "t-seed", "--json").json()["status"] == "awaiting_approval"
    assert "long-term" in copy("facts", "current", "me", "horizon").out


def test_db_backup_and_restore_are_old_names_that_still_work(copy: Any, tmp_path: Path) -> None:
    """``db backup`` / ``db restore`` (easily confused with ``memory backup``) are hidden
    aliases of ``db snapshot`` / ``db restore-snapshot``; each says the new spelling."""
    dest = tmp_path / "backup"
    made = copy("db", "backup", str(dest), "--json")
    assert made.code == 0 and "`analyst db backup` is now `analyst db snapshot`" in made.err
    assert "checkpoints.sqlite" in {f["name"] for f in made.json()["files"]}
    restored = copy("db", "restore", str(dest), "--json")
    assert restored.code == 0, str(restored)
    assert "`analyst db restore` is now `analyst db restore-snapshot`" in restored.err
    assert Path(restored.json()["previous_files_kept_in"]).is_dir()
    listed = copy("db", "--help").out
    assert "snapshot" in listed and "restore-snapshot" in listed
    commands = [line.strip("│ ").split(" ")[0] for line in listed.splitlines()]
    assert "backup" not in commands and "restore" not in commands  # hidden


def test_restore_refuses_a_damaged_backup_and_changes_nothing(copy: Any, tmp_path: Path) -> None:
    dest = tmp_path / "backup"
    copy.json("db", "snapshot", str(dest))
    damage(dest / "threads.sqlite", "header")
    before = (copy.data_dir / "threads.sqlite").read_bytes()
    one_error(copy("db", "restore-snapshot", str(dest)), "nothing was restored")
    assert (copy.data_dir / "threads.sqlite").read_bytes() == before
    one_error(copy("db", "restore-snapshot", str(tmp_path)), "not a backup")


def test_backup_is_consistent_while_another_connection_writes(copy: Any, tmp_path: Path) -> None:
    writer = sqlite3.connect(copy.data_dir / "threads.sqlite")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE threads SET query = 'changed' WHERE thread_id = 't-seed'")
    try:
        copy.json("db", "snapshot", str(tmp_path / "b"))
    finally:
        writer.rollback()
        writer.close()
    row = sqlite3.connect(tmp_path / "b" / "threads.sqlite").execute(
        "SELECT query FROM threads WHERE thread_id = 't-seed'"
    )
    assert row.fetchone() == ("Analyze NVDA",)


@pytest.mark.parametrize("how", ["header", "pages"])
def test_a_damaged_document_index_is_moved_aside_and_rebuilt(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory.documents import FileMemory

    index = tmp_path / "documents.sqlite"
    docs = FileMemory(tmp_path / "mem", index_path=index)
    for i in range(60):
        docs.write(f"notes/n{i}.md", f"# Note {i}\n\nDrawdown analysis number {i}. " * 40)
    assert len(docs.search("drawdown", limit=None)) == 60
    docs.close()
    damage(index, how)

    again = FileMemory(tmp_path / "mem", index_path=index)
    try:
        assert len(again.search("drawdown", limit=None)) == 60
    except DocumentIndexError as error:  # found mid-use: moved aside, the next call rebuilds
        assert "moved aside" in str(error)
        assert len(again.search("drawdown", limit=None)) == 60
    finally:
        again.close()
    assert "warning: the document index" in capsys.readouterr().err
    assert len(list(tmp_path.glob("documents.sqlite.damaged-*"))) == 1
