"""The Postgres fact ledger's reads: one server-side prepared statement per read, run on a
pooled connection whose session is set to the reader.

A read borrows a connection, sets the session's reader (tenant, user, and whether an admin
asked for another user's personal attributes: what row security reads) when the connection's
last reader differs, and runs its statement prepared on that connection, through libpq
(``pgconn.exec_prepared``; async: ``send_query_prepared`` and a wait on the socket) with
binary results loaded by psycopg's loaders. psycopg's cursor, query conversion and generic
wait cost about 50 us a read on a slow loopback (a third of a read); this path gives the
same rows.

Both the reader and the prepared statements live in the server's session, which a pool's reset
(``DISCARD ALL``) or ``DEALLOCATE ALL`` clears without the store knowing: a statement found
missing (SQLSTATE 26000) means the session was reset, so the reader is set again and every
statement prepared again before the read runs once more. A session whose settings were reset
but not its statements (``RESET ALL``) reads nothing (row security without a tenant shows no
row): it fails closed, never as another principal.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import psycopg
from psycopg import abc, pq
from psycopg.adapt import PyFormat, Transformer

from memory.facts.postgres_ops import (
    GRANTS_OF,
    HISTORY,
    LAST_FROM,
    OPEN_FACT,
    PROFILE,
    RELATED,
    SET_SESSION_READER,
    grants_and_answer,
    grants_and_query,
    record_of,
)
from memory.facts.records import FactRecord
from memory.facts.rules import NOT_READ, Key, Request

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    from memory.errors import FactLedgerUnavailableError
    from memory.identity import Principal
    from memory.sealing import MemoryCipher

#: The reader a session is set to: tenant, user, personal ("on" / "off").
Reader = tuple[str, str, str]
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s")
_BINARY = pq.Format.BINARY
_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
#: SQLSTATE invalid_sql_statement_name: the statement is not prepared on this session.
_NOT_PREPARED = b"26000"
#: SQLSTATE duplicate_prepared_statement.
_PREPARED_ALREADY = b"42P05"


@dataclass(frozen=True)
class Statement:
    """A read's SQL with ``$n`` placeholders, the name it is prepared under and, for SQL with
    named placeholders, the names in ``$n`` order."""

    name: bytes
    sql: bytes
    names: tuple[str, ...] | None

    def values(self, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
        if self.names is None:
            return list(params)
        return [params[n] for n in self.names]  # type: ignore[call-overload]


_statements: dict[str, Statement] = {}


def statement(sql: str) -> Statement:
    """``sql`` (psycopg placeholders: all ``%s`` or all ``%(name)s``) as a :class:`Statement`."""
    found = _statements.get(sql)
    if found is not None:
        return found
    names: list[str] = []
    positional = 0

    def number(match: re.Match[str]) -> str:
        nonlocal positional
        if match.group(1) is None:
            positional += 1
            return f"${positional}"
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    text = _PLACEHOLDER.sub(number, sql)
    if names and positional:
        raise ValueError("a read's SQL mixes %s and %(name)s placeholders")
    name = b"analyst_facts_" + hashlib.sha1(text.encode()).hexdigest()[:16].encode()
    found = Statement(name, text.encode(), tuple(names) if names else None)
    _statements[sql] = found
    return found


_SET_READER = statement(SET_SESSION_READER)


@dataclass
class Session:
    """What the store has set up in one pooled connection's server session."""

    transformer: abc.Transformer
    reader: Reader | None = None
    prepared: set[bytes] = field(default_factory=set)

    def reset(self) -> None:
        """The server session was found reset: nothing of it is known any more."""
        self.reader = None
        self.prepared.clear()


#: Per pooled connection (both pools of an opened ledger), its :class:`Session`.
Sessions = weakref.WeakKeyDictionary[Any, Session]


