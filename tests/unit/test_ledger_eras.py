"""A SQLite ledger of every earlier schema version, holding real data, migrates to the newest
and answers as its old rows meant (the scenario and its answers: tests/support/ledger_eras.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory.facts.migrations import LATEST_VERSION, MIGRATIONS
from tests.support.ledger_eras import (
    LAYOUTS,
    build_sqlite_era,
    check_answers,
    insert_era_data,
    insert_keyed_rows,
)
from tests.support.ledger_v8 import build_old_ledger

NO_OP = ("SELECT 1",)


def test_the_layouts_are_the_versions_that_changed_each_backend() -> None:
    for backend, layouts in LAYOUTS.items():
        changed = [
            m.version
            for m in MIGRATIONS
            if m.statements(backend) != NO_OP  # type: ignore[arg-type]
            and m.version < LATEST_VERSION
        ]
        assert tuple(changed) == layouts, backend
    assert LAYOUTS["sqlite"][0] == 1 and LAYOUTS["postgres"][-1] == LATEST_VERSION - 1


def _schema(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
    conn.close()
    return rows


def _versions(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT version, checksum FROM fact_migrations ORDER BY 1").fetchall()
    conn.close()
    return rows


@pytest.fixture(scope="module")
def fresh_schema(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    path = tmp_path_factory.mktemp("fresh") / "facts.sqlite"
    build_sqlite_era(str(path), LATEST_VERSION)
    return _schema(path)


# Every earlier version, the no-op ones too: a file may have been left at any of them.
@pytest.mark.parametrize("version", range(1, LATEST_VERSION))
async def test_a_ledger_of_an_earlier_version_migrates_and_answers_as_its_rows_meant(
    tmp_path: Path, version: int, fresh_schema: list[tuple[str, str]]
) -> None:
    path = tmp_path / "facts.sqlite"
    key = build_sqlite_era(str(path), version)
    assert [v for v, _ in _versions(path)] == list(range(1, version + 1))

    await check_answers(f"sqlite:///{path}", version, key)

    assert _versions(path) == [(m.version, m.checksum("sqlite")) for m in MIGRATIONS]
    assert _schema(path) == fresh_schema
    with sqlite3.connect(path) as conn:
        shapes = conn.execute("SELECT DISTINCT schema_version FROM facts").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    assert shapes == [(4,)]


async def test_a_file_of_the_frozen_version_8_statements_with_data_answers_as_it_meant(
    tmp_path: Path,
) -> None:
    """The same from the frozen copy of the statements the old code ran (tests/support/
    ledger_v8.py) rather than from the list."""
    path = tmp_path / "facts.sqlite"
    build_old_ledger(str(path))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        insert_era_data(conn.execute, 8, "sqlite")
        (secret,) = conn.execute("SELECT secret FROM memory_secrets").fetchone()
        key = bytes.fromhex(secret)
        insert_keyed_rows(conn.execute, 8, "sqlite", key)
        conn.execute("COMMIT")
    finally:
        conn.close()
    await check_answers(f"sqlite:///{path}", 8, key)
