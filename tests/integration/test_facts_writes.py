"""Group commit, batches, bulk import and the blocking reads, on both backends.

Concurrent ``record()`` calls share transactions (fewer commits than writes) without losing
or duplicating a fact; ``record_many`` and ``import_facts`` apply ``record()``'s rules, a
refusal staying the refused fact's own; ``store.sync`` answers exactly what the async API
answers, scoped by the same principal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from agent.errors import FactConflictError, FactTenantError
from memory.facts import FactRecord, FactStore, MemoryDelta, open_fact_store
from memory.identity import Principal
from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

ACME = Principal("acme", "mira")
GLOBEX = Principal("globex", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


async def _make_admin(url: str) -> None:
    """Mira administers tenant acme: she writes the shared ``team:*`` subjects these tests use
    (made by the ledger's owner: bootstrap_admin; on SQLite the owner of the data folder)."""
    async with open_fact_store(url, ACME) as facts:
        await facts.bootstrap_admin(ACME.user_id)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
        asyncio.run(_make_admin(url))
        yield url
        return
    with postgres_ledger() as ledger:
        asyncio.run(_make_admin(ledger.owner_url))
        yield ledger.app_url


def _delta(subject: str, value: Any, start: datetime, episode: str | None = None) -> MemoryDelta:
    return MemoryDelta(
        subject=subject,
        attribute="horizon",
        value=value,
        valid_from=start,
        source_episode_id=episode or f"e-{subject}-{value}",
    )


def _one_timeline(records: list[FactRecord]) -> list[FactRecord]:
    active = [r for r in records if r.active]
    assert sum(r.is_open for r in active) <= 1
    for a, b in pairwise(active):
        assert a.valid_to is not None and a.valid_to <= b.valid_from
    return active


def _count_groups(store: FactStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the size of every group the store commits."""
    sizes: list[int] = []
    run_group = store._run_group

    async def counted(group: list[Any]) -> None:
        sizes.append(len(group))
        await run_group(group)

    monkeypatch.setattr(store, "_run_group", counted)
    return sizes


async def test_concurrent_writers_are_group_committed_without_loss_or_duplicates(
    ledger_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers, per_writer = 8, 25
    async with open_fact_store(ledger_url, ACME, clock=lambda: NOW) as facts:
        groups = _count_groups(facts, monkeypatch)

        async def writer(w: int) -> list[FactRecord]:
            # Each writer walks its own keys forward in time; writers share subjects.
            return [
                await facts.record(
                    _delta(f"team:{(w + i) % 5}", f"w{w}-{i}", BASE + timedelta(hours=i, minutes=w))
                )
                for i in range(per_writer)
            ]

        results = [r for batch in await asyncio.gather(*map(writer, range(writers))) for r in batch]

        total = writers * per_writer
        assert len(results) == total and len({r.memory_id for r in results}) == total
        assert all(r.outcome == "recorded" for r in results)
        # Group commit happened: fewer transactions than writes, and every write in one.
        assert sum(groups) == total and len(groups) < total and max(groups) > 1
        stored: dict[str, FactRecord] = {}
        for subject in {f"team:{n}" for n in range(5)}:
            history = await facts.history(subject, "horizon")
            _one_timeline(history)
            stored.update({r.memory_id: r for r in history})
        assert len(stored) == total  # nothing lost, nothing written twice
        assert {r.value for r in stored.values()} == {r.value for r in results}


async def test_record_many_applies_the_rules_in_order_and_keeps_refusals_apart(
    ledger_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_fact_store(ledger_url, ACME, clock=lambda: NOW) as facts:
        groups = _count_groups(facts, monkeypatch)
        out = await facts.record_many(
            [
                _delta("team:a", "long", BASE, "e1"),
                _delta("team:a", "short", BASE + timedelta(days=2), "e2"),
                _delta("team:a", "medium", BASE + timedelta(days=1), "e3"),  # inside history
                _delta("team:a", "other", BASE, "e4"),  # same start, another value: conflict
                _delta("team:a", "long", BASE, "e5"),  # same start, same value: duplicate
                _delta("team:b", "x", BASE, "e6"),
            ]
        )
        assert groups == [6]  # one transaction
        first, second, inside, conflict, duplicate, other = out
        assert isinstance(conflict, FactConflictError)
        assert isinstance(first, FactRecord) and isinstance(inside, FactRecord)
        assert isinstance(duplicate, FactRecord) and duplicate.duplicate
        assert duplicate.memory_id == first.memory_id and duplicate.restated_in == ("e5",)
        assert inside.supersedes_memory_id == first.memory_id
        assert isinstance(second, FactRecord) and inside.valid_to == second.valid_from
        history = await facts.history("team:a", "horizon")
        assert [(r.value, r.status) for r in history] == [
            ("long", "superseded"),
            ("medium", "superseded"),
            ("short", "open"),
        ]
        assert history[0].restated_in == ("e5",)
        assert isinstance(other, FactRecord) and other.is_open

        # A delta for another tenant is refused before anything is written.
        with pytest.raises(FactTenantError):
            await facts.record_many(
                [
                    _delta("team:c", "y", BASE),
                    MemoryDelta(
                        subject="team:c",
                        attribute="horizon",
                        value="z",
                        valid_from=BASE,
                        tenant_id="globex",
                    ),
                ]
            )
        assert await facts.history("team:c", "horizon") == []
        assert await facts.record_many([]) == []


async def test_bulk_import_counts_outcomes_and_refusals(ledger_url: str) -> None:
    items: list[MemoryDelta | BaseException] = [
        _delta(f"team:{k}", f"v{v}", BASE + timedelta(days=v), f"e{k}-{v}")
        for v in range(4)
        for k in range(30)
    ]
    items.append(_delta("team:0", "v0", BASE, "again"))  # a restatement
    items.append(_delta("team:0", "clash", BASE, "clash"))  # a conflict
    items.append(ValueError("line 123: not JSON"))  # what a reader could not parse
    reports: list[Any] = []
    async with open_fact_store(ledger_url, ACME, clock=lambda: NOW) as facts:
        report = await facts.import_facts(items, batch_size=16, progress=reports.append)
        assert (report.recorded, report.duplicates, report.replaced) == (120, 1, 0)
        assert [index for index, _ in report.refused] == [121, 122]
        assert "conflict" in report.refused[0][1] and "not JSON" in report.refused[1][1]
        assert report.total == len(items) and len(reports) == 8
        assert report.to_json()["refused"][1] == {"index": 122, "reason": "line 123: not JSON"}

        history = await facts.history("team:0", "horizon")
        assert [r.value for r in _one_timeline(history)] == ["v0", "v1", "v2", "v3"]
        assert history[0].restated_in == ("again",)
        current = await facts.current("team:29", "horizon")
        assert current is not None and current.value == "v3"


async def test_sync_reads_answer_like_the_async_ones_for_the_same_principal(
    ledger_url: str,
) -> None:
    async with open_fact_store(ledger_url, ACME, clock=lambda: NOW) as facts:
        facts_to_record: list[tuple[str, Any, int]] = [
            ("horizon", "long", 0),
            ("horizon", "short", 30),
            ("risk", "low", 10),
            ("newsletter", True, 400),  # starts after NOW: not current
        ]
        for attribute, value, days in facts_to_record:
            await facts.record(
                MemoryDelta(
                    subject="user:mira",
                    attribute=attribute,
                    value=value,
                    valid_from=BASE + timedelta(days=days),
                )
            )
        await facts.retract("user:mira", "risk", at=NOW + timedelta(days=5))  # ends later
        globex = facts.with_principal(GLOBEX)
        await globex.record(_delta("user:mira", "theirs", BASE))

        sync = facts.sync
        assert sync.principal == ACME
        for when in [BASE - timedelta(days=1), BASE, BASE + timedelta(days=20), NOW]:
            assert sync.as_of("user:mira", "horizon", when) == await facts.as_of(
                "user:mira", "horizon", when
            )
            assert sync.profile("user:mira", as_of=when) == await facts.profile(
                "user:mira", as_of=when
            )
        current = sync.current("user:mira", "horizon")
        assert current is not None and current.value == "short"
        assert current == await facts.current("user:mira", "horizon")
        risk = sync.current("user:mira", "risk")  # closed in the future: still current
        assert risk is not None and risk.value == "low" and risk.valid_to is not None
        assert sync.current("user:mira", "newsletter") is None
        assert set(sync.profile("user:mira")) == {"horizon", "risk"}
        assert sync.history("user:mira", "horizon") == await facts.history("user:mira", "horizon")
        # Scoped by the principal's tenant, like the async reads.
        theirs = globex.sync.current("user:mira", "horizon")
        assert theirs is not None and theirs.value == "theirs"
        assert set(globex.sync.profile("user:mira")) == {"horizon"}


async def test_sync_reads_work_from_other_threads(ledger_url: str) -> None:
    async with open_fact_store(ledger_url, ACME, clock=lambda: NOW) as facts:
        await facts.record(_delta("user:mira", "long", BASE))
        sync = facts.sync

        def read() -> Any:
            found = sync.current("user:mira", "horizon")
            return None if found is None else found.value

        values = await asyncio.gather(*(asyncio.to_thread(read) for _ in range(8)))
        assert values == ["long"] * 8


async def test_reads_on_one_reused_connection_follow_each_principals_tenant(
    ledger_url: str,
) -> None:
    """Postgres reads set the session's tenant only when it changes: alternate tenants on a
    pool of one connection and every read still sees its own tenant's fact only."""
    options: dict[str, Any] = {} if ledger_url.startswith("sqlite") else {"max_size": 1}
    async with open_fact_store(ledger_url, ACME, clock=lambda: NOW, **options) as acme:
        globex = acme.with_principal(GLOBEX)
        await acme.record(_delta("user:mira", "acme-value", BASE))
        await globex.record(_delta("user:mira", "globex-value", BASE))
        nobody = acme.with_principal(Principal("initech", "mira"))
        for _ in range(3):
            for store, expected in ((acme, "acme-value"), (globex, "globex-value"), (nobody, None)):
                found = await store.current("user:mira", "horizon")
                assert (None if found is None else found.value) == expected
                blocking = store.sync.current("user:mira", "horizon")
                assert (None if blocking is None else blocking.value) == expected
                assert [r.value for r in await store.history("user:mira", "horizon")] == (
                    [] if expected is None else [expected]
                )
