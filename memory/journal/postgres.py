"""Postgres backend of the memory journal: tables beside the facts, row-level security.

The tables live in the ``analyst_facts`` schema (the journal's migrations, applied by
``analyst facts setup``), each with forced row security on tenant *and* user.
:meth:`PostgresJournal.open` connects as the application role (refusing one that bypasses
row security, or a schema not set up) and opens a pool; every call is one transaction that
sets ``app.tenant_id`` and ``app.user_id`` first. :data:`QUERIES` is the Postgres dialect of
the shared statements (row locks, ``FOR UPDATE SKIP LOCKED`` for ``claim``). Details:
``docs/memory-lifecycle.md`` (The memory journal's backends).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

import memory.journal.rules as rules
from memory.errors import FactLedgerSchemaError, JournalUnavailableError
from memory.facts.migrations import LATEST_VERSION, postgres_version
from memory.identity import Principal
from memory.journal.migrations import (
    AUDIT_TABLE,
    JOURNAL_IMMUTABLE,
    JOURNAL_TABLES,
    SECRETS_TABLE,
    TOMBSTONES_TABLE,
)
from memory.journal.programs import Program, Transaction, run_async
from memory.journal.queries import Dialect, Queries, Statement
from memory.journal.rows import Codec
from memory.journal.sql import SqlJournal
from memory.sealing import MemoryCipher
from memory.sql.clock import system_clock
from memory.sql.migrations import PG_SCHEMA, refuse_unsafe_role
from memory.urls import redact

T = TypeVar("T")

#: The migration that created the journal's tables.
JOURNAL_MIGRATION = 5

QUERIES = Queries(
    Dialect(
        mark="%s",
        schema=PG_SCHEMA,
        codec=Codec(
            time_in=lambda value: value,
            time_out=lambda value: value.astimezone(UTC),
            json_in=Jsonb,
            json_out=lambda value: value,
        ),
        in_list="{column} = ANY({mark})",
        id_list=lambda ids: ids,
        locks_rows=True,
        cites="{column} ?| {mark}::text[]",
        grants="grants",
    )
)

#: Row security reads these; local to the transaction that sets them.
_SET_PRINCIPAL = "SELECT set_config('app.tenant_id', %s, true), set_config('app.user_id', %s, true)"

#: What the application role needs on each journal table.
_PRIVILEGES = {
    **{
        table: ("SELECT", "INSERT", "DELETE")
        if table == JOURNAL_IMMUTABLE
        else ("SELECT", "INSERT", "UPDATE", "DELETE")
        for table in JOURNAL_TABLES
    },
    AUDIT_TABLE: ("SELECT", "INSERT"),
    SECRETS_TABLE: ("SELECT",),
    TOMBSTONES_TABLE: ("SELECT", "INSERT", "DELETE"),
}
#: Tables whose rows the application role sees only through forced row security.
_SECURED = (*JOURNAL_TABLES, AUDIT_TABLE, TOMBSTONES_TABLE)


class PostgresJournal(SqlJournal):
    """The memory journal in Postgres (see the module docstring)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        principal: Principal | None,
        *,
        where: str,
        clock: Callable[[], datetime] = system_clock,
        audit_key: str | bytes | None = None,
        cipher: MemoryCipher | None = None,
    ) -> None:
        super().__init__(QUERIES, principal, clock=clock, audit_key=audit_key, cipher=cipher)
        self._pool = pool
        self._where = where

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        url: str,
        principal: Principal | None = None,
        *,
        clock: Callable[[], datetime] = system_clock,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        audit_key: str | bytes | None = None,
        cipher: MemoryCipher | None = None,
    ) -> AsyncIterator[PostgresJournal]:
        """Check the role, schema and row security on one connection, then open a pool."""
        if principal is not None:
            rules.check_principal(principal)
        where = redact(url)
        try:
            first = await psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=max(2, round(connect_timeout))
            )
        except psycopg.OperationalError as e:
            raise JournalUnavailableError(
                f"Cannot connect to the memory journal at {where}: {str(e).strip()}. Check "
                "ANALYST_FACTS (the journal shares the fact ledger's database) and that "
                "Postgres is running."
            ) from e
        async with first:
            await _check_ready(first, where)
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url, min_size=min_size, max_size=max_size, kwargs={"autocommit": True}, open=False
        )
        try:
            try:
                await pool.open(wait=True, timeout=connect_timeout)
            except psycopg.OperationalError as e:
                raise JournalUnavailableError(
                    f"Cannot open a connection pool to the memory journal at {where}: {e}."
                ) from e
            yield cls(pool, principal, where=where, clock=clock, audit_key=audit_key, cipher=cipher)
        finally:
            await pool.close()

    async def _run(self, program: Program[T], transaction: Transaction) -> T:
        """``program`` in one transaction acting for the principal (row security reads it);
        a ``snapshot`` transaction is REPEATABLE READ (one snapshot for all its statements)."""
        mine = self._mine()
        for attempt in (1, 2):
            conn: psycopg.AsyncConnection[Any] | None = None
            began = False
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    if transaction == "snapshot":
                        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    await conn.execute(_SET_PRINCIPAL, mine)
                    began = True
                    return await run_async(program, functools.partial(_execute, conn))
            except psycopg.OperationalError as e:
                if attempt == 1 and not began and conn is not None and conn.broken:
                    continue  # a pooled connection the server dropped, before any work: afresh
                raise JournalUnavailableError(
                    f"The memory journal at {self._where} failed: {str(e).strip()}. Check "
                    "that Postgres is running."
                ) from e
        raise AssertionError("unreachable")  # pragma: no cover


