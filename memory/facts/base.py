"""The fact ledger's contract: :class:`FactStore`, the API every backend shares.

Facts are keyed by (tenant, subject, attribute) and valid over ``[valid_from, valid_to)``;
for each key the active (not withdrawn) records never overlap and at most one is open.
``record`` supersedes in time, ``retract`` closes without a successor, reads answer "now" and
"on that date" in one index seek. Every call is scoped to the principal's tenant, and writes
are checked against the writer's grants. Concurrent writes are group-committed
(:mod:`memory.facts.group`); the rules are written once (:mod:`memory.facts.rules`) and a
backend supplies only reads, a write transaction and grants. The full semantics are in
``docs/memory-lifecycle.md`` (The fact ledger).
"""

from __future__ import annotations

import asyncio
import copy
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from functools import partial
from typing import Any, Self, TypeVar, cast

from memory.errors import (
    FactAuthorityError,
    FactLedgerError,
    FactTenantError,
    InvalidFactError,
)
from memory.facts.collector import full_collections_held
from memory.facts.group import GroupCommit, PendingWrite, commit_with_retries
from memory.facts.reads import SyncFacts, by_attribute, chronological
from memory.facts.records import (  # noqa: F401  (the ledger's public names, re-exported)
    DEFAULT_SOURCE_RANKS,
    MAX_NAME_LENGTH,
    MEMORY_TYPES,
    PERSONAL_ATTRIBUTES,
    RECORD_SCHEMA_VERSION,
    SOURCES,
    ConflictPolicy,
    FactRecord,
    FactStatus,
    Grant,
    ImportReport,
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
    ReadAuthority,
    ReadOps,
    Request,
    Rules,
    appended,
    as_of_rules,
    authority_of,
    authority_rules,
    current_rules,
    grant_of,
    history_rules,
    insert_rules,
    is_personal,
    no_read_authority,
    personal_refused,
    profile_rules,
    read_authority_rules,
    record_rules,
    related_rules,
    resumed,
    retract_rules,
    run_async,
    run_sync,
)
from memory.identity import Principal, normal_id
from memory.sealing import PLAIN, MemoryCipher
from memory.sql.clock import system_clock

T = TypeVar("T")

# -- writes in groups ----------------------------------------------------------------------------


Clock = Callable[[], datetime]
#: Writes an admin's read of another user's personal facts to that user's memory audit:
#: called with (the owner's user id, the memory ids read) before the facts are returned.
PersonalReadAuditor = Callable[[str, list[str]], Awaitable[None]]
#: ``granted_by`` of an admin grant the ledger's owner made (:meth:`FactStore.bootstrap_admin`).
LEDGER_OWNER = "(ledger owner)"


