"""Postgres backend of the fact ledger: shared by processes and hosts, row-level security.

Two roles, two steps:

- **Setup** (:func:`setup_postgres`) runs as the owner of the ledger (or a superuser): it
  applies the migrations in ``memory.facts.migrations`` (schema ``analyst_facts``) and grants
  the application role what it needs. The facts table has ``FORCE ROW LEVEL SECURITY`` and a
  policy whose ``USING`` and ``WITH CHECK`` both require ``tenant_id =
  current_setting('app.tenant_id')``.
- **The application** (:meth:`PostgresFactStore.open`) connects as a role that is neither
  superuser nor BYPASSRLS -- it refuses otherwise, since row security would not apply -- and
  checks that the schema is current and row security is on. Every transaction first runs
  ``set_config('app.tenant_id', <principal's tenant>, true)`` (local to the transaction), and
  every statement also filters by tenant: a query that forgets the filter still sees, and can
  write, only the principal's tenant. Without the setting a session sees nothing.

Writes take a transaction-scoped advisory lock on the key (tenant, subject, attribute), so
writers on one key serialize while other keys proceed; serialization failures, deadlocks and
unique/exclusion collisions retry the whole transaction. Besides the guards SQLite has, an
exclusion constraint (``btree_gist``) makes overlapping active intervals impossible.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from memory.errors import (
    FactLedgerSchemaError,
    FactLedgerUnavailableError,
    UnsafeDatabaseRoleError,
)
from memory.facts.base import FactRecord, FactStore, KeyTransaction
from memory.facts.migrations import (
    LATEST_VERSION,
    PG_SCHEMA,
    migrate_postgres,
    postgres_version,
)
from memory.identity import Principal
from memory.urls import redact

FACTS = f"{PG_SCHEMA}.facts"
COLUMNS = (
    "tenant_id, memory_id, subject, attribute, value, memory_type, schema_version, valid_from, "
    "valid_to, recorded_at, supersedes_memory_id, source_episode_id, source, confidence, "
    "retention_policy, retracted_at, retraction_episode_id, withdrawn_at"
)
_HOLDS = "withdrawn_at IS NULL AND valid_from <= %s AND (valid_to IS NULL OR valid_to > %s)"
_SET_TENANT = "SELECT set_config('app.tenant_id', %s, true)"
LOCK_TIMEOUT = "10s"

_TRANSIENT = (
    pg_errors.SerializationFailure,
    pg_errors.DeadlockDetected,
    pg_errors.LockNotAvailable,
    pg_errors.UniqueViolation,
    pg_errors.ExclusionViolation,
)


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _record(row: dict[str, Any]) -> FactRecord:
    return FactRecord(
        tenant_id=row["tenant_id"],
        memory_id=row["memory_id"],
        subject=row["subject"],
        attribute=row["attribute"],
        value=row["value"],
        memory_type=row["memory_type"],
        schema_version=row["schema_version"],
        valid_from=row["valid_from"].astimezone(UTC),
        valid_to=_utc(row["valid_to"]),
        recorded_at=row["recorded_at"].astimezone(UTC),
        supersedes_memory_id=row["supersedes_memory_id"],
        source_episode_id=row["source_episode_id"],
        source=row["source"],
        confidence=row["confidence"],
        retention_policy=row["retention_policy"],
        retracted_at=_utc(row["retracted_at"]),
        retraction_episode_id=row["retraction_episode_id"],
        withdrawn_at=_utc(row["withdrawn_at"]),
    )


class _KeyTx:
    """:class:`KeyTransaction` inside a transaction holding the key's advisory lock."""

    def __init__(
        self, conn: psycopg.AsyncConnection[Any], tenant_id: str, subject: str, attribute: str
    ) -> None:
        self.conn = conn
        self.key = (tenant_id, subject, attribute)

    async def _rows(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with self.conn.cursor(row_factory=dict_row) as cursor:
            await cursor.execute(sql, params)
            return await cursor.fetchall()

    _KEY = "tenant_id = %s AND subject = %s AND attribute = %s"

    async def covering(self, at: datetime) -> FactRecord | None:
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM {FACTS} WHERE {self._KEY} AND {_HOLDS}", (*self.key, at, at)
        )
        return _record(rows[0]) if rows else None

    async def next_start(self, after: datetime) -> datetime | None:
        rows = await self._rows(
            f"SELECT min(valid_from) AS start FROM {FACTS} WHERE {self._KEY}"
            " AND withdrawn_at IS NULL AND valid_from > %s",
            (*self.key, after),
        )
        return _utc(rows[0]["start"])

    async def ending_at(self, at: datetime) -> FactRecord | None:
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM {FACTS} WHERE {self._KEY}"
            " AND withdrawn_at IS NULL AND valid_to = %s",
            (*self.key, at),
        )
        return _record(rows[0]) if rows else None

    async def insert(self, record: FactRecord) -> None:
        await self.conn.execute(
            f"INSERT INTO {FACTS} ({COLUMNS}) VALUES ({', '.join(['%s'] * 18)})",
            (
                record.tenant_id,
                record.memory_id,
                record.subject,
                record.attribute,
                Jsonb(record.value),
                record.memory_type,
                record.schema_version,
                record.valid_from,
                record.valid_to,
                record.recorded_at,
                record.supersedes_memory_id,
                record.source_episode_id,
                record.source,
                record.confidence,
                record.retention_policy,
                record.retracted_at,
                record.retraction_episode_id,
                record.withdrawn_at,
            ),
        )

    async def _update(self, sql: str, params: tuple[Any, ...], memory_id: str) -> None:
        cursor = await self.conn.execute(
            f"{sql} WHERE tenant_id = %s AND memory_id = %s AND withdrawn_at IS NULL",
            (*params, self.key[0], memory_id),
        )
        if cursor.rowcount != 1:
            raise RuntimeError(f"fact {memory_id} vanished inside its key's write lock")

    async def set_end(
        self,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        await self._update(
            f"UPDATE {FACTS} SET valid_to = %s, retracted_at = %s, retraction_episode_id = %s",
            (valid_to, retracted_at, retraction_episode_id),
            memory_id,
        )

    async def withdraw(
        self,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        await self._update(
            f"UPDATE {FACTS} SET withdrawn_at = %s, retracted_at = %s, retraction_episode_id = %s",
            (withdrawn_at, retracted_at, retraction_episode_id),
            memory_id,
        )


class PostgresFactStore(FactStore):
    """The fact ledger in Postgres (see the module docstring)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        principal: Principal | None,
        *,
        where: str,
        **options: Any,
    ) -> None:
        super().__init__(principal, **options)
        self._pool = pool
        self._where = where

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        url: str,
        principal: Principal | None = None,
        *,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        **options: Any,
    ) -> AsyncIterator[PostgresFactStore]:
        """Verify the role and schema on one connection, then open a pool and yield the store."""
        where = redact(url)
        try:
            first = await psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=max(2, round(connect_timeout))
            )
        except psycopg.OperationalError as e:
            raise FactLedgerUnavailableError(
                f"Cannot connect to the fact ledger at {where}: {str(e).strip()}. Check "
                "ANALYST_FACTS and that Postgres is running."
            ) from e
        async with first:
            await _check_ready(first, where)
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            check=AsyncConnectionPool.check_connection,
            open=False,
        )
        try:
            try:
                await pool.open(wait=True, timeout=connect_timeout)
            except psycopg.OperationalError as e:
                raise FactLedgerUnavailableError(
                    f"Cannot open a connection pool to the fact ledger at {where}: {e}."
                ) from e
            yield cls(pool, principal, where=where, **options)
        finally:
            await pool.close()

    # -- transactions ---------------------------------------------------------------------

    def _unavailable(self, error: Exception) -> FactLedgerUnavailableError:
        return FactLedgerUnavailableError(
            f"The fact ledger at {self._where} failed: {error}. Check that Postgres is running."
        )

    @asynccontextmanager
    async def _key_transaction(self, subject: str, attribute: str) -> AsyncIterator[KeyTransaction]:
        try:
            async with self._pool.connection() as conn, conn.transaction():
                # A writer stuck on the key lock gives up after LOCK_TIMEOUT (LockNotAvailable)
                # and the whole transaction is retried, instead of waiting forever.
                await conn.execute(
                    "SELECT set_config('app.tenant_id', %s, true),"
                    " set_config('lock_timeout', %s, true)",
                    (self.tenant_id, LOCK_TIMEOUT),
                )
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    ("\x1f".join((self.tenant_id, subject, attribute)),),
                )
                yield _KeyTx(conn, self.tenant_id, subject, attribute)
        except psycopg.OperationalError as e:
            if self._is_transient(e):
                raise
            raise self._unavailable(e) from e

    def _is_transient(self, error: BaseException) -> bool:
        return isinstance(error, _TRANSIENT)

    async def _select(self, sql: str, params: tuple[Any, ...]) -> list[FactRecord]:
        try:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(_SET_TENANT, (self.tenant_id,))
                async with conn.cursor(row_factory=dict_row) as cursor:
                    await cursor.execute(sql, params)
                    rows = await cursor.fetchall()
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from e
        return [_record(row) for row in rows]

    # -- reads ----------------------------------------------------------------------------

    async def _as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None:
        rows = await self._select(
            f"SELECT {COLUMNS} FROM {FACTS}"
            f" WHERE tenant_id = %s AND subject = %s AND attribute = %s AND {_HOLDS}",
            (self.tenant_id, subject, attribute, when, when),
        )
        return rows[0] if rows else None

    async def _profile(self, subject: str, when: datetime) -> list[FactRecord]:
        return await self._select(
            f"SELECT {COLUMNS} FROM {FACTS} WHERE tenant_id = %s AND subject = %s AND {_HOLDS}",
            (self.tenant_id, subject, when, when),
        )

    async def _history(self, subject: str, attribute: str) -> list[FactRecord]:
        return await self._select(
            f"SELECT {COLUMNS} FROM {FACTS} WHERE tenant_id = %s AND subject = %s AND attribute = %s",
            (self.tenant_id, subject, attribute),
        )


async def _check_ready(conn: psycopg.AsyncConnection[Any], where: str) -> None:
    """Refuse roles that bypass row security, stale schemas and tables with RLS turned off."""
    cursor = await conn.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    )
    row = await cursor.fetchone()
    assert row is not None
    user, superuser, bypass = row
    if superuser or bypass:
        raise UnsafeDatabaseRoleError(
            f"The fact ledger at {where} connects as '{user}', which is "
            f"{'a superuser' if superuser else 'BYPASSRLS'}: row-level security would not "
            "separate tenants. Create an application role (CREATE ROLE analyst_app LOGIN "
            "NOSUPERUSER NOBYPASSRLS), run `analyst facts setup --app-role analyst_app` with "
            "ANALYST_FACTS pointing at the owner, then point ANALYST_FACTS at analyst_app."
        )
    version = await postgres_version(conn, where=where)
    if version < LATEST_VERSION:
        raise FactLedgerSchemaError(
            f"The fact ledger at {where} is at schema version {version}; this analyst needs "
            f"{LATEST_VERSION}. As the database owner run: ANALYST_FACTS=<owner URL> analyst "
            f"facts setup --app-role {user}"
        )
    cursor = await conn.execute(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
        (FACTS,),
    )
    flags = await cursor.fetchone()
    if flags is None or not (flags[0] and flags[1]):
        raise FactLedgerSchemaError(
            f"Row-level security is not enabled and forced on {FACTS} at {where}. Re-enable it: "
            f"ALTER TABLE {FACTS} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY."
        )


async def setup_postgres(
    url: str, *, app_roles: Iterable[str] = (), target: int | None = None
) -> list[int]:
    """Apply pending migrations as the role in ``url`` (the owner) and grant ``app_roles``.

    Idempotent; returns the migration versions applied by this call.
    """
    where = redact(url)
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as e:
        raise FactLedgerUnavailableError(
            f"Cannot connect to {where} to set up the fact ledger: {e}."
        ) from e
    async with conn:
        try:
            return await migrate_postgres(conn, where=where, target=target, app_roles=app_roles)
        except pg_errors.InsufficientPrivilege as e:
            raise FactLedgerSchemaError(
                f"The role in {where} may not create or change the fact ledger schema ({e}). "
                "Run setup as the database owner or a superuser."
            ) from e
