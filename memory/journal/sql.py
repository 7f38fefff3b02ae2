"""The journal over SQL, written once: every call as a program of statements.

:class:`SqlJournal` implements :class:`~memory.journal.base.Journal` for both backends. A call
validates its arguments (:mod:`memory.journal.rules`), then runs a *program*: a generator that
yields the :class:`~memory.journal.queries.Statement` s it needs (built by the backend's
:class:`~memory.journal.queries.Queries`) and receives each one's answer, asking the rules for
every state change in between. A backend only supplies :meth:`SqlJournal._run`: one
transaction of the requested kind, in which it executes the statements -- SQLite with plain
calls on a worker thread (:func:`run_sync`), Postgres with ``await`` (:func:`run_async`).
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, Self, TypeVar, cast

from memory.errors import CandidateNotFoundError
from memory.identity import Principal
from memory.journal import rules
from memory.journal.base import Journal, _system_clock
from memory.journal.queries import Mine, Queries, Statement
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

T = TypeVar("T")

#: A call's statements: yields each, receives its answer, returns the call's result.
Program = Generator[Statement, Any, T]

#: ``read``: one or more statements that only read; ``snapshot``: reads that must all see one
#: snapshot; ``write``: reads and writes, serialised against other writers.
Transaction = Literal["read", "snapshot", "write"]


def run_sync(program: Program[T], execute: Callable[[Statement], Any]) -> T:
    """Drive ``program``, answering each statement with ``execute`` (blocking)."""
    try:
        statement = next(program)
        while True:
            statement = program.send(execute(statement))
    except StopIteration as done:
        return cast(T, done.value)


async def run_async(program: Program[T], execute: Callable[[Statement], Awaitable[Any]]) -> T:
    """Drive ``program``, answering each statement with ``await execute(...)``."""
    try:
        statement = next(program)
        while True:
            statement = program.send(await execute(statement))
    except StopIteration as done:
        return cast(T, done.value)


def _rows(statement: Statement, decode: Callable[[Any], T]) -> Program[list[T]]:
    rows = yield statement
    return [decode(row) for row in rows]


def _put(insert: Statement, read: Statement, what: str, item_id: str) -> Program[Any]:
    """Insert a record (a no-op if its id is stored) and read the principal's row back; an id
    another user of the tenant holds is refused (ids are unique per tenant)."""
    yield insert
    row = yield read
    if row is None:
        raise rules.id_taken(what, item_id)
    return row


class SqlJournal(Journal):
    """A journal whose calls are programs of ``queries``' statements; a backend runs them."""

    def __init__(
        self,
        queries: Queries,
        principal: Principal | None,
        *,
        clock: Callable[[], datetime] = _system_clock,
    ) -> None:
        super().__init__(principal, clock=clock)
        self._queries = queries
        self._codec = queries.codec

    @abstractmethod
    async def _run(self, program: Program[T], transaction: Transaction) -> T:
        """``program`` in one transaction of the principal, its statements executed in order."""

    def with_principal(self, principal: Principal) -> Self:
        view = copy.copy(self)
        view._principal = rules.check_principal(principal)
        return view

    def _now(self) -> datetime:
        return rules.utc(self.now(), "The journal clock's time")

    def _mine(self) -> Mine:
        principal = self.principal
        return principal.tenant_id, principal.user_id

    # -- episodes -------------------------------------------------------------------------

    async def add_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        principal = self.principal
        batch = [rules.new_episode(principal, episode) for episode in episodes]
        mine = self._mine()
        q = self._queries

        def program() -> Program[list[Episode]]:
            stored: list[Episode] = []
            for episode in batch:
                eid = episode.episode_id
                row = yield from _put(q.add_episode(episode), q.episode(mine, eid), "episode", eid)
                stored.append(rules.same_episode(self._codec.episode(row), episode))
            return stored

        return await self._run(program(), "write") if batch else []

    async def episodes(self, episode_ids: Sequence[str]) -> list[Episode]:
        ids = rules.id_list(episode_ids, "episode_ids")
        statement = self._queries.episodes(self._mine(), ids)
        return await self._run(_rows(statement, self._codec.episode), "read")

    async def list_episodes(
        self,
        *,
        thread_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[Episode]:
        mine = self._mine()
        since = None if since is None else rules.utc(since, "since")
        until = None if until is None else rules.utc(until, "until")
        statement = self._queries.list_episodes(
            mine, thread_id, since, until, rules.check_limit(limit)
        )
        return await self._run(_rows(statement, self._codec.episode), "read")

    # -- extraction jobs ------------------------------------------------------------------

    async def enqueue(
        self, kind: JobKind, thread_id: str, episode_ids: Sequence[str]
    ) -> ExtractionJob:
        job = rules.new_job(self.principal, kind, thread_id, episode_ids, self._now())
        mine = self._mine()
        q = self._queries

        def program() -> Program[ExtractionJob]:
            row = yield from _put(q.add_job(job), q.job(mine, job.job_id), "job", job.job_id)
            return self._codec.job(row)

        return await self._run(program(), "write")

    async def claim(self, *, lease: timedelta = timedelta(minutes=5)) -> ExtractionJob | None:
        rules.check_lease(lease)
        now = self._now()
        mine = self._mine()
        q = self._queries

        def program() -> Program[ExtractionJob | None]:
            while True:
                row = yield q.next_due(mine, now)
                if row is None:
                    return None
                job = rules.claimed(self._codec.job(row), now, lease)
                yield q.set_job_state(mine, job)
                if job.status == "running":
                    return job
                # Out of attempts: recorded as failed; look for the next due job.

        return await self._run(program(), "write")

    async def _change_job(
        self, job_id: str, change: Callable[[ExtractionJob], ExtractionJob]
    ) -> ExtractionJob:
        mine = self._mine()
        q = self._queries

        def program() -> Program[ExtractionJob]:
            row = yield q.job(mine, job_id, lock=True)
            if row is None:
                raise rules.job_not_found(job_id)
            job = self._codec.job(row)
            changed = change(job)
            if changed is not job:
                yield q.set_job_state(mine, changed)
            return changed

        return await self._run(program(), "write")

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
        mine = self._mine()
        statement = self._queries.jobs(mine, status, kind, thread_id, rules.check_limit(limit))
        return await self._run(_rows(statement, self._codec.job), "read")

    # -- candidates -----------------------------------------------------------------------

    async def add_candidates(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        principal = self.principal
        batch = [rules.new_candidate(principal, candidate) for candidate in candidates]
        mine = self._mine()
        q = self._queries

        def program() -> Program[list[Candidate]]:
            stored: list[Candidate] = []
            for candidate in batch:
                cid = candidate.candidate_id
                read = q.candidate(mine, cid)
                row = yield from _put(q.add_candidate(candidate), read, "candidate", cid)
                stored.append(self._codec.candidate(row))
            return stored

        return await self._run(program(), "write") if batch else []

    async def candidates(
        self,
        *,
        status: CandidateStatus | None = None,
        kind: CandidateKind | None = None,
        limit: int = 100,
    ) -> list[Candidate]:
        rules.check_candidate_filters(status, kind)
        mine = self._mine()
        statement = self._queries.candidates(mine, status, kind, rules.check_limit(limit))
        return await self._run(_rows(statement, self._codec.candidate), "read")

    async def decide(
        self, candidate_id: str, status: CandidateStatus, reason: str = ""
    ) -> Candidate:
        now = self._now()
        mine = self._mine()
        q = self._queries

        def program() -> Program[Candidate]:
            row = yield q.candidate(mine, candidate_id, lock=True)
            if row is None:
                raise CandidateNotFoundError("candidate", candidate_id)
            candidate = rules.decided(self._codec.candidate(row), status, reason, now)
            yield q.set_candidate_state(mine, candidate)
            return candidate

        return await self._run(program(), "write")

    # -- sessions and procedures ----------------------------------------------------------

    async def put_summary(self, summary: SessionSummary) -> SessionSummary:
        stored = rules.new_summary(self.principal, summary)
        mine = self._mine()
        q = self._queries

        def program() -> Program[SessionSummary]:
            inserted = yield q.add_summary(stored)
            if inserted == 0:
                replaced = yield q.replace_summary(mine, stored)
                if replaced == 0:
                    raise rules.id_taken("session", stored.session_id)
            return stored

        return await self._run(program(), "write")

    async def summaries(self, *, limit: int = 5) -> list[SessionSummary]:
        statement = self._queries.summaries(self._mine(), rules.check_limit(limit))
        return await self._run(_rows(statement, self._codec.summary), "read")

    async def put_procedure(self, procedure: Procedure) -> Procedure:
        new = rules.new_procedure(self.principal, procedure)
        mine = self._mine()
        q = self._queries

        def program() -> Program[Procedure]:
            pid = new.procedure_id
            row = yield from _put(q.add_procedure(new), q.procedure(mine, pid), "procedure", pid)
            return self._codec.procedure(row)

        return await self._run(program(), "write")

    async def procedures(self, *, status: str | None = "active") -> list[Procedure]:
        rules.check_procedure_filter(status)
        statement = self._queries.procedures(self._mine(), status)
        return await self._run(_rows(statement, self._codec.procedure), "read")

    async def retire_procedure(self, procedure_id: str) -> Procedure:
        now = self._now()
        mine = self._mine()
        q = self._queries

        def program() -> Program[Procedure]:
            row = yield q.procedure(mine, procedure_id, lock=True)
            if row is None:
                raise CandidateNotFoundError("procedure", procedure_id)
            procedure = self._codec.procedure(row)
            retired = rules.retired(procedure, now)
            if retired is not procedure:
                yield q.set_procedure_state(mine, retired)
            return retired

        return await self._run(program(), "write")

    async def idle_threads(self, idle_since: datetime) -> list[str]:
        before = rules.utc(idle_since, "idle_since")
        mine = self._mine()
        q = self._queries

        def program() -> Program[list[str]]:
            idle = yield q.idle_threads(mine, before)
            last_at = {thread: self._codec.time_out(at) for thread, at in idle}
            if not last_at:
                return []
            episodes = yield q.thread_episodes(mine, list(last_at))
            covers = yield q.session_end_covers(mine)
            covered = [self._codec.json_out(ids) for (ids,) in covers]
            return rules.uncovered_threads(last_at, episodes, covered)

        return await self._run(program(), "snapshot")