def _session(sessions: Sessions, conn: Any) -> Session:
    found = sessions.get(conn)
    if found is None:
        found = sessions[conn] = Session(Transformer(conn))
    return found


def _encoded(session: Session, values: Sequence[Any]) -> list[Any]:
    return list(session.transformer.dump_sequence(values, [PyFormat.TEXT] * len(values)))


def _checked(conn: Any, result: pq.abc.PGresult | None) -> pq.abc.PGresult:
    """``result`` if it succeeded; else the error psycopg raises for it (a lost connection as
    :class:`psycopg.OperationalError`, which the callers retry once on a fresh one)."""
    if result is not None and result.status in _OK:
        return result
    if conn.pgconn.status == pq.ConnStatus.BAD or result is None:
        message = conn.pgconn.get_error_message() or b"the connection is lost"
        raise psycopg.OperationalError(message.decode("utf-8", "replace").strip())
    raise psycopg.errors.error_from_result(result, encoding=conn.info.encoding)


def _missing(result: pq.abc.PGresult | None) -> bool:
    return (
        result is not None
        and result.status == pq.ExecStatus.FATAL_ERROR
        and result.error_field(pq.DiagnosticField.SQLSTATE) == _NOT_PREPARED
    )


def _prepared(conn: Any, result: pq.abc.PGresult | None) -> None:
    """Check a ``PREPARE``'s result: one already there under the name is the same statement
    (the name is its text's hash), prepared before the session's record of it was lost."""
    if result is None or result.error_field(pq.DiagnosticField.SQLSTATE) != _PREPARED_ALREADY:
        _checked(conn, result)


def _rows(session: Session, result: pq.abc.PGresult) -> list[tuple[Any, ...]]:
    transformer = session.transformer
    transformer.set_pgresult(result)
    try:
        return transformer.load_rows(0, result.ntuples, tuple)
    finally:
        transformer.set_pgresult(None)


def run_sync(
    conn: psycopg.Connection[Any],
    session: Session,
    reader: Reader,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any],
) -> list[tuple[Any, ...]]:
    """``sql`` as ``reader`` on ``conn``, blocking: set the reader and prepare the statement
    first where this session lacks them; once more from scratch if the session was reset."""
    pgconn = conn.pgconn
    stmt = statement(sql)
    values = _encoded(session, stmt.values(params))
    for attempt in (1, 2):
        if session.reader != reader:
            session.reader = None
            _checked(conn, pgconn.exec_params(_SET_READER.sql, _encoded(session, reader)))
            session.reader = reader
        if stmt.name not in session.prepared:
            _prepared(conn, pgconn.prepare(stmt.name, stmt.sql))
            session.prepared.add(stmt.name)
        result = pgconn.exec_prepared(stmt.name, values, result_format=_BINARY)
        if attempt == 1 and _missing(result):
            session.reset()  # DEALLOCATE ALL or DISCARD ALL ran on this session
            continue
        return _rows(session, _checked(conn, result))
    raise AssertionError("unreachable")  # pragma: no cover


async def _result(conn: psycopg.AsyncConnection[Any]) -> pq.abc.PGresult | None:
    """The last result of what was sent on ``conn``, waiting on its socket in the loop.

    Cancelled while the statement is on the server (a caller's timeout), it first waits out
    the answer, as psycopg does: the connection goes back to the pool idle, its session and
    statements kept, instead of busy (which the pool would close)."""
    try:
        return await _results(conn)
    except asyncio.CancelledError:
        await _results(conn)
        raise


async def _results(conn: psycopg.AsyncConnection[Any]) -> pq.abc.PGresult | None:
    pgconn = conn.pgconn
    loop = asyncio.get_running_loop()
    fd = pgconn.socket
    while pgconn.flush():
        await _ready(loop, fd, write=True)
    last = None
    while True:
        pgconn.consume_input()
        while pgconn.is_busy():
            await _ready(loop, fd, write=False)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            return last
        last = result


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, *, write: bool) -> None:
    ready = loop.create_future()
    if write:
        loop.add_writer(fd, ready.set_result, None)
    else:
        loop.add_reader(fd, ready.set_result, None)
    try:
        await ready
    finally:
        if write:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)


