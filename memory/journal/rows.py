"""The journal's tables as rows: one column layout, two spellings of times and JSON.

Both backends have the same tables and columns (the journal's migrations,
:mod:`memory.journal.migrations`); they differ only in how a row holds a time (SQLite:
fixed-width ISO-8601 UTC text; Postgres: ``timestamptz``) and JSON (SQLite: text; Postgres:
``jsonb``). A :class:`Codec` says which, and turns records into rows and rows into records,
so the mapping is written once.

It is also the one place content is sealed (``ANALYST_MEMORY_KEY``, :mod:`memory.sealing`):
episodes' text and meta, jobs' last error and result, candidates' payload and quote,
summaries' topic, summary and open items, procedures' text and rule. Ids, owners, times,
kinds, statuses and id lists stay in clear: every statement filters and orders by those only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.journal.records import (
    AuditEntry,
    Candidate,
    Episode,
    ExtractionJob,
    Procedure,
    SessionSummary,
)
from memory.sealing import PLAIN, MemoryCipher

EPISODE_COLUMNS = (
    "tenant_id",
    "episode_id",
    "user_id",
    "thread_id",
    "at",
    "role",
    "kind",
    "text",
    "meta",
)
JOB_COLUMNS = (
    "tenant_id",
    "job_id",
    "user_id",
    "thread_id",
    "kind",
    "episode_ids",
    "status",
    "attempts",
    "created_at",
    "next_attempt_at",
    "leased_until",
    "finished_at",
    "last_error",
    "result",
)
#: What claim, complete and fail change (the rest of a job never changes).
JOB_STATE_COLUMNS = (
    "status",
    "attempts",
    "next_attempt_at",
    "leased_until",
    "finished_at",
    "last_error",
    "result",
)
CANDIDATE_COLUMNS = (
    "tenant_id",
    "candidate_id",
    "user_id",
    "kind",
    "payload",
    "quote",
    "episode_ids",
    "status",
    "reason",
    "created_at",
    "decided_at",
    "job_id",
)
#: What a decision changes.
CANDIDATE_STATE_COLUMNS = ("status", "reason", "decided_at")
SUMMARY_COLUMNS = (
    "tenant_id",
    "session_id",
    "user_id",
    "thread_id",
    "started",
    "ended",
    "topic",
    "summary",
    "facts_learned",
    "open_items",
    "episode_ids",
)
PROCEDURE_COLUMNS = (
    "tenant_id",
    "procedure_id",
    "user_id",
    "text",
    "rule",
    "status",
    "confirmed_at",
    "review_at",
    "episode_ids",
    "candidate_id",
    "retired_at",
)
#: What retiring changes.
PROCEDURE_STATE_COLUMNS = ("status", "retired_at")
AUDIT_COLUMNS = (
    "tenant_id",
    "audit_id",
    "user_id",
    "subject_user",
    "at",
    "action",
    "tier",
    "item_ids",
    "content_hash",
    "reason",
)


def columns(names: Sequence[str], prefix: str = "") -> str:
    """``a, b, c`` (or ``p.a, p.b, p.c``) for a SELECT or INSERT list."""
    return ", ".join(prefix + name for name in names)


@dataclass(frozen=True)
class Codec:
    """How one backend spells times and JSON values in a row, and how content is sealed."""

    time_in: Callable[[datetime], Any]
    time_out: Callable[[Any], datetime]
    json_in: Callable[[Any], Any]
    json_out: Callable[[Any], Any]
    #: Seals content columns on the way in and opens them on the way out.
    cipher: MemoryCipher = PLAIN

    def _obj_in(self, value: Any) -> Any:
        """A JSON-object content column, sealed (still an object)."""
        return self.json_in(self.cipher.seal_object(dict(value)))

    def _obj_out(self, value: Any) -> Any:
        return self.cipher.open_object(self.json_out(value))

    def _list_in(self, value: Any) -> Any:
        """A JSON-array content column, sealed (still an array)."""
        return self.json_in(self.cipher.seal_array(list(value)))

    def _list_out(self, value: Any) -> Any:
        return self.cipher.open_array(self.json_out(value))

    def _time_in(self, value: datetime | None) -> Any:
        return None if value is None else self.time_in(value)

    def _time_out(self, value: Any) -> datetime | None:
        return None if value is None else self.time_out(value)

    # -- episodes ---------------------------------------------------------------------------

    def episode_row(self, e: Episode) -> tuple[Any, ...]:
        return (
            e.tenant_id,
            e.episode_id,
            e.user_id,
            e.thread_id,
            self.time_in(e.at),
            e.role,
            e.kind,
            self.cipher.seal(e.text),
            self._obj_in(e.meta),
        )

    def episode(self, row: Sequence[Any]) -> Episode:
        return Episode(
            tenant_id=row[0],
            episode_id=row[1],
            user_id=row[2],
            thread_id=row[3],
            at=self.time_out(row[4]),
            role=row[5],
            kind=row[6],
            text=self.cipher.open(row[7]),
            meta=self._obj_out(row[8]),
        )

    # -- jobs -------------------------------------------------------------------------------

    def job_row(self, j: ExtractionJob) -> tuple[Any, ...]:
        return (
            j.tenant_id,
            j.job_id,
            j.user_id,
            j.thread_id,
            j.kind,
            self.json_in(list(j.episode_ids)),
            j.status,
            j.attempts,
            self.time_in(j.created_at),
            self.time_in(j.next_attempt_at),
            self._time_in(j.leased_until),
            self._time_in(j.finished_at),
            self.cipher.seal(j.last_error),
            self._obj_in(j.result),
        )

    def job_state(self, j: ExtractionJob) -> tuple[Any, ...]:
        """The values of :data:`JOB_STATE_COLUMNS`."""
        return (
            j.status,
            j.attempts,
            self.time_in(j.next_attempt_at),
            self._time_in(j.leased_until),
            self._time_in(j.finished_at),
            self.cipher.seal(j.last_error),
            self._obj_in(j.result),
        )

    def job(self, row: Sequence[Any]) -> ExtractionJob:
        return ExtractionJob(
            tenant_id=row[0],
            job_id=row[1],
            user_id=row[2],
            thread_id=row[3],
            kind=row[4],
            episode_ids=tuple(self.json_out(row[5])),
            status=row[6],
            attempts=row[7],
            created_at=self.time_out(row[8]),
            next_attempt_at=self.time_out(row[9]),
            leased_until=self._time_out(row[10]),
            finished_at=self._time_out(row[11]),
            last_error=self.cipher.open(row[12]),
            result=self._obj_out(row[13]),
        )

    # -- candidates -------------------------------------------------------------------------

    def candidate_row(self, c: Candidate) -> tuple[Any, ...]:
        return (
            c.tenant_id,
            c.candidate_id,
            c.user_id,
            c.kind,
            self._obj_in(c.payload),
            self.cipher.seal(c.quote),
            self.json_in(list(c.episode_ids)),
            c.status,
            c.reason,
            self.time_in(c.created_at),
            self._time_in(c.decided_at),
            c.job_id,
        )

    def candidate_state(self, c: Candidate) -> tuple[Any, ...]:
        """The values of :data:`CANDIDATE_STATE_COLUMNS`."""
        return (c.status, c.reason, self._time_in(c.decided_at))

    def candidate(self, row: Sequence[Any]) -> Candidate:
        return Candidate(
            tenant_id=row[0],
            candidate_id=row[1],
            user_id=row[2],
            kind=row[3],
            payload=self._obj_out(row[4]),
            quote=self.cipher.open(row[5]),
            episode_ids=tuple(self.json_out(row[6])),
            status=row[7],
            reason=row[8],
            created_at=self.time_out(row[9]),
            decided_at=self._time_out(row[10]),
            job_id=row[11],
        )

    # -- session summaries ------------------------------------------------------------------

    def summary_row(self, s: SessionSummary) -> tuple[Any, ...]:
        return (
            s.tenant_id,
            s.session_id,
            s.user_id,
            s.thread_id,
            self.time_in(s.started),
            self.time_in(s.ended),
            self.cipher.seal(s.topic),
            self.cipher.seal(s.summary),
            self.json_in(list(s.facts_learned)),
            self._list_in(s.open_items),
            self.json_in(list(s.episode_ids)),
        )

    def summary(self, row: Sequence[Any]) -> SessionSummary:
        return SessionSummary(
            tenant_id=row[0],
            session_id=row[1],
            user_id=row[2],
            thread_id=row[3],
            started=self.time_out(row[4]),
            ended=self.time_out(row[5]),
            topic=self.cipher.open(row[6]),
            summary=self.cipher.open(row[7]),
            facts_learned=tuple(self.json_out(row[8])),
            open_items=tuple(self._list_out(row[9])),
            episode_ids=tuple(self.json_out(row[10])),
        )

    # -- procedures -------------------------------------------------------------------------

    def procedure_row(self, p: Procedure) -> tuple[Any, ...]:
        return (
            p.tenant_id,
            p.procedure_id,
            p.user_id,
            self.cipher.seal(p.text),
            self._obj_in(p.rule),
            p.status,
            self.time_in(p.confirmed_at),
            self.time_in(p.review_at),
            self.json_in(list(p.episode_ids)),
            p.candidate_id,
            self._time_in(p.retired_at),
        )

    def procedure_state(self, p: Procedure) -> tuple[Any, ...]:
        """The values of :data:`PROCEDURE_STATE_COLUMNS`."""
        return (p.status, self._time_in(p.retired_at))

    def procedure(self, row: Sequence[Any]) -> Procedure:
        return Procedure(
            tenant_id=row[0],
            procedure_id=row[1],
            user_id=row[2],
            text=self.cipher.open(row[3]),
            rule=self._obj_out(row[4]),
            status=row[5],
            confirmed_at=self.time_out(row[6]),
            review_at=self.time_out(row[7]),
            episode_ids=tuple(self.json_out(row[8])),
            candidate_id=row[9],
            retired_at=self._time_out(row[10]),
        )

    # -- the audit --------------------------------------------------------------------------

    def audit_row(self, a: AuditEntry) -> tuple[Any, ...]:
        return (
            a.tenant_id,
            a.audit_id,
            a.user_id,
            a.subject_user,
            self.time_in(a.at),
            a.action,
            a.tier,
            self.json_in(list(a.item_ids)),
            a.content_hash,
            a.reason,
        )

    def audit(self, row: Sequence[Any]) -> AuditEntry:
        return AuditEntry(
            tenant_id=row[0],
            audit_id=row[1],
            user_id=row[2],
            subject_user=row[3],
            at=self.time_out(row[4]),
            action=row[5],
            tier=row[6],
            item_ids=tuple(self.json_out(row[7])),
            content_hash=row[8],
            reason=row[9],
        )