async def _execute(conn: psycopg.AsyncConnection[Any], statement: Statement) -> Any:
    """Execute ``statement`` and read back what it asks for."""
    cursor = await conn.execute(statement.sql, statement.params)
    if statement.answer == "one":
        return await cursor.fetchone()
    if statement.answer == "all":
        return await cursor.fetchall()
    return cursor.rowcount


async def _check_ready(conn: psycopg.AsyncConnection[Any], where: str) -> None:
    """Refuse roles that bypass row security, a schema without the journal, tables with row
    security off, and missing privileges -- each with the command that fixes it."""
    user = await refuse_unsafe_role(conn, what="memory journal", where=where)
    setup = (
        f"As the database owner run: ANALYST_FACTS=<owner URL> analyst facts setup "
        f"--app-role {user}"
    )
    version = await postgres_version(conn, where=where)
    if version < LATEST_VERSION:
        missing = (
            "has no memory journal tables yet"
            if version < JOURNAL_MIGRATION
            else "is behind this analyst"
        )
        raise FactLedgerSchemaError(
            f"The fact ledger at {where} is at schema version {version} and {missing} (the "
            f"journal arrives with migration {JOURNAL_MIGRATION}; this analyst needs "
            f"{LATEST_VERSION}). {setup}"
        )
    tables = [f"{PG_SCHEMA}.{table}" for table in _SECURED]
    cursor = await conn.execute(
        "SELECT t, c.relrowsecurity AND c.relforcerowsecurity FROM unnest(%s::text[]) AS t"
        " JOIN pg_class c ON c.oid = t::regclass",
        (tables,),
    )
    unprotected = [table for table, forced in await cursor.fetchall() if not forced]
    if unprotected:
        fix = "; ".join(
            f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY"
            for t in unprotected
        )
        raise FactLedgerSchemaError(
            f"Row-level security is not enabled and forced on {', '.join(unprotected)} at "
            f"{where}. Re-enable it as the owner: {fix}."
        )
    wanted = [
        (f"{PG_SCHEMA}.{table}", privilege)
        for table, privileges in _PRIVILEGES.items()
        for privilege in privileges
    ]
    cursor = await conn.execute(
        "SELECT t, p FROM unnest(%s::text[], %s::text[]) AS w(t, p)"
        " WHERE NOT has_table_privilege(t, p)",
        ([t for t, _ in wanted], [p for _, p in wanted]),
    )
    lacking = [f"{privilege} on {table}" for table, privilege in await cursor.fetchall()]
    if lacking:
        raise FactLedgerSchemaError(
            f"The role '{user}' at {where} lacks {', '.join(lacking)}. {setup}"
        )
