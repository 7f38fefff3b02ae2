"""SQLite backend of the memory journal: tables in the fact ledger's own file.

``SqliteJournal.open(path, principal)`` is an async context manager. It opens the file the way
the fact ledger does (same connection settings, WAL journal, 30 s busy timeout) and applies
the ledger's pending migrations, so opening the journal first on a fresh file creates the
whole schema; it yields the journal and closes the connection on exit.

Every call runs on a worker thread (``asyncio.to_thread``), one at a time per opened file (a
lock around its one connection): an API server's event loop (``langgraph dev``) refuses
blocking calls. Each call is one transaction: a read is a deferred ``BEGIN`` (one snapshot
for all its statements), a write ``BEGIN IMMEDIATE`` (the write lock is taken before anything
is read, so two claimers -- coroutines, connections or processes -- never take one job).

Times are fixed-width ISO-8601 UTC text, as in ``facts``; JSON is text. Tenancy is a
``tenant_id = ? AND user_id = ?`` in every statement (SQLite has no row security). Episodes
are immutable in the file itself: a trigger aborts any ``UPDATE`` of them.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Self, TypeVar

from memory.errors import (
    CandidateNotFoundError,
    FactLedgerUnavailableError,
    JournalError,
    JournalUnavailableError,
)

# The ledger file's own connection settings and migration step, so that the journal and the
# fact store open one file identically (whichever of them opens it first).
from memory.facts.sqlite import _connect, _prepare, _prepare_folder, encode_time
from memory.identity import Principal
from memory.journal import rules
from memory.journal.base import Journal, _system_clock
from memory.journal.records import (
    Candidate,
    CandidateKind,
    CandidateStatus,
    Episode,
    ExtractionJob,
    JobKind,
    JobStatus,
    Procedure,
    SessionSummary,
)
from memory.journal.rows import (
    CANDIDATE_COLUMNS,
    CANDIDATE_STATE_COLUMNS,
    EPISODE_COLUMNS,
    JOB_COLUMNS,
    JOB_STATE_COLUMNS,
    PROCEDURE_COLUMNS,
    PROCEDURE_STATE_COLUMNS,
    SUMMARY_COLUMNS,
    Codec,
    columns,
)

T = TypeVar("T")

CODEC = Codec(
    time_in=encode_time,
    time_out=datetime.fromisoformat,
    json_in=lambda value: rules.json_text(value, "a JSON column"),
    json_out=json.loads,
)

_MINE = "tenant_id = ? AND user_id = ?"


def _insert(table: str, names: Sequence[str]) -> str:
    marks = ", ".join("?" * len(names))
    return f"INSERT INTO {table} ({columns(names)}) VALUES ({marks}) ON CONFLICT DO NOTHING"


def _select(table: str, names: Sequence[str], key: str) -> str:
    return f"SELECT {columns(names)} FROM {table} WHERE {_MINE} AND {key} = ?"


def _update(table: str, names: Sequence[str], key: str) -> str:
    assignments = ", ".join(f"{name} = ?" for name in names)
    return f"UPDATE {table} SET {assignments} WHERE {_MINE} AND {key} = ?"


_EPISODE = _select("episodes", EPISODE_COLUMNS, "episode_id")
_EPISODES_BY_ID = (
    f"SELECT {columns(EPISODE_COLUMNS)} FROM episodes WHERE {_MINE}"
    " AND episode_id IN (SELECT value FROM json_each(?)) ORDER BY at, episode_id"
)
_JOB = _select("extraction_jobs", JOB_COLUMNS, "job_id")
_JOB_STATE = _update("extraction_jobs", JOB_STATE_COLUMNS, "job_id")
#: The job due longest: pending and due, or running with an expired lease (its worker died).
_NEXT_DUE = f"""
SELECT {columns(JOB_COLUMNS)} FROM extraction_jobs
WHERE {_MINE}
  AND ((status = 'pending' AND next_attempt_at <= ?) OR (status = 'running' AND leased_until <= ?))
