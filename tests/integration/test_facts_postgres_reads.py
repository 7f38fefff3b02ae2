"""The Postgres ledger's reads on a pooled connection: each read runs as its own principal,
whoever used the connection before, and survives a reset of the connection's session.

A read sets the reader (tenant, user, personal) on the session only when it differs from the
last one set there, and runs server-side prepared statements; both live in the server session,
which a pool reset (``DISCARD ALL``) or ``DEALLOCATE ALL`` can clear behind the store's back.
Every store here has one pooled connection (``max_size=1``), so every principal shares it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memory.errors import FactAuthorityError
from memory.facts import FactStore, MemoryDelta, open_fact_store
from memory.identity import Principal
from tests.support.servers import PgLedger, postgres_ledger
from tests.support.waiting import until

pytestmark = pytest.mark.integration

BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = BASE + timedelta(days=30)
ALICE = Principal("tenant-a", "alice")  # tenant-a's admin
BOB = Principal("tenant-b", "bob")  # tenant-b's admin
DAVE = Principal("tenant-a", "dave")  # tenant-a, read-only grant on ticker:* only
ERIN = Principal("tenant-a", "erin")  # tenant-a, no grant at all


@pytest.fixture
def ledger() -> Iterator[PgLedger]:
    with postgres_ledger() as fresh:
        asyncio.run(_fill(fresh))
        yield fresh


async def _fill(ledger: PgLedger) -> None:
    """Per tenant the same keys with values naming the tenant: a read seeing another
    principal's rows would answer the other tenant's value."""
    async with open_fact_store(ledger.owner_url, ALICE, clock=lambda: NOW) as owner:
        assert await owner.bootstrap_admin("alice")
        assert await owner.with_principal(BOB).bootstrap_admin("bob")
    async with open_fact_store(ledger.app_url, ALICE, clock=lambda: NOW) as facts:
        assert await facts.grant("dave", "ticker:*", read_only=True)
        for who in (ALICE, BOB):
            view = facts.with_principal(who)
            for day, value in ((0, "old"), (10, "new")):
                for subject in ("ticker:NVDA", "team:desk"):
                    await view.record(
                        MemoryDelta(
                            subject=subject,
                            attribute="horizon",
                            value=f"{value}-{who.tenant_id}-{subject}",
                            valid_from=BASE + timedelta(days=day),
                        )
                    )


@asynccontextmanager
async def one_connection(ledger: PgLedger) -> AsyncIterator[FactStore]:
    async with open_fact_store(
        ledger.app_url, ALICE, clock=lambda: NOW, min_size=1, max_size=1
    ) as facts:
        yield facts


def _value(found: Any) -> Any:
    return None if found is None else found.value


async def _reads(view: FactStore, subject: str) -> list[Any]:
    """Every read of one key, async and blocking, by one principal."""
    when = BASE + timedelta(days=5)
    sync = view.sync
    return [
        _value(await view.current(subject, "horizon")),
        _value(sync.current(subject, "horizon")),
        _value(await view.as_of(subject, "horizon", when)),
        _value(sync.as_of(subject, "horizon", when)),
        [r.value for r in await view.history(subject, "horizon")],
        [r.value for r in sync.history(subject, "horizon")],
        {k: r.value for k, r in (await view.profile(subject)).items()},
        {k: r.value for k, r in sync.profile(subject).items()},
    ]


def _expected(tenant: str, subject: str) -> list[Any]:
    old, new = f"old-{tenant}-{subject}", f"new-{tenant}-{subject}"
    return [new, new, old, old, [old, new], [old, new], {"horizon": new}, {"horizon": new}]


async def test_principals_interleaved_on_one_connection_each_see_only_their_own(
    ledger: PgLedger,
) -> None:
    async with one_connection(ledger) as facts:
        alice, bob = facts.with_principal(ALICE), facts.with_principal(BOB)
        dave, erin = facts.with_principal(DAVE), facts.with_principal(ERIN)
        for round_ in range(4):
            # Each principal's read right after another's, on the one connection; in the
            # middle of the rounds a write (its transaction sets the principal locally).
            for subject in ("ticker:NVDA", "team:desk"):
                assert await _reads(alice, subject) == _expected("tenant-a", subject)
                assert await _reads(bob, subject) == _expected("tenant-b", subject)
            assert await _reads(dave, "ticker:NVDA") == _expected("tenant-a", "ticker:NVDA")
            for view in (dave, erin):  # no grant on team:desk: refused, async and blocking
                with pytest.raises(FactAuthorityError):
                    await view.current("team:desk", "horizon")
                with pytest.raises(FactAuthorityError):
                    view.sync.as_of("team:desk", "horizon", NOW)
            with pytest.raises(FactAuthorityError):
                await erin.current("ticker:NVDA", "horizon")
            if round_ == 1:
                await bob.record(
                    MemoryDelta(
                        subject="ticker:AMD",
                        attribute="horizon",
                        value="bob's",
                        valid_from=BASE,
                    )
                )
            assert await alice.current("ticker:AMD", "horizon") is None
            assert alice.sync.current("ticker:AMD", "horizon") is None


async def _on_pooled_connections(facts: FactStore, sql: str) -> None:
    """Run ``sql`` on the store's one pooled connection of each pool (blocking and async), as
    a pool's reset would between two borrowers."""
    shared: Any = facts._shared  # type: ignore[attr-defined]  # the pools, for this reset alone
    with shared.sync_pool().connection() as conn:
        conn.execute(sql)
    async with shared.pool.connection() as conn:
        await conn.execute(sql)


