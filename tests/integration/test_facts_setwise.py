"""Set-wise groups (``memory.facts.batch``) write exactly what the same writes row by row do.

Seeded random deltas on a few keys of a coarse time grid -- equal starts, restatements,
corrections inside history, every conflict policy and source, another user's subject (a
candidate), a refused writer -- are written twice on fresh ledgers of each backend: once
through ``record_many`` and ``import_facts`` groups (set-wise), once with set-wise planning
turned off (every rule a seek and a statement). Each delta's outcome and every key's history
must be the same, field for field (memory ids aside, which are random: supersession is compared
through the superseded record's start and episode).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import memory.facts.base as base
import memory.facts.batch as batch
import memory.facts.postgres as postgres_backend
import memory.facts.sqlite as sqlite_backend
import memory.facts.sqlite_ops as sqlite_ops
from memory.facts import FactRecord, FactStore, MemoryDelta, open_fact_store
from memory.facts.records import ConflictPolicy, Source
from memory.identity import Principal
from memory.sealing import PLAIN
from memory.sql.clock import encode_time
from memory.sql.connect import connect
from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

MIRA = Principal("acme", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
SUBJECTS = ("team:a", "team:b", "user:mira", "user:bob")
SOURCES: tuple[Source, ...] = ("inferred", "observed", "stated", "confirmed")


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of fresh, empty ledgers where mira administers acme."""
    counter = iter(range(1000))
    stack: list[Any] = []

    def make() -> str:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / f'facts-{next(counter)}.sqlite'}"
            asyncio.run(_make_admin(url))
            return url
        ledger = postgres_ledger()
        opened = ledger.__enter__()
        stack.append(ledger)
        asyncio.run(_make_admin(opened.owner_url))
        return str(opened.app_url)

    yield make
    for ledger in reversed(stack):
        ledger.__exit__(None, None, None)


async def _make_admin(url: str) -> None:
    async with open_fact_store(url, MIRA) as facts:
        await facts.bootstrap_admin(MIRA.user_id)