async def run_async(
    conn: psycopg.AsyncConnection[Any],
    session: Session,
    reader: Reader,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any],
) -> list[tuple[Any, ...]]:
    """:func:`run_sync` without blocking the loop."""
    pgconn = conn.pgconn
    stmt = statement(sql)
    values = _encoded(session, stmt.values(params))
    for attempt in (1, 2):
        if session.reader != reader:
            session.reader = None
            pgconn.send_query_params(_SET_READER.sql, _encoded(session, reader))
            _checked(conn, await _result(conn))
            session.reader = reader
        if stmt.name not in session.prepared:
            pgconn.send_prepare(stmt.name, stmt.sql)
            _prepared(conn, await _result(conn))
            session.prepared.add(stmt.name)
        pgconn.send_query_prepared(stmt.name, values, result_format=_BINARY)
        result = await _result(conn)
        if attempt == 1 and _missing(result):
            session.reset()
            continue
        return _rows(session, _checked(conn, result))
    raise AssertionError("unreachable")  # pragma: no cover


class SharedPools(Protocol):
    """What the reads use of the pools every view of one ledger shares (the store's
    ``_shared``)."""

    @property
    def sessions(self) -> Sessions: ...

    def sync_pool(self) -> ConnectionPool[Any]: ...


class ReadingStore(Protocol):
    """What the reads use of the store they read for
    (:class:`memory.facts.postgres.PostgresFactStore`, which imports this module)."""

    @property
    def cipher(self) -> MemoryCipher: ...

    @property
    def _principal(self) -> Principal | None: ...

    @property
    def _shared(self) -> SharedPools: ...

    @property
    def _pool(self) -> AsyncConnectionPool[Any]: ...

    def _unavailable(self, error: Exception) -> FactLedgerUnavailableError: ...


