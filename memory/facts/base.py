"""The typed fact ledger: the contract (``FactStore``) and its write semantics.

(Longer than 600 lines on purpose: the contract, its documented semantics and the write path
every backend shares -- group commit, retries on contention, ``record_many``, bulk import,
the sync read view -- are one unit; record types are :mod:`memory.facts.records`, the rules
:mod:`memory.facts.rules`.)

The ledger owns *mutable* facts about a subject: "user:alice".risk_tolerance, or
"user:mira".passport_deadline. Vector recall can find both "July 15" and "June 30"; only the
ledger can say which one holds now and which one held on June 2.

Model
-----
A fact is a :class:`FactRecord` keyed by (tenant_id, subject, attribute) and valid over the
half-open interval ``[valid_from, valid_to)``; ``valid_to is None`` means open-ended. For each
key the *active* records (``withdrawn_at is None``) never overlap and at most one is open.
Times are timezone-aware UTC datetimes; a naive datetime is refused.

Subjects are free-form strings chosen by the writer. Convention: facts about a user use
``subject_for(principal)`` = ``"user:<user_id>"``; other entities use ``"<kind>:<id>"`` (e.g.
``"ticker:NVDA"``). Every read and write is scoped to the principal's tenant by the storage
layer; the tenant is never taken from model output (a delta naming another tenant is refused).

Write semantics (durable when a write returns; collisions retried)
------------------------------------------------------------------
``record(delta)`` with ``t = delta.valid_from``:

- If an active fact *covers* ``t`` (``valid_from < t < valid_to``), it is closed at ``t`` and
  the new fact inherits its old end: ``[t, old_end)``. A correction recorded today therefore
  closes the fact it corrects, and a fact inserted inside history does not become current.
- If nothing covers ``t`` (``t`` is earlier than everything stored, or falls in a gap left by
  a retraction), the new fact ends where the next stored fact begins, or stays open if there
  is none. A delayed extraction never closes the current fact.
- If an active fact starts exactly at ``t``, a :class:`ConflictPolicy` decides whether the
  new fact may replace it: ``reject`` (default) never; ``source_precedence`` if the new source
  outranks the stored one; ``confirmed_revision`` if the new source is ``"confirmed"``. A
  different value that may not replace it raises :class:`FactConflictError`; the same value
  (and memory type) is a *duplicate*: the stored record comes back with ``outcome ==
  "duplicate"`` and the new delta's episode appended to its ``restated_in`` (kept as
  provenance, never dropped) -- unless the policy lets it replace the stored one, which
  upgrades the provenance (say, to confirmed; ``outcome == "replaced"``). A replaced fact is
  *withdrawn* (``withdrawn_at`` set, kept for history), never overwritten.

Every new record names the fact it superseded (``supersedes_memory_id``), or ``None``. A
value restated at a later time is recorded like any other (it keeps the restating episode as
provenance); the history shows it superseding the same value.

``retract(subject, attribute, at)`` closes the fact holding at ``at`` without a successor
(``valid_to = at``, with ``retracted_at`` and the retraction's episode). Retracting at a fact's
own start withdraws it (and its predecessor now ends by retraction). A later fact inserted
inside a retracted interval inherits the retraction as its end, like any inherited end.

Concurrent ``record``/``retract`` calls are *group-committed*: the writes handed over in one
turn of the event loop run in one transaction, each in its own savepoint (a refusal rolls back
that write only), with one durable commit. ``record_many`` puts a batch in one transaction;
``import_facts`` loads any number of deltas in batches, counting what it refused.

Authority (who may write what)
------------------------------
Every write is checked inside its transaction against the writer's grants (one read, then
:func:`memory.facts.rules.authority_of`): a principal writes its own subject
(``subject_for(principal)``) freely; any other subject needs a ``writer`` grant on it (or a
``prefix*`` pattern) or ``admin`` of the tenant, else :class:`FactAuthorityError` and nothing
is written. A fact about another user (``user:<someone else>``), even with a grant, is stored
only as a *candidate*: source ``inferred``, withdrawn at once (outside the timeline, so it
supersedes nothing) and ``recorded_by`` its writer, for that user to review; it counts once
they record it themselves. Retracting another user's fact is refused. Every record names its
writer (``recorded_by``). Postgres checks the same rule again in a row-security policy.
Grants are data in the ledger (:meth:`FactStore.grant`, :meth:`FactStore.revoke`), changed
only by the tenant's admin (or the Postgres owner).

Reads (each one index seek)
---------------------------
``as_of(subject, attribute, when)``: the active fact with ``valid_from <= when < valid_to`` --
the active fact starting last at or before ``when``, if it has not ended by then (active
intervals never overlap, so no earlier one can hold). ``current`` is the open fact if it has
started, else ``as_of`` at the store's clock (a fact dated in the future is not current yet).
``profile(subject, as_of=None)`` gives every attribute at once, in one query; ``history``
gives all records of a key, withdrawn ones included, ordered by ``valid_from`` then
``recorded_at``. ``store.sync`` has the same reads for callers without an event loop.

The rules above are written once, as generators that ask for seeks and writes by name
(:mod:`memory.facts.rules`: :class:`KeyOps`, :class:`ReadOps`); backends answer them,
synchronously or not, and run groups of writes (:meth:`FactStore._run_group`), so SQLite and
Postgres cannot drift apart. The record types are :mod:`memory.facts.records`; this module is
the contract (:class:`FactStore`) and the write path, and re-exports both.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any, Self, TypeVar, cast

from memory.errors import (
    FactAuthorityError,
    FactConflictError,
    FactLedgerError,
    FactNotFoundError,
    FactTenantError,
    FactWriteContentionError,
    InvalidFactError,
)
from memory.facts.records import (  # noqa: F401  (the ledger's public names, re-exported)
    DEFAULT_SOURCE_RANKS,
    MAX_NAME_LENGTH,
    MEMORY_TYPES,
    RECORD_SCHEMA_VERSION,
    SOURCES,
    ConflictPolicy,
    FactRecord,
    FactStatus,
    Grant,
    MemoryDelta,
    MemoryType,
    Source,
    WriteOutcome,
    canonical_json,
    check_name,
    subject_for,
    utc,
)
from memory.facts.rules import (  # noqa: F401
    GRANT_ROLES,
    Authority,
    Key,
    KeyOps,
    ReadOps,
    Request,
    Rules,
    as_of_rules,
    authority_of,
    authority_rules,
    current_rules,
    run_async,
    run_sync,
)
from memory.identity import Principal
from memory.sealing import PLAIN, MemoryCipher
from memory.sql.clock import system_clock

T = TypeVar("T")

# -- writes in groups ----------------------------------------------------------------------------


@dataclass
class PendingWrite:
    """One write waiting for (or inside) a group transaction.

    ``rules`` makes a fresh generator for each attempt (a group that collides is retried as a
    whole); the group sets ``result`` or ``error`` for each write it ran.
    """

    key: Key
    rules: Callable[[], Rules[Any]]
    #: The acting user: Postgres sets it for the write (``app.user_id``) so RLS can check it.
    user_id: str = ""
    done: asyncio.Future[Any] | None = None
    result: Any = None
    error: BaseException | None = None


@dataclass(frozen=True)
class ImportReport:
    """What a bulk import did: counts per outcome and the facts it refused (line, reason)."""

    recorded: int = 0
    replaced: int = 0
    duplicates: int = 0
    refused: tuple[tuple[int, str], ...] = ()
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.recorded + self.replaced + self.duplicates + len(self.refused)

    def to_json(self) -> dict[str, Any]:
        return {
            "recorded": self.recorded,
            "replaced": self.replaced,
            "duplicates": self.duplicates,
            "refused": [{"index": i, "reason": why} for i, why in self.refused],
            "seconds": round(self.seconds, 3),
        }


class _GroupCommit:
    """Concurrent writes handed over in one turn of the event loop share one transaction.

    Shared by every principal view of one opened ledger. A write queues and waits; one flush,
    started on the next turn of the loop, takes everything queued and hands it to the
    backend, which runs each write's rules in its own savepoint and commits once. A write
    returns only after the commit that holds it (or raises: its own refusal, or the group's
    failure), so every write is durable when it returns. A write cancelled before its group
    is taken is not written.
    """

    def __init__(self) -> None:
        self.queued: list[PendingWrite] = []
        self.flush: asyncio.Task[None] | None = None
        self.flushing: set[asyncio.Task[None]] = set()
        #: Held while a group commits: writes arriving meanwhile gather for the next group.
        self.committing: asyncio.Lock | None = None


Clock = Callable[[], datetime]


class FactStore(ABC):
    """The fact ledger for one principal. Backends: SQLite (embedded) and Postgres.

    Create stores with :func:`memory.facts.open_fact_store`; the factory owns connections.
    ``with_principal`` returns a view for another principal over the same connections;
    ``sync`` the same reads for callers without an event loop.
    """

    def __init__(
        self,
        principal: Principal | None,
        *,
        policy: ConflictPolicy = ConflictPolicy.REJECT,
        source_ranks: Mapping[str, int] | None = None,
        clock: Clock | None = None,
        max_attempts: int = 8,
        cipher: MemoryCipher | None = None,
    ) -> None:
        if principal is not None:
            _check_tenant(principal)
        self._principal = principal
        #: Seals fact values at rest (``ANALYST_MEMORY_KEY``); backends seal on insert and
        #: open on read, so every rule here compares opened values.
        self.cipher: MemoryCipher = cipher or PLAIN
        self.policy = ConflictPolicy(policy)
        self.source_ranks = dict(source_ranks or DEFAULT_SOURCE_RANKS)
        self.clock: Clock = clock or system_clock
        self.max_attempts = max_attempts
        self._group = _GroupCommit()

    # -- identity ---------------------------------------------------------------------------

    @property
    def principal(self) -> Principal:
        if self._principal is None:
            raise FactTenantError(
                "This fact store was opened without a principal; use "
                "store.with_principal(Principal(tenant_id, user_id)) before reading or writing."
            )
        return self._principal

    @property
    def tenant_id(self) -> str:
        return self.principal.tenant_id

    def with_principal(self, principal: Principal) -> Self:
        """The same ledger (same connections) scoped to another principal."""
        _check_tenant(principal)
        view = copy.copy(self)
        view._principal = principal
        return view

    def now(self) -> datetime:
        return utc(self.clock(), "the store clock")

    @property
    def sync(self) -> SyncFacts:
        """The same reads, blocking: for the CLI, scripts and code without an event loop."""
        return SyncFacts(self)

    # -- backend hooks ----------------------------------------------------------------------

    @property
    @abstractmethod
    def _reads(self) -> Any:
        """:class:`ReadOps` with ``async`` methods."""

    @property
    @abstractmethod
    def _sync_reads(self) -> Any:
        """:class:`ReadOps` with plain methods."""

    @abstractmethod
    async def _run_group(self, group: list[PendingWrite]) -> None:
        """Run every write's rules in one transaction (a savepoint each) and commit once.

        Sets each write's ``result`` or ``error`` (a refusal rolls back that write only);
        raises, with nothing committed, when the transaction itself fails.
        """

    @abstractmethod
    async def _change_grant(self, grant: Grant, *, revoke: bool) -> bool:
        """Insert (or delete) ``grant`` as the principal, if it may administer grants.

        Returns whether anything changed; raises :class:`FactAuthorityError` when refused.
        """

    @abstractmethod
    async def _list_grants(self, tenant_id: str) -> list[Grant]:
        """Every grant of the tenant."""

    @abstractmethod
    async def _erase_facts(self, tenant_id: str, user_id: str, memory_ids: list[str]) -> list[str]:
        """Physically delete, in one transaction, the rows ``memory_ids`` of subject
        ``user:<user_id>``; return the memory ids deleted."""

    @abstractmethod
    async def _erase_user(self, tenant_id: str, user_id: str) -> tuple[list[str], list[str]]:
        """Physically delete, in one transaction, every fact row (current, superseded,
        retracted, withdrawn) of subject ``user:<user_id>`` and every grant held by
        ``user_id`` in the tenant; return (memory ids, grants as ``role:subject``)."""

    @abstractmethod
    def _is_transient(self, error: BaseException) -> bool:
        """Whether ``error`` is a lock, serialization or uniqueness collision worth retrying."""

    # -- reads ------------------------------------------------------------------------------

    def _key(self, subject: str, attribute: str) -> Key:
        return (self.tenant_id, check_name(subject, "subject"), check_name(attribute, "attribute"))

    async def as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None:
        """The fact that held at ``when``, or ``None``."""
        key = self._key(subject, attribute)
        return await run_async(as_of_rules(key, utc(when, "when")), self._reads)

    async def current(self, subject: str, attribute: str) -> FactRecord | None:
        """The fact that holds now (by the store's clock), or ``None``."""
        key = self._key(subject, attribute)
        return await run_async(current_rules(key, self.now()), self._reads)

    async def profile(
        self, subject: str, *, as_of: datetime | None = None
    ) -> dict[str, FactRecord]:
        """Every attribute of ``subject`` that holds at ``as_of`` (default: now), by name."""
        when = self.now() if as_of is None else utc(as_of, "as_of")
        records = await self._reads.profile(self.tenant_id, check_name(subject, "subject"), when)
        return _by_attribute(records)

    async def history(self, subject: str, attribute: str) -> list[FactRecord]:
        """All records of the key, withdrawn ones included, by ``valid_from`` then recording."""
        return _chronological(await self._reads.history(self._key(subject, attribute)))

    # -- writes -----------------------------------------------------------------------------

    async def record(
        self, delta: MemoryDelta, *, policy: ConflictPolicy | None = None
    ) -> FactRecord:
        """Store ``delta`` with temporal supersession; return the record now holding its place.

        The returned record's ``outcome`` says what happened: ``recorded`` (a new fact),
        ``replaced`` (it replaced a fact with the same ``valid_from``, as the policy allows) or
        ``duplicate`` (the same value and ``valid_from`` were stored already: the stored
        record, with this delta's episode added to its ``restated_in``). Concurrent calls are
        committed together (see :class:`_GroupCommit`); each is durable when it returns.

        Raises :class:`FactConflictError` when the policy refuses an equal-``valid_from``
        write, :class:`FactTenantError` when the delta names another tenant.
        """
        pending = self._pending_record(delta, policy)
        await self._submit([pending])
        if pending.error is not None:
            raise pending.error
        return cast(FactRecord, pending.result)

    async def record_many(
        self, deltas: Iterable[MemoryDelta], *, policy: ConflictPolicy | None = None
    ) -> list[FactRecord | FactLedgerError]:
        """Record ``deltas`` in order, in one durable transaction; one result per delta.

        Each delta follows :meth:`record`'s rules and sees the ones before it. A delta the
        rules refuse (a conflict) does not stop the others: its place in the result holds
        the error. Invalid deltas (another tenant, not a delta) raise before anything is
        written.
        """
        pendings = [self._pending_record(d, policy) for d in deltas]
        if pendings:
            await self._submit(pendings)
        return [self._outcome(p) for p in pendings]

    async def import_facts(
        self,
        deltas: Iterable[MemoryDelta | BaseException],
        *,
        policy: ConflictPolicy | None = None,
        batch_size: int = 20_000,
        progress: Callable[[ImportReport], None] | None = None,
    ) -> ImportReport:
        """Bulk-load ``deltas`` under :meth:`record`'s rules, ``batch_size`` per transaction.

        Items may be exceptions (a line the caller could not parse): they are counted as
        refused with their message, like conflicts, and the import goes on. Returns the
        counts; ``progress`` is called after each committed batch.
        """
        started = time.perf_counter()
        counts = {"recorded": 0, "replaced": 0, "duplicate": 0}
        refused: list[tuple[int, str]] = []
        batch: list[tuple[int, PendingWrite]] = []

        def report() -> ImportReport:
            return ImportReport(
                counts["recorded"],
                counts["replaced"],
                counts["duplicate"],
                tuple(sorted(refused)),
                time.perf_counter() - started,
            )

        async def settle(commit: Awaitable[None], done: list[tuple[int, PendingWrite]]) -> None:
            await commit
            for index, p in done:
                if p.error is not None:
                    refused.append((index, str(p.error)))
                else:
                    counts[p.result.outcome] += 1
            if progress is not None:
                progress(report())

        # One batch commits on the writer while the next one is read and validated here.
        in_flight: tuple[asyncio.Task[None], list[tuple[int, PendingWrite]]] | None = None
        try:
            for index, item in enumerate(deltas):
                if isinstance(item, BaseException):
                    refused.append((index, str(item)))
                    continue
                try:
                    batch.append((index, self._pending_record(item, policy)))
                except FactLedgerError as e:
                    refused.append((index, str(e)))
                if len(batch) >= batch_size:
                    if in_flight is not None:
                        await settle(*in_flight)
                    in_flight = (asyncio.create_task(self._submit([p for _, p in batch])), batch)
                    batch = []
                if index % 256 == 0:
                    await asyncio.sleep(0)  # let the commit (and anything else) get on
            if in_flight is not None:
                await settle(*in_flight)
                in_flight = None
            if batch:
                await settle(self._submit([p for _, p in batch]), batch)
        finally:
            if in_flight is not None:  # failed mid-way: the batch under way still ends
                await asyncio.gather(in_flight[0], return_exceptions=True)
        return report()

    async def retract(
        self,
        subject: str,
        attribute: str,
        *,
        at: datetime | None = None,
        source_episode_id: str | None = None,
    ) -> FactRecord:
        """Close the fact holding at ``at`` (default: now) without a successor; return it.

        Raises :class:`FactNotFoundError` if no fact holds then.
        """
        key = self._key(subject, attribute)
        given_at = None if at is None else utc(at, "at")
        user = self.principal.user_id
        pending = PendingWrite(
            key, lambda: self._retract_rules(key, given_at, source_episode_id, user), user
        )
        await self._submit([pending])
        if pending.error is not None:
            raise pending.error
        return cast(FactRecord, pending.result)

    async def erase_own(self) -> tuple[list[str], list[str]]:
        """Account deletion: physically delete every fact about the principal's own user
        (subject ``user:<id>``, with its whole history) and every grant the user holds in the
        tenant. Facts are otherwise never deleted (retract closes them); this is the one path
        that does. Returns (memory ids deleted, grants deleted as ``role:subject``)."""
        principal = self.principal
        return await self._erase_user(principal.tenant_id, principal.user_id)

    async def erase_facts(self, memory_ids: Sequence[str]) -> list[str]:
        """Forget: physically delete the rows ``memory_ids`` of facts about the principal's
        own user (subject ``user:<id>``); rows of other subjects are never touched. Returns
        the memory ids deleted (an unknown id is skipped)."""
        principal = self.principal
        if not memory_ids:
            return []
        return await self._erase_facts(principal.tenant_id, principal.user_id, list(memory_ids))

    async def restore(self, records: Sequence[FactRecord]) -> list[str]:
        """Put back fact rows of a backup as they were (memory ids, validity, provenance and
        times kept), in one transaction. Only rows about the principal's own user (subject
        ``user:<id>``, this tenant) are accepted (:class:`InvalidFactError` otherwise, before
        anything is written); a row whose memory id is stored already is left as it is.
        Returns the memory ids inserted."""
        principal = self.principal
        subject = subject_for(principal)
        for r in records:
            if (r.tenant_id, r.subject) != (principal.tenant_id, subject):
                raise InvalidFactError(
                    f"Fact {r.memory_id} is about {r.tenant_id}/{r.subject}; a backup is "
                    f"restored as the user it was made for ({principal.tenant_id}/{subject})."
                )
        stored = {
            row.memory_id
            for attribute in sorted({r.attribute for r in records})
            for row in await self.history(subject, attribute)
        }
        fresh = [r for r in records if r.memory_id not in stored]
        writes = [
            PendingWrite(
                self._key(r.subject, r.attribute), partial(_insert_rules, r), principal.user_id
            )
            for r in fresh
        ]
        if writes:
            await self._submit(writes)
        for write in writes:
            if write.error is not None:
                raise write.error
        return [r.memory_id for r in fresh]

    # -- grants -------------------------------------------------------------------------------

    def _grant(self, user_id: str, subject: str | None, admin: bool) -> Grant:
        user = check_name(user_id, "user")
        if admin:
            if subject not in (None, "*"):
                raise InvalidFactError("An admin grant covers every subject; give no subject.")
            return Grant(self.tenant_id, user, "admin", "*", self.principal.user_id, self.now())
        if subject is None:
            raise InvalidFactError("Name the subject to grant (e.g. team:research), or admin.")
        pattern = check_name(subject, "subject")
        return Grant(self.tenant_id, user, "writer", pattern, self.principal.user_id, self.now())

    async def grant(self, user_id: str, subject: str | None = None, *, admin: bool = False) -> bool:
        """Let ``user_id`` write ``subject`` (or, ``admin``, any subject) in this tenant.

        Only the tenant's admin may grant (on Postgres also the ledger's owner; on SQLite,
        whose file has no other owner, the first grant of a tenant may make its admin).
        Returns whether the grant is new; raises :class:`FactAuthorityError` when refused.
        """
        return await self._change_grant(self._grant(user_id, subject, admin), revoke=False)

    async def revoke(
        self, user_id: str, subject: str | None = None, *, admin: bool = False
    ) -> bool:
        """Withdraw a grant made by :meth:`grant`; returns whether one was removed."""
        return await self._change_grant(self._grant(user_id, subject, admin), revoke=True)

    async def grants(self) -> list[Grant]:
        """The tenant's grants, by user, role and subject."""
        found = await self._list_grants(self.tenant_id)
        return sorted(found, key=lambda g: (g.user_id, g.role, g.subject))

    # -- the write rules ----------------------------------------------------------------------

    def _pending_record(self, delta: MemoryDelta, policy: ConflictPolicy | None) -> PendingWrite:
        if not isinstance(delta, MemoryDelta):
            raise InvalidFactError(f"record() takes a MemoryDelta, got {type(delta).__name__}.")
        if delta.tenant_id is not None and delta.tenant_id != self.tenant_id:
            raise FactTenantError(
                f"The fact names tenant '{delta.tenant_id}' but the store acts for tenant "
                f"'{self.tenant_id}'. Tenants come from the principal; drop tenant_id or open "
                "the store for that principal."
            )
        chosen = self.policy if policy is None else ConflictPolicy(policy)
        key = (self.tenant_id, delta.subject, delta.attribute)
        user = self.principal.user_id
        return PendingWrite(key, lambda: self._record_rules(key, delta, chosen, user), user)

    def _record_rules(
        self, key: Key, delta: MemoryDelta, policy: ConflictPolicy, user: str
    ) -> Rules[FactRecord]:
        now = self.now()
        authority = yield from authority_rules(key, user)
        if authority is None:
            raise _no_authority(key, user, "write")
        if authority == "candidate":
            # Someone else's word about a user: kept for that user to review, outside the
            # timeline (withdrawn, source inferred), so it never changes what they are told.
            candidate = replace(
                self._new_record(delta, now, None, None, "recorded", user),
                source="inferred",
                withdrawn_at=now,
            )
            yield ("insert", (candidate,))
            return candidate
        start = delta.valid_from
        before, next_start = yield ("neighbours", (key, start))
        cover = before if before is not None and before.holds_at(start) else None
        if cover is not None and cover.valid_from == start:
            refusal = self._refusal(policy, delta, cover)
            same = (
                canonical_json(cover.value) == canonical_json(delta.value)
                and cover.memory_type == delta.memory_type
            )
            if same and (refusal is not None or delta.source == cover.source):
                # A restatement: nothing new holds, but the episode that said it again is
                # provenance worth keeping.
                episode = delta.source_episode_id
                if episode is None or episode == cover.source_episode_id:
                    return replace(cover, outcome="duplicate")
                if episode in cover.restated_in:
                    return replace(cover, outcome="duplicate")
                yield ("restate", (key, cover.memory_id, episode))
                return replace(
                    cover, restated_in=(*cover.restated_in, episode), outcome="duplicate"
                )
            if refusal is not None:
                raise FactConflictError(
                    delta.subject,
                    delta.attribute,
                    start.isoformat(),
                    cover.memory_id,
                    cover.value,
                    refusal,
                )
            yield (
                "withdraw",
                (key, cover.memory_id, now, cover.retracted_at, cover.retraction_episode_id),
            )
            new = self._new_record(delta, now, cover.valid_to, cover, "replaced", user)
        elif cover is not None:
            yield ("set_end", (key, cover.memory_id, start, None, None))
            new = self._new_record(delta, now, cover.valid_to, cover, "recorded", user)
        else:
            new = self._new_record(delta, now, next_start, None, "recorded", user)
        yield ("insert", (new,))
        return new

    def _retract_rules(
        self, key: Key, given_at: datetime | None, source_episode_id: str | None, user: str
    ) -> Rules[FactRecord]:
        now = self.now()
        authority = yield from authority_rules(key, user)
        if authority is None or authority == "candidate":
            raise _no_authority(key, user, "retract")
        when = now if given_at is None else given_at
        before, _ = yield ("neighbours", (key, when))
        if before is None or not before.holds_at(when):
            raise FactNotFoundError(key[1], key[2], when.isoformat())
        cover: FactRecord = before
        if cover.valid_from < when:
            yield ("set_end", (key, cover.memory_id, when, now, source_episode_id))
            return replace(
                cover, valid_to=when, retracted_at=now, retraction_episode_id=source_episode_id
            )
        yield ("withdraw", (key, cover.memory_id, now, now, source_episode_id))
        previous = yield ("before", (key, when))
        if previous is not None and previous.valid_to == when:
            # Its end now marks the retraction, not a successor that no longer counts.
            yield ("set_end", (key, previous.memory_id, when, now, source_episode_id))
        return replace(
            cover, withdrawn_at=now, retracted_at=now, retraction_episode_id=source_episode_id
        )

    def _refusal(
        self, policy: ConflictPolicy, delta: MemoryDelta, existing: FactRecord
    ) -> str | None:
        """Why ``delta`` may not replace ``existing`` at the same ``valid_from``; None if it may."""
        if policy is ConflictPolicy.SOURCE_PRECEDENCE:
            new_rank = self.source_ranks.get(delta.source, -1)
            old_rank = self.source_ranks.get(existing.source, -1)
            if new_rank > old_rank:
                return None
            return (
                f"under the source_precedence policy a '{delta.source}' fact does not outrank "
                f"the stored '{existing.source}' fact. Nothing was changed."
            )
        if policy is ConflictPolicy.CONFIRMED_REVISION:
            if delta.source == "confirmed":
                return None
            return (
                "under the confirmed_revision policy only a fact with source 'confirmed' (the "
                f"user confirmed the correction) replaces it; this one is '{delta.source}'. "
                "Nothing was changed."
            )
        return (
            "a different value (or memory type) with the same valid_from is a conflict (policy "
            "'reject'). Give the correction its own valid_from, retract the stored fact, or "
            "record it under the source_precedence or confirmed_revision policy. Nothing was "
            "changed."
        )

    def _new_record(
        self,
        delta: MemoryDelta,
        now: datetime,
        valid_to: datetime | None,
        superseded: FactRecord | None,
        outcome: WriteOutcome,
        user: str,
    ) -> FactRecord:
        return FactRecord(
            tenant_id=self.tenant_id,
            memory_id=uuid.uuid4().hex,
            subject=delta.subject,
            attribute=delta.attribute,
            value=delta.value,
            memory_type=delta.memory_type,
            schema_version=RECORD_SCHEMA_VERSION,
            valid_from=delta.valid_from,
            valid_to=valid_to,
            recorded_at=now,
            supersedes_memory_id=None if superseded is None else superseded.memory_id,
            source_episode_id=delta.source_episode_id,
            source=delta.source,
            confidence=delta.confidence,
            retention_policy=delta.retention_policy,
            # An inherited end keeps its cause: a fact dropped inside a retracted interval
            # ends at that retraction.
            retracted_at=None if superseded is None else superseded.retracted_at,
            retraction_episode_id=None if superseded is None else superseded.retraction_episode_id,
            recorded_by=user,
            outcome=outcome,
        )

    @staticmethod
    def _outcome(pending: PendingWrite) -> Any:
        if pending.error is None:
            return pending.result
        if isinstance(pending.error, FactLedgerError):
            return pending.error
        raise pending.error

    # -- group commit -------------------------------------------------------------------------

    async def _submit(self, writes: list[PendingWrite]) -> None:
        """Queue ``writes`` for the next group and wait for its commit."""
        group = self._group
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for write in writes:
            write.done = done
        group.queued.extend(writes)
        if group.flush is None:
            group.flush = flush = asyncio.create_task(self._flush())
            # The loop keeps only weak references to tasks; hold each flush until it ends.
            group.flushing.add(flush)
            flush.add_done_callback(group.flushing.discard)
        await done

    async def _flush(self) -> None:
        group = self._group
        taken: list[PendingWrite] = []
        if group.committing is None:
            group.committing = asyncio.Lock()
        try:
            await asyncio.sleep(0)  # writes handed over in this turn of the loop join the group
            async with group.committing:  # and those arriving while the previous one commits
                # Callers cancelled while waiting are dropped: their writes are not made.
                taken = [w for w in group.queued if w.done is not None and not w.done.done()]
                group.queued, group.flush = [], None
                if taken:
                    await self._commit_with_retries(taken)
        except BaseException as e:
            if not taken:
                taken, group.queued, group.flush = group.queued, [], None
            for write in taken:
                if write.done is None or write.done.done():
                    continue
                if isinstance(e, asyncio.CancelledError):
                    write.done.cancel()
                else:
                    write.done.set_exception(e)
            if not isinstance(e, Exception):
                raise
        else:
            for write in taken:
                if write.done is not None and not write.done.done():
                    write.done.set_result(None)

    async def _commit_with_retries(self, writes: list[PendingWrite]) -> None:
        """Run the group; on a collision retry the whole transaction with backoff."""
        delay = 0.005
        for attempt in range(1, self.max_attempts + 1):
            for write in writes:
                write.result, write.error = None, None
            try:
                await self._run_group(writes)
                return
            except FactLedgerError:
                raise
            except Exception as e:
                if not self._is_transient(e):
                    raise
                if attempt == self.max_attempts:
                    keys = sorted({f"{w.key[1]}.{w.key[2]}" for w in writes})
                    shown = ", ".join(keys[:3]) + (
                        f" and {len(keys) - 3} more" if len(keys) > 3 else ""
                    )
                    raise FactWriteContentionError(
                        f"Writing {shown} collided with concurrent writers {attempt} times "
                        f"(last: {e}). Retry later, or reduce concurrent writers on this key."
                    ) from e
                await asyncio.sleep(delay * random.uniform(0.5, 1.5))
                delay = min(delay * 2, 0.5)


class SyncFacts:
    """Blocking reads of a :class:`FactStore`, scoped by the same principal, same rules.

    ``store.sync.current(subject, attribute)``, ``.as_of(...)``, ``.profile(...)``,
    ``.history(...)``: the async API's answers without an event loop.
    """

    def __init__(self, store: FactStore) -> None:
        self._store = store
        self._ops = store._sync_reads

    @property
    def principal(self) -> Principal:
        return self._store.principal

    def as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None:
        """The fact that held at ``when``, or ``None``."""
        key = self._store._key(subject, attribute)
        return run_sync(as_of_rules(key, utc(when, "when")), self._ops)

    def current(self, subject: str, attribute: str) -> FactRecord | None:
        """The fact that holds now (by the store's clock), or ``None``."""
        key = self._store._key(subject, attribute)
        return run_sync(current_rules(key, self._store.now()), self._ops)

    def profile(self, subject: str, *, as_of: datetime | None = None) -> dict[str, FactRecord]:
        """Every attribute of ``subject`` that holds at ``as_of`` (default: now), by name."""
        store = self._store
        when = store.now() if as_of is None else utc(as_of, "as_of")
        return _by_attribute(
            self._ops.profile(store.tenant_id, check_name(subject, "subject"), when)
        )

    def history(self, subject: str, attribute: str) -> list[FactRecord]:
        """All records of the key, withdrawn ones included, by ``valid_from`` then recording."""
        return _chronological(self._ops.history(self._store._key(subject, attribute)))


def _no_authority(key: Key, user: str, action: str) -> FactAuthorityError:
    tenant, subject = key[0], key[1]
    who = f"user '{user}' of tenant '{tenant}'"
    if action == "retract" and subject.startswith("user:"):
        fix = (
            f"Only {subject.removeprefix('user:')} may retract facts about {subject}; "
            "others can only propose candidates"
        )
    else:
        fix = (
            f"A principal writes its own subject (user:{user}) freely; for {subject} ask the "
            f"tenant's admin to run: analyst facts grant {user} {subject}"
        )
    return FactAuthorityError(
        f"{who} may not {action} facts about {subject}. {fix}. Nothing was written.",
        subject=subject,
        tenant_id=tenant,
        user_id=user,
    )


def may_administer(
    user: str, grants: list[tuple[str, str]], tenant_has_admin: bool, role: str
) -> bool:
    """Whether ``user`` may grant or revoke: an admin may; in a tenant with no admin yet, the
    first grant may make one (SQLite only: its file has no other owner)."""
    if any(r == "admin" for r, _ in grants):
        return True
    return not tenant_has_admin and role == "admin"


def grant_refused(grant: Grant, user: str) -> FactAuthorityError:
    return FactAuthorityError(
        f"user '{user}' of tenant '{grant.tenant_id}' may not change grants: only the tenant's "
        "admin may (or, on Postgres, the ledger's owner: ANALYST_FACTS=<owner URL> analyst "
        f"facts grant {grant.user_id} --admin). Nothing was changed.",
        subject=grant.subject,
        tenant_id=grant.tenant_id,
        user_id=user,
    )


def _by_attribute(records: list[FactRecord]) -> dict[str, FactRecord]:
    return {r.attribute: r for r in sorted(records, key=lambda r: r.attribute)}


def _chronological(records: list[FactRecord]) -> list[FactRecord]:
    return sorted(records, key=lambda r: (r.valid_from, r.recorded_at))


def _check_tenant(principal: Principal) -> None:
    if not isinstance(principal, Principal):
        raise FactTenantError(f"Expected a memory.threads.Principal, got {principal!r}.")
    if not principal.tenant_id or not principal.tenant_id.strip():
        raise FactTenantError(
            f"Principal {principal!r} has an empty tenant_id; every fact needs a tenant."
        )


def _insert_rules(record: FactRecord) -> Rules[FactRecord]:
    """Insert ``record`` as it is (a restore: the backup's rows already obey the rules)."""
    yield ("insert", (record,))
    return record
