"""SQLite backend of the fact ledger: the embedded default, one file in the data directory.

``SqliteFactStore.open(path, principal)`` is an async context manager: it opens one
connection (WAL journal, 30 s busy timeout, autocommit so transactions are explicit), applies
pending migrations, yields the store, and closes the connection on exit.

Writes run in ``BEGIN IMMEDIATE`` transactions: the write lock is taken before the key is
read, so two writers (coroutines, connections or processes) cannot both decide from the same
state; a "database is locked" or uniqueness collision retries the whole transaction. Within
one process the connection is shared by every principal view and guarded by an asyncio lock,
so one coroutine's open transaction is never seen or joined by another.

Times are stored as fixed-width ISO-8601 UTC text (``2026-06-03T10:00:00.000000+00:00``), which
orders lexicographically exactly as the instants do; the table refuses any other shape.
Tenancy is enforced by a ``tenant_id = ?`` in every statement (SQLite has no row security).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import aiosqlite

from memory.errors import FactLedgerUnavailableError
from memory.facts.base import FactRecord, FactStore, KeyTransaction, canonical_json
from memory.facts.migrations import migrate_sqlite
from memory.identity import Principal

COLUMNS = (
    "tenant_id, memory_id, subject, attribute, value, memory_type, schema_version, valid_from, "
    "valid_to, recorded_at, supersedes_memory_id, source_episode_id, source, confidence, "
    "retention_policy, retracted_at, retraction_episode_id, withdrawn_at"
)

#: Seconds a connection waits for another writer's lock before "database is locked".
BUSY_TIMEOUT = 30.0

_HOLDS = "withdrawn_at IS NULL AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)"


def encode_time(value: datetime) -> str:
    """Fixed-width ISO-8601 in UTC with microseconds: sorts like the instants it names."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _record(row: sqlite3.Row | aiosqlite.Row) -> FactRecord:
    valid_from = _time(row["valid_from"])
    recorded_at = _time(row["recorded_at"])
    assert valid_from is not None and recorded_at is not None
    return FactRecord(
        tenant_id=row["tenant_id"],
        memory_id=row["memory_id"],
        subject=row["subject"],
        attribute=row["attribute"],
        value=json.loads(row["value"]),
        memory_type=row["memory_type"],
        schema_version=row["schema_version"],
        valid_from=valid_from,
        valid_to=_time(row["valid_to"]),
        recorded_at=recorded_at,
        supersedes_memory_id=row["supersedes_memory_id"],
        source_episode_id=row["source_episode_id"],
        source=row["source"],
        confidence=row["confidence"],
        retention_policy=row["retention_policy"],
        retracted_at=_time(row["retracted_at"]),
        retraction_episode_id=row["retraction_episode_id"],
        withdrawn_at=_time(row["withdrawn_at"]),
    )


def _locked(error: sqlite3.Error) -> bool:
    message = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in message or "busy" in message
    )


def _prepare_folder(path: Path) -> None:
    """Refuse a folder where the file should be; create the file's parent folders."""
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder")
    path.parent.mkdir(parents=True, exist_ok=True)


async def _prepare(conn: aiosqlite.Connection, where: str, attempts: int = 10) -> list[int]:
    """Switch to WAL and migrate; return the versions applied.

    While another connection converts a fresh file to WAL, SQLite can report "database is
    locked" at once instead of waiting on the busy timeout, so this step retries briefly.
    """
    for attempt in range(1, attempts + 1):
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            return await migrate_sqlite(conn, where=where)
        except sqlite3.Error as e:
            if _locked(e) and attempt < attempts:
                await asyncio.sleep(0.02 * attempt)
                continue
            raise FactLedgerUnavailableError(
                f"Cannot use {where} as the fact ledger: {e}. Is it an analyst facts "
                "database? Point ANALYST_FACTS at another file."
            ) from e
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class _Connection:
    """The connection every principal view of one opened file shares, and its guard."""

    conn: aiosqlite.Connection
    lock: asyncio.Lock
    where: str
    applied_migrations: list[int]


