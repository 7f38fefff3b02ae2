"""The fact ledger's migrations and database guards (SQLite files in tmp; no services).

Postgres runs the same migration list; its upgrade from schema 1 is exercised by the
conformance suite (``tests/conformance/test_facts.py``) through a non-superuser owner.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest
from pydantic import ValidationError

from agent.errors import (
    ConfigurationError,
    FactLedgerSchemaError,
    FactLedgerUnavailableError,
    UnsupportedBackendError,
)
from memory.facts import (
    RECORD_SCHEMA_VERSION,
    MemoryDelta,
    open_fact_store,
    setup_fact_store,
    subject_for,
)
from memory.facts.migrations import LATEST_VERSION, MIGRATIONS, migrate_sqlite
from memory.identity import Principal

ACME = Principal("acme", "mira")

#: Checksums of released migrations. A mismatch means a released migration was edited:
#: restore it and put the change in a new migration at the end of MIGRATIONS.
RELEASED = {
    1: (
        "037e18e18d38eaa2ad74abf2dbb39103d764dec1e9078314012a8a70da9f1737",
        "37cc4ebaedf5045ccb9219d082670f0802ee660cbaf6bbf2110bec688fb873af",
    ),
    2: (
        "9ed85a6c1336f01acc0bc8922aff5689a0a990db29f7df115584d46738f6b842",
        "f2d627edf7aac3fbda0e04ebb7eafc6eb3b3e044a83fb55dcea05cd69608b935",
    ),
    3: (
        "8c39c7a5a17ea6b128c13235a258b320627f096a9fa8513a9108cb8fd5493331",
        "7afbab600c82732e7fd32658ab96ceaa6c62d67a40859c67367b2965437b6ed4",
    ),
    4: (
        "b683f48efedac13e66e6fd0fee8813f7541f940b7a9894824785433bb995872e",
        "0b45e70f25d9de9d14d03750f2f2aa384867d322976dcd4be2afc4a59fbb3171",
    ),
}

T0 = "2026-06-01T09:00:00.000000+00:00"
T1 = "2026-06-03T10:00:00.000000+00:00"
T2 = "2026-06-05T00:00:00.000000+00:00"


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


async def _migrate(path: Path, target: int | None = None) -> list[int]:
    async with aiosqlite.connect(str(path), isolation_level=None) as conn:
        return await migrate_sqlite(conn, where=str(path), target=target)


def _insert(
    conn: sqlite3.Connection, memory_id: str, start: str, end: str | None, **extra: str
) -> None:
    columns = {
        "tenant_id": "acme",
        "memory_id": memory_id,
        "subject": "mira",
        "attribute": "horizon",
        "value": '"x"',
        "valid_from": start,
        "valid_to": end,
        "recorded_at": T0,
        "schema_version": 2,
        **extra,
    }
    conn.execute(
        f"INSERT INTO facts ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        tuple(columns.values()),
    )


# -- the migration list ------------------------------------------------------------------------


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert MIGRATIONS[-1].version == LATEST_VERSION
    # A fact's record shape changes only with the migrations that rewrite facts (1-4);
    # migration 5 adds the memory journal's tables beside them.
    assert RECORD_SCHEMA_VERSION == 4 <= LATEST_VERSION
    assert all(m.sqlite and m.postgres and m.description for m in MIGRATIONS)


def test_released_migrations_are_append_only() -> None:
    for migration in MIGRATIONS:
        if migration.version in RELEASED:
            assert (migration.checksum("sqlite"), migration.checksum("postgres")) == RELEASED[
                migration.version
            ], f"migration {migration.version} was edited; add a new migration instead"
    assert set(RELEASED) <= {m.version for m in MIGRATIONS}, "a released migration was removed"


async def test_the_runner_applies_each_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "facts.sqlite"
    assert await _migrate(path, target=1) == [1]
    assert await _migrate(path, target=2) == [2]
    assert await _migrate(path, target=3) == [3]
    assert await _migrate(path, target=4) == [4]
    assert await _migrate(path, target=5) == [5]
    assert await _migrate(path, target=6) == [6]
    assert await _migrate(path, target=7) == [7]
    assert await _migrate(path, target=8) == [8]
    assert await _migrate(path, target=9) == [9]
    assert await _migrate(path, target=10) == [10]
    assert await _migrate(path, target=11) == [11]
    assert await _migrate(path, target=12) == [12]
    assert await _migrate(path, target=13) == [13]
    assert await _migrate(path) == [14]
    assert await _migrate(path) == []
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT version, checksum FROM fact_migrations ORDER BY 1").fetchall()
    conn.close()
    assert rows == [(m.version, m.checksum("sqlite")) for m in MIGRATIONS]
    with pytest.raises(ValueError, match="outside"):
        await _migrate(path, target=LATEST_VERSION + 1)


async def test_rows_from_schema_v1_are_rewritten_as_typed_records(tmp_path: Path) -> None:
    path = tmp_path / "facts.sqlite"
    await _migrate(path, target=1)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO facts (tenant_id, memory_id, subject, attribute, value, valid_from,"
            " valid_to, recorded_at, source_episode_id) VALUES"
            " ('acme', 'v1-a', 'user:mira', 'note', 'says \"hi\"', ?, ?, ?, 'e1'),"
            " ('acme', 'v1-b', 'user:mira', 'note', '{\"not\": \"json yet\"}', ?, NULL, ?, 'e2')",
            (T0, T1, T0, T1, T1),
        )
    conn.close()

    async with open_fact_store(_url(path), ACME) as facts:
        history = await facts.history("user:mira", "note")
    # Old values were plain strings, whatever they looked like; they stay strings.
    assert [(r.memory_id, r.value, r.schema_version) for r in history] == [
        ("v1-a", 'says "hi"', RECORD_SCHEMA_VERSION),
        ("v1-b", '{"not": "json yet"}', RECORD_SCHEMA_VERSION),
    ]
    with sqlite3.connect(path) as conn:
        raw = conn.execute("SELECT value FROM facts ORDER BY valid_from").fetchall()
    conn.close()
    assert [json.loads(v) for (v,) in raw] == ['says "hi"', '{"not": "json yet"}']


async def test_edited_or_unknown_migrations_refuse_to_open(tmp_path: Path) -> None:
    path = tmp_path / "facts.sqlite"
    await _migrate(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE fact_migrations SET checksum = 'edited' WHERE version = 1")
    conn.close()
    with pytest.raises(FactLedgerSchemaError, match="was edited"):
        async with open_fact_store(_url(path), ACME):
            pass

    newer = tmp_path / "newer.sqlite"
    await _migrate(newer)
    with sqlite3.connect(newer) as conn:
        conn.execute(
            "INSERT INTO fact_migrations VALUES (?, 'from the future', 'x', ?)",
            (LATEST_VERSION + 1, T0),
        )
    conn.close()
    with pytest.raises(FactLedgerSchemaError, match="newer than this analyst"):
        async with open_fact_store(_url(newer), ACME):
            pass


async def test_concurrent_first_opens_migrate_once(tmp_path: Path) -> None:
    url = _url(tmp_path / "new" / "facts.sqlite")

    async def open_and_read() -> list[int]:
        async with open_fact_store(url, ACME) as facts:
            assert await facts.current("user:mira", "horizon") is None
            return facts.applied_migrations  # type: ignore[attr-defined, no-any-return]

    applied = await asyncio.gather(*(open_and_read() for _ in range(6)))
    assert sorted(applied) == [[]] * 5 + [list(range(1, LATEST_VERSION + 1))]


# -- guards in the database itself ---------------------------------------------------------------


async def test_the_database_refuses_broken_intervals(tmp_path: Path) -> None:
    path = tmp_path / "facts.sqlite"
    await _migrate(path)
    conn = sqlite3.connect(path)
    try:
        _insert(conn, "a", T0, T1)
        for memory_id, start, end, extra, message in [
            ("empty", T1, T1, {}, "facts_valid_interval"),
            ("reversed", T2, T1, {}, "facts_valid_interval"),
            ("overlap", "2026-06-02T00:00:00.000000+00:00", T2, {}, "overlapping"),
            ("same-start", T0, None, {}, "overlapping"),
            ("naive", "2026-06-09T00:00:00", None, {}, "CHECK"),
            ("z-suffix", "2026-06-09T00:00:00.000000Z", None, {}, "CHECK"),
            ("no-tenant", T2, None, {"tenant_id": ""}, "CHECK"),
            ("bad-type", T2, None, {"memory_type": "gossip"}, "CHECK"),
        ]:
            with pytest.raises(sqlite3.IntegrityError, match=message):
                _insert(conn, memory_id, start, end, **extra)
        _insert(conn, "b", T1, None)
        with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
            _insert(conn, "second-open", T2, None)
        with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
            conn.execute("UPDATE facts SET valid_to = ? WHERE memory_id = 'a'", (T2,))
        # Each guard stands on its own: without the overlap trigger, the unique indexes hold.
        conn.execute("DROP TRIGGER facts_no_overlap_insert")
        with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE.*facts\.valid_from"):
            _insert(conn, "same-start", T1, T2)
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            _insert(conn, "second-open", T2, None)
        # Withdrawn rows keep their interval for history and are outside the guards.
        _insert(conn, "withdrawn", T0, T2, withdrawn_at=T2)
        # Other tenants, subjects and attributes are separate timelines.
        _insert(conn, "other-tenant", T0, None, tenant_id="globex")
        _insert(conn, "other-attr", T0, None, attribute="risk")
    finally:
        conn.close()


async def test_the_overlap_guard_passes_only_an_interval_that_shrinks(tmp_path: Path) -> None:
    """Schema 11: closing a fact or moving its end earlier skips the guard's seeks (it cannot
    overlap anything then); every other change of an active interval is still checked."""
    path = tmp_path / "facts.sqlite"
    await _migrate(path)
    conn = sqlite3.connect(path)
    try:
        _insert(conn, "a", T0, None)
        _insert(conn, "w", T1, T2, withdrawn_at=T2)  # withdrawn: outside the timeline
        conn.execute("UPDATE facts SET valid_to = ? WHERE memory_id = 'a'", (T2,))  # closes
        conn.execute("UPDATE facts SET valid_to = ? WHERE memory_id = 'a'", (T1,))  # earlier
        _insert(conn, "b", T1, None)
        for sql, params in (
            ("UPDATE facts SET valid_to = NULL WHERE memory_id = 'a'", ()),  # reopened
            ("UPDATE facts SET valid_to = ? WHERE memory_id = 'a'", (T2,)),  # later, into b
            ("UPDATE facts SET withdrawn_at = NULL WHERE memory_id = 'w'", ()),  # back in
            ("UPDATE facts SET valid_from = ?, valid_to = ? WHERE memory_id = 'b'", (T0, T1)),
        ):
            with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
                conn.execute(sql, params)
    finally:
        conn.close()


async def test_opening_something_that_is_not_a_ledger_fails_clearly(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(FactLedgerUnavailableError, match=r"junk\.sqlite"):
        async with open_fact_store(_url(junk), ACME):
            pass
    folder = tmp_path / "folder.sqlite"
    folder.mkdir()
    with pytest.raises(FactLedgerUnavailableError, match=r"folder\.sqlite"):
        async with open_fact_store(_url(folder), ACME):
            pass


# -- the factory and the delta -------------------------------------------------------------------


async def test_unknown_schemes_and_empty_paths_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedBackendError, match="sqlite:///PATH") as caught:
        async with open_fact_store("mongodb://localhost/facts", ACME):
            pass
    assert caught.value.exit_code == 2
    with pytest.raises(ConfigurationError, match="no file path"):
        async with open_fact_store("sqlite:///", ACME):
            pass
    with pytest.raises(ConfigurationError, match="Postgres"):
        await setup_fact_store(_url(tmp_path / "f.sqlite"), app_roles=["analyst_app"])
    with pytest.raises(UnsupportedBackendError):
        await setup_fact_store("redis://localhost")
    assert await setup_fact_store(_url(tmp_path / "f.sqlite")) == list(range(1, LATEST_VERSION + 1))
    assert await setup_fact_store(_url(tmp_path / "f.sqlite")) == []


def test_memory_delta_validates_the_candidate() -> None:
    when = datetime(2026, 6, 1, 9, tzinfo=UTC)
    delta = MemoryDelta(subject="  user:mira ", attribute="horizon", value=["a"], valid_from=when)
    assert (delta.subject, delta.memory_type, delta.source, delta.confidence) == (
        "user:mira",
        "semantic",
        "stated",
        1.0,
    )
    for bad in (
        {"value": math.nan},
        {"confidence": 1.5},
        {"memory_type": "gossip"},
        {"source": "rumour"},
        {"subject": "   "},
        {"unexpected": 1},
        {"valid_from": datetime(2026, 6, 1, 9)},
    ):
        with pytest.raises(ValidationError):
            MemoryDelta(**{"subject": "s", "attribute": "a", "value": 1, "valid_from": when, **bad})
    assert subject_for(ACME) == "user:mira"


async def test_the_overlap_guard_checks_both_neighbours_by_seeks(tmp_path: Path) -> None:
    """Schema 3's guard looks only at a row's predecessor and successor on its key."""
    path = tmp_path / "facts.sqlite"
    await _migrate(path)
    conn = sqlite3.connect(path)
    try:
        _insert(conn, "a", T0, T1)
        _insert(conn, "c", T2, None)
        # Between a and c: fits exactly, or overlaps the predecessor or the successor.
        with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
            _insert(conn, "x1", "2026-06-02T00:00:00.000000+00:00", T1)
        with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
            _insert(conn, "x2", T1, "2026-06-06T00:00:00.000000+00:00")
        with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
            _insert(conn, "x3", T1, None)
        _insert(conn, "b", T1, T2)
        # Moving a row's start onto its neighbour's interval is caught on update, too.
        with pytest.raises(sqlite3.IntegrityError, match="overlapping"):
            conn.execute("UPDATE facts SET valid_from = ? WHERE memory_id = 'c'", (T1,))
        # The seeks use the (tenant, subject, attribute, valid_from) index, not a scan.
        plan = " ".join(
            row[-1]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT valid_to FROM facts WHERE tenant_id = 'acme'"
                " AND subject = 'mira' AND attribute = 'horizon' AND withdrawn_at IS NULL"
                " AND valid_from <= ? ORDER BY valid_from DESC LIMIT 1",
                (T1,),
            )
        )
        assert "facts_one_start" in plan and "TEMP B-TREE" not in plan, plan
        rows = conn.execute(
            "SELECT restated_in, schema_version FROM facts WHERE memory_id = 'b'"
        ).fetchone()
        assert rows == ("[]", 2)  # defaults; _insert writes schema_version 2 explicitly
    finally:
        conn.close()


def _at(day: int) -> str:
    return f"2026-06-{day:02d}T00:00:00.000000+00:00"


async def test_the_overlap_guard_on_inserts_refuses_exactly_the_overlaps(tmp_path: Path) -> None:
    """Schema 14's guard seeks only the key's active row starting last before the new row's
    end; random rows written by raw SQL are refused exactly when they overlap an active row
    of their key (checked against every row), open-ended, withdrawn and other keys included."""
    import random

    path = tmp_path / "facts.sqlite"
    await _migrate(path)
    conn = sqlite3.connect(path, isolation_level=None)
    rng = random.Random(14)
    stored: list[tuple[str, int, int | None]] = []  # active rows: attribute, start, end
    try:
        for n in range(400):
            attribute = rng.choice(["horizon", "risk"])
            start = rng.randrange(1, 28)
            end = None if rng.random() < 0.2 else rng.randrange(start + 1, 30)
            withdrawn = rng.random() < 0.1
            overlaps = not withdrawn and any(
                a == attribute and (end is None or s < end) and (e is None or start < e)
                for a, s, e in stored
            )
            extra = {"attribute": attribute} | ({"withdrawn_at": _at(1)} if withdrawn else {})
            try:
                _insert(conn, f"m{n}", _at(start), None if end is None else _at(end), **extra)
            except sqlite3.IntegrityError as e:
                assert overlaps and "overlapping" in str(e), (n, attribute, start, end)
            else:
                assert not overlaps, (n, attribute, start, end, stored)
                if not withdrawn:
                    stored.append((attribute, start, end))
        assert len(stored) > 5  # the scenario fills both timelines, not only refusals
    finally:
        conn.close()


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="no sqlite3 command-line shell")
async def test_the_overlap_guard_refuses_a_row_from_the_sqlite3_shell(tmp_path: Path) -> None:
    """The guard is the file's own (a trigger, no function of the application's connections):
    the sqlite3 shell's insert of an overlapping row is refused too."""
    path = tmp_path / "facts.sqlite"
    await _migrate(path)
    conn = sqlite3.connect(path, isolation_level=None)
    _insert(conn, "a", T0, None)
    conn.close()
    insert = (
        "INSERT INTO facts (tenant_id, memory_id, subject, attribute, value, valid_from,"
        f" recorded_at) VALUES ('acme', 'b', 'mira', 'horizon', '\"y\"', '{T1}', '{T1}');"
    )
    shell = subprocess.run(
        ["sqlite3", str(path), insert], capture_output=True, text=True, check=False
    )
    assert shell.returncode != 0 and "overlapping" in shell.stderr
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT memory_id FROM facts").fetchall() == [("a",)]
    check.close()
