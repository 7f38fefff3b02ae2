"""Set-wise writes: a group of ``record()`` writes answered from one prefetch and written in one
statement per kind of change, under the same rules (:func:`memory.facts.rules.record_rules`).

A group qualifies when every write is a record (:attr:`PendingWrite.starts` set: the rules'
only seek is ``neighbours(key, starts)``). A group of appends -- every write after everything
on its key, the usual import and ``record_many`` group -- needs no rule run per write
(:meth:`Plan._appends`): a backend with :class:`SetAppends` checks and writes it in SQL
(SQLite: :mod:`memory.facts.sqlite_appends`; Postgres: :mod:`memory.facts.postgres_appends`,
for groups of :data:`memory.facts.postgres.SET_WISE_GROUP` writes or more), the others over
the prefetched rows. For any
other group the backend fetches per key the active facts from the one starting last at or
before the key's first start to the one starting first after its last start (:func:`spans`):
one statement on Postgres; on SQLite each key's open fact first, which alone is the answer
when it starts at or before the span; the rules then run over :class:`Plan`, which answers
their seeks from those rows and the group's own writes and keeps every change in memory; the
backend finally writes the plan's end state: each changed stored row updated once, each new
row inserted, in the order the rules made them.

Why the prefetch is enough: while the rules run nothing is written, and a record withdraws an
active fact only when it puts a new one at the same start, so a key's active predecessor (and
successor) of a start inside its span is always a prefetched row or one of the group's own. Why the end state
can be written updates first, then inserts: updates only shorten or withdraw stored facts, and
every state on the way is part of the end state, which the rules keep free of overlaps. Anything
the plan cannot answer raises :class:`Unplannable`, and the backend runs the group row by row.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Protocol

from memory.errors import FactLedgerError
from memory.facts.group import PendingWrite
from memory.facts.records import RECORD_SCHEMA_VERSION, FactRecord
from memory.facts.rules import Key, appended, no_authority, run_sync, write_authority

#: (tenant, user) -> the user's grants as ``(role, subject)`` rows, read in the transaction.
GrantsOf = Callable[[str, str], list[tuple[str, str]]]


class Unplannable(Exception):
    """The group asked something the plan cannot answer from its prefetch: run it row by row."""


def plannable(group: list[PendingWrite]) -> bool:
    """Whether every write of ``group`` is a record write (see the module docstring)."""
    return all(w.starts is not None for w in group)


#: Per key, the first and last start a group's records name on it.
Spans = dict[Key, tuple[datetime, datetime]]


def spans(group: list[PendingWrite]) -> Spans:
    """What the backend prefetches: per key, its records' first and last start."""
    found: Spans = {}
    for w in group:
        at = w.starts
        if at is None:
            continue
        span = found.get(w.key)
        if span is None:
            found[w.key] = (at, at)
        elif at < span[0] or at > span[1]:
            found[w.key] = (min(at, span[0]), max(at, span[1]))
    return found


def fast_replace(row: FactRecord, **fields: object) -> FactRecord:
    """``dataclasses.replace`` without re-running the frozen ``__init__`` field by field (the
    plan changes a row per write, and that ``__init__`` was the larger part of its cost)."""
    new = object.__new__(FactRecord)
    vars(new).update(vars(row), **fields)
    return new


class SetAppends(Protocol):
    """A backend's own way to write a group of appends: the check and the writes in SQL,
    set-wise, instead of over prefetched rows in Python (SQLite:
    :class:`memory.facts.sqlite_appends.SqliteAppends`)."""

    def appendable(self, group: list[PendingWrite]) -> bool:
        """Whether every write of ``group`` is an append, a candidate or refused for want of
        authority (:meth:`Plan._appends`); it reads no clock and changes nothing stored."""
        ...

    def append_all(self, group: list[PendingWrite]) -> None:
        """Write a group :meth:`appendable` accepted and set each write's result or error."""
        ...


class AsyncSetAppends(SetAppends, Protocol):
    """:class:`SetAppends` for an async backend (Postgres:
    :class:`memory.facts.postgres_appends.PgAppends`): its statements are sent around the
    plan's run, which stays synchronous -- the check before it (:meth:`check`; then
    :meth:`appendable` answers from it), the writes :meth:`append_all` made after it
    (:meth:`write`)."""

    async def check(self, group: list[PendingWrite]) -> bool:
        """:meth:`SetAppends.appendable`, asked of the database."""
        ...

    async def write(self) -> None:
        """Send the writes of the group :meth:`append_all` answered."""
        ...


#: Per key, what a group of appends' next write on it supersedes: the key's open fact (or
#: the group's write before it) by memory id, and the retraction the last write inherits.
Covers = dict[Key, tuple[str | None, datetime | None, str | None]]


