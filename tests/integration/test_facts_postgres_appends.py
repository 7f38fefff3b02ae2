"""A group of appends on Postgres, its rules applied in SQL (``memory.facts.postgres_appends``):
what only Postgres has, on a ledger used through its application role (row security in
force). The authority statement against :func:`memory.facts.rules.authority_of`, and row
security as the second wall: a write the SQL check lets through that the policies forbid (another tenant's
row, a subject without a grant) fails in the database. The cases both backends share are in
``test_facts_set_appends``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import memory.facts.postgres_appends as appends
from memory.facts import open_fact_store
from memory.facts.group import PendingWrite
from memory.facts.postgres_ops import SET_TENANT
from memory.facts.rules import authority_of
from memory.sealing import PLAIN
from tests.support.authority_cases import GRANTS, SUBJECTS, WRITERS
from tests.support.fact_deltas import MIRA, NOW, at, delta
from tests.support.servers import PgLedger, postgres_ledger

pytestmark = pytest.mark.integration


def _make_admin(ledger: PgLedger) -> None:
    async def make_admin() -> None:
        async with open_fact_store(ledger.owner_url, MIRA) as facts:
            await facts.bootstrap_admin(MIRA.user_id)

    asyncio.run(make_admin())


@pytest.fixture
def ledger() -> Iterator[PgLedger]:
    """A ledger where mira administers acme; carl holds no grant."""
    with postgres_ledger() as made:
        _make_admin(made)
        yield made


def _pending(user: str, subject: str, days: int = 0, tenant: str = "acme") -> PendingWrite:
    return PendingWrite(
        (tenant, subject, "risk"),
        lambda: iter(()),
        user,
        starts=at(days),
        delta=delta(subject, "risk", "x", days),
        now=lambda: NOW,
    )


async def _in_transaction(url: str, acting: tuple[str, str], work: Any) -> Any:
    """``work(conn)`` inside a transaction acting for ``acting``, then rolled back."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        try:
            async with conn.transaction():
                await conn.execute(SET_TENANT, acting)
                found = await work(conn)
                raise _Undo(found)
        except _Undo as undo:
            return undo.found


class _Undo(Exception):
    def __init__(self, found: Any) -> None:
        self.found = found


def test_the_authority_statement_answers_as_the_rule_does() -> None:
    """``authority_of`` for every writer, subject and set of grants, against the SQL (run as
    the application role: row security shows it every grant of its tenant)."""
    group = [_pending(u, s) for u, s in itertools.product(WRITERS, SUBJECTS)]

    async def authorities(conn: psycopg.AsyncConnection[Any]) -> dict[Any, Any]:
        await appends.PgAppends(conn, PLAIN).check(group)
        cursor = await conn.execute(appends.AUTHORITIES)
        return {(r[1], r[2]): r[3] for r in await cursor.fetchall()}

    with postgres_ledger() as ledger, psycopg.connect(ledger.admin_url, autocommit=True) as own:
        for grants in GRANTS:
            own.execute("DELETE FROM analyst_facts.grants")
            with own.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO analyst_facts.grants VALUES ('acme', %s, %s, %s, 'x', now())",
                    [(u, role, subject) for u in WRITERS if u for role, subject in grants],
                )
            found = asyncio.run(_in_transaction(ledger.app_url, ("acme", "mira"), authorities))
            expected = {
                (u, s): authority_of(u, s, list(grants))
                for u, s in itertools.product(WRITERS, SUBJECTS)
            }
            assert found == expected, grants


def _smuggled(ledger: PgLedger, acting: tuple[str, str], group: list[PendingWrite]) -> None:
    """``group`` written set-wise in a transaction acting for ``acting`` (rolled back)."""

    async def write(conn: psycopg.AsyncConnection[Any]) -> None:
        sql = appends.PgAppends(conn, PLAIN)
        assert await sql.check(group)
        sql.append_all(group)
        await sql.write()
        assert all(w.error is None for w in group)  # the SQL check let every write through

    asyncio.run(_in_transaction(ledger.app_url, acting, write))


def test_row_security_refuses_another_tenants_row_in_a_set_wise_group(ledger: PgLedger) -> None:
    """A write for another tenant in a group acting for acme: its own subject, so the SQL
    check finds it ``own``; the tenant policy refuses the row and the statement."""
    group = [_pending("mira", "user:mira", 1), _pending("mira", "user:mira", 2, tenant="other")]
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        _smuggled(ledger, ("acme", "mira"), group)


def test_row_security_refuses_a_subject_without_a_grant_in_a_set_wise_group(
    ledger: PgLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The authority statement made to grant every write: carl's write on team:a passes the
    SQL check, and the write policy (may_write) refuses it in the database."""
    granting = (
        "INSERT INTO pg_temp.fact_batch_who"
        " SELECT DISTINCT tenant_id, user_id, subject, 'granted' FROM pg_temp.fact_batch"
    )
    monkeypatch.setattr(appends, "_AUTHORITY", granting)
    group = [_pending("carl", "user:carl", 1), _pending("carl", "team:a", 2)]
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        _smuggled(ledger, ("acme", "carl"), group)
