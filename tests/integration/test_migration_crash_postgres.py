"""kill -9 of a process halfway through migrating a Postgres ledger leaves the old layout whole
(schema, policies, privileges, bookkeeping, rows); the owner's next setup migrates it and the
application role's answers are as before. The Postgres twin of tests/unit/test_migration_crash.py
(the child: tests/support/migration_child.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import psycopg
import pytest

from memory.facts import setup_fact_store
from memory.facts.migrations import LATEST_VERSION
from tests.support.ledger_eras import build_postgres_era, check_answers, insert_bulk_postgres
from tests.support.migration_child import start_inside
from tests.support.pg_catalog import catalog
from tests.support.servers import PgLedger, postgres_ledger
from tests.support.waiting import wait_until

BULK = 5_000
#: How long the child may take to reach its statement, and the server to end its session.
DEADLINE = 120.0


def _state(admin_url: str) -> dict[str, list[Any]]:
    """Everything a layout is: catalog entries, bookkeeping and every row of every table."""
    with psycopg.connect(admin_url) as conn:
        state: dict[str, list[Any]] = dict(catalog(conn))
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'analyst_facts' ORDER BY 1"
        ).fetchall()
        for (table,) in tables:
            rows = conn.execute(f"SELECT * FROM analyst_facts.{table}").fetchall()
            state[table] = sorted((tuple(r) for r in rows), key=repr)
    return state


def _gone(admin_url: str, pid: int, within: float = DEADLINE) -> None:
    """Wait until the server has ended the killed child's session (its transaction rolled
    back), for at most ``within`` seconds."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        wait_until(
            lambda: (
                not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
            ),
            "the end of the killed child's session",
            within,
        )


def _start_child(ledger: PgLedger, marker: str, during: bool) -> tuple[subprocess.Popen[str], int]:
    """The migrating child, once it says it is inside the migration; and its server pid."""
    args = ["postgres", ledger.owner_url, marker, "--app-role", ledger.app_role]
    return start_inside(*args, *(["--during"] if during else []), deadline=DEADLINE)


def _kill(child: subprocess.Popen[str]) -> None:
    """SIGKILL the child (if a failed check left it running, kill it all the same)."""
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL


def _running(admin_url: str, pid: int, marker: str) -> None:
    """Wait until the server has the statement containing ``marker`` of session ``pid``:
    running it (the usual case: it updates every row), or done with it, the transaction
    still open (the child then waits to be killed either way)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        wait_until(
            lambda: (
                conn.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s"
                    " AND state IN ('active', 'idle in transaction')"
                    " AND position(%s in regexp_replace(query, '\\s+', ' ', 'g')) > 0",
                    (pid, marker),
                ).fetchone()
                is not None
            ),
            f"the server getting {marker!r}",
            DEADLINE,
        )


@pytest.mark.parametrize(
    ("version", "marker", "during"),
    [
        # Right after migration 2 rewrote every value as jsonb.
        (1, "ALTER COLUMN value TYPE jsonb", False),
        # While the server updates every row (migration 3): the client dies mid-statement.
        (1, "SET schema_version = 3", True),
        # Migration 10 halfway: the grants' role constraint dropped, the new one not added.
        (8, "DROP CONSTRAINT grants_role_check", False),
        # Every migration applied and recorded, the application role's grants under way.
        (1, "GRANT USAGE ON SCHEMA", False),
    ],
)
async def test_a_postgres_migration_killed_halfway_leaves_the_old_layout_and_resumes(
    version: int, marker: str, during: bool
) -> None:
    with postgres_ledger(migrate=False) as ledger:
        key = await build_postgres_era(ledger.owner_url, ledger.admin_url, ledger.app_role, version)
        insert_bulk_postgres(ledger.admin_url, version, BULK)
        before = _state(ledger.admin_url)

        child, pid = _start_child(ledger, marker, during)
        try:
            if during:
                _running(ledger.admin_url, pid, marker)
        finally:
            _kill(child)
        _gone(ledger.admin_url, pid)

        assert _state(ledger.admin_url) == before

        applied = await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
        assert applied == list(range(version + 1, LATEST_VERSION + 1))
        await check_answers(ledger.app_url, version, key)
        with psycopg.connect(ledger.admin_url) as conn:
            row = conn.execute(
                "SELECT count(*), count(DISTINCT subject), min(schema_version),"
                " max(schema_version) FROM analyst_facts.facts WHERE subject LIKE 'bulk:%'"
            ).fetchone()
            value = conn.execute(
                "SELECT value FROM analyst_facts.facts WHERE memory_id = 'bulk-7'"
            ).fetchone()
        assert row == (BULK, BULK // 4, 4, 4)
        assert value == ("7",)


async def test_a_killed_migration_waiting_on_the_server_lets_go_of_the_ledger_at_once() -> None:
    """The server notices that a migrating client is gone while a statement still runs or
    waits (the runner sets ``client_connection_check_interval``), and rolls back then: the
    ledger's locks are free at once, not when the statement would have ended. Here the
    statement waits on a lock another session holds, and the session must end while that
    lock is still held (without the check it waits for as long as the lock is held)."""
    with postgres_ledger(migrate=False) as ledger:
        key = await build_postgres_era(ledger.owner_url, ledger.admin_url, ledger.app_role, 8)
        before = _state(ledger.admin_url)
        marker = "DROP CONSTRAINT grants_role_check"
        with psycopg.connect(ledger.admin_url) as holder:
            holder.execute("LOCK TABLE analyst_facts.grants IN ACCESS SHARE MODE")
            child, pid = _start_child(ledger, marker, during=True)
            try:
                with psycopg.connect(ledger.admin_url, autocommit=True) as watch:
                    wait_until(
                        lambda: (
                            watch.execute(
                                "SELECT 1 FROM pg_stat_activity WHERE pid = %s"
                                " AND wait_event_type = 'Lock'",
                                (pid,),
                            ).fetchone()
                            is not None
                        ),
                        "the migration waiting on the held lock",
                        DEADLINE,
                    )
            finally:
                _kill(child)
            _gone(ledger.admin_url, pid, within=30.0)
            holder.rollback()

        assert _state(ledger.admin_url) == before
        await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
        await check_answers(ledger.app_url, 8, key)
