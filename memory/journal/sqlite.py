"""SQLite backend of the memory journal: tables in the fact ledger's own file.

``SqliteJournal.open(path, principal)`` opens the file as the fact ledger does
(:mod:`memory.sql.connect`) and applies the ledger's pending migrations. Every call runs on a
worker thread, one at a time per file, as one transaction (a read a deferred ``BEGIN``, a
write ``BEGIN IMMEDIATE``); :data:`QUERIES` is SQLite's dialect of the shared statements.
Details: ``docs/memory-lifecycle.md`` (The memory journal's backends).
"""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import memory.journal.rules as rules
from memory.errors import JournalError, JournalUnavailableError

# The ledger's migrations and the shared connection settings, so that the journal and the
# fact store open one file identically (whichever of them opens it first).
from memory.facts.migrations import migrate_sqlite_sync
from memory.identity import Principal
from memory.journal.programs import Program, Transaction, run_sync
from memory.journal.queries import Dialect, Queries, Statement
from memory.journal.rows import Codec
from memory.journal.sql import SqlJournal
from memory.sealing import MemoryCipher
from memory.sql.clock import encode_time, system_clock
from memory.sql.connect import connect, prepare, prepare_folder

T = TypeVar("T")

QUERIES = Queries(
    Dialect(
        mark="?",
        schema=None,
        codec=Codec(
            time_in=encode_time,
            time_out=datetime.fromisoformat,
            json_in=lambda value: rules.json_text(value, "a JSON column"),
            json_out=json.loads,
        ),
        in_list="{column} IN (SELECT value FROM json_each({mark}))",
        id_list=json.dumps,
        locks_rows=False,
        cites=(
            "EXISTS (SELECT 1 FROM json_each({column})"
            " WHERE value IN (SELECT value FROM json_each({mark})))"
        ),
        grants="fact_grants",
    )
)


def _is_unavailable(error: sqlite3.Error) -> bool:
    """The file cannot be used (locked too long, read-only, corrupt, disk full), as opposed
    to a statement this code got wrong or a guard of the schema firing."""
    return isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError


def _cannot_open(where: str, error: BaseException) -> JournalUnavailableError:
    return JournalUnavailableError(
        f"Cannot open the memory journal in {where}: {error}. The journal lives in the fact "
        "ledger's file: check the path and its folder's permissions (ANALYST_FACTS / "
        "ANALYST_DATA_DIR), or point ANALYST_FACTS at another file."
    )


def _open_file(where: str) -> tuple[sqlite3.Connection, list[int]]:
    """Connect and migrate (blocking: run on a worker thread)."""
    try:
        if where != ":memory:":
            prepare_folder(Path(where))
        conn = connect(where)
    except (OSError, sqlite3.Error) as e:
        raise _cannot_open(where, e) from e
    try:
        applied = prepare(conn, where, migrate_sqlite_sync)
    except sqlite3.Error as e:
        conn.close()
        raise _cannot_open(where, e) from e
    except BaseException:
        conn.close()
        raise
    return conn, applied


class _File:
    """The one connection to an opened file, shared by every principal view of it."""

    def __init__(self, where: str, conn: sqlite3.Connection, applied: list[int]) -> None:
        self.where = where
        self.applied_migrations = applied
        self._conn = conn
        self._lock = threading.Lock()
        self._closed = False

    def run(self, body: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """``body`` in one transaction (blocking: callers run this on a worker thread)."""
        with self._lock:
            if self._closed:
                raise JournalError(
                    f"The memory journal in {self.where} is closed; use it inside "
                    "`async with open_journal(...)`."
                )
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    result = body(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                return result
            except sqlite3.Error as e:
                if not _is_unavailable(e):
                    raise
                raise JournalUnavailableError(
                    f"The memory journal in {self.where} failed: {e}. Check the file, its "
                    "folder's permissions and free space (ANALYST_FACTS / ANALYST_DATA_DIR)."
                ) from e

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


class SqliteJournal(SqlJournal):
    """The memory journal in the fact ledger's SQLite file (see the module docstring)."""

    def __init__(
        self,
        file: _File,
        principal: Principal | None,
        *,
        clock: Callable[[], datetime] = system_clock,
        audit_key: str | bytes | None = None,
        cipher: MemoryCipher | None = None,
    ) -> None:
        super().__init__(QUERIES, principal, clock=clock, audit_key=audit_key, cipher=cipher)
        self._file = file

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: Path | str,
        principal: Principal | None = None,
        *,
        clock: Callable[[], datetime] = system_clock,
        audit_key: str | bytes | None = None,
        cipher: MemoryCipher | None = None,
    ) -> AsyncIterator[SqliteJournal]:
        """Open (creating and migrating if needed) the ledger file at ``path``; ``:memory:``
        opens a private in-memory database. ``audit_key`` replaces the database's audit key
        (:mod:`memory.journal.audit`)."""
        if principal is not None:
            rules.check_principal(principal)
        where = str(path)
        conn, applied = await asyncio.to_thread(_open_file, where)
        file = _File(where, conn, applied)
        try:
            yield cls(file, principal, clock=clock, audit_key=audit_key, cipher=cipher)
        finally:
            await asyncio.to_thread(file.close)

    @property
    def applied_migrations(self) -> list[int]:
        """Migration versions applied when this journal opened the file (often none)."""
        return list(self._file.applied_migrations)

    async def _run(self, program: Program[T], transaction: Transaction) -> T:
        """A write ``BEGIN IMMEDIATE``; a read (always one snapshot) a deferred ``BEGIN``."""
        write = transaction == "write"
        return await asyncio.to_thread(
            self._file.run, functools.partial(_drive, program), write=write
        )


def _drive(program: Program[T], conn: sqlite3.Connection) -> T:
    """Execute ``program``'s statements on ``conn``, in the transaction :class:`_File` began."""
    return run_sync(program, functools.partial(_execute, conn))


def _execute(conn: sqlite3.Connection, statement: Statement) -> Any:
    """Execute ``statement`` and read back what it asks for."""
    cursor = conn.execute(statement.sql, statement.params)
    if statement.answer == "one":
        return cursor.fetchone()
    if statement.answer == "all":
        return cursor.fetchall()
    return cursor.rowcount