class _KeyTx:
    """:class:`KeyTransaction` inside an open ``BEGIN IMMEDIATE`` transaction."""

    def __init__(
        self, conn: aiosqlite.Connection, tenant_id: str, subject: str, attribute: str
    ) -> None:
        self.conn = conn
        self.key = (tenant_id, subject, attribute)
        self._where = "tenant_id = ? AND subject = ? AND attribute = ?"

    async def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        async with self.conn.execute(sql, params) as cursor:
            return await cursor.fetchone()

    async def covering(self, at: datetime) -> FactRecord | None:
        t = encode_time(at)
        row = await self._one(
            f"SELECT {COLUMNS} FROM facts WHERE {self._where} AND {_HOLDS}", (*self.key, t, t)
        )
        return None if row is None else _record(row)

    async def next_start(self, after: datetime) -> datetime | None:
        row = await self._one(
            f"SELECT min(valid_from) FROM facts WHERE {self._where}"
            " AND withdrawn_at IS NULL AND valid_from > ?",
            (*self.key, encode_time(after)),
        )
        return _time(row[0])

    async def ending_at(self, at: datetime) -> FactRecord | None:
        row = await self._one(
            f"SELECT {COLUMNS} FROM facts WHERE {self._where}"
            " AND withdrawn_at IS NULL AND valid_to = ?",
            (*self.key, encode_time(at)),
        )
        return None if row is None else _record(row)

    async def insert(self, record: FactRecord) -> None:
        await self.conn.execute(
            f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join('?' * 18)})",
            (
                record.tenant_id,
                record.memory_id,
                record.subject,
                record.attribute,
                canonical_json(record.value),
                record.memory_type,
                record.schema_version,
                encode_time(record.valid_from),
                None if record.valid_to is None else encode_time(record.valid_to),
                encode_time(record.recorded_at),
                record.supersedes_memory_id,
                record.source_episode_id,
                record.source,
                record.confidence,
                record.retention_policy,
                None if record.retracted_at is None else encode_time(record.retracted_at),
                record.retraction_episode_id,
                None if record.withdrawn_at is None else encode_time(record.withdrawn_at),
            ),
        )

    async def _update(self, sql: str, params: tuple[Any, ...], memory_id: str) -> None:
        async with self.conn.execute(
            f"{sql} WHERE tenant_id = ? AND memory_id = ? AND withdrawn_at IS NULL",
            (*params, self.key[0], memory_id),
        ) as cursor:
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
            "UPDATE facts SET valid_to = ?, retracted_at = ?, retraction_episode_id = ?",
            (
                encode_time(valid_to),
                None if retracted_at is None else encode_time(retracted_at),
                retraction_episode_id,
            ),
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
            "UPDATE facts SET withdrawn_at = ?, retracted_at = ?, retraction_episode_id = ?",
            (
                encode_time(withdrawn_at),
                None if retracted_at is None else encode_time(retracted_at),
                retraction_episode_id,
            ),
            memory_id,
        )


class SqliteFactStore(FactStore):
    """The fact ledger in one SQLite file (see the module docstring)."""

    def __init__(self, connection: _Connection, principal: Principal | None, **options: Any):
        super().__init__(principal, **options)
        self._connection = connection

    @classmethod
    @asynccontextmanager
    async def open(
        cls, path: Path | str, principal: Principal | None = None, **options: Any
    ) -> AsyncIterator[SqliteFactStore]:
        """Open (creating if needed) and migrate the ledger file; ``:memory:`` also works."""
        where = str(path)
        try:
            if where != ":memory:":
                # Off the event loop: an API server (langgraph dev) refuses blocking file calls.
                await asyncio.to_thread(_prepare_folder, Path(path))
            conn = await aiosqlite.connect(where, timeout=BUSY_TIMEOUT, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise FactLedgerUnavailableError(
                f"Cannot open the fact ledger file {where}: {e}. Check the path and its "
                "permissions (ANALYST_FACTS / ANALYST_DATA_DIR)."
            ) from e
        try:
            conn.row_factory = aiosqlite.Row
            applied = await _prepare(conn, where)
            yield cls(_Connection(conn, asyncio.Lock(), where, applied), principal, **options)
        finally:
            await conn.close()

    @property
    def applied_migrations(self) -> list[int]:
        """Migration versions this store applied when it opened the file (often none)."""
        return list(self._connection.applied_migrations)

    # -- transactions ---------------------------------------------------------------------

    @asynccontextmanager
    async def _key_transaction(self, subject: str, attribute: str) -> AsyncIterator[KeyTransaction]:
        shared = self._connection
        async with shared.lock:
            conn = shared.conn
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield _KeyTx(conn, self.tenant_id, subject, attribute)
                await conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
                raise

    def _is_transient(self, error: BaseException) -> bool:
        if isinstance(error, sqlite3.IntegrityError):
            return "unique constraint failed" in str(error).lower()
        return isinstance(error, sqlite3.Error) and _locked(error)

    async def _select(self, sql: str, params: tuple[Any, ...]) -> list[FactRecord]:
        async with self._connection.lock, self._connection.conn.execute(sql, params) as cursor:
            rows = await cursor.fetchall()
        return [_record(cast(aiosqlite.Row, row)) for row in rows]

    # -- reads ----------------------------------------------------------------------------

    async def _as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None:
        t = encode_time(when)
        rows = await self._select(
            f"SELECT {COLUMNS} FROM facts"
            f" WHERE tenant_id = ? AND subject = ? AND attribute = ? AND {_HOLDS}",
            (self.tenant_id, subject, attribute, t, t),
        )
        return rows[0] if rows else None

    async def _profile(self, subject: str, when: datetime) -> list[FactRecord]:
        t = encode_time(when)
        return await self._select(
            f"SELECT {COLUMNS} FROM facts WHERE tenant_id = ? AND subject = ? AND {_HOLDS}",
            (self.tenant_id, subject, t, t),
        )

    async def _history(self, subject: str, attribute: str) -> list[FactRecord]:
        return await self._select(
            f"SELECT {COLUMNS} FROM facts WHERE tenant_id = ? AND subject = ? AND attribute = ?",
            (self.tenant_id, subject, attribute),
        )
