"""The journal's rules, written once: validation and every state change of a record.

A call (:mod:`memory.journal.sql`, shared by both backends) locks a row, reads it as a
record, asks a function here for the record's next state, and writes that state back (or, for
a new record, validates it here and inserts it), so SQLite and Postgres cannot drift apart.
The life cycles (jobs, candidates, procedures, the audit) are described in
``docs/memory-lifecycle.md`` (The memory journal's state changes).

Every text a record holds (an episode's text, a candidate's quote and payload, a summary's
topic, summary and open items, a procedure's text, a job's error) is redacted here, before it
is stored (:func:`memory.pii.redact`), so no writer can store a card number, an IBAN, an
e-mail address, a phone number or a national id it was given.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from memory.errors import (
    AuditAccessError,
    EpisodeConflictError,
    InvalidPrincipalError,
    JournalError,
)
from memory.identity import Principal
from memory.journal.base import JOB_BACKOFF_BASE, JOB_BACKOFF_CAP, MAX_JOB_ATTEMPTS
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
    CandidateStatus,
    Episode,
    ExtractionJob,
    JobKind,
    Procedure,
    SessionSummary,
    job_id_for,
)
from memory.pii import redact, redact_value

EPISODE_ROLES = ("user", "analyst")
PROCEDURE_STATUSES = ("active", "retired")
#: Statuses :meth:`~memory.journal.base.Journal.decide` may move a pending candidate to.
DECISIONS: tuple[CandidateStatus, ...] = ("confirmed", "rejected", "ungrounded")

_Owned = TypeVar("_Owned", Episode, Candidate, SessionSummary, Procedure)


# -- values ---------------------------------------------------------------------------------


def utc(value: Any, what: str) -> datetime:
    """``value`` in UTC; a naive datetime is refused (its zone would be a guess)."""
    if not isinstance(value, datetime):
        raise JournalError(f"{what} must be a datetime, got {value!r}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise JournalError(
            f"{what} {value.isoformat()} has no time zone; pass an aware datetime, "
            "e.g. datetime(2026, 6, 3, 10, tzinfo=UTC)."
        )
    return value.astimezone(UTC)


def json_text(value: Any, what: str) -> str:
    """``value`` as canonical JSON (sorted keys); NaN, infinities and non-JSON types refused."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise JournalError(f"{what} must be plain JSON (no NaN, sets or objects): {e}.") from e


def plain_json(value: Any, what: str) -> Any:
    """``value`` as the JSON it will read back as (tuples become lists), validated."""
    return json.loads(json_text(value, what))


def one_of(value: Any, allowed: Collection[str], what: str) -> None:
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise JournalError(f"{what} {value!r} is not one of {choices}.")


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise JournalError(f"limit must be a whole number >= 0, got {limit!r}.")
    return limit