@pytest.mark.parametrize("reset", ["DEALLOCATE ALL", "DISCARD ALL"])
async def test_reads_answer_the_same_after_the_session_is_reset(
    ledger: PgLedger, reset: str
) -> None:
    async with one_connection(ledger) as facts:
        for who in (ALICE, BOB):  # prepared and set for a principal, then cleared
            view = facts.with_principal(who)
            for _ in range(3):
                before = await _reads(view, "ticker:NVDA")
                assert before == _expected(who.tenant_id, "ticker:NVDA")
                await _on_pooled_connections(facts, reset)
                assert await _reads(view, "ticker:NVDA") == before


async def test_a_read_cancelled_in_flight_leaves_its_connection_usable(ledger: PgLedger) -> None:
    """A read cancelled while its statement is on the server (a caller's timeout) gives its
    connection back idle: the pool keeps it, and the next read on it answers its own
    question, not the cancelled one's. The statement is held on the server by a lock the
    test takes on the facts table, so the read is surely in flight when it is cancelled."""
    async with one_connection(ledger) as facts:
        alice, bob = facts.with_principal(ALICE), facts.with_principal(BOB)
        assert await _reads(alice, "ticker:NVDA") == _expected("tenant-a", "ticker:NVDA")
        pool: Any = facts._shared.pool  # type: ignore[attr-defined]
        opened = pool.get_stats()["connections_num"]
        with (
            psycopg.connect(ledger.admin_url, autocommit=True) as watcher,
            psycopg.connect(ledger.admin_url) as locker,
        ):

            def waiting_on_the_lock() -> bool:
                row = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE usename = %s AND wait_event_type = 'Lock'",
                    (ledger.app_role,),
                ).fetchone()
                return bool(row and row[0])

            for view in (alice, bob):
                locker.execute("LOCK TABLE analyst_facts.facts IN ACCESS EXCLUSIVE MODE")
                read = asyncio.create_task(view.current("ticker:NVDA", "horizon"))
                await until(waiting_on_the_lock, "the read waiting on the server")
                read.cancel()
                locker.commit()
                with pytest.raises(asyncio.CancelledError):
                    await read
                assert await _reads(bob, "team:desk") == _expected("tenant-b", "team:desk")
                assert await _reads(alice, "team:desk") == _expected("tenant-a", "team:desk")
        assert pool.get_stats()["connections_num"] == opened
