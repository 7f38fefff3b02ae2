"""The embedded default: LangGraph's async SQLite saver over one file, with group commit.

Contract: :func:`open_sqlite` yields a :class:`SqliteSaver` over the file of a ``sqlite:///``
URL (WAL mode, 30 s busy timeout: the CLI, scripts and a second approver may share the file)
and closes its connection on exit. It is LangGraph's ``AsyncSqliteSaver`` with ``aput`` and
``aput_writes`` replaced by :class:`SqliteGroupCommit`: the very same rows (upstream's SQL,
serializer and metadata encoding), written in one hop to aiosqlite's thread and committed in
groups. Every call is durable when it returns; reading, listing and deleting are upstream's,
and :meth:`SqliteSaver.adelete_threads` deletes many threads in one transaction. The connection
runs with ``secure_delete``: deleted content is overwritten in the file, not left in free space.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from memory.checkpoint.fast_writes import FastWrites
from memory.checkpoint.guard import GuardedCalls
from memory.checkpoint.url import CheckpointerURL, parse_sqlite_path
from memory.config import private_folder
from memory.errors import StorageCorruptError
from memory.health import guarded
from memory.serde import DamagedValueError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.serde.base import SerializerProtocol

# LangGraph's own statements, so the rows are exactly what its reader expects.
_SQLITE_PUT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SQLITE_WRITES = (
    "INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
    "type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

#: Thread ids per ``DELETE`` when many threads go at once (under SQLite's 999 variables).
_IDS_PER_STATEMENT = 500

_SqliteOp = tuple[str, list[tuple[Any, ...]]]
#: A queued write: statement, rows, and the future its caller awaits.
_SqliteQueued = tuple[str, list[tuple[Any, ...]], "asyncio.Future[None]"]
#: Runs a function with the ``sqlite3.Connection`` on aiosqlite's connection thread.
_ThreadRunner = Callable[[Callable[[sqlite3.Connection], None]], Awaitable[None]]


def connection_thread_runner(conn: Any) -> _ThreadRunner | None:
    """How to run a function on aiosqlite's connection thread, with the sqlite3 connection.

    The only use of aiosqlite privates: ``Connection._execute(fn, *args)`` (its one way to run
    a function on the connection's thread; every public method is built on it) and
    ``Connection._conn`` (the ``sqlite3.Connection``, to be touched on that thread only).
    aiosqlite has no public call that runs several statements and one commit in one hop.
    When either disappears in an aiosqlite release this returns None and
    :class:`SqliteGroupCommit` writes through upstream's ``aput``/``aput_writes`` instead
    (the same rows, more hops, a commit per call); tests/integration/test_checkpoint_wire.py
    compares the stored rows with upstream's.
    """
    execute = getattr(conn, "_execute", None)
    if not callable(execute) or not hasattr(conn, "_conn"):
        return None

    def run(fn: Callable[[sqlite3.Connection], None]) -> Awaitable[None]:
        return execute(lambda: fn(conn._conn))

    return run


def _commit_batch(db: sqlite3.Connection, ops: list[_SqliteOp]) -> None:
    """Runs on aiosqlite's connection thread: every statement and one commit, or nothing."""
    try:
        for sql, rows in ops:
            db.executemany(sql, rows)
        db.commit()
    except BaseException:
        if db.in_transaction:
            db.rollback()
        raise


async def enable_wal(conn: Any) -> None:
    """Switch the file to WAL mode before LangGraph's setup does, surviving a concurrent switch.

    Two processes opening a new file at once (two CLIs started together) both try the switch;
    SQLite refuses one of them at once with "database is locked" instead of waiting (waiting
    could deadlock), and that process failed. The refused one waits for the other's switch
    through the busy timeout and then finds the file in WAL mode already.
    """
    try:
        await conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as e:
        if "locked" not in str(e).lower():
            raise
        await conn.execute("BEGIN IMMEDIATE")  # waits while the other process switches
        await conn.execute("ROLLBACK")
        await conn.execute("PRAGMA journal_mode=WAL")


class SqliteGroupCommit(FastWrites):
    """``AsyncSqliteSaver`` writes in one trip to aiosqlite's thread, committed in groups.

    Upstream awaits the connection thread three times per ``aput`` (execute, close the
    cursor, commit) and four times per ``aput_writes``, each with its own commit. In a graph
    run the last task's ``aput_writes`` and the super-step's ``aput`` are handed over within
    the same turn of the event loop, and the ``aput`` the run waits for queued behind the
    writes' commit (two fsyncs per super-step).

    Here a write queues upstream's own rows (same SQL, serializer and metadata encoding) and
    waits; one flush, started on the next turn of the loop, takes everything queued, runs it
    under the saver's lock in one call on the connection thread and commits once. A call
    returns only after the commit that holds its rows (or raises, with the whole group rolled
    back), so every ``aput``/``aput_writes`` is still durable when it returns, and writes
    land in the order they were made. A call cancelled before its group is taken is not
    written. Reading, listing and deleting are upstream's.

    Without :func:`connection_thread_runner` (aiosqlite changed) upstream's writes run.
    """

    # Writes waiting for the next group, and the flush task that will take them.
    _queued: list[_SqliteQueued] | None = None
    _flush: asyncio.Task[None] | None = None
    _flushing: set[asyncio.Task[None]] | None = None

    async def _commit(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        saver: Any = self
        if not saver.is_setup:
            await saver.setup()
        if self._queued is None:
            self._queued = []
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queued.append((sql, rows, done))
        if self._flush is None:
            self._flush = flush = asyncio.create_task(self._flush_queued())
            # The loop keeps only weak references to tasks; hold each flush until it ends.
            if self._flushing is None:
                self._flushing = set()
            self._flushing.add(flush)
            flush.add_done_callback(self._flushing.discard)
        await done

    async def _flush_queued(self) -> None:
        saver: Any = self
        taken = False
        group: list[_SqliteQueued] = []
        try:
            await asyncio.sleep(0)  # writes handed over in this turn of the loop join the group
            async with saver.lock:
                # Callers cancelled while waiting are dropped: their rows are not written.
                group = [item for item in self._queued or () if not item[2].done()]
                self._queued, self._flush, taken = [], None, True
                if group:
                    ops = [(sql, rows) for sql, rows, _ in group]
                    run = connection_thread_runner(saver.conn)
                    assert run is not None  # checked by _grouped() before queueing
                    await run(lambda db: _commit_batch(db, ops))
        except BaseException as e:
            if not taken:
                group, self._queued, self._flush = self._queued or [], [], None
            for _, _, done in group:
                if done.done():
                    continue
                if isinstance(e, asyncio.CancelledError):
                    done.cancel()
                else:
                    done.set_exception(e)
            if not isinstance(e, Exception):
                raise
        else:
            for _, _, done in group:
                if not done.done():
                    done.set_result(None)

    def _grouped(self) -> bool:
        return connection_thread_runner(getattr(self, "conn", None)) is not None

    def fast_writes(self) -> bool:
        return self._grouped()

    async def _fast_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        import json

        from langgraph.checkpoint.base import get_checkpoint_metadata

        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, data = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        row = (
            str(thread_id),
            checkpoint_ns,
            checkpoint["id"],
            config["configurable"].get("checkpoint_id"),
            type_,
            data,
            meta.encode("utf-8", "ignore"),
        )
        await self._commit(_SQLITE_PUT, [row])
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def _fast_put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task: tuple[str, str]
    ) -> None:
        from langgraph.checkpoint.base import WRITES_IDX_MAP

        verb = "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"
        configurable = config["configurable"]
        rows = [
            (
                str(configurable["thread_id"]),
                str(configurable["checkpoint_ns"]),
                str(configurable["checkpoint_id"]),
                *task,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *self.serde.dumps_typed(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        await self._commit(f"INSERT OR {verb} {_SQLITE_WRITES}", rows)


class SqliteSaver(GuardedCalls, SqliteGroupCommit, AsyncSqliteSaver):
    """LangGraph's async SQLite saver; writes are group-committed in one thread hop."""

    backend = "sqlite"
    #: The file, named by the one error a damaged file, a read-only folder or a full disk is.
    path: object = "the checkpoints file"

    async def setup(self) -> None:
        with self._guard():
            if not self.is_setup:
                async with self.lock:
                    await enable_wal(self.conn)
            await super().setup()

    def _guard(self) -> AbstractContextManager[None]:
        return guarded("checkpoints file", self.path)

    @contextmanager
    def _read_guard(self, config: RunnableConfig | None) -> Iterator[None]:
        """Storage faults as :meth:`_guard`; a damaged value (its bytes do not decode) is the
        damaged-file error naming this file and the thread, for every user and every command
        that reads it."""
        with self._guard():
            try:
                yield
            except DamagedValueError as error:
                thread = ((config or {}).get("configurable") or {}).get("thread_id")
                of = f"of thread {thread} " if thread else ""
                detail = f"a stored value {of}does not decode: {error.reason}"
                raise StorageCorruptError("checkpoints file", self.path, detail) from error

    async def adelete_threads(self, thread_ids: Sequence[str]) -> None:
        """``adelete_thread`` of each of ``thread_ids``: upstream's statements for all of them
        in one transaction, one commit however many threads. (Not ``aprune(...,
        strategy="delete")``: LangGraph detects an ``aprune`` as the whole prune capability,
        whose ``keep_latest`` this saver does not implement.)"""
        ids = sorted({str(t) for t in thread_ids})
        if not ids:
            return
        with self._guard():
            if not self.is_setup:
                await self.setup()
            async with self.lock, self.conn.cursor() as cur:
                try:
                    for start in range(0, len(ids), _IDS_PER_STATEMENT):
                        chunk = ids[start : start + _IDS_PER_STATEMENT]
                        marks = ",".join("?" * len(chunk))
                        for table in ("checkpoints", "writes"):
                            await cur.execute(
                                f"DELETE FROM {table} WHERE thread_id IN ({marks})", chunk
                            )
                    await self.conn.commit()
                except BaseException:
                    await self.conn.rollback()
                    raise


@asynccontextmanager
async def open_sqlite(
    spec: CheckpointerURL, serde: SerializerProtocol, *, ensure_schema: bool
) -> AsyncIterator[SqliteSaver]:
    """A :class:`SqliteSaver` over the URL's file (its folder created), closed on exit."""
    import aiosqlite

    path = parse_sqlite_path(spec.url)
    with guarded("checkpoints file", path):
        private_folder(path.parent)  # memory.config: folders the tiers create are 0700
    target, uri = str(path), False
    if path.exists() and not os.access(path.parent, os.W_OK):
        # A read-only folder: SQLite cannot create the WAL index beside the file, so the file
        # is opened immutable (nobody can write it here); reads work, a write is refused.
        target, uri, ensure_schema = f"file:{path}?mode=ro&immutable=1", True, False
    # A generous busy timeout: the CLI, scripts and a second approver may share the file.
    async with aiosqlite.connect(target, timeout=30, uri=uri) as conn:
        # Deleted and replaced rows are overwritten with zeros, freed pages too: a deleted
        # thread leaves no bytes in the file once the WAL is checkpointed.
        await conn.execute("PRAGMA secure_delete=ON")
        saver = SqliteSaver(conn, serde=serde)
        saver.path = path
        if ensure_schema:
            await saver.setup()
        yield saver


async def setup_sqlite(spec: CheckpointerURL, serde: SerializerProtocol) -> str:
    """Create the tables (idempotent); describe what was done."""
    async with open_sqlite(spec, serde, ensure_schema=True):
        pass
    return f"{spec.display}: tables ready in {parse_sqlite_path(spec.url)}"
