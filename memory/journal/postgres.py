"""Postgres backend of the memory journal: tables beside the facts, row-level security.

The journal's tables live in the fact ledger's ``analyst_facts`` schema and are created by
its migration 5 (``analyst facts setup``, run by the owner; see
:mod:`memory.facts.migrations`). Each has forced row-level security whose policy admits only
rows of ``current_setting('app.tenant_id')`` *and* ``current_setting('app.user_id')``, and the
application role has no UPDATE on ``episodes`` (a trigger refuses it for everyone else).

:meth:`PostgresJournal.open` connects as the application role -- refusing a superuser or
BYPASSRLS role, a schema without migration 5, tables without forced row security, and missing
privileges, each with the fix -- then opens a pool. Every call is one transaction that first
runs ``set_config('app.tenant_id', ..., true), set_config('app.user_id', ..., true)`` for the
view's principal (local to the transaction), and every statement also filters by tenant and
user: a query that forgot the filter would still see only the principal's rows.

``claim`` takes the oldest due job with ``FOR UPDATE SKIP LOCKED``: concurrent workers never
take the same job and never wait for each other. A pooled connection found dropped by the
server before a call did any work is replaced once; later failures are
:class:`~memory.errors.JournalUnavailableError`.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Self, TypeVar

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from memory.errors import (
    CandidateNotFoundError,
    FactLedgerSchemaError,
    JournalUnavailableError,
    UnsafeDatabaseRoleError,
)
from memory.facts.migrations import (
    JOURNAL_IMMUTABLE,
    JOURNAL_TABLES,
    LATEST_VERSION,
    PG_SCHEMA,
    postgres_version,
)
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
from memory.urls import redact

T = TypeVar("T")

#: The migration that created the journal's tables.
JOURNAL_MIGRATION = 5

CODEC = Codec(
    time_in=lambda value: value,
    time_out=lambda value: value.astimezone(UTC),
    json_in=Jsonb,
    json_out=lambda value: value,
)

EPISODES = f"{PG_SCHEMA}.episodes"
JOBS = f"{PG_SCHEMA}.extraction_jobs"
CANDIDATES = f"{PG_SCHEMA}.memory_candidates"
SUMMARIES = f"{PG_SCHEMA}.session_summaries"
PROCEDURES = f"{PG_SCHEMA}.procedures"

#: Row security reads these; local to the transaction that sets them.
_SET_PRINCIPAL = "SELECT set_config('app.tenant_id', %s, true), set_config('app.user_id', %s, true)"
_MINE = "tenant_id = %s AND user_id = %s"


def _insert(table: str, names: Sequence[str]) -> str:
    marks = ", ".join(["%s"] * len(names))
    return f"INSERT INTO {table} ({columns(names)}) VALUES ({marks}) ON CONFLICT DO NOTHING"


def _select(table: str, names: Sequence[str], key: str, *, lock: bool = False) -> str:
    sql = f"SELECT {columns(names)} FROM {table} WHERE {_MINE} AND {key} = %s"
    return sql + " FOR UPDATE" if lock else sql


def _update(table: str, names: Sequence[str], key: str) -> str:
    assignments = ", ".join(f"{name} = %s" for name in names)
    return f"UPDATE {table} SET {assignments} WHERE {_MINE} AND {key} = %s"


_EPISODE = _select(EPISODES, EPISODE_COLUMNS, "episode_id")
_EPISODES_BY_ID = (
    f"SELECT {columns(EPISODE_COLUMNS)} FROM {EPISODES} WHERE {_MINE}"
    " AND episode_id = ANY(%s) ORDER BY at, episode_id"
)
_JOB = _select(JOBS, JOB_COLUMNS, "job_id")
_JOB_FOR_UPDATE = _select(JOBS, JOB_COLUMNS, "job_id", lock=True)
_JOB_STATE = _update(JOBS, JOB_STATE_COLUMNS, "job_id")
#: The job due longest: pending and due, or running with an expired lease (its worker died).
#: A job another worker is claiming right now is skipped, not waited for.
_NEXT_DUE = f"""
SELECT {columns(JOB_COLUMNS)} FROM {JOBS}
WHERE {_MINE}
  AND ((status = 'pending' AND next_attempt_at <= %s)
       OR (status = 'running' AND leased_until <= %s))