def append_results(
    group: list[PendingWrite],
    ids: list[str],
    times: list[datetime],
    authority: dict[tuple[str, str, str], str | None],
    cover: Covers,
) -> None:
    """What each write of a group of appends returns, as :func:`memory.facts.rules.
    record_rules` makes it: the new record (superseding the key's open fact or the group's
    write before it, and inheriting that one's retraction), a candidate, or a refusal; an
    import's write its outcome alone (:attr:`PendingWrite.returns_record`). ``authority`` is
    each (tenant, writer, subject)'s, ``cover`` each key's stored open fact (changed here)."""
    nothing = (None, None, None)
    for w, memory_id, at in zip(group, ids, times, strict=True):
        key = w.key
        found = authority[(key[0], w.user_id, key[1])]
        if found is None:
            w.result, w.error = None, no_authority(key, w.user_id, "write")
            continue
        w.error = None
        candidate = found == "candidate"
        if candidate:
            superseded, retracted, episode = nothing
        else:
            superseded, retracted, episode = cover.get(key, nothing)
            cover[key] = (memory_id, retracted, episode)
        if not w.returns_record:
            w.result = "recorded"
            continue
        d = w.delta
        assert d is not None  # checked by appendable
        w.result = FactRecord(
            key[0], memory_id, d.subject, d.attribute, d.value, d.memory_type,
            RECORD_SCHEMA_VERSION, d.valid_from, None, at, superseded, d.source_episode_id,
            "inferred" if candidate else d.source, d.confidence, d.retention_policy,
            retracted, episode, at if candidate else None, (), w.user_id, "recorded",
        )  # fmt: skip


#: What a plan loads when its rules need the stored rows: those rows and the spans asked.
Prefetch = Callable[[], tuple[Iterable[FactRecord], Spans]]


