"""Postgres backend of the fact ledger: shared by processes and hosts, row-level security.

:func:`setup_postgres` runs as the owner and applies the migrations; the application
(:meth:`PostgresFactStore.open`) connects as a role that cannot bypass row security and sets
``app.tenant_id`` / ``app.user_id`` for every read session and write transaction. A group of
writes locks its keys (advisory locks, one global order; a group of many keys the table) and
retries whole on a collision; a group of record writes runs set-wise (:mod:`memory.facts.batch`).
Statements and write operations are in :mod:`memory.facts.postgres_ops`; the details are in
``docs/memory-lifecycle.md`` (The fact ledger's backends).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, Self

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from memory.errors import (
    FactAuthorityError,
    FactLedgerError,
    FactLedgerSchemaError,
    FactLedgerUnavailableError,
)
from memory.facts.base import FactStore
from memory.facts.batch import Plan, Spans, Unplannable, plannable, spans
from memory.facts.group import PendingWrite
from memory.facts.migrations import LATEST_VERSION, migrate_postgres, postgres_version
from memory.facts.postgres_appends import PgAppends
from memory.facts.postgres_ops import (
    COLUMNS,
    FACTS,
    GRANT_COLUMNS,
    GRANTS,
    ORDERED_SEEKS,
    SET_TENANT,
    TRANSIENT,
    Writes,
    lock_keys,
    record_of,
)
from memory.facts.postgres_reads import AsyncReads, Sessions, SyncReads
from memory.facts.records import FactRecord, Grant
from memory.facts.rules import grant_refused, run_async
from memory.identity import Principal
from memory.sql.migrations import PG_SCHEMA, refuse_unsafe_role
from memory.urls import redact

LOCK_TIMEOUT = "10s"
#: The smallest group whose appends are checked and written in SQL: a smaller one (a lone
#: ``record()``, eight writers' group) is planned in Python over its prefetched rows. The
#: set-wise statements cost about the same at 64 writes (3,098 against 3,093 facts/s),
#: twice as much in eight writers' groups (739 against 1,566), a third less at 500 (4,613
#: against 3,152), on one machine, interleaved, load average 5: their fixed cost is the
#: temporary tables' statements and their emptying at each commit.
SET_WISE_GROUP = 64


@dataclass
class _Shared:
    """The pools every principal view of one opened ledger shares."""

    url: str
    pool: AsyncConnectionPool[Any]
    max_size: int
    connect_timeout: float
    _sync_pool: ConnectionPool[Any] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: Per pooled connection, what its session is set up with for reads: the reader (tenant,
    #: user, personal) and the statements prepared (:mod:`memory.facts.postgres_reads`). A
    #: read sets the reader first when it differs (one statement, then never again for that
    #: reader), so a read is one statement in autocommit: row security sees the principal,
    #: and nothing else of the session changes. Writes set tenant and user locally in their
    #: transaction.
    sessions: Sessions = field(default_factory=weakref.WeakKeyDictionary)

    def sync_pool(self) -> ConnectionPool[Any]:
        with self._lock:
            if self._sync_pool is None:
                pool: ConnectionPool[Any] = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.max_size,
                    kwargs={"autocommit": True},
                    open=False,
                )
                pool.open(wait=True, timeout=self.connect_timeout)
                self._sync_pool = pool
            return self._sync_pool

    def close_sync(self) -> None:
        with self._lock:
            if self._sync_pool is not None:
                self._sync_pool.close()
                self._sync_pool = None


class PostgresFactStore(FactStore):
    """The fact ledger in Postgres (see the module docstring)."""

    def __init__(
        self,
        shared: _Shared,
        principal: Principal | None,
        *,
        where: str,
        **options: Any,
    ) -> None:
        super().__init__(principal, **options)
        self._shared = shared
        self._pool = shared.pool
        self._where = where
        self._async_reads = AsyncReads(self)
        self._blocking_reads = SyncReads(self)

    def with_principal(self, principal: Principal) -> Self:
        view = super().with_principal(principal)
        view._async_reads = AsyncReads(view)
        view._blocking_reads = SyncReads(view)
        return view

    def _async_ops(self, personal: bool) -> AsyncReads:
        return AsyncReads(self, personal=True) if personal else self._async_reads

    def _sync_ops(self, personal: bool) -> SyncReads:
        return SyncReads(self, personal=True) if personal else self._blocking_reads

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
            open=False,
        )
        shared = _Shared(url, pool, max_size, connect_timeout)
        try:
            try:
                await pool.open(wait=True, timeout=connect_timeout)
            except psycopg.OperationalError as e:
                raise FactLedgerUnavailableError(
                    f"Cannot open a connection pool to the fact ledger at {where}: {e}."
                ) from e
            yield cls(shared, principal, where=where, **options)
        finally:
            await pool.close()
            shared.close_sync()

    # -- reads ----------------------------------------------------------------------------

    @property
    def _reads(self) -> AsyncReads:
        return self._async_reads

    @property
    def _sync_reads(self) -> SyncReads:
        return self._blocking_reads

    def _unavailable(self, error: Exception) -> FactLedgerUnavailableError:
        return FactLedgerUnavailableError(
            f"The fact ledger at {self._where} failed: {error}. Check that Postgres is running."
        )

    # -- writes ---------------------------------------------------------------------------

    def _is_transient(self, error: BaseException) -> bool:
        return isinstance(error, (*TRANSIENT, _Reconnect))

    async def _change_grant(self, grant: Grant, *, revoke: bool) -> bool:
        """Row security decides: the tenant's admin (``is_admin``) or the owner may."""
        user = self.principal.user_id
        try:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(SET_TENANT, (grant.tenant_id, user))
                if revoke:
                    cursor = await conn.execute(
                        f"DELETE FROM {GRANTS} WHERE tenant_id = %s AND user_id = %s"
                        " AND role = %s AND subject = %s",
                        (grant.tenant_id, grant.user_id, grant.role, grant.subject),
                    )
                    if cursor.rowcount == 0:
                        found = await conn.execute(
                            f"SELECT {PG_SCHEMA}.is_admin(%s)", (grant.tenant_id,)
                        )
                        row = await found.fetchone()
                        if not (row and row[0]) and not await _owns_grants(conn):
                            raise grant_refused(grant, user)
                    return cursor.rowcount == 1
                return await _insert_grant(conn, grant)
        except pg_errors.InsufficientPrivilege as e:
            raise grant_refused(grant, user) from e
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from e

    async def _bootstrap(self, grant: Grant) -> bool:
        """Only a role owning the grants table (the ledger's owner, who ran ``facts setup``)
        inserts it: the application role is refused even where row security would let a
        tenant's admin add another."""
        try:
            async with self._pool.connection() as conn, conn.transaction():
                if not await _owns_grants(conn):
                    raise FactAuthorityError(
                        f"Only the fact ledger's owner may make a tenant's admin; this "
                        f"connection ({self._where}) is not the owner. Run analyst db init "
                        f"--admin {grant.user_id} with ANALYST_FACTS set to the owner's URL. "
                        "Nothing was changed.",
                        tenant_id=grant.tenant_id,
                        user_id=grant.user_id,
                    )
                await conn.execute(SET_TENANT, (grant.tenant_id, ""))
                return await _insert_grant(conn, grant)
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from e

    async def _erase_facts(self, tenant_id: str, user_id: str, memory_ids: list[str]) -> list[str]:
        try:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(SET_TENANT, (tenant_id, self.principal.user_id))
                cursor = await conn.execute(
                    f"DELETE FROM {FACTS} WHERE tenant_id = %s AND subject = %s"
                    " AND memory_id = ANY(%s) RETURNING memory_id",
                    (tenant_id, f"user:{user_id}", memory_ids),
                )
                erased = sorted(str(r[0]) for r in await cursor.fetchall())
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from e
        return erased

    async def _erase_user(self, tenant_id: str, user_id: str) -> tuple[list[FactRecord], list[str]]:
        """Row security decides (migration 7): a user deletes the facts about itself and the
        grants it holds; the tenant's admin (or the owner) anyone's."""
        subject = f"user:{user_id}"
        try:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(SET_TENANT, (tenant_id, self.principal.user_id))
                cursor = await conn.execute(
                    f"DELETE FROM {FACTS} WHERE tenant_id = %s AND subject = %s"
                    f" RETURNING {COLUMNS}",
                    (tenant_id, subject),
                )
                rows = await cursor.fetchall()
                facts = sorted((record_of(r, self.cipher) for r in rows), key=lambda r: r.memory_id)
                cursor = await conn.execute(
                    f"DELETE FROM {GRANTS} WHERE tenant_id = %s AND user_id = %s"
                    " RETURNING role, subject",
                    (tenant_id, user_id),
                )
                grants = sorted(f"{r[0]}:{r[1]}" for r in await cursor.fetchall())
        except psycopg.OperationalError as e:
            raise self._unavailable(e) from e
        return facts, grants

    async def _list_grants(self, tenant_id: str) -> list[Grant]:
        rows = await self._async_reads._rows(
            tenant_id, f"SELECT {GRANT_COLUMNS} FROM {GRANTS} WHERE tenant_id = %s", (tenant_id,)
        )
        return [
            Grant(r[0], r[1], r[2], r[3], r[4], None if r[5] is None else r[5].astimezone(UTC))
            for r in rows
        ]

    async def _run_group(self, group: list[PendingWrite]) -> None:
        """One transaction for the whole group, every key locked first in a global order.

        As on SQLite, a refusal changes nothing and needs no rollback; any other failure of
        one write runs the group again with a savepoint per write.
        """
        try:
            if plannable(group) and len({(w.key[0], w.user_id) for w in group}) == 1:
                try:
                    await self._planned(group)
                    return
                except Unplannable:
                    pass
                except Exception as e:
                    if self._is_transient(e) or isinstance(e, psycopg.OperationalError):
                        raise
                    # A guard, a constraint or a value refused the set-wise write: row by
                    # row, the failure is found and stays the failing write's own.
            try:
                await self._transaction(group, careful=False)
            except _WriteFailed:
                await self._transaction(group, careful=True)
        except psycopg.OperationalError as e:
            if self._is_transient(e):
                raise
            raise self._unavailable(e) from e

    async def _planned(self, group: list[PendingWrite]) -> None:
        """The group set-wise (:mod:`memory.facts.batch`), all of it acting for one principal,
        its keys locked: a group of appends by a few statements over the whole group
        (:mod:`memory.facts.postgres_appends`), any other by one prefetch, the rules in memory
        and one statement per kind of change.

        After ``BEGIN``, one pipeline: the locks and the check travel together (one round
        trip), the writes in a second (its end), their row counts checked before ``COMMIT``:
        four round trips, as a group planned in Python takes; a group the check turns away
        reads its rows in one more. (With ``BEGIN`` queued in the pipeline, entered outside
        the transaction, psycopg took six.)"""
        acting = (group[0].key[0], group[0].user_id)
        async with self._pool.connection() as conn:
            try:
                ops = Writes(conn, self.cipher)
                appends = PgAppends(conn, self.cipher)
                async with conn.transaction():
                    async with conn.pipeline():
                        await lock_keys(conn, [w.key for w in group], LOCK_TIMEOUT)
                        await conn.execute(SET_TENANT, acting)
                        await conn.execute(ORDERED_SEEKS)
                        if len(group) >= SET_WISE_GROUP and await appends.check(group):
                            plan = Plan(_nothing_prefetched, _no_grants, appends)
                            plan.run(group)
                            await appends.write()
                        else:
                            await self._plan(ops, group, acting)
                    appends.check_closed()
                    ops.check_updates()
            except psycopg.OperationalError as e:
                if conn.broken:  # a pooled connection the server dropped: retry afresh
                    raise _Reconnect(str(e)) from e
                raise

    @staticmethod
    async def _plan(ops: Writes, group: list[PendingWrite], acting: tuple[str, str]) -> None:
        """The rules over the group's prefetched rows (:class:`memory.facts.batch.Plan`), its
        end state queued."""
        asked = spans(group)
        grants, stored = await ops.grants_and_prefetch(acting, asked)

        def grants_of(tenant_id: str, user_id: str) -> list[tuple[str, str]]:
            if (tenant_id, user_id) != acting:
                raise Unplannable("a write acting for another principal")
            return grants

        plan = Plan(lambda: (stored, asked), grants_of)
        plan.run(group)
        await ops.apply(plan.ended, plan.changed, plan.inserted)

    async def _transaction(self, group: list[PendingWrite], *, careful: bool) -> None:
        async with self._pool.connection() as conn:
            try:
                async with conn.transaction():
                    await lock_keys(conn, [w.key for w in group], LOCK_TIMEOUT)
                    ops = Writes(conn, self.cipher)
                    if careful:
                        await self._writes(conn, ops, group, careful=True)
                    else:
                        # Pipelined: a write's updates and insert travel with the next write's
                        # first read, one round trip per write instead of three.
                        async with conn.pipeline():
                            await self._writes(conn, ops, group, careful=False)
                    ops.check_updates()
            except psycopg.OperationalError as e:
                if conn.broken:  # a pooled connection the server dropped: retry afresh
                    raise _Reconnect(str(e)) from e
                raise

    async def _writes(
        self,
        conn: psycopg.AsyncConnection[Any],
        ops: Writes,
        group: list[PendingWrite],
        *,
        careful: bool,
    ) -> None:
        acting: tuple[str, str] | None = None
        for write in group:
            write.result, write.error = None, None
            try:
                if careful:
                    async with conn.transaction():  # a savepoint
                        await conn.execute(SET_TENANT, (write.key[0], write.user_id))
                        write.result = await run_async(write.rules(), ops)
                    acting = None
                    continue
                if (write.key[0], write.user_id) != acting:
                    acting = (write.key[0], write.user_id)
                    await conn.execute(SET_TENANT, acting)
                write.result = await run_async(write.rules(), ops)
            except FactLedgerError as e:
                write.error = e
            except psycopg.Error as e:
                if self._is_transient(e) or isinstance(e, psycopg.OperationalError):
                    raise
                if not careful:
                    raise _WriteFailed from e
                write.error = e


