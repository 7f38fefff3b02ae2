"""The journal over SQL, written once: every call as a program of statements.

:class:`SqlJournal` implements :class:`~memory.journal.base.Journal` for both backends. A call
validates its arguments (:mod:`memory.journal.rules`), then runs a *program* (:mod:`memory.journal.programs`) of
the backend's statements (:class:`~memory.journal.queries.Queries`), asking the rules for
every state change in between. A backend only supplies :meth:`SqlJournal._run`: one
transaction of the requested kind, in which it executes the statements -- SQLite with plain
calls on a worker thread, Postgres with ``await``.
"""

from __future__ import annotations

import copy
import uuid
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Self, TypeVar

import memory.journal.rules as rules
from memory.errors import CandidateNotFoundError, InvalidMemoryError, JournalError
from memory.identity import Principal
from memory.journal.audit import AUDIT_SECRET, keyed_hash
from memory.journal.audit import audit_key as parse_audit_key
from memory.journal.base import Journal, tombstone_text
from memory.journal.programs import Program, Transaction, put, read_rows
from memory.journal.queries import OWNED_TABLES, Mine, Queries, Statement
from memory.journal.records import (
    AuditAction,
    AuditEntry,
    Candidate,
    CandidateKind,
    CandidateStatus,
    Episode,
    ExtractionJob,
    JobKind,
    JobStatus,
    Procedure,
    Related,
    SessionSummary,
)
from memory.sealing import MemoryCipher
from memory.sql.clock import system_clock

T = TypeVar("T")