class AsyncReads:
    """:class:`memory.facts.base.ReadOps` over the async pool: one statement per read, as the
    store's principal (``personal``: an admin asked for another user's personal attributes)."""

    def __init__(self, store: ReadingStore, personal: bool = False) -> None:
        self._store = store
        self._personal = personal

    def _reader(self, tenant_id: str) -> Reader:
        principal = self._store._principal
        user = "" if principal is None else principal.user_id
        return (tenant_id, user, "on" if self._personal else "off")

    async def _rows(self, tenant_id: str, sql: str, params: Any) -> list[tuple[Any, ...]]:
        sessions = self._store._shared.sessions
        reader = self._reader(tenant_id)
        for attempt in (1, 2):
            conn: psycopg.AsyncConnection[Any] | None = None
            pool = self._store._pool
            try:
                # getconn / putconn, not connection(): a read in autocommit has no transaction
                # to end, and the context managers cost a few us a read.
                conn = await pool.getconn()
                try:
                    return await run_async(conn, _session(sessions, conn), reader, sql, params)
                finally:
                    await pool.putconn(conn)
            except psycopg.OperationalError as e:
                if attempt == 1 and conn is not None and conn.broken:
                    continue  # a pooled connection the server dropped: once more, afresh
                raise self._store._unavailable(e) from e
        raise AssertionError("unreachable")  # pragma: no cover

    async def open_fact(self, key: Key) -> FactRecord | None:
        rows = await self._rows(key[0], OPEN_FACT, key)
        return record_of(rows[0], self._store.cipher) if rows else None

    async def last_from(self, key: Key, at: datetime) -> FactRecord | None:
        rows = await self._rows(key[0], LAST_FROM, (*key, at))
        return record_of(rows[0], self._store.cipher) if rows else None

    async def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]:
        params = {"tenant": tenant_id, "subject": subject, "at": at}
        rows = await self._rows(tenant_id, PROFILE, params)
        return [record_of(row, self._store.cipher) for row in rows]

    async def history(self, key: Key) -> list[FactRecord]:
        rows = await self._rows(key[0], HISTORY, key)
        return [record_of(row, self._store.cipher) for row in rows]

    async def related(
        self, tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> list[FactRecord]:
        params = (tenant_id, subject, list(ids), list(episodes), list(episodes))
        rows = await self._rows(tenant_id, RELATED, params)
        return [record_of(row, self._store.cipher) for row in rows]

    async def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        rows = await self._rows(tenant_id, GRANTS_OF, (tenant_id, user_id))
        return [(r[0], r[1]) for r in rows]

    async def grants_and(
        self, tenant_id: str, user_id: str, request: Request
    ) -> tuple[list[tuple[str, str]], Any]:
        """The grants and ``request``'s answer in one statement, row security limiting the
        seek; an admin's audited read of personal data makes its seek only once allowed."""
        query = None if self._personal else grants_and_query(tenant_id, user_id, request)
        if query is None:
            return await self.grants(tenant_id, user_id), NOT_READ
        sql, params, one = query
        return grants_and_answer(await self._rows(tenant_id, sql, params), one, self._store.cipher)


class SyncReads:
    """The same reads over a blocking pool, opened on first use."""

    def __init__(self, store: ReadingStore, personal: bool = False) -> None:
        self._store = store
        self._personal = personal

    def _rows(self, tenant_id: str, sql: str, params: Any) -> list[tuple[Any, ...]]:
        shared = self._store._shared
        principal = self._store._principal
        user = "" if principal is None else principal.user_id
        reader = (tenant_id, user, "on" if self._personal else "off")
        for attempt in (1, 2):
            conn: psycopg.Connection[Any] | None = None
            pool = shared.sync_pool()
            try:
                conn = pool.getconn()
                try:
                    return run_sync(conn, _session(shared.sessions, conn), reader, sql, params)
                finally:
                    pool.putconn(conn)
            except psycopg.OperationalError as e:
                if attempt == 1 and conn is not None and conn.broken:
                    continue  # a pooled connection the server dropped: once more, afresh
                raise self._store._unavailable(e) from e
        raise AssertionError("unreachable")  # pragma: no cover

    def open_fact(self, key: Key) -> FactRecord | None:
        rows = self._rows(key[0], OPEN_FACT, key)
        return record_of(rows[0], self._store.cipher) if rows else None

    def last_from(self, key: Key, at: datetime) -> FactRecord | None:
        rows = self._rows(key[0], LAST_FROM, (*key, at))
        return record_of(rows[0], self._store.cipher) if rows else None

    def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]:
        params = {"tenant": tenant_id, "subject": subject, "at": at}
        rows = self._rows(tenant_id, PROFILE, params)
        return [record_of(row, self._store.cipher) for row in rows]

    def history(self, key: Key) -> list[FactRecord]:
        rows = self._rows(key[0], HISTORY, key)
        return [record_of(row, self._store.cipher) for row in rows]

    def related(
        self, tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> list[FactRecord]:
        params = (tenant_id, subject, list(ids), list(episodes), list(episodes))
        rows = self._rows(tenant_id, RELATED, params)
        return [record_of(row, self._store.cipher) for row in rows]

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        rows = self._rows(tenant_id, GRANTS_OF, (tenant_id, user_id))
        return [(r[0], r[1]) for r in rows]

    def grants_and(
        self, tenant_id: str, user_id: str, request: Request
    ) -> tuple[list[tuple[str, str]], Any]:
        query = None if self._personal else grants_and_query(tenant_id, user_id, request)
        if query is None:
            return self.grants(tenant_id, user_id), NOT_READ
        sql, params, one = query
        return grants_and_answer(self._rows(tenant_id, sql, params), one, self._store.cipher)
