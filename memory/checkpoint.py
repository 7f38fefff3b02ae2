"""Hot memory: open a LangGraph checkpointer from a URL.

``open_checkpointer(url)`` is an async context manager that owns the connections' lifetime
and yields a ready ``BaseCheckpointSaver``. Every backend deserialises with the strict
allowlist of :mod:`memory.serde`; with ``encryption_key`` every channel value and pending
write is sealed before the backend stores it.

Supported URLs (set by ``ANALYST_CHECKPOINTER`` or ``--checkpointer``):

- ``sqlite:///relative/path.sqlite`` or ``sqlite:////absolute/path.sqlite`` — the embedded
  default, an async SQLite saver over one file (WAL mode, shared safely by processes).
- ``postgres://user:pass@host:5432/db`` (or ``postgresql://``) — LangGraph's async Postgres
  saver over a psycopg connection pool: durable history and time travel. Analyst options
  in the query string: ``pool_max`` (connections, default 4), ``pool_timeout`` (seconds to
  wait for a connection, default 10); libpq's own parameters pass through.
- ``redis://host:6380/0`` — the async Redis saver (needs RedisJSON and RediSearch, i.e.
  Redis Stack): low latency, full history. ``redis+shallow://...`` keeps only the latest
  checkpoint of each thread (no history, no time travel). Options: ``prefix`` (key prefix,
  default LangGraph's), ``ttl`` (e.g. ``90d``: keys expire that long after their last write
  and each read refreshes them).
- ``memory://`` — LangGraph's in-process ``InMemorySaver`` (tests, throwaway runs).

Write paths: the SQLite and Redis savers are LangGraph's, with ``aput``/``aput_writes``
replaced by versions that store the very same rows / JSON documents under the same keys in
fewer trips (SQLite: one hop to aiosqlite's thread and one commit for the writes handed over
in the same turn of the event loop; Redis: one round trip per call, documents encoded once
with orjson). LangGraph's readers, listing, deletion and indexes are used unchanged, and
every write is committed / acknowledged before its call returns.
``scripts/bench_checkpoints.py`` measures the result against a raw write.

Schema setup is explicit and idempotent: :func:`setup_checkpointer` (``analyst db setup``)
creates or migrates tables and indexes and says what it did; ``open_checkpointer`` applies
it only when the schema is missing or behind (``ensure_schema=True``, what the CLI does).

Failures are specific: an unreachable server is :class:`CheckpointerUnavailableError` naming
the URL with its password masked, also when the server goes away mid-run; a Redis without
its modules is :class:`CheckpointerModulesMissingError`; an unknown scheme is
:class:`UnsupportedBackendError` listing the schemes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from memory.errors import (
    CheckpointerModulesMissingError,
    CheckpointerUnavailableError,
    CheckpointHistoryUnavailableError,
    ConfigurationError,
)
from memory.urls import backend_for, examples, redact, sqlite_path

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from memory.serde import ValueCipher

SCHEMES = examples("checkpointer")

Backend = Literal["sqlite", "postgres", "redis", "redis+shallow", "memory"]

_PG_OPTIONS = ("pool_max", "pool_timeout")
_REDIS_OPTIONS = ("prefix", "ttl")
#: An advisory-lock key so concurrent `db setup`s of one database run one at a time.
_PG_SETUP_LOCK = 0x616E616C  # "anal"


# -- URLs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointerURL:
    """A parsed checkpointer URL: the backend, what its driver gets, and analyst options."""

    backend: Backend
    url: str
    target: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The URL with any password masked, for messages and logs."""
        return redact(self.url)


def parse_sqlite_path(url: str) -> Path:
    """``sqlite:///a/b.db`` → ``a/b.db``; ``sqlite:////tmp/b.db`` → ``/tmp/b.db``."""
    return sqlite_path(url, tier="checkpointer", default_name="checkpoints.sqlite")


def parse_checkpointer_url(url: str) -> CheckpointerURL:
    """Recognise the backend of ``url``; raise :class:`UnsupportedBackendError` otherwise."""
    text = url.strip()
    backend = cast(Backend, backend_for("checkpointer", text))
    if backend == "sqlite":
        parse_sqlite_path(text)
        return CheckpointerURL("sqlite", text, text)
    if backend == "memory":
        return CheckpointerURL("memory", text, text)
    if backend == "postgres":
        target, options = _split_options(text, _PG_OPTIONS)
        return CheckpointerURL("postgres", text, target, options)
    target, options = _split_options(text, _REDIS_OPTIONS)
    target = target.replace("+shallow://", "://", 1)
    return CheckpointerURL(backend, text, target, options)


def _split_options(url: str, names: Sequence[str]) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in names:
            ours[key] = value
        else:
            theirs.append((key, value))
    return urlunsplit(parts._replace(query=urlencode(theirs))), ours