ORDER BY CASE status WHEN 'running' THEN leased_until ELSE next_attempt_at END, created_at, job_id
LIMIT 1
FOR UPDATE SKIP LOCKED
"""
_CANDIDATE_FOR_UPDATE = _select(CANDIDATES, CANDIDATE_COLUMNS, "candidate_id", lock=True)
_CANDIDATE = _select(CANDIDATES, CANDIDATE_COLUMNS, "candidate_id")
_CANDIDATE_STATE = _update(CANDIDATES, CANDIDATE_STATE_COLUMNS, "candidate_id")
_SUMMARY_UPDATE = _update(SUMMARIES, SUMMARY_COLUMNS[3:], "session_id")
_PROCEDURE = _select(PROCEDURES, PROCEDURE_COLUMNS, "procedure_id")
_PROCEDURE_FOR_UPDATE = _select(PROCEDURES, PROCEDURE_COLUMNS, "procedure_id", lock=True)
_PROCEDURE_STATE = _update(PROCEDURES, PROCEDURE_STATE_COLUMNS, "procedure_id")
_IDLE = (
    f"SELECT thread_id, max(at) FROM {EPISODES} WHERE {_MINE}"
    " GROUP BY thread_id HAVING max(at) < %s"
)
_THREAD_EPISODES = (
    f"SELECT thread_id, episode_id FROM {EPISODES} WHERE {_MINE} AND thread_id = ANY(%s)"
)
_SESSION_END_COVERS = f"SELECT episode_ids FROM {JOBS} WHERE {_MINE} AND kind = 'session_end'"

#: What the application role needs on each journal table.
_PRIVILEGES = {
    table: ("SELECT", "INSERT", "DELETE")
    if table == JOURNAL_IMMUTABLE
    else ("SELECT", "INSERT", "UPDATE", "DELETE")
    for table in JOURNAL_TABLES
}


class PostgresJournal(Journal):
    """The memory journal in Postgres (see the module docstring)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        principal: Principal | None,
        *,
        where: str,
        clock: Callable[[], datetime] = _system_clock,
    ) -> None:
        super().__init__(principal, clock=clock)
        self._pool = pool
        self._where = where

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        url: str,
        principal: Principal | None = None,
        *,
        clock: Callable[[], datetime] = _system_clock,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
    ) -> AsyncIterator[PostgresJournal]:
        """Check the role, schema and row security on one connection, then open a pool."""
        if principal is not None:
            rules.check_principal(principal)
        where = redact(url)
        try:
            first = await psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=max(2, round(connect_timeout))
            )
        except psycopg.OperationalError as e:
            raise JournalUnavailableError(
                f"Cannot connect to the memory journal at {where}: {str(e).strip()}. Check "
                "ANALYST_FACTS (the journal shares the fact ledger's database) and that "
                "Postgres is running."
            ) from e
        async with first:
            await _check_ready(first, where)
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url, min_size=min_size, max_size=max_size, kwargs={"autocommit": True}, open=False
        )
        try:
            try:
                await pool.open(wait=True, timeout=connect_timeout)
            except psycopg.OperationalError as e:
                raise JournalUnavailableError(
                    f"Cannot open a connection pool to the memory journal at {where}: {e}."
                ) from e
            yield cls(pool, principal, where=where, clock=clock)
        finally:
            await pool.close()

    def with_principal(self, principal: Principal) -> Self:
        view = copy.copy(self)
        view._principal = rules.check_principal(principal)
        return view

    def _now(self) -> datetime:
        return rules.utc(self.now(), "The journal clock's time")

    def _mine(self) -> tuple[str, str]:
        principal = self.principal
        return principal.tenant_id, principal.user_id

    async def _run(
        self,
        body: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]],
        *,
        snapshot: bool = False,
    ) -> T:
        """``body`` in one transaction acting for the principal (row security reads it).

        ``snapshot``: one snapshot for all of ``body``'s statements (REPEATABLE READ)."""
        mine = self._mine()
        for attempt in (1, 2):
            conn: psycopg.AsyncConnection[Any] | None = None
            began = False
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    if snapshot:
                        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    await conn.execute(_SET_PRINCIPAL, mine)
                    began = True
                    return await body(conn)
            except psycopg.OperationalError as e:
                if attempt == 1 and not began and conn is not None and conn.broken:
                    continue  # a pooled connection the server dropped, before any work: afresh
                raise JournalUnavailableError(
                    f"The memory journal at {self._where} failed: {str(e).strip()}. Check "
                    "that Postgres is running."
                ) from e
        raise AssertionError("unreachable")  # pragma: no cover

    # -- episodes -------------------------------------------------------------------------

    async def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        principal = self.principal
        batch = [rules.new_episode(principal, episode) for episode in episodes]
        mine = self._mine()
        insert = _insert(EPISODES, EPISODE_COLUMNS)

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[Episode]:
            stored: list[Episode] = []
            for episode in batch:
                await conn.execute(insert, CODEC.episode_row(episode))
                cursor = await conn.execute(_EPISODE, (*mine, episode.episode_id))
                row = await cursor.fetchone()
                if row is None:
                    raise rules.id_taken("episode", episode.episode_id)
                stored.append(rules.same_episode(CODEC.episode(row), episode))
            return stored

        return await self._run(body) if batch else []

    async def episodes(self, episode_ids: Sequence[str]) -> list[Episode]:
        ids = list(rules.id_list(episode_ids, "episode_ids"))
        mine = self._mine()

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[Episode]:
            cursor = await conn.execute(_EPISODES_BY_ID, (*mine, ids))
            return [CODEC.episode(row) for row in await cursor.fetchall()]

        return await self._run(body)

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
            where.append("thread_id = %s")
            params.append(thread_id)
        if since is not None:
            where.append("at >= %s")
            params.append(rules.utc(since, "since"))
        if until is not None:
            where.append("at < %s")
            params.append(rules.utc(until, "until"))
        params.append(rules.check_limit(limit))
        sql = (
            f"SELECT {columns(EPISODE_COLUMNS)} FROM {EPISODES} WHERE {' AND '.join(where)}"
            " ORDER BY at, episode_id LIMIT %s"
        )

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[Episode]:
            cursor = await conn.execute(sql, params)
            return [CODEC.episode(row) for row in await cursor.fetchall()]

        return await self._run(body)

    # -- extraction jobs ------------------------------------------------------------------

    async def enqueue(
        self, kind: JobKind, thread_id: str, episode_ids: Sequence[str]
    ) -> ExtractionJob:
        job = rules.new_job(self.principal, kind, thread_id, episode_ids, self._now())
        mine = self._mine()
        insert = _insert(JOBS, JOB_COLUMNS)

        async def body(conn: psycopg.AsyncConnection[Any]) -> ExtractionJob:
            await conn.execute(insert, CODEC.job_row(job))
            cursor = await conn.execute(_JOB, (*mine, job.job_id))
            row = await cursor.fetchone()
            if row is None:
                raise rules.id_taken("job", job.job_id)
            return CODEC.job(row)

        return await self._run(body)

    async def claim(self, *, lease: timedelta = timedelta(minutes=5)) -> ExtractionJob | None:
        rules.check_lease(lease)
        now = self._now()
        mine = self._mine()

        async def body(conn: psycopg.AsyncConnection[Any]) -> ExtractionJob | None:
            while True:
                cursor = await conn.execute(_NEXT_DUE, (*mine, now, now))
                row = await cursor.fetchone()
                if row is None:
                    return None
                job = rules.claimed(CODEC.job(row), now, lease)
                await conn.execute(_JOB_STATE, (*CODEC.job_state(job), *mine, job.job_id))
                if job.status == "running":
                    return job
                # Out of attempts: recorded as failed; look for the next due job.

        return await self._run(body)

    async def _change_job(
        self, job_id: str, change: Callable[[ExtractionJob], ExtractionJob]
    ) -> ExtractionJob:
        mine = self._mine()

        async def body(conn: psycopg.AsyncConnection[Any]) -> ExtractionJob:
            cursor = await conn.execute(_JOB_FOR_UPDATE, (*mine, job_id))
            row = await cursor.fetchone()
            if row is None:
                raise rules.job_not_found(job_id)
            job = CODEC.job(row)
            changed = change(job)
            if changed is not job:
                await conn.execute(_JOB_STATE, (*CODEC.job_state(changed), *mine, job_id))
            return changed

        return await self._run(body)

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
                where.append(f"{name} = %s")
                params.append(value)
        params.append(rules.check_limit(limit))
        sql = (
            f"SELECT {columns(JOB_COLUMNS)} FROM {JOBS} WHERE {' AND '.join(where)}"
            " ORDER BY created_at DESC, job_id DESC LIMIT %s"
        )

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[ExtractionJob]:
            cursor = await conn.execute(sql, params)
            return [CODEC.job(row) for row in await cursor.fetchall()]

        return await self._run(body)

    # -- candidates -----------------------------------------------------------------------

    async def add_candidates(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        principal = self.principal
        batch = [rules.new_candidate(principal, candidate) for candidate in candidates]
        mine = self._mine()
        insert = _insert(CANDIDATES, CANDIDATE_COLUMNS)

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[Candidate]:
            stored: list[Candidate] = []
            for candidate in batch:
                await conn.execute(insert, CODEC.candidate_row(candidate))
                cursor = await conn.execute(_CANDIDATE, (*mine, candidate.candidate_id))
                row = await cursor.fetchone()
                if row is None:
                    raise rules.id_taken("candidate", candidate.candidate_id)
                stored.append(CODEC.candidate(row))
            return stored

        return await self._run(body) if batch else []

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
                where.append(f"{name} = %s")
                params.append(value)
        params.append(rules.check_limit(limit))
        sql = (
            f"SELECT {columns(CANDIDATE_COLUMNS)} FROM {CANDIDATES}"
            f" WHERE {' AND '.join(where)} ORDER BY created_at, candidate_id LIMIT %s"
        )

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[Candidate]:
            cursor = await conn.execute(sql, params)
            return [CODEC.candidate(row) for row in await cursor.fetchall()]

        return await self._run(body)

    async def decide(
        self, candidate_id: str, status: CandidateStatus, reason: str = ""
    ) -> Candidate:
        now = self._now()
        mine = self._mine()

        async def body(conn: psycopg.AsyncConnection[Any]) -> Candidate:
            cursor = await conn.execute(_CANDIDATE_FOR_UPDATE, (*mine, candidate_id))
            row = await cursor.fetchone()
            if row is None:
                raise CandidateNotFoundError("candidate", candidate_id)
            candidate = rules.decided(CODEC.candidate(row), status, reason, now)
            await conn.execute(
                _CANDIDATE_STATE, (*CODEC.candidate_state(candidate), *mine, candidate_id)
            )
            return candidate

        return await self._run(body)

    # -- sessions and procedures ----------------------------------------------------------

    async def put_summary(self, summary: SessionSummary) -> SessionSummary:
        stored = rules.new_summary(self.principal, summary)
        mine = self._mine()
        insert = _insert(SUMMARIES, SUMMARY_COLUMNS)
        row = CODEC.summary_row(stored)

        async def body(conn: psycopg.AsyncConnection[Any]) -> SessionSummary:
            inserted = await conn.execute(insert, row)
            if inserted.rowcount == 0:
                replaced = await conn.execute(_SUMMARY_UPDATE, (*row[3:], *mine, stored.session_id))
                if replaced.rowcount == 0:
                    raise rules.id_taken("session", stored.session_id)
            return stored

        return await self._run(body)

    async def summaries(self, *, limit: int = 5) -> list[SessionSummary]:
        params = (*self._mine(), rules.check_limit(limit))
        sql = (
            f"SELECT {columns(SUMMARY_COLUMNS)} FROM {SUMMARIES} WHERE {_MINE}"
            " ORDER BY ended DESC, session_id DESC LIMIT %s"
        )

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[SessionSummary]:
            cursor = await conn.execute(sql, params)
            return [CODEC.summary(row) for row in await cursor.fetchall()]

        return await self._run(body)

    async def put_procedure(self, procedure: Procedure) -> Procedure:
        new = rules.new_procedure(self.principal, procedure)
        mine = self._mine()
        insert = _insert(PROCEDURES, PROCEDURE_COLUMNS)

        async def body(conn: psycopg.AsyncConnection[Any]) -> Procedure:
            await conn.execute(insert, CODEC.procedure_row(new))
            cursor = await conn.execute(_PROCEDURE, (*mine, new.procedure_id))
            row = await cursor.fetchone()
            if row is None:
                raise rules.id_taken("procedure", new.procedure_id)
            return CODEC.procedure(row)

        return await self._run(body)

    async def procedures(self, *, status: str | None = "active") -> list[Procedure]:
        rules.check_procedure_filter(status)
        where: list[str] = [_MINE]
        params: list[Any] = [*self._mine()]
        if status is not None:
            where.append("status = %s")
            params.append(status)
        sql = (
            f"SELECT {columns(PROCEDURE_COLUMNS)} FROM {PROCEDURES} WHERE {' AND '.join(where)}"
            " ORDER BY confirmed_at, procedure_id"
        )

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[Procedure]:
            cursor = await conn.execute(sql, params)
            return [CODEC.procedure(row) for row in await cursor.fetchall()]

        return await self._run(body)

    async def retire_procedure(self, procedure_id: str) -> Procedure:
        now = self._now()
        mine = self._mine()

        async def body(conn: psycopg.AsyncConnection[Any]) -> Procedure:
            cursor = await conn.execute(_PROCEDURE_FOR_UPDATE, (*mine, procedure_id))
            row = await cursor.fetchone()
            if row is None:
                raise CandidateNotFoundError("procedure", procedure_id)
            procedure = CODEC.procedure(row)
            retired = rules.retired(procedure, now)
            if retired is not procedure:
                await conn.execute(
                    _PROCEDURE_STATE, (*CODEC.procedure_state(retired), *mine, procedure_id)
                )
            return retired

        return await self._run(body)

    async def idle_threads(self, idle_since: datetime) -> list[str]:
        before = rules.utc(idle_since, "idle_since")
        mine = self._mine()

        async def body(conn: psycopg.AsyncConnection[Any]) -> list[str]:
            cursor = await conn.execute(_IDLE, (*mine, before))
            last_at = {thread: CODEC.time_out(at) for thread, at in await cursor.fetchall()}
            if not last_at:
                return []
            cursor = await conn.execute(_THREAD_EPISODES, (*mine, list(last_at)))
            episodes = await cursor.fetchall()
            cursor = await conn.execute(_SESSION_END_COVERS, mine)
            covered = [ids for (ids,) in await cursor.fetchall()]
            return rules.uncovered_threads(last_at, episodes, covered)

        return await self._run(body, snapshot=True)


async def _check_ready(conn: psycopg.AsyncConnection[Any], where: str) -> None:
    """Refuse roles that bypass row security, a schema without the journal, tables with row
    security off, and missing privileges -- each with the command that fixes it."""
    cursor = await conn.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    )
    row = await cursor.fetchone()
    assert row is not None
    user, superuser, bypass = row
    if superuser or bypass:
        raise UnsafeDatabaseRoleError(
            f"The memory journal at {where} connects as '{user}', which is "
            f"{'a superuser' if superuser else 'BYPASSRLS'}: row-level security would not "
            "separate tenants and users. Create an application role (CREATE ROLE analyst_app "
            "LOGIN NOSUPERUSER NOBYPASSRLS), run `analyst facts setup --app-role analyst_app` "
            "with ANALYST_FACTS pointing at the owner, then point ANALYST_FACTS at analyst_app."
        )
    setup = (
        f"As the database owner run: ANALYST_FACTS=<owner URL> analyst facts setup "
        f"--app-role {user}"
    )
    version = await postgres_version(conn, where=where)
    if version < LATEST_VERSION:
        missing = (
            "has no memory journal tables yet"
            if version < JOURNAL_MIGRATION
            else "is behind this analyst"
        )
        raise FactLedgerSchemaError(
            f"The fact ledger at {where} is at schema version {version} and {missing} (the "
            f"journal arrives with migration {JOURNAL_MIGRATION}; this analyst needs "
            f"{LATEST_VERSION}). {setup}"
        )
    tables = [f"{PG_SCHEMA}.{table}" for table in JOURNAL_TABLES]
    cursor = await conn.execute(
        "SELECT t, c.relrowsecurity AND c.relforcerowsecurity FROM unnest(%s::text[]) AS t"
        " JOIN pg_class c ON c.oid = t::regclass",
        (tables,),
    )
    unprotected = [table for table, forced in await cursor.fetchall() if not forced]
    if unprotected:
        fix = "; ".join(
            f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY"
            for t in unprotected
        )
        raise FactLedgerSchemaError(
            f"Row-level security is not enabled and forced on {', '.join(unprotected)} at "
            f"{where}. Re-enable it as the owner: {fix}."
        )
    wanted = [
        (f"{PG_SCHEMA}.{table}", privilege)
        for table, privileges in _PRIVILEGES.items()
        for privilege in privileges
    ]
    cursor = await conn.execute(
        "SELECT t, p FROM unnest(%s::text[], %s::text[]) AS w(t, p)"
        " WHERE NOT has_table_privilege(t, p)",
        ([t for t, _ in wanted], [p for _, p in wanted]),
    )
    lacking = [f"{privilege} on {table}" for table, privilege in await cursor.fetchall()]
    if lacking:
        raise FactLedgerSchemaError(
            f"The role '{user}' at {where} lacks {', '.join(lacking)}. {setup}"
        )
