"""kill -9 of a process halfway through migrating a SQLite ledger leaves the old layout whole;
reopening migrates it and answers as before (the child: tests/support/migration_child.py).

The file is of schema 1 or 8 with the scenario of tests/support/ledger_eras.py and 20,000 more
facts; the child runs the real runner with a small page cache, so the migration's pages spill
into the WAL before it is killed: the file then holds uncommitted frames that SQLite must
ignore.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memory.facts.migrations import LATEST_VERSION
from tests.support.ledger_eras import build_sqlite_era, check_answers, insert_bulk_sqlite
from tests.support.migration_child import start_inside

BULK = 20_000
#: How long the child may take to reach the chosen statement (it normally takes a second).
DEADLINE = 120.0


def _state(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Everything a layout is: the schema, the bookkeeping and every row of every table."""
    conn = sqlite3.connect(path)
    try:
        schema = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        ).fetchall()
        state = {"schema": schema}
        for kind, name, _, _ in schema:
            if kind == "table":
                state[name] = sorted(conn.execute(f"SELECT * FROM {name}").fetchall(), key=repr)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return state
    finally:
        conn.close()


def _run_child_until_inside(*args: str) -> subprocess.Popen[str]:
    return start_inside(*args, deadline=DEADLINE)[0]


@pytest.mark.parametrize(
    ("version", "marker", "nth", "steps", "spilled"),
    [
        # Halfway through rewriting every value as JSON (migration 2), one statement.
        (1, "UPDATE facts SET value = json_quote(value)", 1, 50, True),
        # Between migration 10's DROP TABLE fact_grants and the rename of its rebuilt copy
        # (from 8, only the small grants table has changed by then).
        (8, "ALTER TABLE fact_grants_new RENAME TO fact_grants", 1, 0, False),
        # Every migration but the last applied and recorded.
        (1, "INSERT INTO fact_migrations", LATEST_VERSION - 1, 0, True),
        # Everything applied and recorded, the COMMIT not yet run.
        (1, "COMMIT", 1, 0, True),
    ],
)
async def test_a_migration_killed_halfway_leaves_the_old_layout_and_resumes(
    tmp_path: Path, version: int, marker: str, nth: int, steps: int, spilled: bool
) -> None:
    path = tmp_path / "facts.sqlite"
    key = build_sqlite_era(str(path), version)
    insert_bulk_sqlite(str(path), version, BULK)
    before = _state(path)
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0

    child = _run_child_until_inside(
        "sqlite", str(path), marker, "--nth", str(nth), "--steps", str(steps), "--cache-pages", "50"
    )
    try:
        wal_size = wal.stat().st_size
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    # The migration's rewritten pages were in the WAL already, uncommitted.
    assert (wal_size > 0) == spilled

    assert _state(path) == before  # the old layout, whole: schema, bookkeeping, rows

    await check_answers(f"sqlite:///{path}", version, key)
    after = sqlite3.connect(path)
    try:
        versions = [v for (v,) in after.execute("SELECT version FROM fact_migrations")]
        rows = after.execute(
            "SELECT count(*), count(DISTINCT subject), min(schema_version), max(schema_version)"
            " FROM facts WHERE subject LIKE 'bulk:%'"
        ).fetchone()
        value = after.execute("SELECT value FROM facts WHERE memory_id = 'bulk-7'").fetchone()
    finally:
        after.close()
    assert versions == list(range(1, LATEST_VERSION + 1))
    assert rows == (BULK, BULK // 4, 4, 4)
    assert value == ('"7"',)
