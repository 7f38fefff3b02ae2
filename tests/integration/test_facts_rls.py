"""Row-level security on the Postgres fact ledger: the second wall between tenants.

The ledger is set up by a non-superuser owner; the tests then connect as the application role
(NOSUPERUSER, NOBYPASSRLS, not the owner) and run raw SQL that *omits* the tenant filter, the
way a buggy query would. With ``app.tenant_id`` set to tenant A for the transaction, nothing
of tenant B is visible or writable, and without the setting nothing at all is.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg import errors as pg_errors

from agent.errors import FactLedgerSchemaError, UnsafeDatabaseRoleError
from memory.facts import MemoryDelta, open_fact_store, setup_fact_store
from memory.identity import Principal
from tests.support.servers import PgLedger, postgres_ledger

pytestmark = pytest.mark.integration

TENANT_A = Principal("tenant-a", "alice")
TENANT_B = Principal("tenant-b", "bob")
FACTS = "analyst_facts.facts"


Ledger = PgLedger


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    """A fresh database whose ledger an owner will set up for a fresh application role."""
    with postgres_ledger(migrate=False) as fresh:
        yield fresh


@pytest.fixture
def populated(ledger: Ledger) -> Ledger:
    """Set up, then one fact for each tenant written through the store."""

    async def fill() -> None:
        await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
        async with open_fact_store(ledger.app_url, TENANT_A) as facts:
            when = datetime(2026, 6, 1, tzinfo=UTC)
            await facts.record(
                MemoryDelta(
                    subject="user:alice", attribute="horizon", value="long", valid_from=when
                )
            )
            await facts.with_principal(TENANT_B).record(
                MemoryDelta(subject="user:bob", attribute="horizon", value="short", valid_from=when)
            )

    asyncio.run(fill())
    return ledger


#: The user each tenant's raw sessions act as (row security reads ``app.user_id`` too).
READER = {"tenant-a": "alice", "tenant-b": "bob"}


def _as_tenant(conn: psycopg.Connection, tenant: str, user: str | None = None) -> None:
    conn.execute(
        "SELECT set_config('app.tenant_id', %s, true), set_config('app.user_id', %s, true)",
        (tenant, READER[tenant] if user is None else user),
    )


def test_the_application_role_cannot_bypass_row_security(populated: Ledger) -> None:
    with psycopg.connect(populated.app_url) as conn:
        row = conn.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (populated.app_role, False, False)
        owner = conn.execute(
            "SELECT tableowner FROM pg_tables WHERE schemaname = 'analyst_facts'"
            " AND tablename = 'facts'"
        ).fetchone()
        assert owner is not None and owner[0] != populated.app_role
        flags = conn.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
            (FACTS,),
        ).fetchone()
        assert flags == (True, True)
        with pytest.raises(pg_errors.InsufficientPrivilege):
            conn.execute(f"ALTER TABLE {FACTS} DISABLE ROW LEVEL SECURITY")


def test_under_tenant_a_tenant_b_is_invisible_and_unwritable(populated: Ledger) -> None:
    with psycopg.connect(populated.app_url) as conn:
        _as_tenant(conn, "tenant-a")
        rows = conn.execute(f"SELECT tenant_id, subject, value FROM {FACTS}").fetchall()
        assert rows == [("tenant-a", "user:alice", "long")]
        assert conn.execute(
            f"SELECT count(*) FROM {FACTS} WHERE tenant_id = 'tenant-b'"
        ).fetchone() == (0,)
        assert (
            conn.execute(
                f"UPDATE {FACTS} SET value = '\"x\"' WHERE tenant_id = 'tenant-b'"
            ).rowcount
            == 0
        )
        assert conn.execute(f"DELETE FROM {FACTS} WHERE subject = 'user:bob'").rowcount == 0
        conn.rollback()

        _as_tenant(conn, "tenant-a")
        with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                f"INSERT INTO {FACTS} (tenant_id, memory_id, subject, attribute, value,"
                " valid_from, recorded_at, schema_version)"
                " VALUES ('tenant-b', 'planted', 'user:bob', 'horizon', '\"planted\"',"
                " '2027-01-01T00:00:00Z', now(), 2)"
            )
        conn.rollback()

        _as_tenant(conn, "tenant-a")
        with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"UPDATE {FACTS} SET tenant_id = 'tenant-b'")
        conn.rollback()

    with psycopg.connect(populated.admin_url) as admin:
        rows = admin.execute(f"SELECT tenant_id, value FROM {FACTS} ORDER BY tenant_id").fetchall()
    assert rows == [("tenant-a", "long"), ("tenant-b", "short")]


def test_another_user_of_the_tenant_reads_nothing_of_alices_rows(populated: Ledger) -> None:
    """Read authority (migration 9): a query that omits every filter, as carol of tenant A
    (no grants) or with no user at all, sees none of alice's rows."""
    with psycopg.connect(populated.app_url) as conn:
        _as_tenant(conn, "tenant-a", "carol")
        assert conn.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == (0,)
        assert conn.execute(f"SELECT count(*) FROM {FACTS} WHERE true").fetchone() == (0,)
        # An update that reads no column is not filtered by the read policy; the write
        # policy refuses it.
        with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"UPDATE {FACTS} SET value = '\"x\"'")
        conn.rollback()
        _as_tenant(conn, "tenant-a", "")
        assert conn.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == (0,)
        conn.rollback()
        _as_tenant(conn, "tenant-a")
        assert conn.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == (1,)


def test_without_a_tenant_for_the_transaction_nothing_is_visible(populated: Ledger) -> None:
    with psycopg.connect(populated.app_url) as conn:
        assert conn.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == (0,)
        conn.rollback()
        # The setting is local to the transaction that made it.
        _as_tenant(conn, "tenant-b")
        assert conn.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == (1,)
        conn.commit()
        assert conn.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == (0,)
        with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                f"INSERT INTO {FACTS} (tenant_id, memory_id, subject, attribute, value,"
                " valid_from, recorded_at) VALUES ('tenant-b', 'x', 's', 'a', '1', now(), now())"
            )


async def test_the_store_refuses_roles_that_bypass_row_security(ledger: Ledger) -> None:
    await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
    with pytest.raises(UnsafeDatabaseRoleError, match="superuser"):
        async with open_fact_store(ledger.admin_url, TENANT_A):
            pass
    with psycopg.connect(ledger.admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER ROLE "{ledger.app_role}" BYPASSRLS')
    with pytest.raises(UnsafeDatabaseRoleError, match="BYPASSRLS"):
        async with open_fact_store(ledger.app_url, TENANT_A):
            pass
    with pytest.raises(UnsafeDatabaseRoleError, match="BYPASSRLS"):
        await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])


async def test_the_store_refuses_a_missing_or_unprotected_schema(ledger: Ledger) -> None:
    with pytest.raises(FactLedgerSchemaError, match="schema version 0"):
        async with open_fact_store(ledger.app_url, TENANT_A):
            pass
    with pytest.raises(FactLedgerSchemaError, match="does not exist"):
        await setup_fact_store(ledger.owner_url, app_roles=["no_such_role_" + uuid.uuid4().hex[:6]])
    await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
    with psycopg.connect(ledger.owner_url, autocommit=True) as owner:
        owner.execute(f"ALTER TABLE {FACTS} NO FORCE ROW LEVEL SECURITY")
    with pytest.raises(FactLedgerSchemaError, match="Row-level security"):
        async with open_fact_store(ledger.app_url, TENANT_A):
            pass
    # Setup is idempotent: nothing is applied twice.
    assert await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role]) == []
