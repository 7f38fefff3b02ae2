"""A group of appends written set-wise in SQL, on SQLite and on Postgres alike.

Each test writes one ``record_many`` group through the backend's set-wise statements
(:mod:`memory.facts.sqlite_appends`, :mod:`memory.facts.postgres_appends`; checked by
counting the groups they write) and reads the ledger back: a key's versions chained in one
group, keys mixed, a candidate, and a write refused for want of authority (its error names the
subject and the fix, and it writes nothing while the others are written). Postgres runs
through its application role, so row security is in force. What only one backend has (the
authority statement against the rule, the clock of a group the check turns away, row security
as the second wall) is in ``test_facts_sqlite_appends`` and ``test_facts_postgres_appends``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import memory.facts.postgres as postgres_backend
import memory.facts.postgres_appends as pg_appends
import memory.facts.sqlite as sqlite_backend
import memory.facts.sqlite_appends as sqlite_appends
from agent.errors import FactAuthorityError
from memory.facts import FactRecord, MemoryDelta, open_fact_store
from memory.facts.group import PendingWrite
from memory.identity import Principal
from tests.support.fact_deltas import MIRA, NOW, at, delta
from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

CARL = Principal("acme", "carl")


@dataclass
class Appending:
    """A ledger where mira administers acme (carl holds no grant), and the sizes of the
    groups its set-wise statements wrote (without a failure that sent them row by row)."""

    backend: str
    url: str
    sizes: list[int] = field(default_factory=list)


@contextmanager
def _fresh_ledger(backend: str, folder: Path) -> Iterator[str]:
    """A new ledger (a SQLite file in ``folder``, or Postgres through its application role)
    where mira administers acme."""

    async def make_admin(url: str) -> None:
        async with open_fact_store(url, MIRA) as facts:
            await facts.bootstrap_admin(MIRA.user_id)

    if backend == "sqlite":
        folder.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{folder / 'facts.sqlite'}"
        asyncio.run(make_admin(url))
        yield url
        return
    with postgres_ledger() as ledger:
        asyncio.run(make_admin(ledger.owner_url))
        yield ledger.app_url


@pytest.fixture(params=["sqlite", "postgres"])
def appending(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Appending]:
    backend: Any = sqlite_appends.SqliteAppends
    if request.param == "postgres":
        backend = pg_appends.PgAppends
        # From four writes on, as on SQLite: the tests' groups are small.
        monkeypatch.setattr(postgres_backend, "SET_WISE_GROUP", 4)
    append_all = backend.append_all

    def counted(self: Any, group: list[PendingWrite]) -> None:
        append_all(self, group)
        made.sizes.append(len(group))  # written: not refused by the database, then row by row

    monkeypatch.setattr(backend, "append_all", counted)
    with _fresh_ledger(request.param, tmp_path / "set-wise") as url:
        made = Appending(request.param, url)
        yield made


Histories = dict[tuple[str, str], list[FactRecord]]


def _write(
    url: str, principal: Principal, first: list[MemoryDelta], group: list[MemoryDelta]
) -> tuple[list[Any], Histories]:
    """``first`` recorded by mira, then ``group`` by ``principal`` in one ``record_many``;
    its results and the histories of every key written (read by mira, the admin)."""

    async def run() -> tuple[list[Any], Histories]:
        async with open_fact_store(url, MIRA, clock=lambda: NOW) as facts:
            if first:
                await facts.record_many(first)
            results = await facts.with_principal(principal).record_many(group)
            keys = sorted({(d.subject, d.attribute) for d in first + group})
            histories = {key: await facts.history(*key) for key in keys}
            return results, histories

    return asyncio.run(run())


def test_a_keys_versions_in_one_group_chain_their_supersession(appending: Appending) -> None:
    stored = [delta("team:a", "risk", "low", 0)]
    group = [delta("team:a", "risk", v, d, source_episode_id=f"e{d}") for d, v in
             [(3, "mid"), (5, "high"), (9, "mid"), (12, "low")]]  # fmt: skip
    results, histories = _write(appending.url, MIRA, stored, group)

    assert appending.sizes == [4]
    history = histories[("team:a", "risk")]
    assert [(r.value, r.valid_from, r.valid_to) for r in history] == [
        ("low", at(0), at(3)),
        ("mid", at(3), at(5)),
        ("high", at(5), at(9)),
        ("mid", at(9), at(12)),
        ("low", at(12), None),
    ]
    assert [r.supersedes_memory_id for r in history] == [None] + [r.memory_id for r in history[:-1]]
    assert [r.source_episode_id for r in history[1:]] == ["e3", "e5", "e9", "e12"]
    assert all(r.retracted_at is None and r.withdrawn_at is None for r in history)
    # What each write returns is the record as it was written: open, superseding the last.
    assert [r.memory_id for r in results] == [r.memory_id for r in history[1:]]
    assert all(r.outcome == "recorded" and r.valid_to is None for r in results)
    assert [r.supersedes_memory_id for r in results] == [r.memory_id for r in history[:-1]]
    assert {r.recorded_at for r in results} == {NOW} and {r.recorded_by for r in results} == {
        "mira"
    }


def test_mixed_keys_each_chain_on_their_own(appending: Appending) -> None:
    stored = [delta("team:a", "risk", "low", 0), delta("user:mira", "horizon", "5y", 1)]
    group = [
        delta("team:a", "risk", "mid", 2),
        delta("user:mira", "horizon", "10y", 2, confidence=0.4),
        delta("team:b", "style", "value", 1),  # a key with nothing stored
        delta("team:a", "risk", "high", 4),
        delta("team:b", "style", "growth", 3, memory_type="profile"),
        delta("user:mira", "horizon", {"years": 12}, 6, source="confirmed"),
    ]
    results, histories = _write(appending.url, MIRA, stored, group)

    assert appending.sizes == [6]
    spans = {
        key: [(r.value, r.valid_from, r.valid_to) for r in history]
        for key, history in histories.items()
    }
    assert spans == {
        ("team:a", "risk"): [("low", at(0), at(2)), ("mid", at(2), at(4)), ("high", at(4), None)],
        ("team:b", "style"): [("value", at(1), at(3)), ("growth", at(3), None)],
        ("user:mira", "horizon"): [
            ("5y", at(1), at(2)), ("10y", at(2), at(6)), ({"years": 12}, at(6), None),
        ],
    }  # fmt: skip
    mira = histories[("user:mira", "horizon")]
    assert (mira[1].confidence, mira[2].source) == (0.4, "confirmed")
    assert histories[("team:b", "style")][1].memory_type == "profile"
    assert histories[("team:b", "style")][0].supersedes_memory_id is None
    assert results[2].supersedes_memory_id is None
    assert results[4].supersedes_memory_id == results[2].memory_id


def test_a_candidate_in_a_group_stays_outside_the_timeline(appending: Appending) -> None:
    stored = [delta("user:bob", "horizon", "3y", 0)]  # as mira's candidate already
    group = [
        delta("team:a", "risk", "low", 1),
        delta("user:bob", "horizon", "20y", 2, source="confirmed"),
        delta("team:a", "risk", "high", 3),
        delta("user:bob", "horizon", "25y", 0),  # before the other: a candidate has no order
    ]
    results, histories = _write(appending.url, MIRA, stored, group)

    assert appending.sizes == [4]
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
    assert [(r.value, r.valid_to) for r in team] == [("low", at(3)), ("high", None)]


def test_a_write_without_authority_is_refused_alone_and_writes_nothing(
    appending: Appending,
) -> None:
    stored = [delta("team:a", "risk", "low", 0)]
    group = [
        delta("user:carl", "horizon", "5y", 1),
        delta("team:a", "risk", "high", 2),  # carl holds no grant on team:a
        delta("user:carl", "horizon", "7y", 3),
        delta("user:carl", "risk", "low", 1),
    ]
    results, histories = _write(appending.url, CARL, stored, group)

    assert appending.sizes == [4]
    refused = results[1]
    assert isinstance(refused, FactAuthorityError)
    assert "user 'carl' of tenant 'acme' may not write facts about team:a" in str(refused)
    assert "analyst facts grant carl team:a" in str(refused)
    assert "Nothing was written" in str(refused)
    # The refused write left team:a as it was; the others were written.
    team = histories[("team:a", "risk")]
    assert [(r.value, r.valid_to, r.recorded_by) for r in team] == [("low", None, "mira")]
    carl = histories[("user:carl", "horizon")]
    assert [(r.value, r.valid_to) for r in carl] == [("5y", at(3)), ("7y", None)]
    assert [r.memory_id for r in carl] == [results[0].memory_id, results[2].memory_id]


def test_texts_and_numbers_come_back_exactly_as_written(appending: Appending) -> None:
    """What the set-wise statements carry in one text (SQLite: a JSON array of rows) comes
    back bit for bit: names and values beyond ASCII, quotes, backslashes and control
    characters, and confidences whose decimal form is long."""
    odd = 'Zoë "quoted" \\ back\nline\ttab\x01 漢字 😀'
    group = [
        delta("team:é😀", 'risk "a"', odd, 1, confidence=0.1, source_episode_id=odd),
        delta("team:é😀", 'risk "a"', {"k😀": [odd, 2**62, 0.1, None, True]}, 2, confidence=1 / 3),
        delta("team:b\\c", "漢", 7.000000000000001, 1, confidence=0.7000000000000001),
        delta("team:b\\c", "漢", [odd], 2, confidence=5e-324, retention_policy=odd),
    ]
    _, histories = _write(appending.url, MIRA, [], group)

    assert appending.sizes == [4]
    written = [r for key in sorted(histories) for r in histories[key]]
    expected = sorted(group, key=lambda d: (d.subject, d.attribute, d.valid_from))
    assert [
        (r.subject, r.attribute, r.value, r.confidence, r.source_episode_id, r.retention_policy)
        for r in written
    ] == [
        (d.subject, d.attribute, d.value, d.confidence, d.source_episode_id, d.retention_policy)
        for d in expected
    ]


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
    appending: Appending, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check reads no clock: a group with a write before its key's latest runs its rules
    with one reading per write, and records what row by row records."""
    group = [
        delta("team:a", "risk", "low", 5),
        delta("team:a", "risk", "mid", 8),
        delta("team:a", "risk", "high", 6),  # inside the one before's interval
        delta("team:b", "risk", "high", 6),
    ]
    setwise = _ticking_run(appending.url, group)
    assert appending.sizes == [] and setwise[0] == 4

    backend = sqlite_backend if appending.backend == "sqlite" else postgres_backend
    monkeypatch.setattr(backend, "plannable", lambda group: False)
    with _fresh_ledger(appending.backend, tmp_path / "row-by-row") as url:
        assert _ticking_run(url, group) == setwise
