"""A Postgres ledger set up before the journal owned its migrations is upgraded in place.

:mod:`tests.support.ledger_v8_postgres` freezes the statements, checksums and grants with
which the old code set a database up (versions 1-8). Released migrations never change; the
owner's setup applies exactly the later ones (9: read authority, 10: reader grants) and
re-records nothing, after which the application role reads and writes every tier, and the
schema is the one a fresh setup makes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from memory.facts import MemoryDelta, open_fact_store, setup_fact_store, subject_for
from memory.facts.migrations import LATEST_VERSION, MIGRATIONS
from memory.identity import Principal
from memory.journal import Episode, open_journal
from tests.support.ledger_v8_postgres import RELEASED_POSTGRES, build_old_postgres_ledger
from tests.support.pg_catalog import catalog
from tests.support.servers import PgLedger, postgres_ledger

MIRA = Principal("acme", "mira")
WHEN = datetime(2026, 6, 3, 10, tzinfo=UTC)


@pytest.fixture
def old_ledger() -> Iterator[PgLedger]:
    with postgres_ledger(migrate=False) as ledger:
        build_old_postgres_ledger(ledger.owner_url, ledger.app_role)
        yield ledger


#: The last version the frozen old layout holds.
RELEASED = len(RELEASED_POSTGRES)


def test_every_released_postgres_migration_is_unchanged() -> None:
    released = [m for m in MIGRATIONS if m.version <= RELEASED]
    assert [(m.version, m.description, m.postgres, m.checksum("postgres")) for m in released] == [
        (v, d, s, c) for v, d, s, c in RELEASED_POSTGRES
    ]


def _bookkeeping(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT version, description, checksum, applied_at"
            " FROM analyst_facts.migrations ORDER BY version"
        ).fetchall()
    return [tuple(r) for r in rows]


def _schema(url: str) -> list[tuple[Any, ...]]:
    """Every relation, column, constraint, policy, trigger and privilege in the schema."""
    with psycopg.connect(url) as conn:
        return [row for rows in catalog(conn).values() for row in rows]


async def test_a_database_set_up_by_the_old_layout_is_upgraded_then_reads_and_writes(
    old_ledger: PgLedger,
) -> None:
    recorded = _bookkeeping(old_ledger.admin_url)
    assert [r[0] for r in recorded] == list(range(1, RELEASED + 1))

    # The owner's setup applies only what came after the old layout, re-recording nothing.
    applied = await setup_fact_store(old_ledger.owner_url, app_roles=[old_ledger.app_role])
    assert applied == list(range(RELEASED + 1, LATEST_VERSION + 1))
    upgraded = _bookkeeping(old_ledger.admin_url)
    assert upgraded[:RELEASED] == recorded
    schema = _schema(old_ledger.admin_url)

    # The application role then uses both tiers.
    async with open_journal(old_ledger.app_url, MIRA) as journal:
        await journal.add_episodes(
            [
                Episode(
                    tenant_id="acme",
                    episode_id="ep-1",
                    user_id="mira",
                    thread_id="t1",
                    at=WHEN,
                    role="user",
                    kind="message",
                    text="I hold for the long term",
                )
            ]
        )
        await journal.audit("read", "facts", ["f-1"], reason="test", content=["x"])
    async with open_fact_store(old_ledger.app_url, MIRA) as facts:
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
    async with open_journal(old_ledger.app_url, MIRA) as journal:
        assert [e.text for e in await journal.episodes(["ep-1"])] == ["I hold for the long term"]
        assert [e.item_ids for e in await journal.audit_log()][-1] == ("f-1",)

    # A second setup finds the database up to date and changes nothing.
    assert await setup_fact_store(old_ledger.owner_url, app_roles=[old_ledger.app_role]) == []
    assert _bookkeeping(old_ledger.admin_url) == upgraded
    assert _schema(old_ledger.admin_url) == schema


def _roles_named(rows: list[tuple[Any, ...]], ledger: PgLedger) -> list[tuple[str, ...]]:
    owner = urlsplit(ledger.owner_url).username or ""
    return [
        tuple(str(v).replace(ledger.app_role, "<app>").replace(owner, "<owner>") for v in row)
        for row in rows
    ]


def test_the_new_code_sets_up_the_schema_of_an_upgraded_old_ledger(old_ledger: PgLedger) -> None:
    asyncio.run(setup_fact_store(old_ledger.owner_url, app_roles=[old_ledger.app_role]))
    with postgres_ledger() as new:
        assert _roles_named(_schema(new.admin_url), new) == _roles_named(
            _schema(old_ledger.admin_url), old_ledger
        )


def test_row_security_rules_run_as_the_owner_in_plpgsql() -> None:
    """The policies' functions read the grants with the owner's rights and a fixed search
    path (a caller's objects cannot stand in for pg_catalog's), in PL/pgSQL, whose plans a
    session keeps (migration 12: as SQL functions they were planned in every statement)."""
    with postgres_ledger() as ledger, psycopg.connect(ledger.admin_url) as conn:
        rows = conn.execute(
            "SELECT p.proname, l.lanname, p.prosecdef, p.proconfig FROM pg_proc p"
            " JOIN pg_language l ON l.oid = p.prolang"
            " WHERE p.pronamespace = 'analyst_facts'::regnamespace"
            " AND p.proname IN ('is_admin', 'may_read', 'may_write') ORDER BY 1"
        ).fetchall()
    assert [tuple(r) for r in rows] == [
        (name, "plpgsql", True, ["search_path=pg_catalog"])
        for name in ("is_admin", "may_read", "may_write")
    ]


def _plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def test_row_security_asks_whether_the_reader_is_the_admin_once_a_statement() -> None:
    """Migration 13: a read of many rows seeks its index, and the admin question is an
    InitPlan (run once) rather than a call per row; an admin sees the rows, a reader with a
    grant sees them too (asked per row by may_read), a user without one sees none."""
    with postgres_ledger() as ledger:
        with psycopg.connect(ledger.owner_url, autocommit=True) as owner:
            for user, role, subject in (("ada", "admin", "*"), ("rui", "reader", "fund:*")):
                owner.execute(
                    "INSERT INTO analyst_facts.grants (tenant_id, user_id, role, subject)"
                    " VALUES ('acme', %s, %s, %s)",
                    (user, role, subject),
                )
        with psycopg.connect(ledger.admin_url, autocommit=True) as admin:  # a fixture
            for day in range(1, 4):
                admin.execute(
                    "INSERT INTO analyst_facts.facts (tenant_id, memory_id, subject, attribute,"
                    " value, valid_from, valid_to, recorded_at, schema_version)"
                    " VALUES ('acme', %s, 'fund:x', 'risk', '\"low\"', %s, %s, %s, 4)",
                    (f"m{day}", WHEN.replace(day=day), WHEN.replace(day=day + 1), WHEN),
                )
        read = (
            "SELECT memory_id FROM analyst_facts.facts WHERE tenant_id = 'acme'"
            " AND subject = 'fund:x' AND attribute = 'risk' AND withdrawn_at IS NULL"
        )
        seen: dict[str, list[str]] = {}
        with psycopg.connect(ledger.app_url, autocommit=True) as app:
            for user in ("ada", "rui", "eve"):
                app.execute(
                    "SELECT set_config('app.tenant_id', 'acme', false),"
                    " set_config('app.user_id', %s, false)",
                    (user,),
                )
                seen[user] = sorted(r[0] for r in app.execute(read).fetchall())
            app.execute("SELECT set_config('app.user_id', 'ada', false)")
            app.execute("SET enable_seqscan = off")  # a three-row table: seek as at scale
            explained = app.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {read}").fetchone()
    assert explained is not None
    plan = explained[0]
    assert seen == {"ada": ["m1", "m2", "m3"], "rui": ["m1", "m2", "m3"], "eve": []}
    nodes = list(_plan_nodes(plan[0]["Plan"]))
    scans = [n for n in nodes if n.get("Relation Name") == "facts"]
    assert [n["Node Type"] for n in scans] in (["Index Scan"], ["Index Only Scan"])
    assert scans[0]["Actual Rows"] == 3
    assert [n.get("Subplan Name", "") for n in nodes if n.get("Parent Relationship") == "InitPlan"]