class SqlJournal(Journal):
    """A journal whose calls are programs of ``queries``' statements; a backend runs them."""

    def __init__(
        self,
        queries: Queries,
        principal: Principal | None,
        *,
        clock: Callable[[], datetime] = system_clock,
        audit_key: str | bytes | None = None,
        cipher: MemoryCipher | None = None,
    ) -> None:
        super().__init__(principal, clock=clock)
        if cipher is not None:
            queries = queries.sealed_with(cipher)
        self._queries = queries
        self._codec = queries.codec
        #: The audit key (``ANALYST_AUDIT_KEY``, or the database's, read once); shared by
        #: every principal view (``copy.copy`` keeps the same dict).
        self._keys: dict[str, bytes] = {}
        if audit_key is not None:
            self._keys[AUDIT_SECRET] = parse_audit_key(audit_key)

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
            new: list[Episode] = []
            for episode in batch:
                eid = episode.episode_id
                row, inserted = yield from put(
                    q.add_episode(episode), q.episode(mine, eid), "episode", eid
                )
                stored.append(rules.same_episode(self._codec.episode(row), episode))
                if inserted:
                    new.append(episode)
            if new:
                yield from self._audited(
                    "write",
                    "episodes",
                    [e.episode_id for e in new],
                    reason="user turn stored",
                    content=[e.text for e in new],
                )
            return stored

        return await self._run(program(), "write") if batch else []

    async def episodes(self, episode_ids: Sequence[str]) -> list[Episode]:
        ids = rules.id_list(episode_ids, "episode_ids")
        statement = self._queries.episodes(self._mine(), ids)
        return await self._run(read_rows(statement, self._codec.episode), "read")

    async def related(self, ids: Sequence[str]) -> Related:
        wanted = rules.id_list(ids, "ids")
        mine = self._mine()
        q, codec = self._queries, self._codec

        def program() -> Program[Related]:
            episodes = yield from read_rows(q.related(mine, "episodes", wanted, ()), codec.episode)
            named = [e.episode_id for e in episodes]

            def rows(tier: str, decode: Callable[[Any], T]) -> Program[list[T]]:
                return read_rows(q.related(mine, tier, wanted, named), decode)

            jobs = yield from read_rows(q.related(mine, "extraction_jobs", (), named), codec.job)
            return Related(
                episodes=tuple(episodes),
                jobs=tuple(jobs),
                candidates=tuple((yield from rows("candidates", codec.candidate))),
                summaries=tuple((yield from rows("summaries", codec.summary))),
                procedures=tuple((yield from rows("procedures", codec.procedure))),
            )

        return await self._run(program(), "read")

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
        return await self._run(read_rows(statement, self._codec.episode), "read")

    # -- extraction jobs ------------------------------------------------------------------

    async def enqueue(
        self, kind: JobKind, thread_id: str, episode_ids: Sequence[str]
    ) -> ExtractionJob:
        job = rules.new_job(self.principal, kind, thread_id, episode_ids, self._now())
        mine = self._mine()
        q = self._queries

        def program() -> Program[ExtractionJob]:
            row, _ = yield from put(q.add_job(job), q.job(mine, job.job_id), "job", job.job_id)
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
        return await self._run(read_rows(statement, self._codec.job), "read")

    # -- candidates -----------------------------------------------------------------------

    async def add_candidates(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        principal = self.principal
        batch = [rules.new_candidate(principal, candidate) for candidate in candidates]
        mine = self._mine()
        q = self._queries

        def program() -> Program[list[Candidate]]:
            stored: list[Candidate] = []
            new: list[Candidate] = []
            for candidate in batch:
                cid = candidate.candidate_id
                read = q.candidate(mine, cid)
                row, inserted = yield from put(q.add_candidate(candidate), read, "candidate", cid)
                stored.append(self._codec.candidate(row))
                if inserted:
                    new.append(candidate)
            if new:
                yield from self._audited(
                    "write",
                    "candidates",
                    [c.candidate_id for c in new],
                    reason="candidates proposed",
                    content=[[dict(c.payload), c.quote] for c in new],
                )
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
        return await self._run(read_rows(statement, self._codec.candidate), "read")

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
            yield from self._audited(
                rules.audit_action(status),
                "candidates",
                [candidate_id],
                reason=f"candidate {status}",
                content=[dict(candidate.payload), candidate.quote],
            )
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
            yield from self._audited(
                "write",
                "summaries",
                [stored.session_id],
                reason="session summarised" if inserted else "session summary replaced",
                content=[stored.topic, stored.summary, list(stored.open_items)],
            )
            return stored

        return await self._run(program(), "write")

    async def summaries(self, *, limit: int = 5) -> list[SessionSummary]:
        statement = self._queries.summaries(self._mine(), rules.check_limit(limit))
        return await self._run(read_rows(statement, self._codec.summary), "read")

    async def put_procedure(self, procedure: Procedure) -> Procedure:
        new = rules.new_procedure(self.principal, procedure)
        mine = self._mine()
        q = self._queries

        def program() -> Program[Procedure]:
            pid = new.procedure_id
            row, inserted = yield from put(
                q.add_procedure(new), q.procedure(mine, pid), "procedure", pid
            )
            if inserted:
                yield from self._audited(
                    "write",
                    "procedures",
                    [pid],
                    reason="standing instruction confirmed",
                    content=[new.text, dict(new.rule)],
                )
            return self._codec.procedure(row)

        return await self._run(program(), "write")

    async def procedures(self, *, status: str | None = "active") -> list[Procedure]:
        rules.check_procedure_filter(status)
        statement = self._queries.procedures(self._mine(), status)
        return await self._run(read_rows(statement, self._codec.procedure), "read")

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
                yield from self._audited(
                    "retire",
                    "procedures",
                    [procedure_id],
                    reason="procedure retired",
                    content=[procedure.text, dict(procedure.rule)],
                )
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

    # -- account deletion -----------------------------------------------------------------

    async def erase_principal(self, *, reason: str = "account deleted") -> dict[str, list[Any]]:
        mine = self._mine()
        q, codec = self._queries, self._codec
        decode: dict[str, Callable[[Any], Any]] = {
            "episodes": codec.episode,
            "extraction_jobs": codec.job,
            "candidates": codec.candidate,
            "summaries": codec.summary,
            "procedures": codec.procedure,
        }

        def program() -> Program[dict[str, list[Any]]]:
            erased: dict[str, list[Any]] = {}
            for tier, table in OWNED_TABLES.items():
                key = table.columns.index(table.key)
                rows = sorted((yield q.delete_owned(mine, tier)), key=lambda row: str(row[key]))
                erased[tier] = [decode[tier](row) for row in rows]
                if rows:
                    ids = [str(row[key]) for row in rows]
                    yield from self._audited("delete", tier, ids, reason=reason)
            return erased

        return await self._run(program(), "write")

    # -- forgetting -----------------------------------------------------------------------

    async def erase(self, ids: Mapping[str, Sequence[str]], *, reason: str) -> dict[str, list[str]]:
        mine = self._mine()
        q = self._queries
        wanted = {tier: sorted(set(ids.get(tier, ()))) for tier in OWNED_TABLES}

        def program() -> Program[dict[str, list[str]]]:
            erased: dict[str, list[str]] = {}
            for tier, tier_ids in wanted.items():
                if not tier_ids:
                    erased[tier] = []
                    continue
                rows = yield q.delete_ids(mine, tier, tier_ids)
                erased[tier] = sorted(str(row[0]) for row in rows)
                if erased[tier]:
                    yield from self._audited("delete", tier, erased[tier], reason=reason)
            return erased

        return await self._run(program(), "write")

    async def restore(self, rows: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
        principal = self.principal
        q = self._queries
        insert: dict[str, tuple[Callable[[Any], Statement], str]] = {
            "episodes": (q.add_episode, "episode_id"),
            "extraction_jobs": (q.add_job, "job_id"),
            "candidates": (q.add_candidate, "candidate_id"),
            "summaries": (q.add_summary, "session_id"),
            "procedures": (q.add_procedure, "procedure_id"),
        }
        for tier, records in rows.items():
            if tier not in insert:
                raise InvalidMemoryError(f"No journal tier is called {tier!r}.")
            for record in records:
                if (record.tenant_id, record.user_id) != (principal.tenant_id, principal.user_id):
                    raise InvalidMemoryError(
                        f"A record of {record.tenant_id}/{record.user_id} cannot be restored "
                        f"as {principal.tenant_id}/{principal.user_id}; restore a backup as "
                        "the user it was made for."
                    )

        def program() -> Program[dict[str, list[str]]]:
            restored: dict[str, list[str]] = {}
            for tier, (statement, key) in insert.items():
                ids = []
                for record in rows.get(tier, ()):
                    if (yield statement(record)):
                        ids.append(getattr(record, key))
                restored[tier] = ids
                if ids:
                    yield from self._audited("write", tier, ids, reason="restored from a backup")
            return restored

        return await self._run(program(), "write")

    async def add_tombstones(self, texts: Sequence[str], *, reason: str) -> list[str]:
        mine = self._mine()
        q = self._queries
        units = sorted({tombstone_text(t) for t in texts} - {""})

        def program() -> Program[list[str]]:
            key = yield from self._audit_key()
            hashes = sorted({keyed_hash(key, unit) for unit in units})
            now = self._now()
            for hash_ in hashes:
                yield q.add_tombstone(mine, hash_, now)
            if hashes:
                yield from self._audited("write", "tombstones", hashes, reason=reason)
            return hashes

        return await self._run(program(), "write")

    async def tombstoned(self, texts: Sequence[str]) -> set[str]:
        mine = self._mine()
        q = self._queries
        units = {t: tombstone_text(t) for t in texts if tombstone_text(t)}
        if not units:
            return set()

        def program() -> Program[set[str]]:
            key = yield from self._audit_key()
            hashed = {t: keyed_hash(key, unit) for t, unit in units.items()}
            rows = yield q.tombstones_among(mine, sorted(set(hashed.values())))
            dead = {str(row[0]) for row in rows}
            return {t for t, h in hashed.items() if h in dead}

        return await self._run(program(), "read")

    # -- the audit ------------------------------------------------------------------------

    def _audit_key(self) -> Program[bytes]:
        """The audit key: ``ANALYST_AUDIT_KEY`` if given, else the database's (read once)."""
        key = self._keys.get(AUDIT_SECRET)
        if key is None:
            row = yield self._queries.secret(AUDIT_SECRET)
            if row is None:
                raise JournalError(
                    "The fact ledger's database has no audit key (memory_secrets, migration "
                    "6): it was removed by hand. Set ANALYST_AUDIT_KEY, or restore the row."
                )
            key = bytes.fromhex(str(row[0]))
            self._keys[AUDIT_SECRET] = key
        return key

    def _audited(
        self,
        action: AuditAction,
        tier: str,
        item_ids: Sequence[str],
        *,
        reason: str,
        content: Any = None,
        subject_user: str | None = None,
    ) -> Program[AuditEntry]:
        """Append one audit entry inside the calling program's transaction."""
        principal = self.principal
        subject = principal.user_id if subject_user is None else subject_user
        if subject != principal.user_id:
            admin = yield self._queries.is_admin(self._mine())
            if admin is None:
                raise rules.audit_refused(principal, subject, "write to")
        content_hash = None
        if content is not None:
            content_hash = keyed_hash((yield from self._audit_key()), content)
        entry = rules.new_audit(
            principal,
            f"audit-{uuid.uuid4().hex}",
            action,
            tier,
            item_ids,
            reason=reason,
            subject_user=subject,
            content_hash=content_hash,
            now=self._now(),
        )
        inserted = yield self._queries.add_audit(entry)
        if inserted != 1:
            raise JournalError(f"The audit entry {entry.audit_id} was not stored.")
        return entry

    async def audit(
        self,
        action: AuditAction,
        tier: str,
        item_ids: Sequence[str],
        *,
        reason: str = "",
        content: Any = None,
        subject_user: str | None = None,
    ) -> AuditEntry:
        program = self._audited(
            action, tier, item_ids, reason=reason, content=content, subject_user=subject_user
        )
        return await self._run(program, "write")

    async def audit_each(
        self, action: AuditAction, tier: str, item_ids: Sequence[str], *, reason: str = ""
    ) -> list[AuditEntry]:
        def program() -> Program[list[AuditEntry]]:
            entries: list[AuditEntry] = []
            for item_id in item_ids:
                entries.append((yield from self._audited(action, tier, [item_id], reason=reason)))
            return entries

        if not item_ids:
            return []
        return await self._run(program(), "write")

    async def latest_audit(self, action: AuditAction, *, since: datetime) -> AuditEntry | None:
        start = rules.utc(since, "since")
        statement = self._queries.latest_audit(self._mine(), action, start)

        def program() -> Program[AuditEntry | None]:
            row = yield statement
            return None if row is None else self._codec.audit(row)

        return await self._run(program(), "read")

    async def audit_log(
        self, *, since: datetime | None = None, user: str | None = None, limit: int = 1000
    ) -> list[AuditEntry]:
        principal = self.principal
        subject = principal.user_id if user is None else user
        since = None if since is None else rules.utc(since, "since")
        statement = self._queries.audit_log(
            principal.tenant_id, subject, since, rules.check_limit(limit)
        )
        q = self._queries

        def program() -> Program[list[AuditEntry]]:
            if subject != principal.user_id:
                admin = yield q.is_admin(self._mine())
                if admin is None:
                    raise rules.audit_refused(principal, subject, "read")
            rows = yield statement
            return [self._codec.audit(row) for row in reversed(rows)]

        return await self._run(program(), "snapshot")