def _deltas(seed: int, count: int) -> list[tuple[MemoryDelta, ConflictPolicy]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        delta = MemoryDelta(
            subject=rng.choice(SUBJECTS),
            attribute=rng.choice(("horizon", "risk")),
            value=rng.choice(("a", "b", "c")),
            valid_from=BASE + timedelta(days=rng.randrange(12)),
            source=rng.choice(SOURCES),
            source_episode_id=rng.choice((None, "e1", "e2", "e3", f"e{rng.randrange(99)}")),
        )
        out.append((delta, rng.choice(list(ConflictPolicy))))
    return out


def _outcome(result: Any) -> Any:
    if isinstance(result, FactRecord):
        return (result.outcome, _shape(result, {}))
    return type(result).__name__


def _shape(r: FactRecord, by_id: dict[str, FactRecord]) -> tuple[Any, ...]:
    superseded = by_id.get(r.supersedes_memory_id or "")
    return (
        r.subject, r.attribute, r.value, r.memory_type, r.valid_from, r.valid_to,
        r.recorded_at, r.supersedes_memory_id is not None,
        None if superseded is None else (superseded.valid_from, superseded.source_episode_id),
        r.source_episode_id, r.source, r.confidence, r.retracted_at, r.retraction_episode_id,
        r.withdrawn_at, r.restated_in, r.recorded_by,
    )  # fmt: skip


async def _write(url: str, seed: int) -> tuple[list[Any], list[Any]]:
    writes = _deltas(seed, 160)
    async with open_fact_store(url, MIRA, clock=lambda: NOW) as facts:
        outcomes: list[Any] = []
        for start in range(0, 120, 30):  # groups of 30, one policy each
            chunk = writes[start : start + 30]
            policy = chunk[0][1]
            outcomes += map(_outcome, await facts.record_many([d for d, _ in chunk], policy=policy))
        report = await facts.import_facts((d for d, _ in writes[120:]), batch_size=16)
        outcomes.append((report.recorded, report.replaced, report.duplicates, len(report.refused)))
        # A writer without grants: refused in a group of its own and in a mixed one.
        bob: FactStore = facts.with_principal(Principal("acme", "bob"))
        outcomes += map(_outcome, await bob.record_many([writes[0][0], writes[1][0]]))
        return outcomes, await _histories(facts)


async def _histories(facts: FactStore) -> list[Any]:
    found = []
    for subject in SUBJECTS:
        for attribute in ("horizon", "risk"):
            history = await facts.history(subject, attribute, include_personal=False)
            # Records equal in start, recording and withdrawal have no order on Postgres.
            by_id = {r.memory_id: r for r in history}
            found.append(sorted((_shape(r, by_id) for r in history), key=repr))
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_setwise_groups_write_what_row_by_row_writes_do(
    fresh_ledger: Any, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned: list[int] = []
    run = batch.Plan.run

    def counted(self: batch.Plan, group: list[Any]) -> None:
        planned.append(len(group))
        run(self, group)

    monkeypatch.setattr(batch.Plan, "run", counted)
    setwise = asyncio.run(_write(fresh_ledger(), seed))
    assert planned and max(planned) >= 16  # the groups really ran set-wise

    for backend in (sqlite_backend, postgres_backend):
        monkeypatch.setattr(backend, "plannable", lambda group: False)
    planned.clear()
    row_by_row = asyncio.run(_write(fresh_ledger(), seed))
    assert not planned

    assert setwise[0] == row_by_row[0]  # every delta's outcome
    assert setwise[1] == row_by_row[1]  # every key's history
    assert any(h for h in setwise[1])


def test_sqlite_prefetch_answers_from_open_facts_what_the_full_seeks_do(tmp_path: Path) -> None:
    """The SQLite prefetch takes a key's open fact alone when it starts at or before the
    group's span on the key (one seek); for every span, on keys with open, closed, retracted
    and no facts, it must return the rows the three seeks of the general statement return."""
    url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    asyncio.run(_make_admin(url))
    writes = _deltas(7, 120)
    keys = [("acme", s, a) for s in SUBJECTS for a in ("horizon", "risk", "sector")]

    async def fill() -> None:
        async with open_fact_store(url, MIRA, clock=lambda: NOW) as facts:
            await facts.record_many([d for d, _ in writes], policy=ConflictPolicy.SOURCE_PRECEDENCE)
            await facts.retract("team:a", "risk", source_episode_id="e-retract")

    asyncio.run(fill())
    conn = connect(str(tmp_path / "facts.sqlite"))
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    ops = sqlite_ops.Writes(conn, PLAIN)

    def general(spans: dict[Any, tuple[datetime, datetime]]) -> list[str]:
        asked = json.dumps(
            [[*k, encode_time(lo), encode_time(hi)] for k, (lo, hi) in spans.items()]
        )
        return sorted(str(r[1]) for r in conn.execute(sqlite_ops._PREFETCH, (asked,)))

    rng = random.Random(7)
    days = [BASE + timedelta(days=d, hours=h) for d in range(-1, 14) for h in (0, 12)]
    for _ in range(300):
        spans = {}
        for key in rng.sample(keys, rng.randrange(1, len(keys))):
            lo, hi = sorted(rng.sample(days, 2))
            spans[key] = (lo, rng.choice((lo, hi)))
        assert sorted(r.memory_id for r in ops.prefetch(spans)) == general(spans), spans

    # Writing after everything stored, the usual case, is one seek per key: one statement.
    late = BASE + timedelta(days=30)
    open_keys = {k for k in keys if conn.execute(sqlite_ops._OPEN_FACT, k).fetchone()}
    assert ("acme", "team:a", "risk") not in open_keys and len(open_keys) >= 4
    statements.clear()
    found = ops.prefetch({k: (late, late) for k in open_keys})
    assert len(statements) == 1
    assert {(r.tenant_id, r.subject, r.attribute) for r in found} == open_keys
    assert all(r.valid_to is None for r in found)


APPEND_VALUES: tuple[Any, ...] = ("a", "b", "c", 1.5, ["x"])


def _appends(seed: int) -> list[list[MemoryDelta]]:
    """Groups of writes each landing after everything on its key (several per key in a
    group), then one group with a write before its key's latest: it must run its rules."""
    rng = random.Random(seed)
    keys = [(s, a) for s in SUBJECTS[:3] for a in ("horizon", "risk")]
    day = dict.fromkeys(keys, 0)
    groups = []
    for _ in range(4):
        group = []
        for _ in range(24):
            key = rng.choice(keys)
            day[key] += rng.randrange(1, 3)
            group.append(
                MemoryDelta(
                    subject=key[0],
                    attribute=key[1],
                    value=rng.choice(APPEND_VALUES),
                    valid_from=BASE + timedelta(days=day[key], hours=rng.randrange(3)),
                    source=rng.choice(SOURCES),
                    source_episode_id=rng.choice((None, "e1", f"e{rng.randrange(99)}")),
                )
            )
        groups.append(group)
    late = groups[-1][-1]
    groups.append([*groups[0][:3], late.model_copy(update={"valid_from": BASE})])
    return groups


async def _write_appends(url: str, seed: int) -> tuple[list[Any], list[Any]]:
    async with open_fact_store(url, MIRA, clock=lambda: NOW) as facts:
        await facts.record(
            MemoryDelta(subject="team:b", attribute="risk", value="low", valid_from=BASE)
        )
        await facts.retract("team:b", "risk", at=BASE + timedelta(hours=1))
        outcomes: list[Any] = []
        groups = _appends(seed)
        for group in groups[:2]:
            outcomes += map(_outcome, await facts.record_many(group))
        report = await facts.import_facts((d for g in groups[2:4] for d in g), batch_size=24)
        outcomes.append((report.recorded, report.replaced, report.duplicates, len(report.refused)))
        outcomes += map(_outcome, await facts.record_many(groups[4]))
        return outcomes, await _histories(facts)


@pytest.mark.parametrize("seed", [4, 5])
def test_groups_of_appends_skip_the_rules_and_write_what_they_would(
    fresh_ledger: Any, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group whose every write lands after everything on its key is answered without a
    rule generator per write (``Plan._appends``): the same outcomes and histories as row by
    row, including keys with no fact, an open fact, a retracted timeline (that group runs
    its rules) and a group with one write before its key's latest (also its rules)."""
    appended: list[int] = []
    append_all = batch.Plan._append_all

    def counted(self: batch.Plan, group: list[Any]) -> None:
        appended.append(len(group))
        append_all(self, group)

    ruled: list[MemoryDelta] = []  # the writes whose rules ran (row by row or planned)
    record_rules = base.record_rules

    def counted_rules(key: Any, delta: MemoryDelta, *args: Any, **kwargs: Any) -> Any:
        ruled.append(delta)
        return record_rules(key, delta, *args, **kwargs)

    monkeypatch.setattr(batch.Plan, "_append_all", counted)
    monkeypatch.setattr(base, "record_rules", counted_rules)
    setwise = asyncio.run(_write_appends(fresh_ledger(), seed))
    assert 24 in appended and len(appended) < 5  # some groups appended, not the last one
    # ... and committed as planned: no write of theirs ran its rules afterwards.
    assert len(ruled) == 1 + 4 * 24 + 4 - sum(appended)

    for backend in (sqlite_backend, postgres_backend):
        monkeypatch.setattr(backend, "plannable", lambda group: False)
    appended.clear()
    row_by_row = asyncio.run(_write_appends(fresh_ledger(), seed))
    assert not appended

    assert setwise[0] == row_by_row[0]
    assert setwise[1] == row_by_row[1]
    assert sum(len(h) for h in setwise[1]) > 90
