"""A database made before the journal owned its migrations opens unchanged (SQLite in tmp).

:mod:`tests.support.ledger_v8` freezes the statements and checksums that the ledger's single
migration list produced for versions 1-8. The list is now assembled from the ledger's own
migrations and the journal's (:mod:`memory.journal.migrations`): the same versions, the same
checksums on both backends, and a file built by the old list is up to date for the new code.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from memory.facts import MemoryDelta, open_fact_store, subject_for
from memory.facts.migrations import LATEST_VERSION, MIGRATIONS
from memory.facts.sqlite import SqliteFactStore
from memory.identity import Principal
from memory.journal import Episode
from memory.journal import migrations as journal_migrations
from memory.journal.sqlite import SqliteJournal
from tests.support.ledger_v8 import RELEASED, build_old_ledger

MIRA = Principal("acme", "mira")
WHEN = datetime(2026, 6, 3, 10, tzinfo=UTC)


def test_the_journal_migrations_keep_their_versions_in_the_ledger_list() -> None:
    assert [m.version for m in journal_migrations.MIGRATIONS] == [5, 6, 8]
    by_version = {m.version: m for m in MIGRATIONS}
    for migration in journal_migrations.MIGRATIONS:
        assert by_version[migration.version] is migration


def test_every_migration_is_the_one_released() -> None:
    assert len(RELEASED) <= LATEST_VERSION
    assert [
        (m.version, m.description, m.sqlite, m.checksum("sqlite"), m.checksum("postgres"))
        for m in MIGRATIONS[: len(RELEASED)]
    ] == list(RELEASED)


def _bookkeeping(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT version, checksum, applied_at FROM fact_migrations ORDER BY version"
        ).fetchall()
    conn.close()
    return rows


def _schema(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
    conn.close()
    return rows


async def test_a_file_made_by_the_old_layout_opens_reads_and_writes_unmigrated(
    tmp_path: Path,
) -> None:
    path = tmp_path / "facts.sqlite"
    build_old_ledger(str(path))
    recorded, schema = _bookkeeping(path), _schema(path)
    assert [r[0] for r in recorded] == list(range(1, len(RELEASED) + 1))

    async with SqliteFactStore.open(path, MIRA) as store:
        # Only the migrations added since the old layout (9, 10: read authority; 11) apply.
        assert store.applied_migrations == list(range(len(RELEASED) + 1, LATEST_VERSION + 1))
    async with SqliteJournal.open(path, MIRA) as journal:
        assert journal.applied_migrations == []
        stored = Episode(
            tenant_id="acme",
            episode_id="ep-1",
            user_id="mira",
            thread_id="t1",
            at=WHEN,
            role="user",
            kind="message",
            text="I hold for the long term",
        )
        await journal.add_episodes([stored])
        await journal.audit("read", "facts", ["f-1"], reason="test", content=["x"])
    async with open_fact_store(f"sqlite:///{path}", MIRA) as facts:
        subject = subject_for(MIRA)
        await facts.record(
            MemoryDelta(
                subject=subject,
                attribute="horizon",
                value="long-term",
                valid_from=WHEN,
                source_episode_id="ep-1",
            )
        )
        current = await facts.current(subject, "horizon")
        assert current is not None and current.value == "long-term"
    async with SqliteJournal.open(path, MIRA) as journal:
        assert [e.text for e in await journal.episodes(["ep-1"])] == ["I hold for the long term"]
        assert [e.item_ids for e in await journal.audit_log()][-1] == ("f-1",)

    # Nothing re-migrated, nothing re-recorded: only the newer migrations were added.
    assert _bookkeeping(path)[: len(recorded)] == recorded
    assert [r[0] for r in _bookkeeping(path)] == list(range(1, LATEST_VERSION + 1))
    # 10 rebuilds the grants table with the reader role, 11 the overlap guard on updates
    # (it skips an interval that only shrinks), 14 the one on inserts (one seek); nothing
    # else of the file changes.
    rebuilt = {"fact_grants", "facts_no_overlap_update", "facts_no_overlap_insert"}
    changed = {name for name, sql in _schema(path)} ^ {name for name, sql in schema}
    assert changed == set()
    assert [row for row in _schema(path) if row[0] not in rebuilt] == [
        row for row in schema if row[0] not in rebuilt
    ]
    guard = dict(_schema(path))["facts_no_overlap_update"]
    assert (
        "NEW.valid_to <= OLD.valid_to" in guard and guard != dict(schema)["facts_no_overlap_update"]
    )
