"""Records of the memory journal: what a user said (episodes) and what was derived from it.

The journal lives in the fact ledger's database (same URL; its tables are
:mod:`memory.journal.migrations`) and holds the write path's own records, each scoped to one
principal (tenant and user):

- :class:`Episode` -- one user turn (a chat message, a ``run`` query, an approval, a rejection
  with its feedback, an edit), stored before anything is derived from it and never changed.
- :class:`ExtractionJob` -- a durable unit of extraction work, keyed by the episodes it covers
  (enqueueing the same episodes twice is the same job); claimed with a lease, retried with
  backoff, completed once.
- :class:`Candidate` -- an item extraction proposed that is not (yet) in force: inferred ones,
  standing instructions awaiting confirmation, unclear-authority profile writes, and items
  refused by the grounding check (``ungrounded``, with the reason), kept so a user can see them.
- :class:`SessionSummary` -- one per conversation (session id = thread id).
- :class:`Procedure` -- a confirmed standing instruction that holds in every thread of its user.
- :class:`AuditEntry` -- one line of the append-only memory audit: who wrote, confirmed,
  rejected, read into a prompt, retired or deleted which memory items, when and why. It holds
  ids and a keyed hash of the content (HMAC-SHA256), never the content itself.

Notable events (decisions, rejections, milestones) are not here: they live in the cold store
(:mod:`memory.recall`), where they are found by meaning, ticker and time.

Ids are deterministic (:func:`stable_id`), so every write of the path is idempotent: replaying
a job after a crash finds its results already stored instead of storing them twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

EpisodeRole = Literal["user", "analyst"]
#: What a user turn was: a message (chat or ``run`` query) or a decision at the approval point.
EpisodeKind = Literal["message", "approve", "reject", "edit"]
EPISODE_KINDS: tuple[EpisodeKind, ...] = get_args(EpisodeKind)

#: ``decision``: after a human decision; ``session_end``: at the end of a conversation.
JobKind = Literal["decision", "session_end"]
JOB_KINDS: tuple[JobKind, ...] = get_args(JobKind)
JobStatus = Literal["pending", "running", "done", "failed"]
JOB_STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)

CandidateKind = Literal["fact", "preference", "procedure", "event", "open_item", "behaviour"]
CANDIDATE_KINDS: tuple[CandidateKind, ...] = get_args(CandidateKind)
#: ``pending``: awaits a user's review; ``ungrounded``: refused by the grounding check.
CandidateStatus = Literal["pending", "confirmed", "rejected", "ungrounded"]
CANDIDATE_STATUSES: tuple[CandidateStatus, ...] = get_args(CandidateStatus)

ProcedureStatus = Literal["active", "retired"]

#: What an audit entry records. ``write``: items stored; ``confirm`` / ``reject``: a user's
#: decision on a candidate; ``read``: items read into a prompt (or returned to the model by a
#: memory tool); ``retire``: a procedure no longer enforced (kept); ``delete``: items removed;
#: ``sweep``: a retention sweep ran (its deletions are ``delete`` entries of their own).
AuditAction = Literal["write", "confirm", "reject", "read", "retire", "delete", "sweep"]
AUDIT_ACTIONS: tuple[AuditAction, ...] = get_args(AuditAction)


def stable_id(prefix: str, *parts: Any) -> str:
    """``prefix-<20 hex>``: a hash of ``parts`` (JSON, sorted keys), the same in every process."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:20]}"


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@dataclass(frozen=True)
class Episode:
    """One immutable user turn. ``meta`` holds plain JSON about it (draft hash, ticker, rating)."""

    tenant_id: str
    episode_id: str
    user_id: str
    thread_id: str
    at: datetime
    role: EpisodeRole
    kind: EpisodeKind
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "at": self.at.isoformat(),
            "role": self.role,
            "kind": self.kind,
            "text": self.text,
            "meta": dict(self.meta),
        }