class FactStore(ABC):
    """The fact ledger for one principal. Backends: SQLite (embedded) and Postgres.

    Create stores with :func:`memory.facts.open_fact_store`; the factory owns connections.
    ``with_principal`` returns a view for another principal over the same connections;
    ``sync`` the same reads for callers without an event loop.
    """

    #: Facts per transaction of :meth:`import_facts`. A batch's fixed costs are per key (one
    #: prefetch seek, at most one stored fact closed), so they shrink per fact as batches
    #: grow; a batch of 50,000 facts plans in about 100 MB.
    IMPORT_BATCH = 50_000

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
        self._group = GroupCommit()
        self._personal_auditor: PersonalReadAuditor | None = None

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
    async def _bootstrap(self, grant: Grant) -> bool:
        """Insert the admin ``grant`` as the ledger's owner, or refuse
        (:class:`FactAuthorityError`) if this process is not the owner."""

    @abstractmethod
    async def _list_grants(self, tenant_id: str) -> list[Grant]:
        """Every grant of the tenant."""

    @abstractmethod
    async def _erase_facts(self, tenant_id: str, user_id: str, memory_ids: list[str]) -> list[str]:
        """Physically delete, in one transaction, the rows ``memory_ids`` of subject
        ``user:<user_id>``; return the memory ids deleted."""

    @abstractmethod
    async def _erase_user(self, tenant_id: str, user_id: str) -> tuple[list[FactRecord], list[str]]:
        """Physically delete, in one transaction, every fact row (current, superseded,
        retracted, withdrawn) of subject ``user:<user_id>`` and every grant held by
        ``user_id`` in the tenant; return (the rows as they were, in memory id order, and the
        grants as ``role:subject``)."""

    @abstractmethod
    def _is_transient(self, error: BaseException) -> bool:
        """Whether ``error`` is a lock, serialization or uniqueness collision worth retrying."""

    # -- reads ------------------------------------------------------------------------------
    #
    # Every read is checked against the reader's authority here, on both backends
    # (:func:`memory.facts.rules.read_authority_of`); Postgres checks it again in row security
    # (``analyst_facts.may_read``), so a query that forgets the check still sees nothing more.

    def _key(self, subject: str, attribute: str) -> Key:
        return (self.tenant_id, check_name(subject, "subject"), check_name(attribute, "attribute"))

    def _async_ops(self, personal: bool) -> Any:
        """:class:`ReadOps` (``async``) for this principal; ``personal``: the admin asked for
        another user's personal attributes (Postgres sets it for row security)."""
        return self._reads

    def _sync_ops(self, personal: bool) -> Any:
        """:class:`ReadOps` (plain methods), as :meth:`_async_ops`."""
        return self._sync_reads

    def _checked(
        self, subject: str, attribute: str | None, include_personal: bool, read: Rules[T]
    ) -> Rules[tuple[ReadAuthority, T]]:
        """``read``, after the reader's authority over ``subject`` (and ``attribute``) is
        checked; refused reads raise :class:`FactAuthorityError` and return no fact (on
        Postgres the first seek may go out with the grants, row security limiting it to what
        the same rules allow: :func:`read_authority_rules`)."""
        tenant, user = self.tenant_id, self.principal.user_id
        authority, started = yield from read_authority_rules(tenant, user, subject, read)
        if authority is None:
            raise no_read_authority(tenant, user, subject)
        personal = attribute is not None and is_personal(subject, attribute)
        if authority != "own" and personal and not include_personal:
            raise personal_refused(tenant, user, subject, attribute or "")
        audited = include_personal and authority == "admin" and subject.startswith("user:")
        if audited and self._personal_auditor is None:
            raise FactAuthorityError(
                f"Reading {subject}'s personal data is audited in that user's memory "
                "audit, and this ledger was opened without an auditor "
                "(FactStore.with_auditor). Nothing was read.",
                subject=subject,
                tenant_id=tenant,
                user_id=user,
            )
        found = yield from resumed(read, started)
        return authority, found

    def _shown(
        self,
        subject: str,
        authority: ReadAuthority,
        include_personal: bool,
        found: list[FactRecord],
    ) -> list[FactRecord]:
        """What of ``found`` the reader is shown: another user's personal attributes only to
        an admin who asked (their reading is audited by :meth:`_audit_personal`)."""
        if authority == "own" or (include_personal and authority == "admin"):
            return found
        return [r for r in found if not is_personal(subject, r.attribute)]

    async def _audit_personal(
        self, subject: str, authority: ReadAuthority, records: Iterable[FactRecord]
    ) -> None:
        """Write an admin's read of another user's personal facts to that user's audit; a
        failed audit raises, and the facts are not returned."""
        personal = sorted(r.memory_id for r in records if is_personal(subject, r.attribute))
        if authority == "admin" and personal and self._personal_auditor is not None:
            await self._personal_auditor(subject.removeprefix("user:"), personal)

    async def _read(
        self, subject: str, attribute: str | None, include_personal: bool, read: Rules[T]
    ) -> tuple[ReadAuthority, T]:
        rules = self._checked(subject, attribute, include_personal, read)
        return await run_async(rules, self._async_ops(include_personal))

    async def as_of(
        self, subject: str, attribute: str, when: datetime, *, include_personal: bool = False
    ) -> FactRecord | None:
        """The fact that held at ``when``, or ``None``. Another user's personal attribute
        needs ``include_personal`` (an admin only; audited)."""
        key = self._key(subject, attribute)
        rules = as_of_rules(key, utc(when, "when"))
        authority, fact = await self._read(key[1], key[2], include_personal, rules)
        await self._audit_personal(key[1], authority, [fact] if fact else [])
        return fact

    async def current(
        self, subject: str, attribute: str, *, include_personal: bool = False
    ) -> FactRecord | None:
        """The fact that holds now (by the store's clock), or ``None`` (see :meth:`as_of`)."""
        key = self._key(subject, attribute)
        rules = current_rules(key, self.now())
        authority, fact = await self._read(key[1], key[2], include_personal, rules)
        await self._audit_personal(key[1], authority, [fact] if fact else [])
        return fact

    async def profile(
        self, subject: str, *, as_of: datetime | None = None, include_personal: bool = False
    ) -> dict[str, FactRecord]:
        """Every attribute of ``subject`` that holds at ``as_of`` (default: now), by name.
        Another user's personal attributes are left out unless an admin asks
        (``include_personal``; audited)."""
        when = self.now() if as_of is None else utc(as_of, "as_of")
        subject = check_name(subject, "subject")
        rules = profile_rules(self.tenant_id, subject, when)
        authority, found = await self._read(subject, None, include_personal, rules)
        shown = self._shown(subject, authority, include_personal, found)
        await self._audit_personal(subject, authority, shown)
        return by_attribute(shown)

    async def history(
        self, subject: str, attribute: str, *, include_personal: bool = False
    ) -> list[FactRecord]:
        """All records of the key, withdrawn ones included, by ``valid_from`` then recording
        (see :meth:`as_of` for another user's personal attribute)."""
        key = self._key(subject, attribute)
        authority, found = await self._read(key[1], key[2], include_personal, history_rules(key))
        await self._audit_personal(key[1], authority, found)
        return chronological(found)

    async def related(
        self, subject: str, ids: Sequence[str], episodes: Sequence[str] = ()
    ) -> list[FactRecord]:
        """The subject's records (withdrawn ones included) whose memory id is among ``ids``
        or that cite one of ``episodes`` (``source_episode_id`` or ``restated_in``): what a
        forget of those ids can touch, read by id rather than by every attribute's history.
        By attribute, then ``valid_from`` and recording."""
        subject = check_name(subject, "subject")
        wanted = sorted({str(i) for i in ids}), sorted({str(e) for e in episodes})
        rules = related_rules(self.tenant_id, subject, *wanted)
        authority, found = await self._read(subject, None, False, rules)
        return self._shown(subject, authority, False, found)

    def with_auditor(self, auditor: PersonalReadAuditor) -> Self:
        """The same ledger, writing an admin's reads of another user's personal facts to that
        user's audit through ``auditor(owner_user_id, memory_ids)`` (the app passes the memory
        journal's ``audit``); without one such reads are refused."""
        view = copy.copy(self)
        view._personal_auditor = auditor
        return view

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
        pending = self._pending_record(delta, policy, self.now)
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
        now = self.now
        pendings = [self._pending_record(d, policy, now) for d in deltas]
        if pendings:
            await self._submit(pendings)
        return [self._outcome(p) for p in pendings]

    async def import_facts(
        self,
        deltas: Iterable[MemoryDelta | BaseException],
        *,
        policy: ConflictPolicy | None = None,
        batch_size: int | None = None,
        progress: Callable[[ImportReport], None] | None = None,
    ) -> ImportReport:
        """Bulk-load ``deltas`` under :meth:`record`'s rules, ``batch_size`` per transaction
        (default :attr:`IMPORT_BATCH`).

        Items may be exceptions (a line the caller could not parse): they are counted as
        refused with their message, like conflicts, and the import goes on. Returns the
        counts; ``progress`` is called after each committed batch.
        """
        started = time.perf_counter()
        size = self.IMPORT_BATCH if batch_size is None else batch_size
        counts = {"recorded": 0, "replaced": 0, "duplicate": 0}
        refused: list[tuple[int, str]] = []
        #: The batch being read, its writes and their places in ``deltas`` side by side (a
        #: tuple per write would be 50,000 more objects for the garbage collector to walk).
        batch: list[PendingWrite] = []
        places: list[int] = []

        def report() -> ImportReport:
            return ImportReport(
                counts["recorded"],
                counts["replaced"],
                counts["duplicate"],
                tuple(sorted(refused)),
                time.perf_counter() - started,
            )

        async def settle(commit: Awaitable[None], done: list[PendingWrite], at: list[int]) -> None:
            await commit
            for index, p in zip(at, done, strict=True):
                if p.error is not None:
                    refused.append((index, str(p.error)))
                else:  # an outcome alone, or the record (see PendingWrite.returns_record)
                    counts[p.result if isinstance(p.result, str) else p.result.outcome] += 1
            if progress is not None:
                progress(report())

        now = self.now
        # One batch commits on the writer while the next one is read and validated here.
        in_flight: tuple[asyncio.Task[None], list[PendingWrite], list[int]] | None = None
        async with self._importing():
            try:
                for index, item in enumerate(deltas):
                    if isinstance(item, BaseException):
                        refused.append((index, str(item)))
                        continue
                    try:
                        batch.append(self._pending_record(item, policy, now, returns=False))
                        places.append(index)
                    except FactLedgerError as e:
                        refused.append((index, str(e)))
                    if len(batch) >= size:
                        if in_flight is not None:
                            await settle(*in_flight)
                        in_flight = (asyncio.create_task(self._submit(batch)), batch, places)
                        batch, places = [], []
                    if index % 256 == 0:
                        await asyncio.sleep(0)  # let the commit (and anything else) get on
                if in_flight is not None:
                    await settle(*in_flight)
                    in_flight = None
                if batch:
                    await settle(self._submit(batch), batch, places)
            finally:
                if in_flight is not None:  # failed mid-way: the batch under way still ends
                    await asyncio.gather(in_flight[0], return_exceptions=True)
        return report()

    @asynccontextmanager
    async def _importing(self) -> AsyncIterator[None]:
        """Held while :meth:`import_facts` runs: the collector's full collections held off
        (:mod:`memory.facts.collector`); a backend may hold more (SQLite: checkpoints)."""
        with full_collections_held():
            yield

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
            key, lambda: retract_rules(key, given_at, source_episode_id, user, now=self.now), user
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
        records, grants = await self.erase_own_records()
        return [r.memory_id for r in records], grants

    async def erase_own_records(self) -> tuple[list[FactRecord], list[str]]:
        """:meth:`erase_own`, returning the deleted rows themselves (values opened), in
        memory id order: what a caller needs to delete what was derived from any of them --
        closed and withdrawn rows included, not only the current facts' histories."""
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
                self._key(r.subject, r.attribute), partial(insert_rules, r), principal.user_id
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

    def _grant(self, user_id: str, subject: str | None, admin: bool, read_only: bool) -> Grant:
        who = self.principal.user_id
        return grant_of(self.tenant_id, who, user_id, subject, admin, read_only, self.now())

    async def grant(
        self,
        user_id: str,
        subject: str | None = None,
        *,
        admin: bool = False,
        read_only: bool = False,
    ) -> bool:
        """Let ``user_id`` write and read ``subject`` (``read_only``: only read it; ``admin``:
        any subject) in this tenant. No grant lets one read another user's ``user:`` subject.

        Only the tenant's admin may grant (on Postgres also the ledger's owner); a tenant's
        first admin is made by :meth:`bootstrap_admin`. Returns whether the grant is new;
        raises :class:`FactAuthorityError` when refused.
        """
        grant = self._grant(user_id, subject, admin, read_only)
        return await self._change_grant(grant, revoke=False)

    async def bootstrap_admin(self, user_id: str) -> bool:
        """The owner's act: make ``user_id`` an admin of the principal's tenant (its first
        admin, or another). Only the ledger's owner may -- on Postgres the role owning the
        schema, on SQLite the OS user owning the data folder -- so no tenant's admin is ever
        whoever asked first. Returns whether the grant is new."""
        user = normal_id(user_id, "user")  # the one identity rule (memory.identity)
        grant = Grant(self.tenant_id, user, "admin", "*", LEDGER_OWNER, self.now())
        return await self._bootstrap(grant)

    async def revoke(
        self,
        user_id: str,
        subject: str | None = None,
        *,
        admin: bool = False,
        read_only: bool = False,
    ) -> bool:
        """Withdraw a grant made by :meth:`grant`; returns whether one was removed."""
        grant = self._grant(user_id, subject, admin, read_only)
        return await self._change_grant(grant, revoke=True)

    async def grants(self) -> list[Grant]:
        """The tenant's grants, by user, role and subject."""
        found = await self._list_grants(self.tenant_id)
        return sorted(found, key=lambda g: (g.user_id, g.role, g.subject))

    # -- the write rules ----------------------------------------------------------------------

    def _pending_record(
        self,
        delta: MemoryDelta,
        policy: ConflictPolicy | None,
        now: Clock,
        *,
        returns: bool = True,
    ) -> PendingWrite:
        """``delta``'s write; ``now`` is this store's :meth:`now`, bound once by the caller
        (a bound method is one more object per write of an import)."""
        if not isinstance(delta, MemoryDelta):
            raise InvalidFactError(f"record() takes a MemoryDelta, got {type(delta).__name__}.")
        tenant = self.tenant_id
        if delta.tenant_id is not None and delta.tenant_id != tenant:
            raise FactTenantError(
                f"The fact names tenant '{delta.tenant_id}' but the store acts for tenant "
                f"'{tenant}'. Tenants come from the principal; drop tenant_id or open "
                "the store for that principal."
            )
        chosen = self.policy if policy is None else ConflictPolicy(policy)
        key = (tenant, delta.subject, delta.attribute)
        user = self.principal.user_id
        return PendingWrite(
            key,
            _RecordRules(key, delta, chosen, user, now, self.source_ranks),
            user,
            delta.valid_from,
            delta,
            now,
            returns,
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
        """Queue ``writes`` for the next group and wait for its commit (:mod:`memory.facts.group`)."""
        await self._group.submit(writes, self._commit)

    async def _commit(self, writes: list[PendingWrite]) -> None:
        """Run the group (the backend's ``_run_group``); retry it whole on a collision."""
        await commit_with_retries(writes, self._run_group, self._is_transient, self.max_attempts)


class _RecordRules:
    """The rules of one record write (:func:`memory.facts.rules.record_rules`), made fresh for
    each attempt of its group: a callable object rather than a closure, whose cells would be
    six more objects per write for the garbage collector to walk (see ``PendingWrite``)."""

    __slots__ = ("delta", "key", "now", "policy", "ranks", "user")

    def __init__(
        self,
        key: Key,
        delta: MemoryDelta,
        policy: ConflictPolicy,
        user: str,
        now: Clock,
        ranks: Mapping[str, int],
    ) -> None:
        self.key, self.delta, self.policy = key, delta, policy
        self.user, self.now, self.ranks = user, now, ranks

    def __call__(self) -> Rules[FactRecord]:
        return record_rules(
            self.key, self.delta, self.policy, self.user, now=self.now, source_ranks=self.ranks
        )


def _check_tenant(principal: Principal) -> None:
    if not isinstance(principal, Principal):
        raise FactTenantError(f"Expected a memory.threads.Principal, got {principal!r}.")
    if not principal.tenant_id or not principal.tenant_id.strip():
        raise FactTenantError(
            f"Principal {principal!r} has an empty tenant_id; every fact needs a tenant."
        )
