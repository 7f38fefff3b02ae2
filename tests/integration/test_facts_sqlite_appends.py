"""A group of appends on SQLite, its rules applied in SQL (``memory.facts.sqlite_appends``):
what only SQLite has. The writers' authority computed in SQL as the rules compute it, and a
group the check turns away reading the clock no more often than row by row does. The cases
both backends share (a key's versions chained, keys mixed, a candidate, a refused write) are
in ``test_facts_set_appends``.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import memory.facts.sqlite as sqlite_backend
import memory.facts.sqlite_appends as appends
from memory.facts import FactRecord, MemoryDelta, open_fact_store
from memory.facts.group import PendingWrite
from memory.facts.migrations import migrate_sqlite_sync
from memory.facts.rules import authority_of
from memory.identity import Principal
from memory.sealing import PLAIN
from tests.support.authority_cases import GRANTS, SUBJECTS, WRITERS

pytestmark = pytest.mark.integration

MIRA = Principal("acme", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _at(days: int) -> datetime:
    return BASE + timedelta(days=days)


def _delta(subject: str, attribute: str, value: object, days: int, **more: Any) -> MemoryDelta:
    return MemoryDelta(
        subject=subject, attribute=attribute, value=value, valid_from=_at(days), **more
    )


def _ledger(path: Path) -> str:
    """A ledger where mira administers acme; carl holds no grant."""
    where = f"sqlite:///{path}"

    async def make_admin() -> None:
        async with open_fact_store(where, MIRA) as facts:
            await facts.bootstrap_admin(MIRA.user_id)

    asyncio.run(make_admin())
    return where


@pytest.fixture
def set_wise(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The sizes of the groups written by the set-wise statements."""
    sizes: list[int] = []
    append_all = appends.SqliteAppends.append_all

    def counted(self: appends.SqliteAppends, group: list[PendingWrite]) -> None:
        sizes.append(len(group))
        append_all(self, group)

    monkeypatch.setattr(appends.SqliteAppends, "append_all", counted)
    yield sizes


def test_the_authority_statement_answers_as_the_rule_does() -> None:
    """``authority_of`` for every writer, subject and set of grants, against the SQL."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate_sqlite_sync(conn, where=":memory:")
    sql = appends.SqliteAppends(conn, PLAIN)
    for grants in GRANTS:
        conn.execute("DELETE FROM fact_grants")
        conn.executemany(
            "INSERT INTO fact_grants VALUES ('acme', ?, ?, ?, 'x', '2026')",
            [(user, role, subject) for user in WRITERS if user for role, subject in grants],
        )
        group = [
            PendingWrite(
                ("acme", subject, "risk"),
                lambda: iter(()),
                user,
                starts=BASE,
                delta=_delta(subject, "risk", "x", 0),
                now=lambda: NOW,
            )
            for user, subject in itertools.product(WRITERS, SUBJECTS)
        ]
        conn.execute("BEGIN")
        sql.appendable(group)
        found = {(r[1], r[2]): r[3] for r in conn.execute(appends._AUTHORITIES)}
        conn.execute("ROLLBACK")
        expected = {
            (user, subject): authority_of(user, subject, list(grants))
            for user, subject in itertools.product(WRITERS, SUBJECTS)
        }
        assert found == expected, grants


def _ticking_run(url: str, group: list[MemoryDelta]) -> tuple[int, list[Any]]:
    """``group`` written under a clock moving a second a reading: how often it was read, and
    the keys' histories."""
    read = itertools.count()

    def clock() -> datetime:
        return NOW + timedelta(seconds=next(read))

    async def write() -> list[FactRecord]:
        async with open_fact_store(url, MIRA, clock=clock) as facts:
            await facts.record_many(group)
            return [r for k in ("team:a", "team:b") for r in await facts.history(k, "risk")]

    found = asyncio.run(write())
    return next(read), [(r.value, r.valid_from, r.valid_to, r.recorded_at) for r in found]


def test_a_group_the_check_turns_away_reads_the_clock_as_row_by_row(
    tmp_path: Path, set_wise: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check reads no clock: a group with a write before its key's latest runs its rules
    with one reading per write, and records what row by row records."""
    group = [
        _delta("team:a", "risk", "low", 5),
        _delta("team:a", "risk", "mid", 8),
        _delta("team:a", "risk", "high", 6),  # inside the one before's interval
        _delta("team:b", "risk", "high", 6),
    ]
    setwise = _ticking_run(_ledger(tmp_path / "set-wise.sqlite"), group)
    assert set_wise == [] and setwise[0] == 4

    monkeypatch.setattr(sqlite_backend, "plannable", lambda group: False)
    assert _ticking_run(_ledger(tmp_path / "row-by-row.sqlite"), group) == setwise