@dataclass(frozen=True)
class ExtractionJob:
    tenant_id: str
    job_id: str
    user_id: str
    thread_id: str
    kind: JobKind
    episode_ids: tuple[str, ...]
    status: JobStatus
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    leased_until: datetime | None = None
    finished_at: datetime | None = None
    last_error: str | None = None
    #: What the job stored (counts and ids), set when it completes.
    result: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "kind": self.kind,
            "episode_ids": list(self.episode_ids),
            "status": self.status,
            "attempts": self.attempts,
            "created_at": self.created_at.isoformat(),
            "next_attempt_at": self.next_attempt_at.isoformat(),
            "leased_until": _iso(self.leased_until),
            "finished_at": _iso(self.finished_at),
            "last_error": self.last_error,
            "result": dict(self.result),
        }


def job_id_for(tenant_id: str, user_id: str, kind: str, episode_ids: Sequence[str]) -> str:
    """The id of the job of ``kind`` over ``episode_ids`` (order does not matter)."""
    return stable_id("job", tenant_id, user_id, kind, sorted(set(episode_ids)))


@dataclass(frozen=True)
class Candidate:
    """A proposed memory not in force. ``payload`` is the item (JSON); ``quote`` its evidence."""

    tenant_id: str
    candidate_id: str
    user_id: str
    kind: CandidateKind
    payload: Mapping[str, Any]
    quote: str
    episode_ids: tuple[str, ...]
    status: CandidateStatus
    reason: str
    created_at: datetime
    decided_at: datetime | None = None
    job_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate_id": self.candidate_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "kind": self.kind,
            "payload": dict(self.payload),
            "quote": self.quote,
            "episode_ids": list(self.episode_ids),
            "status": self.status,
            "reason": self.reason,
            "created_at": self.created_at.isoformat(),
            "decided_at": _iso(self.decided_at),
            "job_id": self.job_id,
        }


@dataclass(frozen=True)
class SessionSummary:
    tenant_id: str
    session_id: str
    user_id: str
    thread_id: str
    started: datetime
    ended: datetime
    topic: str
    summary: str
    #: Memory ids of the ledger facts the session produced.
    facts_learned: tuple[str, ...] = ()
    open_items: tuple[str, ...] = ()
    episode_ids: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "thread_id": self.thread_id,
            "started": self.started.isoformat(),
            "ended": self.ended.isoformat(),
            "topic": self.topic,
            "summary": self.summary,
            "facts_learned": list(self.facts_learned),
            "open_items": list(self.open_items),
            "episode_ids": list(self.episode_ids),
        }


@dataclass(frozen=True)
class Procedure:
    """A confirmed standing instruction. ``rule`` is what code enforces (e.g.
    ``{"exclude_ticker": "TSLA"}``); ``text`` is the user's words."""

    tenant_id: str
    procedure_id: str
    user_id: str
    text: str
    rule: Mapping[str, Any]
    status: ProcedureStatus
    confirmed_at: datetime
    review_at: datetime
    episode_ids: tuple[str, ...] = ()
    candidate_id: str | None = None
    retired_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "procedure_id": self.procedure_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "text": self.text,
            "rule": dict(self.rule),
            "status": self.status,
            "confirmed_at": self.confirmed_at.isoformat(),
            "review_at": self.review_at.isoformat(),
            "episode_ids": list(self.episode_ids),
            "candidate_id": self.candidate_id,
            "retired_at": _iso(self.retired_at),
        }


@dataclass(frozen=True)
class AuditEntry:
    """One append-only audit line. ``user_id`` is the principal that acted; ``subject_user``
    the user whose memory it was (usually the same). ``content_hash`` is HMAC-SHA256 of the
    content under the database's audit key (see :mod:`memory.journal.audit`), or ``None``;
    ``reason`` is a short fixed text from the code, never user content."""

    tenant_id: str
    audit_id: str
    user_id: str
    subject_user: str
    at: datetime
    action: AuditAction
    tier: str
    item_ids: tuple[str, ...]
    content_hash: str | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "audit_id": self.audit_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "subject_user": self.subject_user,
            "at": self.at.isoformat(),
            "action": self.action,
            "tier": self.tier,
            "item_ids": list(self.item_ids),
            "content_hash": self.content_hash,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Related:
    """What a forget of some ids can touch in the journal (:meth:`Journal.related`): the
    episodes the ids name, the candidates, summaries and procedures named or citing one of
    those episodes, and the extraction jobs citing one."""

    episodes: tuple[Episode, ...] = ()
    jobs: tuple[ExtractionJob, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    summaries: tuple[SessionSummary, ...] = ()
    procedures: tuple[Procedure, ...] = ()
