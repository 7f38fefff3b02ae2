"""The journal contract: every backend (SQLite, Postgres) implements :class:`Journal`.

A journal is opened for no principal or one; :meth:`Journal.with_principal` gives a view for
another. Every read and write is scoped to the view's principal (tenant *and* user) in storage:
no method takes a tenant or user id, so a caller cannot name someone else's data. Episodes are
immutable: adding one again with the same id and text is a no-op, with another text an
:class:`~memory.errors.EpisodeConflictError`. All writes are idempotent by id.

Times are timezone-aware and stored in UTC; ``now`` defaults to the journal's clock.

The journal keeps the memory audit (:meth:`Journal.audit`, :meth:`Journal.audit_log`): its own
writes (episodes, candidates, decisions, summaries, procedures, retirements) add their audit
entry in the same transaction; callers audit what they do in other tiers (facts, the cold
store, checkpoints) and what they read into a prompt. An entry holds ids and a keyed hash
(:mod:`memory.journal.audit`), never content.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Self

import memory.journal.records as records
from memory.identity import Principal
from memory.sql.clock import system_clock

#: Attempts after which a failing job stops being retried (status ``failed``).
MAX_JOB_ATTEMPTS = 5
#: Backoff before retry n (1-based): BASE * 2**(n-1), capped.
JOB_BACKOFF_BASE = timedelta(seconds=5)
JOB_BACKOFF_CAP = timedelta(minutes=30)


def tombstone_text(text: str) -> str:
    """A text as a tombstone hashes it: lower case, whitespace collapsed, trailing
    punctuation dropped (so "My name is X." and "my name is x" are one tombstone)."""
    return " ".join(text.lower().split()).strip(" .!?;:,")


class Journal(ABC):
    """The memory journal of one database, seen by one principal (or by none, until
    :meth:`with_principal`). Backends: :mod:`memory.journal.sqlite`,
    :mod:`memory.journal.postgres` (both :class:`memory.journal.sql.SqlJournal` s); open one
    with :func:`memory.journal.open_journal`.

    Job, candidate and procedure state changes are the rules of :mod:`memory.journal.rules`,
    shared by every backend, so both behave identically.
    """

    def __init__(
        self, principal: Principal | None, *, clock: Callable[[], datetime] = system_clock
    ) -> None:
        self._principal = principal
        self.clock = clock

    @property
    def principal(self) -> Principal:
        """The principal every call is scoped to; a journal opened for none refuses calls."""
        if self._principal is None:
            from memory.errors import InvalidPrincipalError

            raise InvalidPrincipalError(
                "This journal was opened for no principal; use journal.with_principal(p)."
            )
        return self._principal

    @abstractmethod
    def with_principal(self, principal: Principal) -> Self:
        """A view of the same database scoped to ``principal`` (shares the connections)."""

    def now(self) -> datetime:
        """The journal clock's time (timezone-aware; stamps created, claimed, decided...)."""
        return self.clock()

    # -- episodes -------------------------------------------------------------------------

    @abstractmethod
    async def add_episodes(self, episodes: Sequence[records.Episode]) -> list[records.Episode]:
        """Store ``episodes`` (their tenant/user must be the principal's) in one transaction;
        return them as stored (an id already stored returns the stored one)."""

    @abstractmethod
    async def episodes(self, episode_ids: Sequence[str]) -> list[records.Episode]:
        """The principal's episodes among ``episode_ids``, chronological; unknown ids skipped."""

    @abstractmethod
    async def list_episodes(
        self,
        *,
        thread_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 1000,
    ) -> list[records.Episode]:
        """The principal's episodes, chronological (``since`` inclusive, ``until`` exclusive)."""

    @abstractmethod
    async def related(self, ids: Sequence[str]) -> records.Related:
        """What a forget of ``ids`` can touch, read in one transaction: the principal's
        episodes, candidates, summaries and procedures that ``ids`` name, the candidates,
        summaries and procedures citing one of those episodes, and the extraction jobs citing
        one; unknown ids skipped."""

    # -- extraction jobs ------------------------------------------------------------------

    @abstractmethod
    async def enqueue(
        self, kind: records.JobKind, thread_id: str, episode_ids: Sequence[str]
    ) -> records.ExtractionJob:
        """The job of ``kind`` over ``episode_ids`` (id: ``job_id_for``), created pending if new."""

    @abstractmethod
    async def claim(
        self, *, lease: timedelta = timedelta(minutes=5)
    ) -> records.ExtractionJob | None:
        """Take the oldest due job (pending and ``next_attempt_at <= now``, or running with an
        expired lease): mark it running, count the attempt, lease it until ``now + lease``."""

    @abstractmethod
    async def complete(self, job_id: str, result: Mapping[str, Any]) -> records.ExtractionJob:
        """Mark a job done with what it stored."""

    @abstractmethod
    async def fail(self, job_id: str, error: str) -> records.ExtractionJob:
        """Record a failed attempt: pending again after backoff, or ``failed`` after
        :data:`MAX_JOB_ATTEMPTS` attempts."""

    @abstractmethod
    async def jobs(
        self,
        *,
        status: records.JobStatus | None = None,
        kind: records.JobKind | None = None,
        thread_id: str | None = None,
        limit: int = 100,
    ) -> list[records.ExtractionJob]:
        """The principal's jobs, newest first."""

    # -- candidates -----------------------------------------------------------------------

    @abstractmethod
    async def add_candidates(
        self, candidates: Sequence[records.Candidate]
    ) -> list[records.Candidate]:
        """Store candidates (idempotent by id: an existing one is returned unchanged)."""

    @abstractmethod
    async def candidates(
        self,
        *,
        status: records.CandidateStatus | None = None,
        kind: records.CandidateKind | None = None,
        limit: int = 100,
    ) -> list[records.Candidate]:
        """The principal's candidates, oldest first."""

    @abstractmethod
    async def decide(
        self, candidate_id: str, status: records.CandidateStatus, reason: str = ""
    ) -> records.Candidate:
        """Confirm or reject a pending candidate; :class:`~memory.errors.CandidateNotFoundError`
        if the principal has none with that id."""

    # -- sessions and procedures ----------------------------------------------------------

    @abstractmethod
    async def put_summary(self, summary: records.SessionSummary) -> records.SessionSummary:
        """Store or replace the summary of ``summary.session_id``."""

    @abstractmethod
    async def summaries(self, *, limit: int = 5) -> list[records.SessionSummary]:
        """The principal's most recent session summaries (by ``ended``), newest first."""

    @abstractmethod
    async def put_procedure(self, procedure: records.Procedure) -> records.Procedure:
        """Store a procedure (idempotent by id)."""

    @abstractmethod
    async def procedures(self, *, status: str | None = "active") -> list[records.Procedure]:
        """The principal's procedures (default: active ones), oldest first."""

    @abstractmethod
    async def retire_procedure(self, procedure_id: str) -> records.Procedure:
        """Stop enforcing a procedure (kept, ``retired``)."""

    # -- account deletion -----------------------------------------------------------------

    @abstractmethod
    async def erase_principal(self, *, reason: str = "account deleted") -> dict[str, list[Any]]:
        """Physically delete every journal row of the principal -- episodes, extraction jobs
        (pending ones too), candidates, session summaries, procedures -- in one transaction,
        with one ``delete`` audit entry per tier (ids only). Returns the records deleted, by
        tier, in the order of their ids (read by the deletes themselves: no read first).
        Episodes stay immutable (no UPDATE); deleting them is what retention and account
        deletion do. The audit itself is append-only and keeps its entries (ids and keyed
        hashes, never content)."""

    # -- forgetting -----------------------------------------------------------------------

    @abstractmethod
    async def erase(self, ids: Mapping[str, Sequence[str]], *, reason: str) -> dict[str, list[str]]:
        """Physically delete the principal's rows named in ``ids`` (by tier, as in
        :meth:`erase_principal`) in one transaction, one ``delete`` audit entry per tier.
        Returns the ids deleted, by tier (an unknown id is skipped)."""

    @abstractmethod
    async def restore(self, rows: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
        """Put back records of a backup as they were (ids, states and times kept), by tier
        (as in :meth:`erase_principal`), in one transaction; a record already stored is left
        as it is. Every record must be the principal's (:class:`InvalidMemoryError`
        otherwise, before anything is written). Returns the ids inserted, by tier, with one
        ``write`` audit entry per tier."""

    @abstractmethod
    async def add_tombstones(self, texts: Sequence[str], *, reason: str) -> list[str]:
        """Store a tombstone for each text: its keyed hash (:func:`tombstone_text` first),
        never the text. Returns the hashes (idempotent)."""

    @abstractmethod
    async def tombstoned(self, texts: Sequence[str]) -> set[str]:
        """The texts among ``texts`` whose keyed hash is one of the principal's tombstones."""

    # -- the audit ------------------------------------------------------------------------

    @abstractmethod
    async def audit(
        self,
        action: records.AuditAction,
        tier: str,
        item_ids: Sequence[str],
        *,
        reason: str = "",
        content: Any = None,
        subject_user: str | None = None,
    ) -> records.AuditEntry:
        """Append one audit entry: the principal did ``action`` on ``item_ids`` of ``tier``
        (one entry per operation, however many ids). ``content`` is kept only as its keyed
        hash; ``reason`` is a short fixed text (never user content). ``subject_user`` (whose
        memory; default the principal's own) other than the principal needs the tenant's admin
        grant (:class:`~memory.errors.AuditAccessError`). A failure raises: nothing is
        silently left unaudited."""

    @abstractmethod
    async def audit_each(
        self, action: records.AuditAction, tier: str, item_ids: Sequence[str], *, reason: str = ""
    ) -> list[records.AuditEntry]:
        """:meth:`audit` of each of ``item_ids`` alone (one entry per id, as separate
        operations on each would write), all in one transaction: many threads deleted at
        once are audited as each deletion alone is. Nothing is written if one fails."""

    @abstractmethod
    async def audit_log(
        self, *, since: datetime | None = None, user: str | None = None, limit: int = 1000
    ) -> list[records.AuditEntry]:
        """The most recent ``limit`` audit entries about ``user``'s memory (default: the
        principal's own) since ``since``, oldest first. Another user's needs the tenant's
        admin grant (:class:`~memory.errors.AuditAccessError`)."""

    @abstractmethod
    async def latest_audit(
        self, action: records.AuditAction, *, since: datetime
    ) -> records.AuditEntry | None:
        """The principal's newest audit entry of ``action`` about its own memory at or after
        ``since`` (one seek of the audit's (tenant, user, time) index, bounded by ``since``):
        how the start-up sweep finds whether it ran today."""

    @abstractmethod
    async def idle_threads(self, idle_since: datetime) -> list[str]:
        """Threads of the principal whose newest episode is older than ``idle_since`` and that
        have episodes no ``session_end`` job covers yet."""