def _nothing_prefetched() -> tuple[list[FactRecord], Spans]:
    """The prefetch of a group the set-wise check accepted: its plan asks for none."""
    raise Unplannable("a group of appends reads no stored row")


def _no_grants(tenant_id: str, user_id: str) -> list[tuple[str, str]]:
    """The grants of a group the set-wise check accepted: its plan asks for none."""
    raise Unplannable("a group of appends reads no grant")


class _WriteFailed(Exception):
    """A write failed in a group run without savepoints: run the group again with them."""


class _Reconnect(Exception):
    """The group's connection was found dead (the server restarted): a transient failure."""


async def _check_ready(conn: psycopg.AsyncConnection[Any], where: str) -> None:
    """Refuse roles that bypass row security, stale schemas and tables with RLS turned off."""
    user = await refuse_unsafe_role(conn, what="fact ledger", where=where)
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


async def _owns_grants(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether the connection's role owns the grants table (the ledger's owner, who ran
    ``facts setup``)."""
    found = await conn.execute(
        "SELECT pg_has_role(current_user, tableowner, 'USAGE')"
        " FROM pg_tables WHERE schemaname = %s AND tablename = 'grants'",
        (PG_SCHEMA,),
    )
    row = await found.fetchone()
    return bool(row and row[0])


async def _insert_grant(conn: psycopg.AsyncConnection[Any], grant: Grant) -> bool:
    """Insert ``grant`` (row security judges it); whether it is new."""
    cursor = await conn.execute(
        f"INSERT INTO {GRANTS} ({GRANT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        (
            grant.tenant_id,
            grant.user_id,
            grant.role,
            grant.subject,
            grant.granted_by,
            grant.granted_at,
        ),
    )
    return cursor.rowcount == 1
