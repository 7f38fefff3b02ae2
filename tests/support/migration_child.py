"""A process that migrates a ledger and stops, still inside the migration's transaction, at a
chosen statement, so that a test can kill it there (``kill -9``) and look at what is left.

Run by ``tests/unit/test_migration_crash.py`` and its Postgres twin::

    python -m tests.support.migration_child sqlite PATH MARKER [--nth K] [--steps N]
        [--cache-pages P]
    python -m tests.support.migration_child postgres OWNER_URL MARKER --app-role ROLE [--during]

It runs the real runner on the real migration list. Nothing in the code under test knows of
it: it only watches the statements the runner sends. SQLite: a trace callback sees each
statement start; when the ``K``-th one (default 1) contains ``MARKER`` (whitespace collapsed), a progress handler
lets SQLite run ``N`` more batches of 1,000 virtual-machine steps inside it (``N = 0``: stop
before it runs) and then stops. Postgres: the connection's ``execute`` stops right after the
server has run the first statement containing ``MARKER`` (``--during``: it says so as it
sends it, and the parent waits until the server is running it). Stopping means: print ``inside
<backend pid>`` on stdout, then wait forever for the kill. :func:`start_inside` is the
parent's side: it starts this process and returns once it says it is inside.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import selectors
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

#: Virtual-machine instructions between two calls of the SQLite progress handler.
PROGRESS_EVERY = 1000


def start_inside(*args: str, deadline: float) -> tuple[subprocess.Popen[str], int]:
    """Start this module with ``args`` and wait, at most ``deadline`` seconds, until it says it
    is inside the migration; return the process and the backend pid it named (0 on SQLite).
    If it does not get there, it is killed and the test fails, naming what it said."""
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.support.migration_child", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    try:
        with selectors.DefaultSelector() as waiting:
            waiting.register(child.stdout, selectors.EVENT_READ)
            if not waiting.select(timeout=deadline):
                pytest.fail(f"the migrating child did not reach its statement in {deadline} s")
        line = child.stdout.readline()
        word, _, pid = line.partition(" ")
        assert word == "inside", f"the child did not stop inside the migration: {line!r}"
    except BaseException:
        child.kill()
        child.wait()
        raise
    return child, int(pid)


def _say_inside(backend_pid: int = 0) -> None:
    print(f"inside {backend_pid}", flush=True)


def _stop(backend_pid: int = 0, *, said: bool = False) -> None:
    if not said:
        _say_inside(backend_pid)
    threading.Event().wait()  # until killed


def _normal(text: str) -> str:
    return " ".join(text.split())


def migrate_sqlite(path: str, marker: str, nth: int, steps: int, cache_pages: int) -> None:
    from memory.facts.migrations import migrate_sqlite_sync
    from memory.sql.connect import connect, enable_wal

    conn = connect(path)  # the store's own connection settings
    enable_wal(conn)
    if cache_pages:
        # A small page cache makes SQLite spill the transaction's pages to the WAL before
        # the commit: the kill then leaves uncommitted frames in the file, the case to test.
        conn.execute(f"PRAGMA cache_size={cache_pages}")
    inside = threading.Event()
    left, seen = [steps], [0]

    def trace(statement: str) -> None:
        if not inside.is_set() and marker in _normal(statement):
            seen[0] += 1
            if seen[0] < nth:
                return
            inside.set()
            if steps == 0:
                _stop()

    def progress() -> int:
        if inside.is_set():
            left[0] -= 1
            if left[0] <= 0:
                _stop()
        return 0

    conn.set_trace_callback(trace)
    conn.set_progress_handler(progress, PROGRESS_EVERY)
    migrate_sqlite_sync(conn, where=path)
    print("committed", flush=True)


async def migrate_postgres(url: str, marker: str, app_role: str, during: bool) -> None:
    import psycopg

    from memory.facts.migrations import migrate_postgres

    class Stopping(psycopg.AsyncConnection[Any]):
        async def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            text = query if isinstance(query, str) else query.as_string(self)
            hit = marker in _normal(text)
            if hit and during:  # the parent kills once the server runs it
                _say_inside(self.info.backend_pid)
            cursor = await super().execute(query, *args, **kwargs)
            if hit:
                _stop(self.info.backend_pid, said=during)
            return cursor

    conn = await Stopping.connect(url, autocommit=True)
    async with conn:
        await migrate_postgres(conn, where="child", app_roles=[app_role])
    print("committed", flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["sqlite", "postgres"])
    parser.add_argument("target")
    parser.add_argument("marker")
    parser.add_argument("--nth", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--cache-pages", type=int, default=0)
    parser.add_argument("--app-role", default="")
    parser.add_argument("--during", action="store_true")
    args = parser.parse_args(argv)
    if args.backend == "sqlite":
        migrate_sqlite(args.target, _normal(args.marker), args.nth, args.steps, args.cache_pages)
    else:
        asyncio.run(migrate_postgres(args.target, _normal(args.marker), args.app_role, args.during))


if __name__ == "__main__":
    main(sys.argv[1:])
