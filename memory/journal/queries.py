"""The journal's SQL, written once: every statement and its parameters, for either backend.

Both backends run the same statements over the same tables (the journal's migrations,
:mod:`memory.journal.migrations`); a :class:`Dialect` says how one of them spells what differs:
the placeholder (``?`` or ``%s``), the schema that qualifies table names, times and JSON (its
:class:`~memory.journal.rows.Codec`), a list of ids as one parameter, and whether a row read
to be changed is locked (Postgres: ``FOR UPDATE``, and ``FOR UPDATE SKIP LOCKED`` on the due
job; SQLite has no row locks: its write transaction holds the file's write lock from the
start). :class:`Queries` builds each :class:`Statement` -- SQL, parameters, and what the
caller reads back -- from a dialect.

Every statement filters by tenant *and* user (``mine``): SQLite has no row security, and on
Postgres a query that forgot the filter would still see only the principal's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from memory.journal.records import (
    AuditEntry,
    Candidate,
    Episode,
    ExtractionJob,
    Procedure,
    SessionSummary,
)
from memory.journal.rows import (
    AUDIT_COLUMNS,
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
from memory.sealing import MemoryCipher

#: The principal a statement acts for: (tenant_id, user_id).
Mine = tuple[str, str]

#: What the caller reads back: the first row (or ``None``), all rows, or the rows changed.
Answer = Literal["one", "all", "count"]


@dataclass(frozen=True)
class Statement:
    """One statement: its SQL, its parameters, and what its caller reads back."""

    sql: str
    params: tuple[Any, ...]
    answer: Answer


@dataclass(frozen=True)
class Dialect:
    """How one backend spells its SQL."""

    #: The parameter placeholder: ``?`` (sqlite3) or ``%s`` (psycopg).
    mark: str
    #: Table names are qualified with this schema (Postgres) or used as they are (``None``).
    schema: str | None
    codec: Codec
    #: ``column`` among a list of ids passed as one parameter, e.g. ``{column} = ANY({mark})``.
    in_list: str
    #: The list of ids as that parameter (SQLite: JSON text; Postgres: a list).
    id_list: Callable[[list[str]], Any]
    #: Lock a row read in order to change it (Postgres); SQLite's write lock covers the file.
    locks_rows: bool
    #: The JSON array ``{column}`` holds one of the ids passed as one parameter (``id_list``).
    cites: str
    #: The fact ledger's grants table (SQLite ``fact_grants``, Postgres ``grants``).
    grants: str


@dataclass(frozen=True)
class _Table:
    name: str
    #: The id column: unique per tenant (the primary key is ``(tenant_id, key)``).
    key: str
    columns: tuple[str, ...]


_EPISODES = _Table("episodes", "episode_id", EPISODE_COLUMNS)
_JOBS = _Table("extraction_jobs", "job_id", JOB_COLUMNS)
_CANDIDATES = _Table("memory_candidates", "candidate_id", CANDIDATE_COLUMNS)
_SUMMARIES = _Table("session_summaries", "session_id", SUMMARY_COLUMNS)
_PROCEDURES = _Table("procedures", "procedure_id", PROCEDURE_COLUMNS)
_AUDIT = _Table("memory_audit", "audit_id", AUDIT_COLUMNS)
_SECRETS = _Table("memory_secrets", "name", ("name", "secret"))
_TOMBSTONES = _Table("memory_tombstones", "hash", ("tenant_id", "user_id", "hash", "created_at"))

#: The journal's tables that hold a principal's memory, by tier name, in the order account
#: deletion removes them (the audit is append-only and never among them).
OWNED_TABLES: dict[str, _Table] = {
    "episodes": _EPISODES,
    "extraction_jobs": _JOBS,
    "candidates": _CANDIDATES,
    "summaries": _SUMMARIES,
    "procedures": _PROCEDURES,
}


class Queries:
    """Every statement of the journal, spelled in one :class:`Dialect`."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.codec = dialect.codec
        m = dialect.mark
        self._mine = f"tenant_id = {m} AND user_id = {m}"
        self._for_update = " FOR UPDATE" if dialect.locks_rows else ""
        #: A job another worker is claiming right now is skipped, not waited for.
        self._skip_locked = " FOR UPDATE SKIP LOCKED" if dialect.locks_rows else ""

    def sealed_with(self, cipher: MemoryCipher) -> Queries:
        """The same statements, with content sealed by ``cipher`` (:mod:`memory.sealing`)."""
        codec = replace(self.dialect.codec, cipher=cipher)
        return Queries(replace(self.dialect, codec=codec))

    # -- building blocks ------------------------------------------------------------------

    def _name(self, table: _Table) -> str:
        schema = self.dialect.schema
        return table.name if schema is None else f"{schema}.{table.name}"

    def _in(self, column: str) -> str:
        return self.dialect.in_list.format(column=column, mark=self.dialect.mark)

    def _ids(self, ids: Sequence[str]) -> Any:
        return self.dialect.id_list(list(ids))

    def _insert(self, table: _Table, row: tuple[Any, ...]) -> Statement:
        """Insert ``row`` unless its key is stored (answer: 1 if inserted, 0 if not)."""
        marks = ", ".join([self.dialect.mark] * len(table.columns))
        sql = (
            f"INSERT INTO {self._name(table)} ({columns(table.columns)}) VALUES ({marks})"
            " ON CONFLICT DO NOTHING"
        )
        return Statement(sql, row, "count")

    def _select(self, table: _Table, mine: Mine, item_id: str, *, lock: bool) -> Statement:
        """The principal's row with id ``item_id`` (locked to be changed if ``lock``)."""
        sql = (
            f"SELECT {columns(table.columns)} FROM {self._name(table)}"
            f" WHERE {self._mine} AND {table.key} = {self.dialect.mark}"
        )
        return Statement(sql + (self._for_update if lock else ""), (*mine, item_id), "one")

    def _update(
        self, table: _Table, names: Sequence[str], values: Sequence[Any], mine: Mine, item_id: str
    ) -> Statement:
        """Set ``names`` to ``values`` in the principal's row with id ``item_id``."""
        m = self.dialect.mark
        assignments = ", ".join(f"{name} = {m}" for name in names)
        sql = (
            f"UPDATE {self._name(table)} SET {assignments} WHERE {self._mine} AND {table.key} = {m}"
        )
        return Statement(sql, (*values, *mine, item_id), "count")

    def _list(
        self,
        table: _Table,
        mine: Mine,
        filters: Sequence[tuple[str, str, Any]],
        order: str,
        limit: int | None = None,
    ) -> Statement:
        """The principal's rows matching ``filters`` ((column, operator, value); a ``None``
        value is no filter), in ``order``, at most ``limit``."""
        where = [self._mine]
        params: list[Any] = [*mine]
        for column, operator, value in filters:
            if value is not None:
                where.append(f"{column} {operator} {self.dialect.mark}")
                params.append(value)
        sql = f"SELECT {columns(table.columns)} FROM {self._name(table)}"
        sql += f" WHERE {' AND '.join(where)} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {self.dialect.mark}"
            params.append(limit)
        return Statement(sql, tuple(params), "all")

    def _time(self, value: datetime | None) -> Any:
        return None if value is None else self.codec.time_in(value)

    # -- episodes -------------------------------------------------------------------------

    def add_episode(self, episode: Episode) -> Statement:
        return self._insert(_EPISODES, self.codec.episode_row(episode))

    def episode(self, mine: Mine, episode_id: str) -> Statement:
        return self._select(_EPISODES, mine, episode_id, lock=False)

    def episodes(self, mine: Mine, episode_ids: Sequence[str]) -> Statement:
        """The principal's episodes among ``episode_ids``, chronological."""
        sql = (
            f"SELECT {columns(EPISODE_COLUMNS)} FROM {self._name(_EPISODES)}"
            f" WHERE {self._mine} AND {self._in('episode_id')} ORDER BY at, episode_id"
        )
        return Statement(sql, (*mine, self._ids(episode_ids)), "all")

    def list_episodes(
        self,
        mine: Mine,
        thread_id: str | None,
        since: datetime | None,
        until: datetime | None,
        limit: int,
    ) -> Statement:
        """Chronological; ``since`` inclusive, ``until`` exclusive (both UTC already)."""
        filters = [
            ("thread_id", "=", thread_id),
            ("at", ">=", self._time(since)),
            ("at", "<", self._time(until)),
        ]
        return self._list(_EPISODES, mine, filters, "at, episode_id", limit)

    def idle_threads(self, mine: Mine, before: datetime) -> Statement:
        """(thread, newest episode time) of each thread whose newest episode is before ``before``."""
        sql = (
            f"SELECT thread_id, max(at) FROM {self._name(_EPISODES)} WHERE {self._mine}"
            f" GROUP BY thread_id HAVING max(at) < {self.dialect.mark}"
        )
        return Statement(sql, (*mine, self.codec.time_in(before)), "all")

    def thread_episodes(self, mine: Mine, thread_ids: Sequence[str]) -> Statement:
        """(thread, episode id) of every episode of ``thread_ids``."""
        sql = (
            f"SELECT thread_id, episode_id FROM {self._name(_EPISODES)}"
            f" WHERE {self._mine} AND {self._in('thread_id')}"
        )
        return Statement(sql, (*mine, self._ids(thread_ids)), "all")

    # -- extraction jobs ------------------------------------------------------------------

    def add_job(self, job: ExtractionJob) -> Statement:
        return self._insert(_JOBS, self.codec.job_row(job))

    def job(self, mine: Mine, job_id: str, *, lock: bool = False) -> Statement:
        return self._select(_JOBS, mine, job_id, lock=lock)

    def next_due(self, mine: Mine, now: datetime) -> Statement:
        """The job due longest: pending and due, or running with an expired lease (its worker
        died); locked, and one being claimed by another worker skipped (Postgres)."""
        m = self.dialect.mark
        sql = (
            f"SELECT {columns(JOB_COLUMNS)} FROM {self._name(_JOBS)}"
            f" WHERE {self._mine}"
            f" AND ((status = 'pending' AND next_attempt_at <= {m})"
            f" OR (status = 'running' AND leased_until <= {m}))"
            " ORDER BY CASE status WHEN 'running' THEN leased_until ELSE next_attempt_at END,"
            " created_at, job_id"
            f" LIMIT 1{self._skip_locked}"
        )
        due = self.codec.time_in(now)
        return Statement(sql, (*mine, due, due), "one")

    def set_job_state(self, mine: Mine, job: ExtractionJob) -> Statement:
        """Store what claim, complete and fail change (the rest of a job never changes)."""
        return self._update(_JOBS, JOB_STATE_COLUMNS, self.codec.job_state(job), mine, job.job_id)

    def jobs(
        self,
        mine: Mine,
        status: str | None,
        kind: str | None,
        thread_id: str | None,
        limit: int,
    ) -> Statement:
        """Newest first."""
        filters = [("status", "=", status), ("kind", "=", kind), ("thread_id", "=", thread_id)]
        return self._list(_JOBS, mine, filters, "created_at DESC, job_id DESC", limit)

    def session_end_covers(self, mine: Mine) -> Statement:
        """The episode ids (JSON) of every ``session_end`` job."""
        sql = (
            f"SELECT episode_ids FROM {self._name(_JOBS)}"
            f" WHERE {self._mine} AND kind = 'session_end'"
        )
        return Statement(sql, mine, "all")

    # -- candidates -----------------------------------------------------------------------

    def add_candidate(self, candidate: Candidate) -> Statement:
        return self._insert(_CANDIDATES, self.codec.candidate_row(candidate))

    def candidate(self, mine: Mine, candidate_id: str, *, lock: bool = False) -> Statement:
        return self._select(_CANDIDATES, mine, candidate_id, lock=lock)

    def set_candidate_state(self, mine: Mine, c: Candidate) -> Statement:
        """Store a decision."""
        state = self.codec.candidate_state(c)
        return self._update(_CANDIDATES, CANDIDATE_STATE_COLUMNS, state, mine, c.candidate_id)

    def candidates(self, mine: Mine, status: str | None, kind: str | None, limit: int) -> Statement:
        """Oldest first."""
        filters = [("status", "=", status), ("kind", "=", kind)]
        return self._list(_CANDIDATES, mine, filters, "created_at, candidate_id", limit)

    # -- session summaries ----------------------------------------------------------------

    def add_summary(self, summary: SessionSummary) -> Statement:
        return self._insert(_SUMMARIES, self.codec.summary_row(summary))

    def replace_summary(self, mine: Mine, summary: SessionSummary) -> Statement:
        """Overwrite the principal's summary of the session (all but its key and owner)."""
        row = self.codec.summary_row(summary)
        return self._update(_SUMMARIES, SUMMARY_COLUMNS[3:], row[3:], mine, summary.session_id)

    def summaries(self, mine: Mine, limit: int) -> Statement:
        """The most recent by ``ended``, newest first."""
        return self._list(_SUMMARIES, mine, (), "ended DESC, session_id DESC", limit)

    # -- procedures -----------------------------------------------------------------------

    def add_procedure(self, procedure: Procedure) -> Statement:
        return self._insert(_PROCEDURES, self.codec.procedure_row(procedure))

    def procedure(self, mine: Mine, procedure_id: str, *, lock: bool = False) -> Statement:
        return self._select(_PROCEDURES, mine, procedure_id, lock=lock)

    def set_procedure_state(self, mine: Mine, p: Procedure) -> Statement:
        """Store what retiring changes."""
        state = self.codec.procedure_state(p)
        return self._update(_PROCEDURES, PROCEDURE_STATE_COLUMNS, state, mine, p.procedure_id)

    def procedures(self, mine: Mine, status: str | None) -> Statement:
        """Oldest first (by ``confirmed_at``)."""
        filters = [("status", "=", status)]
        return self._list(_PROCEDURES, mine, filters, "confirmed_at, procedure_id")

    # -- what a forget of some ids reads -------------------------------------------------

    def related(
        self, mine: Mine, tier: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> Statement:
        """The principal's rows of ``tier`` among ``ids`` or citing one of ``episodes`` (their
        ``episode_ids``), in key order: what a forget of ``ids`` can touch in that table."""
        table = OWNED_TABLES[tier]
        m = self.dialect.mark
        cites = self.dialect.cites.format(column="episode_ids", mark=m)
        where = f"{self._in(table.key)} OR {cites}" if tier != "episodes" else self._in(table.key)
        sql = (
            f"SELECT {columns(table.columns)} FROM {self._name(table)}"
            f" WHERE {self._mine} AND ({where}) ORDER BY {table.key}"
        )
        params = (*mine, self._ids(ids)) + (() if tier == "episodes" else (self._ids(episodes),))
        return Statement(sql, params, "all")

    # -- account deletion -----------------------------------------------------------------

    def delete_owned(self, mine: Mine, tier: str) -> Statement:
        """Delete every row of the principal in the journal table of ``tier``; answer the rows
        deleted, every column (``RETURNING``: no read first, so no row lock, which on Postgres
        would need UPDATE on ``episodes``, a privilege the application role does not have)."""
        table = OWNED_TABLES[tier]
        sql = (
            f"DELETE FROM {self._name(table)} WHERE {self._mine} RETURNING {columns(table.columns)}"
        )
        return Statement(sql, mine, "all")

    def delete_ids(self, mine: Mine, tier: str, ids: Sequence[str]) -> Statement:
        """Delete the principal's rows of ``tier`` among ``ids``; answer the ids deleted."""
        table = OWNED_TABLES[tier]
        sql = (
            f"DELETE FROM {self._name(table)} WHERE {self._mine} AND {self._in(table.key)}"
            f" RETURNING {table.key}"
        )
        return Statement(sql, (*mine, self._ids(ids)), "all")

    # -- tombstones -----------------------------------------------------------------------

    def add_tombstone(self, mine: Mine, hash_: str, now: datetime) -> Statement:
        return self._insert(_TOMBSTONES, (*mine, hash_, self.codec.time_in(now)))

    def tombstones_among(self, mine: Mine, hashes: Sequence[str]) -> Statement:
        """The principal's tombstones among ``hashes``."""
        sql = (
            f"SELECT hash FROM {self._name(_TOMBSTONES)} WHERE {self._mine} AND {self._in('hash')}"
        )
        return Statement(sql, (*mine, self._ids(hashes)), "all")

    # -- the audit ------------------------------------------------------------------------

    def add_audit(self, entry: AuditEntry) -> Statement:
        return self._insert(_AUDIT, self.codec.audit_row(entry))

    def secret(self, name: str) -> Statement:
        """The database's secret ``name`` (``audit``: the audit key of migration 6)."""
        sql = f"SELECT secret FROM {self._name(_SECRETS)} WHERE name = {self.dialect.mark}"
        return Statement(sql, (name,), "one")

    def is_admin(self, mine: Mine) -> Statement:
        """A row if the principal is an admin of its tenant in the ledger's grants."""
        grants = _Table(self.dialect.grants, "", ())
        sql = f"SELECT 1 FROM {self._name(grants)} WHERE {self._mine} AND role = 'admin' LIMIT 1"
        return Statement(sql, mine, "one")

    def latest_audit(self, mine: Mine, action: str, since: datetime) -> Statement:
        """The principal's newest entry of ``action`` about its own memory since ``since``
        (the ``memory_audit_subject`` index: tenant, subject, time)."""
        m = self.dialect.mark
        sql = (
            f"SELECT {columns(AUDIT_COLUMNS)} FROM {self._name(_AUDIT)}"
            f" WHERE tenant_id = {m} AND subject_user = {m} AND at >= {m} AND action = {m}"
            f" ORDER BY at DESC, audit_id DESC LIMIT 1"
        )
        return Statement(sql, (*mine, self.codec.time_in(since), action), "one")

    def audit_log(
        self, tenant_id: str, subject_user: str, since: datetime | None, limit: int
    ) -> Statement:
        """The newest ``limit`` entries about ``subject_user``'s memory (newest first)."""
        m = self.dialect.mark
        where = f"tenant_id = {m} AND subject_user = {m}"
        params: list[Any] = [tenant_id, subject_user]
        if since is not None:
            where += f" AND at >= {m}"
            params.append(self.codec.time_in(since))
        sql = (
            f"SELECT {columns(AUDIT_COLUMNS)} FROM {self._name(_AUDIT)} WHERE {where}"
            f" ORDER BY at DESC, audit_id DESC LIMIT {m}"
        )
        return Statement(sql, (*params, limit), "all")