def _nonempty(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise JournalError(f"{what} must be a non-empty string, got {value!r}.")
    return value


def _strings(values: Iterable[Any], what: str) -> tuple[str, ...]:
    """Non-empty strings in order; a bare string is refused (it is not a list)."""
    if isinstance(values, str):
        raise JournalError(f"{what} must be a list of strings, got the string {values!r}.")
    return tuple(_nonempty(v, what) for v in values)


def id_list(values: Iterable[Any], what: str) -> tuple[str, ...]:
    """Ids in first-seen order, duplicates dropped."""
    return tuple(dict.fromkeys(_strings(values, what)))


# -- principals and ownership ------------------------------------------------------------------


def check_principal(principal: Principal) -> Principal:
    """A principal that can scope the journal: tenant and user both non-empty strings."""
    if not isinstance(principal, Principal):
        raise InvalidPrincipalError(f"Expected a memory.identity.Principal, got {principal!r}.")
    for what, value in (("tenant_id", principal.tenant_id), ("user_id", principal.user_id)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidPrincipalError(
                f"Principal {principal!r} has an empty {what}; the journal scopes every "
                "record to a tenant and a user."
            )
    return principal


def check_owned(principal: Principal, record: _Owned, what: str, item_id: str) -> None:
    """Refuse a record of another tenant or user: a journal writes for its principal only."""
    if (record.tenant_id, record.user_id) != (principal.tenant_id, principal.user_id):
        raise JournalError(
            f"{what.capitalize()} {item_id} belongs to tenant '{record.tenant_id}', user "
            f"'{record.user_id}', but this journal is scoped to tenant '{principal.tenant_id}', "
            f"user '{principal.user_id}'. Write it through journal.with_principal(...) for its "
            "owner; nothing was stored."
        )


def id_taken(what: str, item_id: str) -> JournalError:
    """An id stored already under another user of the same tenant (ids are per tenant)."""
    return JournalError(
        f"The {what} id {item_id} is in use by another user of this tenant; ids are unique "
        "per tenant. Derive ids from the user and thread (memory.journal.stable_id); nothing "
        "was stored."
    )


def job_not_found(job_id: str) -> JournalError:
    return JournalError(
        f"No extraction job '{job_id}' for this user. Jobs are created by journal.enqueue(...)."
    )


# -- new records ------------------------------------------------------------------------------


def new_episode(principal: Principal, episode: Episode) -> Episode:
    """``episode`` validated and normalised (time in UTC, ``meta`` plain JSON)."""
    if not isinstance(episode, Episode):
        raise JournalError(f"Expected an Episode, got {type(episode).__name__}.")
    _nonempty(episode.episode_id, "episode_id")
    check_owned(principal, episode, "episode", episode.episode_id)
    _nonempty(episode.thread_id, "thread_id")
    one_of(episode.role, EPISODE_ROLES, "episode role")
    one_of(episode.kind, EPISODE_KINDS, "episode kind")
    if not isinstance(episode.text, str):
        raise JournalError(f"Episode {episode.episode_id}: text must be a string.")
    meta = _object(episode.meta, f"episode {episode.episode_id} meta")
    at = utc(episode.at, f"episode {episode.episode_id} at")
    return replace(episode, text=redact(episode.text), at=at, meta=meta)


def same_episode(stored: Episode, new: Episode) -> Episode:
    """The stored episode when ``new`` restates it; an immutable episode is never rewritten."""
    if stored.text != new.text:
        raise EpisodeConflictError(new.episode_id)
    return stored


def new_job(
    principal: Principal,
    kind: JobKind,
    thread_id: str,
    episode_ids: Sequence[str],
    now: datetime,
) -> ExtractionJob:
    """The pending job of ``kind`` over ``episode_ids``, due now (id: :func:`job_id_for`)."""
    one_of(kind, JOB_KINDS, "job kind")
    ids = id_list(episode_ids, "episode_ids")
    if not ids:
        raise JournalError(f"A {kind} job needs at least one episode id; none were given.")
    return ExtractionJob(
        tenant_id=principal.tenant_id,
        job_id=job_id_for(principal.tenant_id, principal.user_id, kind, ids),
        user_id=principal.user_id,
        thread_id=_nonempty(thread_id, "thread_id"),
        kind=kind,
        episode_ids=ids,
        status="pending",
        attempts=0,
        created_at=now,
        next_attempt_at=now,
    )


def new_candidate(principal: Principal, candidate: Candidate) -> Candidate:
    if not isinstance(candidate, Candidate):
        raise JournalError(f"Expected a Candidate, got {type(candidate).__name__}.")
    cid = _nonempty(candidate.candidate_id, "candidate_id")
    check_owned(principal, candidate, "candidate", cid)
    one_of(candidate.kind, CANDIDATE_KINDS, "candidate kind")
    one_of(candidate.status, CANDIDATE_STATUSES, "candidate status")
    return replace(
        candidate,
        payload=redact_value(_object(candidate.payload, f"candidate {cid} payload")),
        quote=redact(candidate.quote),
        episode_ids=id_list(candidate.episode_ids, "episode_ids"),
        created_at=utc(candidate.created_at, f"candidate {cid} created_at"),
        decided_at=_optional_utc(candidate.decided_at, f"candidate {cid} decided_at"),
    )


def new_summary(principal: Principal, summary: SessionSummary) -> SessionSummary:
    if not isinstance(summary, SessionSummary):
        raise JournalError(f"Expected a SessionSummary, got {type(summary).__name__}.")
    sid = _nonempty(summary.session_id, "session_id")
    check_owned(principal, summary, "session summary", sid)
    started = utc(summary.started, f"session {sid} started")
    ended = utc(summary.ended, f"session {sid} ended")
    if ended < started:
        raise JournalError(f"Session {sid} ends ({ended}) before it starts ({started}).")
    return replace(
        summary,
        started=started,
        ended=ended,
        topic=redact(summary.topic),
        summary=redact(summary.summary),
        facts_learned=id_list(summary.facts_learned, "facts_learned"),
        open_items=tuple(redact(item) for item in _strings(summary.open_items, "open_items")),
        episode_ids=id_list(summary.episode_ids, "episode_ids"),
    )


def new_procedure(principal: Principal, procedure: Procedure) -> Procedure:
    if not isinstance(procedure, Procedure):
        raise JournalError(f"Expected a Procedure, got {type(procedure).__name__}.")
    pid = _nonempty(procedure.procedure_id, "procedure_id")
    check_owned(principal, procedure, "procedure", pid)
    one_of(procedure.status, PROCEDURE_STATUSES, "procedure status")
    return replace(
        procedure,
        text=redact(procedure.text),
        rule=_object(procedure.rule, f"procedure {pid} rule"),
        confirmed_at=utc(procedure.confirmed_at, f"procedure {pid} confirmed_at"),
        review_at=utc(procedure.review_at, f"procedure {pid} review_at"),
        episode_ids=id_list(procedure.episode_ids, "episode_ids"),
        retired_at=_optional_utc(procedure.retired_at, f"procedure {pid} retired_at"),
    )


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise JournalError(f"{what} must be a mapping (a JSON object), got {value!r}.")
    plain: dict[str, Any] = plain_json(dict(value), what)
    return plain


def _optional_utc(value: datetime | None, what: str) -> datetime | None:
    return None if value is None else utc(value, what)


# -- job transitions ---------------------------------------------------------------------------


def check_lease(lease: timedelta) -> timedelta:
    if not isinstance(lease, timedelta) or lease <= timedelta(0):
        raise JournalError(f"A job's lease must be a positive timedelta, got {lease!r}.")
    return lease


def backoff(attempts: int) -> timedelta:
    """The wait after failed attempt ``attempts`` (1-based): BASE * 2**(attempts-1), capped."""
    exponent = max(attempts, 1) - 1
    if exponent >= 32:  # far past the cap; keeps the multiplication small
        return JOB_BACKOFF_CAP
    return min(JOB_BACKOFF_BASE * 2**exponent, JOB_BACKOFF_CAP)


def claimed(job: ExtractionJob, now: datetime, lease: timedelta) -> ExtractionJob:
    """A due job taken by a worker: running, one more attempt, leased until ``now + lease``.

    A job out of attempts (its last worker's lease expired) is ``failed`` instead.
    """
    lost = job.status == "running"  # due only because its lease expired
    if job.attempts >= MAX_JOB_ATTEMPTS:
        why = (
            f"attempt {job.attempts} of {MAX_JOB_ATTEMPTS} lost its lease without a result "
            "(its worker stopped)"
            if lost
            else f"no attempts left ({job.attempts} of {MAX_JOB_ATTEMPTS} made)"
        )
        return replace(job, status="failed", leased_until=None, finished_at=now, last_error=why)
    error = job.last_error
    if lost:
        error = f"attempt {job.attempts} lost its lease without a result (its worker stopped)"
    return replace(
        job,
        status="running",
        attempts=job.attempts + 1,
        leased_until=now + lease,
        last_error=error,
    )


def completed(job: ExtractionJob, result: Mapping[str, Any], now: datetime) -> ExtractionJob:
    """The job done with ``result``; a job done already stays as it is."""
    if job.status == "done":
        return job
    plain = _object(result, f"the result of job {job.job_id}")
    return replace(job, status="done", finished_at=now, leased_until=None, result=plain)


def failed(job: ExtractionJob, error: str, now: datetime) -> ExtractionJob:
    """A failed attempt: pending again after :func:`backoff`, or ``failed`` when out of
    attempts. A job that is done or failed already stays as it is."""
    if job.status in ("done", "failed"):
        return job
    message = redact(str(error))
    if job.attempts >= MAX_JOB_ATTEMPTS:
        return replace(job, status="failed", leased_until=None, finished_at=now, last_error=message)
    return replace(
        job,
        status="pending",
        leased_until=None,
        next_attempt_at=now + backoff(job.attempts),
        last_error=message,
    )


def check_job_filters(status: str | None, kind: str | None) -> None:
    if status is not None:
        one_of(status, JOB_STATUSES, "job status")
    if kind is not None:
        one_of(kind, JOB_KINDS, "job kind")


# -- candidates and procedures -------------------------------------------------------------------


def decided(candidate: Candidate, status: CandidateStatus, reason: str, now: datetime) -> Candidate:
    """A pending candidate decided as ``status``; an empty ``reason`` keeps the old one."""
    if status not in DECISIONS:
        choices = ", ".join(repr(d) for d in DECISIONS)
        raise JournalError(
            f"Cannot decide candidate {candidate.candidate_id} as {status!r}; decide {choices}."
        )
    if candidate.status != "pending":
        when = "" if candidate.decided_at is None else f" on {candidate.decided_at.isoformat()}"
        raise JournalError(
            f"Candidate {candidate.candidate_id} is {candidate.status} already{when}; only "
            "pending candidates can be decided. Propose a new candidate to change it."
        )
    return replace(candidate, status=status, reason=reason or candidate.reason, decided_at=now)


def check_candidate_filters(status: str | None, kind: str | None) -> None:
    if status is not None:
        one_of(status, CANDIDATE_STATUSES, "candidate status")
    if kind is not None:
        one_of(kind, CANDIDATE_KINDS, "candidate kind")


def retired(procedure: Procedure, now: datetime) -> Procedure:
    if procedure.status == "retired":
        return procedure
    return replace(procedure, status="retired", retired_at=now)


def check_procedure_filter(status: str | None) -> None:
    if status is not None:
        one_of(status, PROCEDURE_STATUSES, "procedure status")


# -- sessions ------------------------------------------------------------------------------------


def uncovered_threads(
    last_at: Mapping[str, datetime],
    episodes: Iterable[tuple[str, str]],
    covered: Iterable[Iterable[str]],
) -> list[str]:
    """Threads of ``last_at`` (idle threads and their newest episode) having an episode of
    ``episodes`` ((thread, episode id) pairs) that no ``session_end`` job's episode ids in
    ``covered`` lists; the longest idle first."""
    seen = {episode_id for ids in covered for episode_id in ids}
    waiting = {thread for thread, eid in episodes if thread in last_at and eid not in seen}
    return sorted(waiting, key=lambda thread: (last_at[thread], thread))


# -- the audit ------------------------------------------------------------------------------

#: The longest audit reason: a short fixed text from the code, never user content.
MAX_AUDIT_REASON = 200


def new_audit(
    principal: Principal,
    audit_id: str,
    action: AuditAction,
    tier: str,
    item_ids: Iterable[Any],
    *,
    reason: str,
    subject_user: str,
    content_hash: str | None,
    now: datetime,
) -> AuditEntry:
    """A validated audit entry of ``principal`` about ``subject_user``'s memory."""
    one_of(action, AUDIT_ACTIONS, "audit action")
    if not isinstance(reason, str) or len(reason) > MAX_AUDIT_REASON:
        raise JournalError(
            f"An audit reason is a string of at most {MAX_AUDIT_REASON} characters (a fixed "
            f"text from the code, never user content), got {reason!r:.80}."
        )
    return AuditEntry(
        tenant_id=principal.tenant_id,
        audit_id=_nonempty(audit_id, "audit_id"),
        user_id=principal.user_id,
        subject_user=_nonempty(subject_user, "subject_user"),
        at=utc(now, "The audit time"),
        action=action,
        tier=_nonempty(tier, "audit tier"),
        item_ids=id_list(item_ids, "item_ids"),
        content_hash=content_hash,
        reason=reason,
    )


def audit_refused(principal: Principal, subject_user: str, what: str) -> AuditAccessError:
    return AuditAccessError(
        f"User '{principal.user_id}' may not {what} the audit of user '{subject_user}': only "
        f"that user and an admin of tenant '{principal.tenant_id}' may (the tenant's admin "
        f"grants one with: analyst facts grant {principal.user_id} --admin)."
    )


def audit_action(status: CandidateStatus) -> AuditAction:
    """The audit action of a decision on a candidate."""
    return "confirm" if status == "confirmed" else "reject"
