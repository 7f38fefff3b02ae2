"""Postgres checkpoints: LangGraph's async Postgres saver over a psycopg pool.

Contract: :func:`open_postgres` probes the server with one direct connection (an unreachable
server or a bad password is one :class:`CheckpointerUnavailableError` with the server's own
reason), applies LangGraph's migrations when asked, then yields a :class:`PostgresSaver` over
a connection pool (``pool_max``, ``pool_timeout`` from the URL) that is closed on exit.
Migrations (:func:`migrate`) run under an advisory lock, so concurrent first-time setups of
one database apply them once; :func:`setup_postgres` says what it did. Reading and writing
are upstream's, with connection failures translated by :class:`~memory.checkpoint.guard.Guarded`.

Imported only when a ``postgres://`` URL is opened (the ``postgres`` extra).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from memory.checkpoint.guard import Guarded, quiet_library_logs, reason
from memory.checkpoint.url import CheckpointerURL
from memory.errors import CheckpointerUnavailableError, ConfigurationError

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.base import SerializerProtocol

#: An advisory-lock key so concurrent `db setup`s of one database run one at a time.
_PG_SETUP_LOCK = 0x616E616C  # "anal"


class PostgresSaver(Guarded, AsyncPostgresSaver):
    """LangGraph's async Postgres saver; connection failures name the URL."""

    backend = "postgres"

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        with self._guard():
            await super().aprune(thread_ids, strategy=strategy)


async def connect(spec: CheckpointerURL) -> psycopg.AsyncConnection[Any]:
    """One autocommit connection, failing fast with the server's reason."""
    timeout = int(spec.number("pool_timeout", 10))
    try:
        return await psycopg.AsyncConnection.connect(
            spec.target,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            connect_timeout=max(1, min(timeout, 10)),
        )
    except psycopg.OperationalError as e:
        raise CheckpointerUnavailableError(spec.display, reason(e)) from e
    except psycopg.ProgrammingError as e:  # malformed conninfo
        raise ConfigurationError(f"Checkpointer URL {spec.display} is invalid: {e}") from e


async def schema_version(conn: Any) -> int:
    """The newest applied LangGraph migration, or -1 when there is no schema yet."""
    try:
        cur = await conn.execute("SELECT max(v) AS v FROM checkpoint_migrations")
        row = await cur.fetchone()
    except psycopg.errors.UndefinedTable:
        return -1
    return -1 if row is None or row["v"] is None else int(row["v"])


async def migrate(conn: Any) -> int:
    """Apply pending migrations under an advisory lock; return the resulting version."""
    latest = len(AsyncPostgresSaver.MIGRATIONS) - 1
    if await schema_version(conn) >= latest:
        return latest
    # Poll with try-lock: a waiter blocked inside pg_advisory_lock would hold an open
    # transaction, and LangGraph's CREATE INDEX CONCURRENTLY waits for every open
    # transaction to end (a deadlock between two first-time setups).
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (_PG_SETUP_LOCK,))
        row = await cur.fetchone()
        if row and row["ok"]:
            break
        await asyncio.sleep(0.05)
    try:
        await AsyncPostgresSaver(conn).setup()
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))
    return await schema_version(conn)


async def setup_postgres(spec: CheckpointerURL) -> str:
    """Create or migrate the schema (idempotent); describe what was done."""
    conn = await connect(spec)
    async with conn:
        before = await schema_version(conn)
        after = await migrate(conn)
    if before == after:
        return f"{spec.display}: schema up to date (migration {after})"
    start = "created" if before < 0 else f"migrated from {before}"
    return f"{spec.display}: schema {start} to migration {after}"


@asynccontextmanager
async def open_postgres(
    spec: CheckpointerURL, serde: SerializerProtocol, *, ensure_schema: bool
) -> AsyncIterator[PostgresSaver]:
    """A :class:`PostgresSaver` over a connection pool, closed on exit."""
    quiet_library_logs("psycopg")
    # Probe first: a direct connection fails fast with the server's own reason.
    conn = await connect(spec)
    async with conn:
        if ensure_schema:
            await migrate(conn)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        spec.target,
        min_size=1,
        max_size=int(spec.number("pool_max", 4)),
        timeout=spec.number("pool_timeout", 10),
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        # A server restart leaves dead connections in the pool: check each one on checkout.
        check=AsyncConnectionPool.check_connection,
        open=False,
        name="analyst-checkpoints",
    )
    try:
        await pool.open(wait=True, timeout=spec.number("pool_timeout", 10))
    except Exception as e:
        await pool.close()
        raise CheckpointerUnavailableError(spec.display, reason(e)) from e
    try:
        saver = PostgresSaver(pool, serde=serde)
        saver.display_url = spec.display
        yield saver
    finally:
        await pool.close()
