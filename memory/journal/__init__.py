"""The memory journal: episodes, extraction jobs, candidates, session summaries, procedures,
and the append-only memory audit.

See :mod:`memory.journal.records` for what each record is and :mod:`memory.journal.base` for
the contract every backend keeps. Public API::

    async with open_journal(settings.facts, principal) as journal:
        await journal.add_episodes([episode])              # immutable, idempotent by id
        job = await journal.enqueue("decision", thread_id, [episode.episode_id])
        job = await journal.claim(lease=timedelta(minutes=5))   # a worker takes a due job
        await journal.complete(job.job_id, {"facts": 2})   # or journal.fail(job_id, error)
        await journal.add_candidates([...]); await journal.decide(cid, "confirmed")
        await journal.put_summary(summary); await journal.summaries()
        await journal.put_procedure(procedure); await journal.procedures()
        await journal.idle_threads(now - timedelta(minutes=30))   # sessions to close
        await journal.audit("read", "facts", ids, reason="...", content=values)  # ids + a hash
        await journal.audit_log(since=..., user=None)       # the principal's audit, oldest first

The journal lives in the fact ledger's database (same URL; its tables are its own migrations,
:mod:`memory.journal.migrations`, numbered in the ledger's list). Backends: SQLite
(:mod:`memory.journal.sqlite`, the default) and Postgres with row-level security on tenant
and user (:mod:`memory.journal.postgres`, imported only when a ``postgresql://`` URL is
opened). Both share everything but connections and transactions: the state changes are written
once in :mod:`memory.journal.rules`, the SQL in :mod:`memory.journal.queries`, and each call
as a program of those statements in :mod:`memory.journal.sql`.
"""

from memory.journal.base import JOB_BACKOFF_BASE, JOB_BACKOFF_CAP, MAX_JOB_ATTEMPTS, Journal
from memory.journal.factory import open_journal
from memory.journal.records import (
    AUDIT_ACTIONS,
    CANDIDATE_KINDS,
    CANDIDATE_STATUSES,
    EPISODE_KINDS,
    JOB_KINDS,
    JOB_STATUSES,
    AuditAction,
    AuditEntry,
    Candidate,
    CandidateKind,
    CandidateStatus,
    Episode,
    EpisodeKind,
    EpisodeRole,
    ExtractionJob,
    JobKind,
    JobStatus,
    Procedure,
    ProcedureStatus,
    Related,
    SessionSummary,
    job_id_for,
    stable_id,
)

__all__ = [
    "AUDIT_ACTIONS",
    "CANDIDATE_KINDS",
    "CANDIDATE_STATUSES",
    "EPISODE_KINDS",
    "JOB_BACKOFF_BASE",
    "JOB_BACKOFF_CAP",
    "JOB_KINDS",
    "JOB_STATUSES",
    "MAX_JOB_ATTEMPTS",
    "AuditAction",
    "AuditEntry",
    "Candidate",
    "CandidateKind",
    "CandidateStatus",
    "Episode",
    "EpisodeKind",
    "EpisodeRole",
    "ExtractionJob",
    "JobKind",
    "JobStatus",
    "Journal",
    "Procedure",
    "ProcedureStatus",
    "Related",
    "SessionSummary",
    "job_id_for",
    "open_journal",
    "stable_id",
]