def _number_option(spec: CheckpointerURL, name: str, default: float) -> float:
    text = spec.options.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1
    if value <= 0:
        raise ConfigurationError(
            f"Checkpointer URL option {name}='{text}' in {spec.display} must be a positive number."
        )
    return value


# -- opening ----------------------------------------------------------------------------------


@asynccontextmanager
async def open_checkpointer(
    url: str,
    *,
    encryption_key: str | bytes | None = None,
    ensure_schema: bool = True,
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open the saver for ``url``; closed (connections, pools) when the block exits.

    ``encryption_key`` (16/24/32 bytes or base64 of them) seals every stored value.
    ``ensure_schema`` applies :func:`setup_checkpointer` when the schema is missing or behind.
    """
    spec = parse_checkpointer_url(url)
    cipher = _cipher(encryption_key)
    async with _open_backend(spec, ensure_schema=ensure_schema) as saver:
        yield saver if cipher is None else SealedSaver(saver, cipher)


async def setup_checkpointer(url: str) -> str:
    """Create or migrate the backend's schema (idempotent); describe what was done."""
    spec = parse_checkpointer_url(url)
    if spec.backend == "memory":
        return f"{spec.display}: in-process memory, nothing to set up"
    if spec.backend == "sqlite":
        async with _open_backend(spec, ensure_schema=True):
            pass
        return f"{spec.display}: tables ready in {parse_sqlite_path(spec.url)}"
    if spec.backend == "postgres":
        conn = await _pg_connect(spec)
        async with conn:
            before = await _pg_schema_version(conn)
            after = await _pg_migrate(spec, conn)
        if before == after:
            return f"{spec.display}: schema up to date (migration {after})"
        start = "created" if before < 0 else f"migrated from {before}"
        return f"{spec.display}: schema {start} to migration {after}"
    # Redis: indexes are the schema.
    async with _redis_saver(spec, setup=False) as saver:
        await _redis_require_modules(spec, saver)
        existing = await _redis_indexes(saver)
        await _redis_setup(spec, saver)
        wanted = {saver._checkpoint_prefix, saver._checkpoint_write_prefix}
        created = sorted(wanted - existing)
    if created:
        return f"{spec.display}: created search indexes {', '.join(created)}"
    return f"{spec.display}: search indexes already present"


def keeps_history(saver: BaseCheckpointSaver[Any]) -> bool:
    """False for savers that store only each thread's latest checkpoint (shallow)."""
    inner = saver.inner if isinstance(saver, SealedSaver) else saver
    return not getattr(inner, "shallow", False)


def _cipher(key: str | bytes | None) -> ValueCipher | None:
    if not key:
        return None
    from memory.serde import ValueCipher, parse_key

    return ValueCipher(parse_key(key))


@asynccontextmanager
async def _open_backend(
    spec: CheckpointerURL, *, ensure_schema: bool
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    from memory.serde import strict_serializer

    if spec.backend == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = parse_sqlite_path(spec.url)
        path.parent.mkdir(parents=True, exist_ok=True)

        class SqliteSaver(_SqliteGroupCommit, AsyncSqliteSaver):
            """LangGraph's async SQLite saver; writes are group-committed in one thread hop."""

            async def setup(self) -> None:
                if not self.is_setup:
                    async with self.lock:
                        await _sqlite_enable_wal(self.conn)
                await super().setup()

        # A generous busy timeout: the CLI, scripts and a second approver may share the file.
        async with aiosqlite.connect(str(path), timeout=30) as conn:
            saver = SqliteSaver(conn, serde=strict_serializer())
            if ensure_schema:
                await saver.setup()
            yield saver
        return
    if spec.backend == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver(serde=strict_serializer())
        return
    if spec.backend == "postgres":
        async with _postgres_saver(spec, ensure_schema=ensure_schema) as pg:
            yield pg
        return
    async with _redis_saver(spec, setup=True) as rs:
        yield rs


# -- error translation ------------------------------------------------------------------------


def _unavailable_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    with contextlib.suppress(ImportError):
        import psycopg

        types += [psycopg.OperationalError, psycopg.InterfaceError]
    with contextlib.suppress(ImportError):
        import redis.exceptions

        types += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    return tuple(types)


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class _Guarded(BaseCheckpointSaver[Any]):
    """Turns connection failures of a server-backed saver into CheckpointerUnavailableError.

    Mixed in before the LangGraph saver class; ``_display_url`` is set by the factory.
    """

    _display_url: str = ""

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except CheckpointerUnavailableError:
            raise
        except _unavailable_types() as e:
            raise CheckpointerUnavailableError(self._display_url, _reason(e)) from e

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        with self._guard():
            return await super().aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        with self._guard():
            async for item in super().alist(config, filter=filter, before=before, limit=limit):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        with self._guard():
            return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self._guard():
            await super().aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        with self._guard():
            await super().adelete_thread(thread_id)


def _quiet_library_logs(name: str) -> None:
    """Keep a driver's reconnect warnings off stderr unless the application logs them.

    Without any handler, Python prints a library's WARNING records to stderr (the "last
    resort" handler); the failure itself surfaces as one CheckpointerUnavailableError. A
    NullHandler stops that fallback; records still propagate to handlers the app configures.
    """
    logger = logging.getLogger(name)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


# -- SQLite -----------------------------------------------------------------------------------

# LangGraph's own statements, so the rows are exactly what its reader expects.
_SQLITE_PUT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SQLITE_WRITES = (
    "INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
    "type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

_SqliteOp = tuple[str, list[tuple[Any, ...]]]
#: A queued write: statement, rows, and the future its caller awaits.
_SqliteQueued = tuple[str, list[tuple[Any, ...]], "asyncio.Future[None]"]


async def _sqlite_enable_wal(conn: Any) -> None:
    """Switch the file to WAL mode before LangGraph's setup does, surviving a concurrent switch.

    Two processes opening a new file at once (two CLIs started together) both try the switch;
    SQLite refuses one of them at once with "database is locked" instead of waiting (waiting
    could deadlock), and that process failed. The refused one waits for the other's switch
    through the busy timeout and then finds the file in WAL mode already.
    """
    import sqlite3

    try:
        await conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as e:
        if "locked" not in str(e).lower():
            raise
        await conn.execute("BEGIN IMMEDIATE")  # waits while the other process switches
        await conn.execute("ROLLBACK")
        await conn.execute("PRAGMA journal_mode=WAL")


def _sqlite_commit_batch(conn: Any, ops: list[_SqliteOp]) -> None:
    """Runs on aiosqlite's connection thread: every statement and one commit, or nothing."""
    db = conn._conn
    try:
        for sql, rows in ops:
            db.executemany(sql, rows)
        db.commit()
    except BaseException:
        if db.in_transaction:
            db.rollback()
        raise


class _SqliteGroupCommit(BaseCheckpointSaver[Any]):
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

    Needs aiosqlite's ``Connection._execute`` (its one way to run a function on the
    connection's thread; every public method is built on it); without it upstream runs.
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
                    await saver.conn._execute(_sqlite_commit_batch, saver.conn, ops)
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
        return callable(getattr(getattr(self, "conn", None), "_execute", None))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not self._grouped():
            return await super().aput(config, checkpoint, metadata, new_versions)
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

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self._grouped():
            await super().aput_writes(config, writes, task_id, task_path)
            return
        from langgraph.checkpoint.base import WRITES_IDX_MAP

        verb = "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"
        configurable = config["configurable"]
        rows = [
            (
                str(configurable["thread_id"]),
                str(configurable["checkpoint_ns"]),
                str(configurable["checkpoint_id"]),
                task_id,
                task_path,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *self.serde.dumps_typed(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        await self._commit(f"INSERT OR {verb} {_SQLITE_WRITES}", rows)


# -- Postgres ---------------------------------------------------------------------------------


async def _pg_connect(spec: CheckpointerURL) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    timeout = int(_number_option(spec, "pool_timeout", 10))
    try:
        return await psycopg.AsyncConnection.connect(
            spec.target,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            connect_timeout=max(1, min(timeout, 10)),
        )
    except psycopg.OperationalError as e:
        raise CheckpointerUnavailableError(spec.display, _reason(e)) from e
    except psycopg.ProgrammingError as e:  # malformed conninfo
        raise ConfigurationError(f"Checkpointer URL {spec.display} is invalid: {e}") from e


async def _pg_schema_version(conn: Any) -> int:
    """The newest applied LangGraph migration, or -1 when there is no schema yet."""
    import psycopg

    try:
        cur = await conn.execute("SELECT max(v) AS v FROM checkpoint_migrations")
        row = await cur.fetchone()
    except psycopg.errors.UndefinedTable:
        return -1
    return -1 if row is None or row["v"] is None else int(row["v"])


async def _pg_migrate(spec: CheckpointerURL, conn: Any) -> int:
    """Apply pending migrations under an advisory lock; return the resulting version."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    latest = len(AsyncPostgresSaver.MIGRATIONS) - 1
    if await _pg_schema_version(conn) >= latest:
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
    return await _pg_schema_version(conn)


@asynccontextmanager
async def _postgres_saver(
    spec: CheckpointerURL, *, ensure_schema: bool
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from memory.serde import strict_serializer

    class PostgresSaver(_Guarded, AsyncPostgresSaver):
        """LangGraph's async Postgres saver; connection failures name the URL."""

    _quiet_library_logs("psycopg")
    # Probe first: a direct connection fails fast with the server's own reason.
    conn = await _pg_connect(spec)
    async with conn:
        if ensure_schema:
            await _pg_migrate(spec, conn)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        spec.target,
        min_size=1,
        max_size=int(_number_option(spec, "pool_max", 4)),
        timeout=_number_option(spec, "pool_timeout", 10),
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        # A server restart leaves dead connections in the pool: check each one on checkout.
        check=AsyncConnectionPool.check_connection,
        open=False,
        name="analyst-checkpoints",
    )
    try:
        await pool.open(wait=True, timeout=_number_option(spec, "pool_timeout", 10))
    except Exception as e:
        await pool.close()
        raise CheckpointerUnavailableError(spec.display, _reason(e)) from e
    try:
        saver = PostgresSaver(pool, serde=strict_serializer())
        saver._display_url = spec.display
        yield saver
    finally:
        await pool.close()


# -- Redis ------------------------------------------------------------------------------------


def parse_duration_minutes(text: str, *, what: str) -> float:
    """``90d`` / ``12h`` / ``30m`` / ``45s`` → minutes."""
    from memory.retention import parse_age

    return parse_age(text, what=what).total_seconds() / 60


def _redis_ttl_seconds(saver: Any) -> int | None:
    ttl = saver.ttl_config
    return int(ttl["default_ttl"] * 60) if ttl and "default_ttl" in ttl else None


def _redis_checkpoint_ts(checkpoint_id: str, fallback: Callable[[], Any]) -> Any:
    """Upstream's ``checkpoint_ts``: the id's ULID timestamp, else ``fallback()``."""
    from ulid import ULID

    try:
        return ULID.from_str(checkpoint_id).timestamp
    except Exception:  # LangGraph's ids are UUIDv6, not ULIDs: upstream falls back as well
        return fallback()


def _redis_checkpoint_json(saver: Any, checkpoint: Checkpoint) -> Any:
    """Upstream's ``_dump_checkpoint(checkpoint)``, as JSON to embed in the document.

    Upstream serialises the checkpoint to JSON, parses it back into a dict, adds ``type`` and
    ``pending_sends`` (and makes channel versions strings), and the dict is then encoded once
    more inside the document. When the serializer's JSON already has that shape (versions are
    strings, as this saver's ``get_next_version`` makes them), the same object is spliced
    from the serialised bytes instead; otherwise upstream's path runs.
    """
    import orjson

    versions = checkpoint.get("channel_versions", {})
    if (
        "type" not in checkpoint
        and "pending_sends" not in checkpoint
        and all(type(v) is str for v in versions.values())
    ):
        type_, data = saver.serde.dumps_typed(checkpoint)
        if type_ == "json" and data.startswith(b"{") and data != b"{}":
            return orjson.Fragment(b'{"type":"json",' + data[1:-1] + b',"pending_sends":[]}')
    return saver._dump_checkpoint(checkpoint.copy())


async def _redis_round_trip(
    saver: Any, commands: Sequence[tuple[Any, ...]], *, transaction: bool = False
) -> list[Any]:
    """Send ``commands`` on one pooled connection in one write and read every reply.

    A checkpoint save is a handful of commands; redis-py's ``Pipeline`` object spends about
    as long in Python building its command stack and running response callbacks as the
    loopback round trip itself takes. Here the commands are packed and sent with the
    connection's own methods. Error replies come back as exception values, in order, for the
    caller to judge. With ``transaction`` the commands run in MULTI/EXEC (nothing else
    interleaves, and a command refused at queue time aborts them all, raised here). A broken
    connection is dropped, as redis-py's pipeline does, and the error propagates.
    """
    import redis.exceptions

    sent: Sequence[tuple[Any, ...]] = (
        [("MULTI",), *commands, ("EXEC",)] if transaction else commands
    )
    pool = saver._redis.connection_pool
    conn = await pool.get_connection()
    try:
        await conn.send_packed_command(conn.pack_commands(sent))
        replies: list[Any] = []
        for _ in sent:
            try:
                replies.append(await conn.read_response())
            except redis.exceptions.ResponseError as e:
                replies.append(e)
    except BaseException:
        await conn.disconnect()
        raise
    finally:
        await pool.release(conn)
    if not transaction:
        return replies
    queued, executed = replies[1:-1], replies[-1]
    if isinstance(executed, Exception):  # EXECABORT: say which command was refused
        raise next((e for e in queued if isinstance(e, Exception)), executed)
    return list(executed)


def _redis_write_documents(
    saver: Any,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    *,
    storage_safe_ids: bool,
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Upstream's write documents, one ``JSON.SET`` each, and their keys, in order.

    The full saver stores the ids through upstream's storage-safe escaping; the shallow one
    stores them as given (``storage_safe_ids``), as their upstream classes do.
    """
    import orjson
    from langgraph.checkpoint.base import WRITES_IDX_MAP
    from langgraph.checkpoint.redis.util import to_storage_safe_id, to_storage_safe_str

    thread_id = config["configurable"]["thread_id"]
    checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
    checkpoint_id = config["configurable"]["checkpoint_id"]
    ids = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
    if storage_safe_ids:
        ids = {
            "thread_id": to_storage_safe_id(thread_id),
            "checkpoint_ns": to_storage_safe_str(checkpoint_ns),
            "checkpoint_id": to_storage_safe_id(checkpoint_id),
        }
    commands: list[tuple[Any, ...]] = []
    keys: list[str] = []
    for idx, (channel, value) in enumerate(writes):
        type_, blob = saver.serde.dumps_typed(value)
        doc = {
            **ids,
            "task_id": task_id,
            "task_path": task_path,
            "idx": WRITES_IDX_MAP.get(channel, idx),
            "channel": channel,
            "type": type_,
            "blob": saver._encode_blob(blob),
        }
        key = saver._make_redis_checkpoint_writes_key_cached(
            thread_id, checkpoint_ns, checkpoint_id, task_id, doc["idx"]
        )
        commands.append(("JSON.SET", key, "$", orjson.dumps(doc)))
        keys.append(key)
    return commands, keys


def _redis_zadd_in_order(zset_key: str, keys: Sequence[str]) -> tuple[Any, ...]:
    """The key registry's entry: each write key ranked by its position (upstream's ZADD)."""
    ranks = {key: idx for idx, key in enumerate(keys)}
    return ("ZADD", zset_key, *[x for kv in ranks.items() for x in kv[::-1]])


async def _redis_writes_pipeline(
    saver: Any, commands: list[tuple[Any, ...]], expires: list[str]
) -> list[Any]:
    """One round trip: the write commands, then best-effort EXPIREs (failures ignored).

    Returns the write commands' results, errors included, for the caller to judge as
    upstream does.
    """
    ttl = _redis_ttl_seconds(saver)
    if ttl is not None:
        commands = [*commands, *(("EXPIRE", key, ttl) for key in expires)]
    results = await _redis_round_trip(saver, commands)
    return results[: len(results) - (len(expires) if ttl is not None else 0)]


#: ``aput`` on the server: store the checkpoint document, then point the thread's
#: latest-checkpoint key at it and set both TTLs. One atomic command, and the pointer moves
#: only once the document is stored (a failing JSON.SET stops the script), which upstream gets
#: from two round trips.
_REDIS_PUT_SCRIPT = b"""\
redis.call('JSON.SET', KEYS[1], '$', ARGV[1])
redis.call('SET', KEYS[2], KEYS[1])
if ARGV[2] ~= '' then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return 1
"""
_REDIS_PUT_SHA = hashlib.sha1(_REDIS_PUT_SCRIPT).hexdigest()


async def _redis_put_checkpoint(
    saver: Any, key: str, latest: str, document: bytes, ttl: int | None
) -> None:
    """Run :data:`_REDIS_PUT_SCRIPT` (by its SHA; the body once after a restart flushed it)."""
    import redis.exceptions

    args = (2, key, latest, document, "" if ttl is None else ttl)
    [reply] = await _redis_round_trip(saver, [("EVALSHA", _REDIS_PUT_SHA, *args)])
    if isinstance(reply, redis.exceptions.NoScriptError):
        [reply] = await _redis_round_trip(saver, [("EVAL", _REDIS_PUT_SCRIPT, *args)])
    if isinstance(reply, Exception):
        raise reply


def _raise_first_error(results: Sequence[Any]) -> None:
    for result in results:
        if isinstance(result, Exception):
            raise result


class _RedisOneTrip(BaseCheckpointSaver[Any]):
    """``AsyncRedisSaver`` writes in one round trip each, wire-compatible with upstream.

    Upstream's ``aput`` stores the checkpoint through RedisVL (a pipeline of one JSON.SET),
    then sets the thread's latest-checkpoint pointer in a second round trip (and EXPIREs in
    more, with a TTL); redis-py re-encodes every document with the standard ``json`` module
    after the serializer produced it with orjson, and builds a fresh JSON command helper per
    command. Here the same documents under the same keys go out as orjson bytes (the
    checkpoint spliced from the serializer's output rather than parsed and encoded again):
    ``aput`` as one server-side script (checkpoint, then pointer, then TTLs: atomic, the
    pointer only after the document, acknowledged before it returns), ``aput_writes`` in one
    pipelined write (write documents, the checkpoint's ``has_writes`` flag, the key registry,
    TTLs). Upstream's readers, indexes, ``alist``, ``adelete_thread`` and TTL refresh work
    unchanged. Cluster mode keeps upstream's path.
    """

    def _checkpoint_doc(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        interrupted: bool = False,
    ) -> tuple[dict[str, Any], str, RunnableConfig]:
        """The document, key and returned config of upstream's ``aput`` (or its variant
        written when a save is cancelled)."""
        import time

        from langgraph.checkpoint.redis.util import to_storage_safe_id, to_storage_safe_str

        saver: Any = self
        configurable = dict(config["configurable"])
        run_id = configurable.pop("run_id", metadata.get("run_id"))
        thread_id = configurable.pop("thread_id")
        checkpoint_ns = configurable.pop("checkpoint_ns")
        config_checkpoint_id = configurable.pop("checkpoint_id", None)
        thread_ts = configurable.pop("thread_ts", "")
        checkpoint_id = config_checkpoint_id or thread_ts or checkpoint.get("id", "")
        parent_checkpoint_id = None
        if (
            checkpoint.get("id")
            and config_checkpoint_id
            and checkpoint.get("id") != config_checkpoint_id
        ):
            parent_checkpoint_id = config_checkpoint_id
            checkpoint_id = checkpoint["id"]
        doc: dict[str, Any] = {
            "thread_id": to_storage_safe_id(thread_id),
            "run_id": to_storage_safe_id(run_id) if run_id else "",
            "checkpoint_ns": to_storage_safe_str(checkpoint_ns),
            "checkpoint_id": to_storage_safe_id(checkpoint_id),
        }
        if interrupted:
            parent = checkpoint.get("parent_checkpoint_id")
            doc["parent_checkpoint_id"] = to_storage_safe_id(str(parent)) if parent else ""
            doc["checkpoint"] = saver._dump_checkpoint(checkpoint.copy())
            doc["metadata"] = saver._dump_metadata(
                {**metadata, "interrupted": True, "stream_mode": "values"}
            )
            doc["has_writes"] = False
        else:
            doc["parent_checkpoint_id"] = (
                to_storage_safe_id(parent_checkpoint_id) if parent_checkpoint_id else ""
            )
            doc["checkpoint_ts"] = (
                _redis_checkpoint_ts(checkpoint_id, lambda: time.time() * 1000)
                if checkpoint_id
                else None
            )
            doc["checkpoint"] = _redis_checkpoint_json(saver, checkpoint)
            doc["metadata"] = saver._dump_metadata(metadata)
            doc["has_writes"] = False
            if "source" in metadata and "step" in metadata:
                doc["source"] = metadata["source"]
                doc["step"] = metadata["step"]
        key = saver._make_redis_checkpoint_key_cached(thread_id, checkpoint_ns, checkpoint_id)
        next_config: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
        }
        return doc, key, next_config

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saver: Any = self
        if saver.cluster_mode:
            return await super().aput(config, checkpoint, metadata, new_versions)
        import orjson

        doc, key, next_config = self._checkpoint_doc(config, checkpoint, metadata)
        configurable = next_config["configurable"]
        latest = saver._make_redis_checkpoint_latest_key(
            configurable["thread_id"], configurable["checkpoint_ns"]
        )
        try:
            await _redis_put_checkpoint(
                saver, key, latest, orjson.dumps(doc), _redis_ttl_seconds(saver)
            )
        except asyncio.CancelledError:
            # As upstream: a cancelled save still stores the checkpoint, marked interrupted.
            with contextlib.suppress(Exception):
                doc, key, _ = self._checkpoint_doc(config, checkpoint, metadata, interrupted=True)
                await saver._redis.execute_command("JSON.SET", key, "$", orjson.dumps(doc))
                await saver._apply_ttl_to_keys(key)
            raise
        return next_config

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        saver: Any = self
        if not writes:
            return
        if saver.cluster_mode:
            await super().aput_writes(config, writes, task_id, task_path)
            return
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = config["configurable"]["checkpoint_id"]
        commands, keys = _redis_write_documents(
            saver, config, writes, task_id, task_path, storage_safe_ids=True
        )
        checkpoint_key = saver._make_redis_checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
        commands.append(("JSON.MERGE", checkpoint_key, "$", b'{"has_writes":true}'))
        expires = list(keys)
        if saver._key_registry:
            zset_key = saver._key_registry.make_write_keys_zset_key(
                thread_id, checkpoint_ns, checkpoint_id
            )
            commands.append(_redis_zadd_in_order(zset_key, keys))
            expires.append(zset_key)
        merge_failed = False
        for result in await _redis_writes_pipeline(saver, commands, expires):
            if isinstance(result, Exception):
                if "JSON.MERGE" in str(result) or "merge" in str(result).lower():
                    merge_failed = True
                else:
                    raise result
        if merge_failed:
            # Upstream's fallback for a RedisJSON without JSON.MERGE.
            with contextlib.suppress(Exception):
                data = await saver._redis.json().get(checkpoint_key)
                if isinstance(data, dict) and not data.get("has_writes"):
                    data["has_writes"] = True
                    await saver._redis.json().set(checkpoint_key, "$", data)


class _ShallowRedisOneTrip(BaseCheckpointSaver[Any]):
    """``AsyncShallowRedisSaver`` writes in one round trip each, wire-compatible.

    As :class:`_RedisOneTrip`: upstream's documents and keys, encoded once with orjson; the
    checkpoint in one JSON.SET (with a TTL, JSON.SET and EXPIRE in one MULTI/EXEC), the
    writes with their registry entry and TTLs in one pipeline.
    """

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        import orjson
        from langgraph.checkpoint.redis.util import to_storage_safe_id

        saver: Any = self
        configurable = dict(config["configurable"])
        run_id = configurable.pop("run_id", metadata.get("run_id"))
        thread_id = configurable.pop("thread_id")
        checkpoint_ns = configurable.pop("checkpoint_ns")
        checkpoint_ts = None
        if checkpoint["id"]:
            checkpoint_ts = _redis_checkpoint_ts(
                checkpoint["id"], lambda: saver._extract_fallback_timestamp(checkpoint)
            )
        copy = checkpoint.copy()
        copy["channel_values"] = checkpoint.get("channel_values", {})
        doc = {
            "thread_id": thread_id,
            "run_id": to_storage_safe_id(run_id) if run_id else "",
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "checkpoint_ts": checkpoint_ts,
            "checkpoint": _redis_checkpoint_json(saver, copy),
            "metadata": saver._dump_metadata(metadata),
        }
        if "source" in metadata and "step" in metadata:
            doc["source"] = metadata["source"]
            doc["step"] = metadata["step"]
        key = saver._make_shallow_redis_checkpoint_key_cached(thread_id, checkpoint_ns)
        ttl = _redis_ttl_seconds(saver)
        if ttl is None:
            await saver._redis.execute_command("JSON.SET", key, "$", orjson.dumps(doc))
        else:
            commands = [("JSON.SET", key, "$", orjson.dumps(doc)), ("EXPIRE", key, ttl)]
            _raise_first_error(await _redis_round_trip(saver, commands, transaction=True))
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        from langgraph.checkpoint.redis.util import to_storage_safe_str

        saver: Any = self
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        commands, keys = _redis_write_documents(
            saver, config, writes, task_id, task_path, storage_safe_ids=False
        )
        zset_key = f"write_keys_zset:{thread_id}:{to_storage_safe_str(checkpoint_ns)}:shallow"
        commands.append(_redis_zadd_in_order(zset_key, keys))
        for result in await _redis_writes_pipeline(saver, commands, [*keys, zset_key]):
            if isinstance(result, Exception):
                raise result


@asynccontextmanager
async def _redis_saver(spec: CheckpointerURL, *, setup: bool) -> AsyncIterator[Any]:
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver
    from langgraph.checkpoint.redis.ashallow import AsyncShallowRedisSaver

    from memory.serde import strict_redis_serializer

    # Upstream's aput takes an extra stream_mode argument that LangGraph never passes.
    class RedisSaver(_Guarded, _RedisOneTrip, AsyncRedisSaver):  # type: ignore[misc]
        """LangGraph's async Redis saver, writing in one round trip per call; connection
        failures name the URL."""

        shallow = False

    class ShallowRedisSaver(_Guarded, _ShallowRedisOneTrip, AsyncShallowRedisSaver):
        """The latest checkpoint per thread only; asking for an older one is an error.

        Upstream answers any checkpoint id with the latest checkpoint, which would make a
        "fork from an earlier checkpoint" silently fork from the latest one instead.
        """

        shallow = True

        async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
            found = await super().aget_tuple(config)
            wanted = config["configurable"].get("checkpoint_id")
            if (
                wanted
                and found is not None
                and found.config["configurable"]["checkpoint_id"] != wanted
            ):
                raise CheckpointHistoryUnavailableError(self._display_url, str(wanted))
            return found

        async def adelete_thread(self, thread_id: str) -> None:
            await super().adelete_thread(thread_id)
            # Upstream rebuilds the checkpoint key with the default prefix, so under a custom
            # prefix the checkpoint survived: delete whatever the indexes still hold.
            from langgraph.checkpoint.redis.util import to_storage_safe_id
            from redisvl.query import FilterQuery
            from redisvl.query.filter import Tag

            for index in (self.checkpoints_index, self.checkpoint_writes_index):
                query = FilterQuery(
                    filter_expression=Tag("thread_id") == to_storage_safe_id(thread_id),
                    return_fields=["thread_id"],
                    num_results=10000,
                )
                with self._guard():
                    found = await index.search(query)
                    keys = [doc.id for doc in found.docs]
                    if keys:
                        await self._redis.delete(*keys)

    kwargs: dict[str, Any] = {}
    prefix = spec.options.get("prefix")
    if prefix:
        kwargs["checkpoint_prefix"] = f"{prefix}:checkpoint"
        kwargs["checkpoint_write_prefix"] = f"{prefix}:checkpoint_write"
    if spec.options.get("ttl"):
        minutes = parse_duration_minutes(spec.options["ttl"], what="ttl in the Redis URL")
        kwargs["ttl"] = {"default_ttl": minutes, "refresh_on_read": True}
    cls = ShallowRedisSaver if spec.backend == "redis+shallow" else RedisSaver
    saver: Any = cls(
        redis_url=spec.target,
        connection_args={"socket_connect_timeout": 5, "socket_timeout": 30},
        **kwargs,
    )
    saver._display_url = spec.display
    saver.serde = strict_redis_serializer()
    try:
        try:
            await saver._redis.ping()
        except _unavailable_types() as e:
            raise CheckpointerUnavailableError(spec.display, _reason(e)) from e
        if setup:
            await _redis_setup(spec, saver)
        yield saver
    finally:
        await saver._redis.aclose()


async def _redis_modules(saver: Any) -> set[str] | None:
    """Names of the loaded modules, or None when MODULE LIST is not permitted."""
    import redis.exceptions

    try:
        listed = await saver._redis.module_list()
    except redis.exceptions.ResponseError:
        return None
    names = set()
    for item in listed:
        name = item.get(b"name", item.get("name", b""))
        names.add(name.decode() if isinstance(name, bytes) else str(name))
    return names


_REQUIRED_MODULES = {"ReJSON": "RedisJSON (ReJSON)", "search": "RediSearch (search)"}


async def _redis_require_modules(spec: CheckpointerURL, saver: Any) -> None:
    modules = await _redis_modules(saver)
    if modules is not None:
        missing = [label for name, label in _REQUIRED_MODULES.items() if name not in modules]
        if missing:
            raise CheckpointerModulesMissingError(spec.display, missing)


async def _redis_setup(spec: CheckpointerURL, saver: Any) -> None:
    import redis.exceptions

    await _redis_require_modules(spec, saver)
    try:
        await saver.asetup()
    except redis.exceptions.ResponseError as e:
        if "unknown command" in str(e).lower():
            raise CheckpointerModulesMissingError(
                spec.display, list(_REQUIRED_MODULES.values())
            ) from e
        raise


async def _redis_indexes(saver: Any) -> set[str]:
    names = await saver._redis.execute_command("FT._LIST")
    return {n.decode() if isinstance(n, bytes) else str(n) for n in names}


# -- encryption -------------------------------------------------------------------------------


class SealedSaver(BaseCheckpointSaver[Any]):
    """Wraps any saver so that channel values and pending writes are stored sealed.

    Everything else (ids, versions, metadata, parent links) passes through, so listing,
    history, time travel, deletion and retention work exactly as on the wrapped saver.
    """

    def __init__(self, inner: BaseCheckpointSaver[Any], cipher: ValueCipher) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.cipher = cipher

    @property
    def config_specs(self) -> list[Any]:
        return self.inner.config_specs

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)

    def _seal(self, checkpoint: Checkpoint) -> Checkpoint:
        values = {k: self.cipher.seal(v) for k, v in checkpoint["channel_values"].items()}
        return {**checkpoint, "channel_values": values}

    def _open(self, item: CheckpointTuple | None) -> CheckpointTuple | None:
        if item is None:
            return None
        cp = item.checkpoint
        values = {k: self.cipher.open(v) for k, v in cp["channel_values"].items()}
        writes = None
        if item.pending_writes is not None:
            writes = [(t, c, self.cipher.open(v)) for t, c, v in item.pending_writes]
        return item._replace(checkpoint={**cp, "channel_values": values}, pending_writes=writes)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._open(await self.inner.aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            opened = self._open(item)
            assert opened is not None
            yield opened

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.inner.aput(config, self._seal(checkpoint), metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        sealed = [(channel, self.cipher.seal(value)) for channel, value in writes]
        await self.inner.aput_writes(config, sealed, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)

    # Sync variants, for savers that offer them.
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._open(self.inner.get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for item in self.inner.list(config, filter=filter, before=before, limit=limit):
            opened = self._open(item)
            assert opened is not None
            yield opened

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.inner.put(config, self._seal(checkpoint), metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        sealed = [(channel, self.cipher.seal(value)) for channel, value in writes]
        self.inner.put_writes(config, sealed, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)
