"""A group of appends on SQLite, its rules applied in SQL (``memory.facts.sqlite_appends``).

Each test writes one ``record_many`` group through the set-wise statements (checked by
counting them) and reads the ledger back: a key's versions chained in one group, keys mixed,
a candidate, a write refused for want of authority (its error names the subject and the
fix, and it writes nothing while the others are written), the writers' authority computed
in SQL as the rules compute it, and a group the check turns away reading the clock no more
often than row by row does.
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
from agent.errors import FactAuthorityError
from memory.facts import FactRecord, MemoryDelta, open_fact_store
from memory.facts.group import PendingWrite
from memory.facts.migrations import migrate_sqlite_sync
from memory.facts.rules import authority_of
from memory.identity import Principal
from memory.sealing import PLAIN

pytestmark = pytest.mark.integration

MIRA = Principal("acme", "mira")
CARL = Principal("acme", "carl")
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
def url(tmp_path: Path) -> str:
    return _ledger(tmp_path / "facts.sqlite")


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


Histories = dict[tuple[str, str], list[FactRecord]]


def _write(
    url: str, principal: Principal, first: list[MemoryDelta], group: list[MemoryDelta]
) -> tuple[list[Any], Histories]:
    """``first`` recorded by mira, then ``group`` by ``principal`` in one ``record_many``;
    its results and the histories of every key written."""

    async def run() -> tuple[list[Any], Histories]:
        async with open_fact_store(url, MIRA, clock=lambda: NOW) as facts:
            if first:
                await facts.record_many(first)
            results = await facts.with_principal(principal).record_many(group)
            keys = sorted({(d.subject, d.attribute) for d in first + group})
            histories = {key: await facts.history(*key) for key in keys}
            return results, histories

    return asyncio.run(run())


def test_a_keys_versions_in_one_group_chain_their_supersession(
    url: str, set_wise: list[int]
) -> None:
    stored = [_delta("team:a", "risk", "low", 0)]
    group = [_delta("team:a", "risk", v, d, source_episode_id=f"e{d}") for d, v in
             [(3, "mid"), (5, "high"), (9, "mid"), (12, "low")]]  # fmt: skip
    results, histories = _write(url, MIRA, stored, group)

    assert set_wise == [4]
    history = histories[("team:a", "risk")]
    assert [(r.value, r.valid_from, r.valid_to) for r in history] == [
        ("low", _at(0), _at(3)),
        ("mid", _at(3), _at(5)),
        ("high", _at(5), _at(9)),
        ("mid", _at(9), _at(12)),
        ("low", _at(12), None),
    ]
    assert [r.supersedes_memory_id for r in history] == [None] + [r.memory_id for r in history[:-1]]
    assert all(r.retracted_at is None and r.withdrawn_at is None for r in history)
    # What each write returns is the record as it was written: open, superseding the last.
    assert [r.memory_id for r in results] == [r.memory_id for r in history[1:]]
    assert all(r.outcome == "recorded" and r.valid_to is None for r in results)
    assert [r.supersedes_memory_id for r in results] == [r.memory_id for r in history[:-1]]
    assert {r.recorded_at for r in results} == {NOW} and {r.recorded_by for r in results} == {
        "mira"
    }


def test_mixed_keys_each_chain_on_their_own(url: str, set_wise: list[int]) -> None:
    stored = [_delta("team:a", "risk", "low", 0), _delta("user:mira", "horizon", "5y", 1)]
    group = [
        _delta("team:a", "risk", "mid", 2),
        _delta("user:mira", "horizon", "10y", 2, confidence=0.4),
        _delta("team:b", "style", "value", 1),  # a key with nothing stored
        _delta("team:a", "risk", "high", 4),
        _delta("team:b", "style", "growth", 3, memory_type="profile"),
        _delta("user:mira", "horizon", {"years": 12}, 6, source="confirmed"),
    ]
    results, histories = _write(url, MIRA, stored, group)

    assert set_wise == [6]
    spans = {
        key: [(r.value, r.valid_from, r.valid_to) for r in history]
        for key, history in histories.items()
    }
    assert spans == {
        ("team:a", "risk"): [("low", _at(0), _at(2)), ("mid", _at(2), _at(4)), ("high", _at(4), None)],
        ("team:b", "style"): [("value", _at(1), _at(3)), ("growth", _at(3), None)],
        ("user:mira", "horizon"): [
            ("5y", _at(1), _at(2)), ("10y", _at(2), _at(6)), ({"years": 12}, _at(6), None),
        ],
    }  # fmt: skip
    mira = histories[("user:mira", "horizon")]
    assert (mira[1].confidence, mira[2].source) == (0.4, "confirmed")
    assert histories[("team:b", "style")][1].memory_type == "profile"
    assert histories[("team:b", "style")][0].supersedes_memory_id is None
    assert results[2].supersedes_memory_id is None
    assert results[4].supersedes_memory_id == results[2].memory_id


def test_a_candidate_in_a_group_stays_outside_the_timeline(url: str, set_wise: list[int]) -> None:
    stored = [_delta("user:bob", "horizon", "3y", 0)]  # as mira's candidate already
    group = [
        _delta("team:a", "risk", "low", 1),
        _delta("user:bob", "horizon", "20y", 2, source="confirmed"),
        _delta("team:a", "risk", "high", 3),
        _delta("user:bob", "horizon", "25y", 0),  # before the other: a candidate has no order
    ]
    results, histories = _write(url, MIRA, stored, group)

    assert set_wise == [4]
    bob = histories[("user:bob", "horizon")]
    assert [(r.value, r.status, r.source, r.withdrawn_at) for r in bob] == [
        ("3y", "candidate", "inferred", NOW),
        ("25y", "candidate", "inferred", NOW),
        ("20y", "candidate", "inferred", NOW),
    ]
    assert all(r.valid_to is None and r.supersedes_memory_id is None for r in bob)
    assert results[1].status == "candidate" and results[1].source == "inferred"
    assert results[3].withdrawn_at == NOW
    team = histories[("team:a", "risk")]
    assert [(r.value, r.valid_to) for r in team] == [("low", _at(3)), ("high", None)]


def test_a_write_without_authority_is_refused_alone_and_writes_nothing(
    url: str, set_wise: list[int]
) -> None:
    stored = [_delta("team:a", "risk", "low", 0)]
    group = [
        _delta("user:carl", "horizon", "5y", 1),
        _delta("team:a", "risk", "high", 2),  # carl holds no grant on team:a
        _delta("user:carl", "horizon", "7y", 3),
        _delta("user:carl", "risk", "low", 1),
    ]
    results, histories = _write(url, CARL, stored, group)

    assert set_wise == [4]
    refused = results[1]
    assert isinstance(refused, FactAuthorityError)
    assert "user 'carl' of tenant 'acme' may not write facts about team:a" in str(refused)
    assert "analyst facts grant carl team:a" in str(refused)
    assert "Nothing was written" in str(refused)
    # The refused write left team:a as it was; the others were written.
    team = histories[("team:a", "risk")]
    assert [(r.value, r.valid_to, r.recorded_by) for r in team] == [("low", None, "mira")]
    carl = histories[("user:carl", "horizon")]
    assert [(r.value, r.valid_to) for r in carl] == [("5y", _at(3)), ("7y", None)]
    assert [r.memory_id for r in carl] == [results[0].memory_id, results[2].memory_id]


GRANTS = [
    [],
    [("writer", "team:a")],
    [("writer", "team:*")],
    [("reader", "team:a")],
    [("writer", "user:*")],
    [("writer", "*")],
    [("admin", "*")],
    [("writer", "user:bob"), ("reader", "*")],
    [("writer", "team:a*b")],
]
WRITERS = ["mira", "bob", ""]
SUBJECTS = ["team:a", "team:ab", "team:a*b", "teams", "user:bob", "user:mira", "user:", "*"]


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