class Plan:
    """:class:`memory.facts.rules.KeyOps` (plain methods) over prefetched rows, in memory.

    The rows are loaded (``prefetch``) only when the rules need them: a group of appends that
    the backend writes set-wise (``appends``) needs none."""

    def __init__(
        self, prefetch: Prefetch, grants: GrantsOf, appends: SetAppends | None = None
    ) -> None:
        self._prefetch: Prefetch | None = prefetch
        self._set_appends = appends
        self._asked: Spans = {}
        self._grants_of = grants
        self._grants: dict[tuple[str, str], list[tuple[str, str]]] = {}
        #: Every row the plan knows, in its current state, by memory id.
        self._rows: dict[str, FactRecord] = {}
        #: Per key, the starts of its active known rows (sorted) and which row starts there.
        self._starts: dict[Key, list[datetime]] = {}
        self._at: dict[Key, dict[datetime, str]] = {}
        self._stored: set[str] = set()
        #: Stored rows changed, by memory id: whether only their end changed (``set_end``).
        self._changed: dict[str, bool] = {}
        self._inserted: list[str] = []

    def _load(self) -> None:
        """The stored rows, once (see the class docstring)."""
        if self._prefetch is None:
            return
        stored, self._asked = self._prefetch()
        self._prefetch = None
        for row in stored:
            if row.memory_id in self._rows:
                continue
            self._stored.add(row.memory_id)
            self._rows[row.memory_id] = row
            self._activate(row)

    # -- what the backend writes ------------------------------------------------------------

    @property
    def ended(self) -> list[FactRecord]:
        """The stored rows whose only change is their end (``valid_to`` and its cause), in
        their end state: a backend may write those columns alone."""
        return [self._rows[m] for m, only_end in self._changed.items() if only_end]

    @property
    def changed(self) -> list[FactRecord]:
        """The other stored rows the group changed (withdrawn, restated), in their end state."""
        return [self._rows[m] for m, only_end in self._changed.items() if not only_end]

    @property
    def inserted(self) -> list[FactRecord]:
        """The group's new rows, in their end state, in the order the rules made them."""
        return [self._rows[m] for m in self._inserted]

    def run(self, group: list[PendingWrite]) -> None:
        """Run each write's rules over the plan, setting its ``result`` or (a refusal) its
        ``error``; raises :class:`Unplannable` when the group must run row by row.

        A group of appends (:meth:`_appends`) is answered without a rule generator per write:
        the usual import and ``record_many`` group."""
        if self._appends(group):
            return
        self._load()
        for write in group:
            write.result, write.error = None, None
            try:
                write.result = run_sync(write.rules(), self)
            except FactLedgerError as e:
                write.error = e

    def _appends(self, group: list[PendingWrite]) -> bool:
        """Whether every write lands after every active fact of its key, by a writer with
        write authority; if so, write them all set-wise (:meth:`_append_all`).

        Then the rules' outcome is known without running them: each write closes its key's
        open fact at its start and is the key's new open fact (:func:`memory.facts.rules.
        appended`); no conflict, restatement or refusal is possible. The check reads nothing
        but the stored rows and the grants, and changes nothing, so a group that fails it
        runs its rules as before, clock readings included.

        A backend with :class:`SetAppends` makes the check in SQL, where a candidate (another
        user's subject) and a write refused for want of authority also pass: neither touches
        a timeline, so their rules' outcome is known as well."""
        if self._set_appends is not None:
            if not self._set_appends.appendable(group):
                return False
            self._append_all(group)
            return True
        self._load()
        last: dict[Key, datetime] = {}  # per key, the start of its latest write so far
        authority: dict[tuple[Key, str], bool] = {}
        for w in group:
            key, at = w.key, w.starts
            if w.delta is None or w.now is None or at is None:
                return False
            latest = last.get(key)
            if latest is None:
                row = self._latest(key)  # the latest stored active fact: open, before ``at``
                if row is not None and (row.valid_to is not None or row.valid_from >= at):
                    return False
            elif latest >= at:
                return False
            last[key] = at
            may = authority.get((key, w.user_id))
            if may is None:
                grants = self.grants(key[0], w.user_id)
                found = write_authority(key, w.user_id, grants)
                may = authority[(key, w.user_id)] = found in ("own", "granted")
            if not may:
                return False
        self._append_all(group)
        return True

    def _latest(self, key: Key) -> FactRecord | None:
        """The known active fact of ``key`` starting last."""
        starts = self._starts.get(key)
        return self._rows[self._at[key][starts[-1]]] if starts else None

    def _append_all(self, group: list[PendingWrite]) -> None:
        """A group of appends (:meth:`_appends`) written in order: each new fact supersedes
        its key's open one, which ends at the new start; by the backend's
        :class:`SetAppends` if it has one, else here. (The per-key start index is not kept up
        to date: the plan answers no seek after its group ran.)"""
        if self._set_appends is not None:
            self._set_appends.append_all(group)
            return
        open_fact: dict[Key, FactRecord | None] = {}
        for w in group:
            key = w.key
            cover = open_fact[key] if key in open_fact else self._latest(key)
            new = appended(key, w.delta, w.user_id, w.now, cover)  # type: ignore[arg-type]
            if cover is not None:  # superseded: ends at the new start, not retracted
                self.set_end(key, cover.memory_id, new.valid_from, None, None)
            self._rows[new.memory_id] = open_fact[key] = new
            self._inserted.append(new.memory_id)
            w.result, w.error = new, None

    # -- KeyOps -----------------------------------------------------------------------------

    def _activate(self, row: FactRecord) -> None:
        if row.withdrawn_at is not None:
            return
        key = (row.tenant_id, row.subject, row.attribute)
        at = self._at.setdefault(key, {})
        if row.valid_from in at:
            raise Unplannable("two active facts with one start")  # the database refuses it
        at[row.valid_from] = row.memory_id
        insort(self._starts.setdefault(key, []), row.valid_from)

    def neighbours(self, key: Key, at: datetime) -> tuple[FactRecord | None, datetime | None]:
        span = self._asked.get(key)
        if span is None or not span[0] <= at <= span[1]:
            raise Unplannable(f"neighbours of {at} were not prefetched")
        starts = self._starts.get(key, [])
        i = bisect_right(starts, at)
        before = self._rows[self._at[key][starts[i - 1]]] if i else None
        if before is not None and (before.valid_to is None or before.valid_to > at):
            return before, None  # it covers ``at``; the rules need no next start
        return before, starts[i] if i < len(starts) else None

    def before(self, key: Key, at: datetime) -> FactRecord | None:
        raise Unplannable("a strict predecessor is not prefetched")

    def insert(self, record: FactRecord) -> None:
        if record.memory_id in self._rows:
            raise Unplannable(f"memory id {record.memory_id} twice")
        self._activate(record)
        self._rows[record.memory_id] = record
        self._inserted.append(record.memory_id)

    def _change(self, memory_id: str, end_only: bool, **fields: object) -> FactRecord:
        row = self._rows.get(memory_id)
        if row is None or row.withdrawn_at is not None:
            raise Unplannable(f"fact {memory_id} is not an active known row")
        self._rows[memory_id] = changed = fast_replace(row, **fields)
        if memory_id in self._stored:
            self._changed[memory_id] = end_only and self._changed.get(memory_id, True)
        return changed

    def set_end(
        self,
        key: Key,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        self._change(
            memory_id,
            True,
            valid_to=valid_to,
            retracted_at=retracted_at,
            retraction_episode_id=retraction_episode_id,
        )

    def withdraw(
        self,
        key: Key,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        row = self._change(
            memory_id,
            False,
            withdrawn_at=withdrawn_at,
            retracted_at=retracted_at,
            retraction_episode_id=retraction_episode_id,
        )
        starts = self._starts[key]
        del starts[bisect_right(starts, row.valid_from) - 1]
        del self._at[key][row.valid_from]

    def restate(self, key: Key, memory_id: str, episode_id: str) -> None:
        row = self._rows.get(memory_id)
        if row is None or row.withdrawn_at is not None:
            raise Unplannable(f"fact {memory_id} is not an active known row")
        self._change(memory_id, False, restated_in=(*row.restated_in, episode_id))

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        found = self._grants.get((tenant_id, user_id))
        if found is None:
            found = self._grants[(tenant_id, user_id)] = list(self._grants_of(tenant_id, user_id))
        return found