ORDER BY CASE status WHEN 'running' THEN leased_until ELSE next_attempt_at END, created_at, job_id
LIMIT 1
"""
_CANDIDATE = _select("memory_candidates", CANDIDATE_COLUMNS, "candidate_id")
_CANDIDATE_STATE = _update("memory_candidates", CANDIDATE_STATE_COLUMNS, "candidate_id")
_SUMMARY_UPDATE = _update("session_summaries", SUMMARY_COLUMNS[3:], "session_id")
_PROCEDURE = _select("procedures", PROCEDURE_COLUMNS, "procedure_id")
_PROCEDURE_STATE = _update("procedures", PROCEDURE_STATE_COLUMNS, "procedure_id")
_IDLE = (
    f"SELECT thread_id, max(at) FROM episodes WHERE {_MINE} GROUP BY thread_id HAVING max(at) < ?"
)
_THREAD_EPISODES = (
    f"SELECT thread_id, episode_id FROM episodes WHERE {_MINE}"
    " AND thread_id IN (SELECT value FROM json_each(?))"
)
_SESSION_END_COVERS = (
    f"SELECT episode_ids FROM extraction_jobs WHERE {_MINE} AND kind = 'session_end'"
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
            _prepare_folder(Path(where))
        conn = _connect(where)
    except (OSError, sqlite3.Error) as e:
        raise _cannot_open(where, e) from e
    try:
        applied = _prepare(conn, where)
    except FactLedgerUnavailableError as e:
        conn.close()
        raise _cannot_open(where, e.__cause__ or e) from e
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


class SqliteJournal(Journal):
    """The memory journal in the fact ledger's SQLite file (see the module docstring)."""

    def __init__(
        self,
        file: _File,
        principal: Principal | None,
        *,
        clock: Callable[[], datetime] = _system_clock,
    ) -> None:
        super().__init__(principal, clock=clock)
        self._file = file

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: Path | str,
        principal: Principal | None = None,
        *,
        clock: Callable[[], datetime] = _system_clock,
    ) -> AsyncIterator[SqliteJournal]:
        """Open (creating and migrating if needed) the ledger file at ``path``; ``:memory:``
        opens a private in-memory database."""
        if principal is not None:
            rules.check_principal(principal)
        where = str(path)
        conn, applied = await asyncio.to_thread(_open_file, where)
        file = _File(where, conn, applied)
        try:
            yield cls(file, principal, clock=clock)
        finally:
            await asyncio.to_thread(file.close)

    @property
    def applied_migrations(self) -> list[int]:
        """Migration versions applied when this journal opened the file (often none)."""
        return list(self._file.applied_migrations)

    def with_principal(self, principal: Principal) -> Self:
        view = copy.copy(self)
        view._principal = rules.check_principal(principal)
        return view

    def _now(self) -> datetime:
        return rules.utc(self.now(), "The journal clock's time")

    def _mine(self) -> tuple[str, str]:
        principal = self.principal
        return principal.tenant_id, principal.user_id

    async def _read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._file.run, body, write=False)

    async def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._file.run, body, write=True)

    # -- episodes -------------------------------------------------------------------------

    async def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        principal = self.principal
        batch = [rules.new_episode(principal, episode) for episode in episodes]
        mine = self._mine()
        insert = _insert("episodes", EPISODE_COLUMNS)

        def body(conn: sqlite3.Connection) -> list[Episode]:
            stored: list[Episode] = []
            for episode in batch:
                conn.execute(insert, CODEC.episode_row(episode))
                row = conn.execute(_EPISODE, (*mine, episode.episode_id)).fetchone()
                if row is None:
                    raise rules.id_taken("episode", episode.episode_id)
                stored.append(rules.same_episode(CODEC.episode(row), episode))
            return stored

        return await self._write(body) if batch else []

    async def episodes(self, episode_ids: Sequence[str]) -> list[Episode]:
        ids = json.dumps(list(rules.id_list(episode_ids, "episode_ids")))
        mine = self._mine()

        def body(conn: sqlite3.Connection) -> list[Episode]:
            rows = conn.execute(_EPISODES_BY_ID, (*mine, ids)).fetchall()
            return [CODEC.episode(row) for row in rows]

        return await self._read(body)

    async def list_episodes(
        self,
        *,
        thread_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[Episode]:
        where: list[str] = [_MINE]
        params: list[Any] = [*self._mine()]
        if thread_id is not None:
            where.append("thread_id = ?")
            params.append(thread_id)
        if since is not None:
            where.append("at >= ?")
            params.append(encode_time(rules.utc(since, "since")))
        if until is not None:
            where.append("at < ?")
            params.append(encode_time(rules.utc(until, "until")))
        params.append(rules.check_limit(limit))
        sql = (
            f"SELECT {columns(EPISODE_COLUMNS)} FROM episodes WHERE {' AND '.join(where)}"
            " ORDER BY at, episode_id LIMIT ?"
        )

        def body(conn: sqlite3.Connection) -> list[Episode]:
            return [CODEC.episode(row) for row in conn.execute(sql, params).fetchall()]

        return await self._read(body)

    # -- extraction jobs ------------------------------------------------------------------

    async def enqueue(
        self, kind: JobKind, thread_id: str, episode_ids: Sequence[str]
    ) -> ExtractionJob:
        job = rules.new_job(self.principal, kind, thread_id, episode_ids, self._now())
        mine = self._mine()
        insert = _insert("extraction_jobs", JOB_COLUMNS)

        def body(conn: sqlite3.Connection) -> ExtractionJob:
            conn.execute(insert, CODEC.job_row(job))
            row = conn.execute(_JOB, (*mine, job.job_id)).fetchone()
            if row is None:
                raise rules.id_taken("job", job.job_id)
            return CODEC.job(row)

        return await self._write(body)

    async def claim(self, *, lease: timedelta = timedelta(minutes=5)) -> ExtractionJob | None:
        rules.check_lease(lease)
        now = self._now()
        mine = self._mine()
        due = encode_time(now)

        def body(conn: sqlite3.Connection) -> ExtractionJob | None:
            while True:
                row = conn.execute(_NEXT_DUE, (*mine, due, due)).fetchone()
                if row is None:
                    return None
                job = rules.claimed(CODEC.job(row), now, lease)
                conn.execute(_JOB_STATE, (*CODEC.job_state(job), *mine, job.job_id))
                if job.status == "running":
                    return job
                # Out of attempts: recorded as failed; look for the next due job.

        return await self._write(body)

    async def _change_job(
        self, job_id: str, change: Callable[[ExtractionJob], ExtractionJob]
    ) -> ExtractionJob:
        mine = self._mine()

        def body(conn: sqlite3.Connection) -> ExtractionJob:
            row = conn.execute(_JOB, (*mine, job_id)).fetchone()
            if row is None:
                raise rules.job_not_found(job_id)
            job = CODEC.job(row)
            changed = change(job)
            if changed is not job:
                conn.execute(_JOB_STATE, (*CODEC.job_state(changed), *mine, job_id))
            return changed

        return await self._write(body)

    async def complete(self, job_id: str, result: Mapping[str, Any]) -> ExtractionJob:
        now = self._now()
        return await self._change_job(job_id, lambda job: rules.completed(job, result, now))

    async def fail(self, job_id: str, error: str) -> ExtractionJob:
        now = self._now()
        return await self._change_job(job_id, lambda job: rules.failed(job, error, now))

    async def jobs(
        self,
        *,
        status: JobStatus | None = None,
        kind: JobKind | None = None,
        thread_id: str | None = None,
        limit: int = 100,
    ) -> list[ExtractionJob]:
        rules.check_job_filters(status, kind)
        where: list[str] = [_MINE]
        params: list[Any] = [*self._mine()]
        for name, value in (("status", status), ("kind", kind), ("thread_id", thread_id)):
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        params.append(rules.check_limit(limit))
        sql = (
            f"SELECT {columns(JOB_COLUMNS)} FROM extraction_jobs WHERE {' AND '.join(where)}"
            " ORDER BY created_at DESC, job_id DESC LIMIT ?"
        )

        def body(conn: sqlite3.Connection) -> list[ExtractionJob]:
            return [CODEC.job(row) for row in conn.execute(sql, params).fetchall()]

        return await self._read(body)

    # -- candidates -----------------------------------------------------------------------

    async def add_candidates(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        principal = self.principal
        batch = [rules.new_candidate(principal, candidate) for candidate in candidates]
        mine = self._mine()
        insert = _insert("memory_candidates", CANDIDATE_COLUMNS)

        def body(conn: sqlite3.Connection) -> list[Candidate]:
            stored: list[Candidate] = []
            for candidate in batch:
                conn.execute(insert, CODEC.candidate_row(candidate))
                row = conn.execute(_CANDIDATE, (*mine, candidate.candidate_id)).fetchone()
                if row is None:
                    raise rules.id_taken("candidate", candidate.candidate_id)
                stored.append(CODEC.candidate(row))
            return stored

        return await self._write(body) if batch else []

    async def candidates(
        self,
        *,
        status: CandidateStatus | None = None,
        kind: CandidateKind | None = None,
        limit: int = 100,
    ) -> list[Candidate]:
        rules.check_candidate_filters(status, kind)
        where: list[str] = [_MINE]
        params: list[Any] = [*self._mine()]
        for name, value in (("status", status), ("kind", kind)):
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        params.append(rules.check_limit(limit))
        sql = (
            f"SELECT {columns(CANDIDATE_COLUMNS)} FROM memory_candidates"
            f" WHERE {' AND '.join(where)} ORDER BY created_at, candidate_id LIMIT ?"
        )

        def body(conn: sqlite3.Connection) -> list[Candidate]:
            return [CODEC.candidate(row) for row in conn.execute(sql, params).fetchall()]

        return await self._read(body)

    async def decide(
        self, candidate_id: str, status: CandidateStatus, reason: str = ""
    ) -> Candidate:
        now = self._now()
        mine = self._mine()

        def body(conn: sqlite3.Connection) -> Candidate:
            row = conn.execute(_CANDIDATE, (*mine, candidate_id)).fetchone()
            if row is None:
                raise CandidateNotFoundError("candidate", candidate_id)
            candidate = rules.decided(CODEC.candidate(row), status, reason, now)
            conn.execute(_CANDIDATE_STATE, (*CODEC.candidate_state(candidate), *mine, candidate_id))
            return candidate

        return await self._write(body)

    # -- sessions and procedures ----------------------------------------------------------

    async def put_summary(self, summary: SessionSummary) -> SessionSummary:
        stored = rules.new_summary(self.principal, summary)
        mine = self._mine()
        insert = _insert("session_summaries", SUMMARY_COLUMNS)
        row = CODEC.summary_row(stored)

        def body(conn: sqlite3.Connection) -> SessionSummary:
            if conn.execute(insert, row).rowcount == 0:
                replaced = conn.execute(_SUMMARY_UPDATE, (*row[3:], *mine, stored.session_id))
                if replaced.rowcount == 0:
                    raise rules.id_taken("session", stored.session_id)
            return stored

        return await self._write(body)

    async def summaries(self, *, limit: int = 5) -> list[SessionSummary]:
        params = (*self._mine(), rules.check_limit(limit))
        sql = (
            f"SELECT {columns(SUMMARY_COLUMNS)} FROM session_summaries WHERE {_MINE}"
            " ORDER BY ended DESC, session_id DESC LIMIT ?"
        )

        def body(conn: sqlite3.Connection) -> list[SessionSummary]:
            return [CODEC.summary(row) for row in conn.execute(sql, params).fetchall()]

        return await self._read(body)

    async def put_procedure(self, procedure: Procedure) -> Procedure:
        new = rules.new_procedure(self.principal, procedure)
        mine = self._mine()
        insert = _insert("procedures", PROCEDURE_COLUMNS)

        def body(conn: sqlite3.Connection) -> Procedure:
            conn.execute(insert, CODEC.procedure_row(new))
            row = conn.execute(_PROCEDURE, (*mine, new.procedure_id)).fetchone()
            if row is None:
                raise rules.id_taken("procedure", new.procedure_id)
            return CODEC.procedure(row)

        return await self._write(body)

    async def procedures(self, *, status: str | None = "active") -> list[Procedure]:
        rules.check_procedure_filter(status)
        where: list[str] = [_MINE]
        params: list[Any] = [*self._mine()]
        if status is not None:
            where.append("status = ?")
            params.append(status)
        sql = (
            f"SELECT {columns(PROCEDURE_COLUMNS)} FROM procedures WHERE {' AND '.join(where)}"
            " ORDER BY confirmed_at, procedure_id"
        )

        def body(conn: sqlite3.Connection) -> list[Procedure]:
            return [CODEC.procedure(row) for row in conn.execute(sql, params).fetchall()]

        return await self._read(body)

    async def retire_procedure(self, procedure_id: str) -> Procedure:
        now = self._now()
        mine = self._mine()

        def body(conn: sqlite3.Connection) -> Procedure:
            row = conn.execute(_PROCEDURE, (*mine, procedure_id)).fetchone()
            if row is None:
                raise CandidateNotFoundError("procedure", procedure_id)
            procedure = CODEC.procedure(row)
            retired = rules.retired(procedure, now)
            if retired is not procedure:
                conn.execute(
                    _PROCEDURE_STATE, (*CODEC.procedure_state(retired), *mine, procedure_id)
                )
            return retired

        return await self._write(body)

    async def idle_threads(self, idle_since: datetime) -> list[str]:
        before = encode_time(rules.utc(idle_since, "idle_since"))
        mine = self._mine()

        def body(conn: sqlite3.Connection) -> list[str]:
            last_at = {
                thread: CODEC.time_out(at)
                for thread, at in conn.execute(_IDLE, (*mine, before)).fetchall()
            }
            if not last_at:
                return []
            episodes = conn.execute(_THREAD_EPISODES, (*mine, json.dumps(list(last_at))))
            covered = (
                json.loads(ids) for (ids,) in conn.execute(_SESSION_END_COVERS, mine).fetchall()
            )
            return rules.uncovered_threads(last_at, episodes.fetchall(), covered)

        return await self._read(body)
