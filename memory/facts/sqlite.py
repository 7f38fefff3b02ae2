"""SQLite backend of the fact ledger: the embedded default, one file in the data directory.

``SqliteFactStore.open(path, principal)`` migrates the file (WAL) and opens a reading and a
writing connection (:mod:`memory.sql.connect`). Reads are one index seek each, inline on the
event loop (or on a worker thread for a server); writes run in groups, on the event loop when
the file is free (never for a server) and else on one worker thread, one ``BEGIN IMMEDIATE``
transaction and one durable commit each (a group of record writes
set-wise, :mod:`memory.facts.batch`; others a seek and a statement per rule, with a savepoint
per write when one fails), the file's writers in other processes taking turns with them in a
kernel queue (:class:`memory.sql.connect.WriterTurns`).
Tenancy is a ``tenant_id = ?`` in every statement; read and write authority are checked by the
store (:mod:`memory.facts.rules`): a SQLite file has no roles, so whoever may open the file
is its owner (:meth:`SqliteFactStore.bootstrap_admin`). Statements and the read and write
operations are in :mod:`memory.facts.sqlite_ops`. Details: ``docs/memory-lifecycle.md``
(The fact ledger's backends).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.errors import FactAuthorityError, FactLedgerError, FactLedgerUnavailableError
from memory.facts.base import FactStore
from memory.facts.batch import Plan, Spans, Unplannable, plannable, spans
from memory.facts.group import PendingWrite
from memory.facts.migrations import migrate_sqlite_sync
from memory.facts.records import FactRecord, Grant
from memory.facts.rules import grant_refused, may_administer, run_sync
from memory.facts.sqlite_appends import TEMP_IN_MEMORY
from memory.facts.sqlite_imports import SqliteImports
from memory.facts.sqlite_ops import (
    COLUMNS,
    GRANT_COLUMNS,
    GRANTS_OF,
    AsyncReads,
    Reads,
    ThreadedReads,
    Writes,
    fromiso,
    grant_row,
    record_of,
)
from memory.identity import Principal
from memory.sealing import PLAIN, MemoryCipher
from memory.sql.connect import (
    BUSY_TIMEOUT,
    WriterTurns,
    connect,
    is_locked,
    prepare,
    prepare_folder,
)

#: The smallest group written set-wise: below it, a seek per write costs less than the
#: prefetch statement (a lone write: 250 against 335 us, the two even at about 4 writes).
PLANNED_GROUP = 4
#: The largest group written on the event loop when the file is free (see ``_run_group``).
INLINE_GROUP = 64
#: The writer's automatic checkpoint, in WAL pages: SQLite's default, and while an import runs
#: (256 MB: every few batches instead of after each, whose pages a checkpoint would write
#: to the file again -- half the import's writes at 300,000 facts).
CHECKPOINT_PAGES = 1_000
IMPORT_CHECKPOINT_PAGES = 65_536


def _open_connection(where: str) -> sqlite3.Connection:
    return connect(where, timeout=BUSY_TIMEOUT)  # read at call time (tests shorten it)


def _prepare(conn: sqlite3.Connection, where: str) -> list[int]:
    """Switch the file to WAL and migrate it, through the writing connection, whose temporary
    tables (a group of appends' staging) are then kept in memory; return the versions
    applied. Run off the event loop, like every other step of opening."""
    try:
        applied = prepare(conn, where, migrate_sqlite_sync)
        conn.execute(TEMP_IN_MEMORY)
        return applied
    except sqlite3.Error as e:
        raise FactLedgerUnavailableError(
            f"Cannot use {where} as the fact ledger: {e}. Is it an analyst facts "
            "database? Point ANALYST_FACTS at another file."
        ) from e


@dataclass
class _Connection:
    """What every principal view of one opened file shares."""

    where: str
    reader: sqlite3.Connection
    writer: sqlite3.Connection
    read_lock: threading.Lock
    write_lock: threading.Lock
    worker: ThreadPoolExecutor
    applied_migrations: list[int]
    #: async reads on a worker thread instead of inline (a server's loop must never block)
    reads_off_loop: bool = False
    #: seals values on insert and opens them on read (``ANALYST_MEMORY_KEY``)
    cipher: MemoryCipher = PLAIN
    reads: Reads = field(init=False)
    async_reads: AsyncReads = field(init=False)
    turns: WriterTurns = field(init=False)
    #: Whether the writing connection's SQLite busy wait is on (it was opened with it on).
    _waits: bool = field(init=False, default=True)
    #: Imports under way from this process (see :meth:`SqliteFactStore._importing`), and the
    #: writing connection's automatic checkpoint as set (it was opened with the default).
    imports: int = field(init=False, default=0)
    _checkpoint_pages: int = field(init=False, default=CHECKPOINT_PAGES)

    def __post_init__(self) -> None:
        self.reads = Reads(self.reader, self.read_lock, self.cipher)
        self.async_reads = (ThreadedReads if self.reads_off_loop else AsyncReads)(self.reads)
        self.turns = WriterTurns(self.where)

    def _busy_wait(self, on: bool) -> None:
        """Turn the writer's SQLite busy wait on or off (the write lock held); a ``PRAGMA``
        only when it changes, since a process mostly writes one way (10 us a write)."""
        if on != self._waits:
            timeout = int(BUSY_TIMEOUT * 1000) if on else 0  # read now: tests shorten it
            self.writer.execute(f"PRAGMA busy_timeout = {timeout}")
            self._waits = on

    def _checkpoints(self) -> None:
        """The writer's automatic checkpoint held off while an import runs, as usual otherwise
        (the write lock held); a ``PRAGMA`` only when it changes. A connection's setting, not
        the file's: a crash leaves a longer WAL, which the next opening replays."""
        pages = IMPORT_CHECKPOINT_PAGES if self.imports else CHECKPOINT_PAGES
        if pages != self._checkpoint_pages:
            self.writer.execute(f"PRAGMA wal_autocheckpoint = {pages}")
            self._checkpoint_pages = pages

    def checkpoint(self) -> None:
        """After an import: the automatic checkpoint as usual again, and what the import left
        in the WAL copied into the file now rather than by the next write (``PASSIVE``: it
        waits for no reader; if another process holds the file past the busy timeout, a later
        write's automatic checkpoint does it)."""
        try:
            with self.writing() as conn:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.OperationalError as e:
            if not is_locked(e):
                raise

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """The writing connection, this process's writers and then every process's taking
        turns (:class:`memory.sql.connect.WriterTurns`) for one write transaction."""
        with self.write_lock, self.turns.turn(BUSY_TIMEOUT):
            self._busy_wait(True)
            self._checkpoints()
            yield self.writer

    @contextmanager
    def writing_now(self) -> Iterator[sqlite3.Connection | None]:
        """:meth:`writing` if it needs no wait, with SQLite's own busy wait off too (a write
        transaction elsewhere on the file then fails at once as "locked"); else ``None``."""
        if not self.write_lock.acquire(blocking=False):
            yield None
            return
        try:
            with self.turns.turn_if_free() as free:
                if not free:
                    yield None
                    return
                self._busy_wait(False)
                self._checkpoints()
                yield self.writer
        finally:
            self.write_lock.release()

    def close(self) -> None:
        self.worker.shutdown(wait=True)
        with self.write_lock:
            self.writer.close()
            self.turns.close()
        with self.read_lock:
            if self.reader is not self.writer:
                self.reader.close()


class SqliteFactStore(FactStore):
    """The fact ledger in one SQLite file (see the module docstring)."""

    def __init__(self, connection: _Connection, principal: Principal | None, **options: Any):
        super().__init__(principal, **options)
        self._connection = connection

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: Path | str,
        principal: Principal | None = None,
        *,
        reads_off_loop: bool = False,
        **options: Any,
    ) -> AsyncIterator[SqliteFactStore]:
        """Open (creating if needed) and migrate the ledger file; ``:memory:`` also works.

        ``reads_off_loop``: async reads hop to a worker thread instead of running inline (an
        API server's event loop must never block)."""
        where = str(path)
        memory = where == ":memory:"
        try:
            if not memory:
                # Off the event loop, like every file call here: an API server (langgraph dev)
                # refuses blocking calls on its loop.
                await asyncio.to_thread(prepare_folder, Path(path))
        except OSError as e:
            raise FactLedgerUnavailableError(
                f"Cannot open the fact ledger file {where}: {e}. Check the path and its "
                "permissions (ANALYST_FACTS / ANALYST_DATA_DIR)."
            ) from e
        writer: sqlite3.Connection | None = None
        reader: sqlite3.Connection | None = None
        try:
            writer = await asyncio.to_thread(_open_connection, where)
            applied = await asyncio.to_thread(_prepare, writer, where)
            # A private in-memory database exists once, in one connection: it reads too.
            reader = writer if memory else await asyncio.to_thread(_open_connection, where)
        except (sqlite3.Error, FactLedgerUnavailableError) as e:
            for conn in {id(c): c for c in (writer, reader) if c is not None}.values():
                conn.close()
            if isinstance(e, FactLedgerUnavailableError):
                raise
            raise FactLedgerUnavailableError(
                f"Cannot open the fact ledger file {where}: {e}. Check the path and its "
                "permissions (ANALYST_FACTS / ANALYST_DATA_DIR)."
            ) from e
        write_lock = threading.Lock()
        shared = _Connection(
            where,
            reader,
            writer,
            write_lock if memory else threading.Lock(),
            write_lock,
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="facts-writer"),
            applied,
            reads_off_loop,
            options.get("cipher") or PLAIN,
        )
        try:
            yield cls(shared, principal, **options)
        finally:
            shared.close()

    @property
    def applied_migrations(self) -> list[int]:
        """Migration versions this store applied when it opened the file (often none)."""
        return list(self._connection.applied_migrations)

    # -- reads ----------------------------------------------------------------------------

    @property
    def _reads(self) -> AsyncReads:
        return self._connection.async_reads

    @property
    def _sync_reads(self) -> Reads:
        return self._connection.reads

    # -- writes ---------------------------------------------------------------------------

    @asynccontextmanager
    async def _importing(self) -> AsyncIterator[None]:
        """:meth:`FactStore._importing`, and the writer's automatic checkpoint held off
        (:meth:`_Connection._checkpoints`) until the last import of this process ends, which
        then checkpoints once."""
        shared = self._connection
        async with super()._importing():
            shared.imports += 1
            try:
                yield
            finally:
                shared.imports -= 1
                if not shared.imports and shared.where != ":memory:":
                    loop = asyncio.get_running_loop()
                    await loop.run_in_executor(shared.worker, shared.checkpoint)

    def _is_transient(self, error: BaseException) -> bool:
        return is_locked(error)

    async def _change_grant(self, grant: Grant, *, revoke: bool) -> bool:
        loop = asyncio.get_running_loop()
        user = self.principal.user_id
        changed: bool = await loop.run_in_executor(
            self._connection.worker, self._change_grant_sync, grant, user, revoke
        )
        return changed

    def _change_grant_sync(self, grant: Grant, user: str, revoke: bool) -> bool:
        """The grantor's authority is checked inside the write transaction that changes it."""
        with self._connection.writing() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                own = conn.execute(GRANTS_OF, (grant.tenant_id, user)).fetchall()
                if not may_administer(own):
                    raise grant_refused(grant, user)
                if revoke:
                    cursor = conn.execute(
                        "DELETE FROM fact_grants WHERE tenant_id = ? AND user_id = ?"
                        " AND role = ? AND subject = ?",
                        (grant.tenant_id, grant.user_id, grant.role, grant.subject),
                    )
                else:
                    cursor = conn.execute(
                        f"INSERT INTO fact_grants ({GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
                        " ON CONFLICT DO NOTHING",
                        grant_row(grant),
                    )
                changed = cursor.rowcount == 1
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return changed

    async def _bootstrap(self, grant: Grant) -> bool:
        """A SQLite file has no roles: its owner is the OS user owning its folder (who alone
        may change who may open it). Anyone else is refused, before anything is written."""
        where = self._connection.where
        if where != ":memory:":
            folder = Path(where).resolve().parent
            owner, me = (await asyncio.to_thread(folder.stat)).st_uid, os.geteuid()
            if owner != me:
                raise FactAuthorityError(
                    f"Only the owner of {folder} (OS uid {owner}) may make a tenant's admin; "
                    f"this process runs as uid {me}. Run analyst db init --admin "
                    f"{grant.user_id} as that user. Nothing was changed.",
                    tenant_id=grant.tenant_id,
                    user_id=grant.user_id,
                )
        loop = asyncio.get_running_loop()
        changed: bool = await loop.run_in_executor(
            self._connection.worker, self._insert_grant_sync, grant
        )
        return changed

    def _insert_grant_sync(self, grant: Grant) -> bool:
        with self._connection.writing() as conn:
            cursor = conn.execute(
                f"INSERT INTO fact_grants ({GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                grant_row(grant),
            )
        return cursor.rowcount == 1

    async def _erase_facts(self, tenant_id: str, user_id: str, memory_ids: list[str]) -> list[str]:
        loop = asyncio.get_running_loop()
        erased: list[str] = await loop.run_in_executor(
            self._connection.worker, self._erase_facts_sync, tenant_id, user_id, memory_ids
        )
        return erased

    def _erase_facts_sync(self, tenant_id: str, user_id: str, memory_ids: list[str]) -> list[str]:
        where = "tenant_id = ? AND subject = ? AND memory_id IN (SELECT value FROM json_each(?))"
        params = (tenant_id, f"user:{user_id}", json.dumps(memory_ids))
        with self._connection.writing() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                found = [
                    str(r[0])
                    for r in conn.execute(f"SELECT memory_id FROM facts WHERE {where}", params)
                ]
                conn.execute(f"DELETE FROM facts WHERE {where}", params)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return sorted(found)

    async def _erase_user(self, tenant_id: str, user_id: str) -> tuple[list[FactRecord], list[str]]:
        loop = asyncio.get_running_loop()
        erased: tuple[list[FactRecord], list[str]] = await loop.run_in_executor(
            self._connection.worker, self._erase_user_sync, tenant_id, user_id
        )
        return erased

    def _erase_user_sync(self, tenant_id: str, user_id: str) -> tuple[list[FactRecord], list[str]]:
        subject = f"user:{user_id}"
        with self._connection.writing() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                facts = [
                    record_of(r, self.cipher)
                    for r in conn.execute(
                        f"SELECT {COLUMNS} FROM facts WHERE tenant_id = ? AND subject = ?"
                        " ORDER BY memory_id",
                        (tenant_id, subject),
                    )
                ]
                conn.execute(
                    "DELETE FROM facts WHERE tenant_id = ? AND subject = ?", (tenant_id, subject)
                )
                grants = [
                    f"{r[0]}:{r[1]}"
                    for r in conn.execute(
                        "SELECT role, subject FROM fact_grants WHERE tenant_id = ? AND user_id = ?"
                        " ORDER BY role, subject",
                        (tenant_id, user_id),
                    )
                ]
                conn.execute(
                    "DELETE FROM fact_grants WHERE tenant_id = ? AND user_id = ?",
                    (tenant_id, user_id),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return facts, grants

    async def _list_grants(self, tenant_id: str) -> list[Grant]:
        def read() -> list[Grant]:
            with self._connection.read_lock:
                rows = self._connection.reader.execute(
                    f"SELECT {GRANT_COLUMNS} FROM fact_grants WHERE tenant_id = ?", (tenant_id,)
                ).fetchall()
            return [Grant(r[0], r[1], r[2], r[3], r[4], fromiso(r[5])) for r in rows]

        return await asyncio.to_thread(read)

    async def _run_group(self, group: list[PendingWrite]) -> None:
        """On a server's store, always on the writer thread. Otherwise (the CLI, scripts) a
        small group that can start at once -- no writer in this process or another holds or
        awaits the file -- is written right here on the loop, sparing two thread hand-overs
        (about a fifth of a one-fact write); any wait goes to the writer thread, and so do
        large groups (an import's batch commits there while the loop reads the next one)."""
        shared = self._connection
        if not shared.reads_off_loop and len(group) <= INLINE_GROUP:
            with shared.writing_now() as conn:
                if conn is not None:
                    try:
                        self._run_group_locked(group)
                        return
                    except sqlite3.OperationalError as e:
                        if not is_locked(e):
                            raise
                        # A writer outside the turns holds the file: the group was rolled
                        # back whole; it waits for that writer on the thread.
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(shared.worker, self._run_group_sync, group)

    def _run_group_sync(self, group: list[PendingWrite]) -> None:
        with self._connection.writing():
            self._run_group_locked(group)

    def _run_group_locked(self, group: list[PendingWrite]) -> None:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` for the whole group, the writer held.

        The rules refuse a write (conflict, nothing to retract) before they change anything,
        so a refusal needs no rollback. Any other failure of one write (a guard firing, say)
        rolls the group back and runs it again with a savepoint per write, so that failure
        stays that write's own.
        """
        if len(group) >= PLANNED_GROUP and plannable(group):
            try:
                self._planned(group)
                return
            except Unplannable:
                pass
            except Exception as e:
                if is_locked(e):
                    raise
                # A guard, a constraint or a value refused the set-wise write: row by
                # row, the failure is found and stays the failing write's own.
        try:
            self._transaction(group, careful=False)
        except _WriteFailed:
            self._transaction(group, careful=True)

    def _planned(self, group: list[PendingWrite]) -> None:
        """The group set-wise (:mod:`memory.facts.batch`), one commit: a group of appends by
        a few statements over the whole group (:mod:`memory.facts.sqlite_appends`; an
        import's, straight: :mod:`memory.facts.sqlite_imports`), any other by one prefetch, the rules in memory and one statement per kind of change."""
        conn = self._connection.writer
        ops = Writes(conn, self.cipher)
        conn.execute("BEGIN IMMEDIATE")
        try:

            def prefetch() -> tuple[list[FactRecord], Spans]:
                asked = spans(group)
                return ops.prefetch(asked), asked

            plan = Plan(prefetch, ops.grants, SqliteImports(conn, self.cipher))
            plan.run(group)
            ops.apply(plan.ended, plan.changed, plan.inserted)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _transaction(self, group: list[PendingWrite], *, careful: bool) -> None:
        conn = self._connection.writer
        ops = Writes(conn, self.cipher)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for write in group:
                write.result, write.error = None, None
                if careful:
                    conn.execute("SAVEPOINT fact")
                try:
                    write.result = run_sync(write.rules(), ops)
                except FactLedgerError as e:
                    write.error = e
                except Exception as e:
                    if is_locked(e):
                        raise
                    if not careful:
                        raise _WriteFailed from e
                    write.error = e
                    conn.execute("ROLLBACK TO fact")
                if careful:
                    conn.execute("RELEASE fact")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


class _WriteFailed(Exception):
    """A write failed in a group run without savepoints: run the group again with them."""
