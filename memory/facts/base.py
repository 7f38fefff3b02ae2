"""The typed fact ledger: records, the ``MemoryDelta`` candidate, and the write semantics.

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

Write semantics (one transaction per write, retried on lock/unique conflicts)
-----------------------------------------------------------------------------
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
  (and memory type) is a duplicate and returns the stored record unchanged -- unless the
  policy lets it replace the stored one, which upgrades the provenance (say, to confirmed).
  A replaced fact is *withdrawn* (``withdrawn_at`` set, kept for history), never overwritten.

Every new record names the fact it superseded (``supersedes_memory_id``), or ``None``. A
value restated at a later time is recorded like any other (it keeps the restating episode as
provenance); the history shows it superseding the same value.

``retract(subject, attribute, at)`` closes the fact holding at ``at`` without a successor
(``valid_to = at``, with ``retracted_at`` and the retraction's episode). Retracting at a fact's
own start withdraws it (and its predecessor now ends by retraction). A later fact inserted
inside a retracted interval inherits the retraction as its end, like any inherited end.

Reads
-----
``as_of(subject, attribute, when)``: the active fact with ``valid_from <= when < valid_to``.
``current`` is ``as_of`` at the store's clock (a fact dated in the future is not current yet).
``profile(subject, as_of=None)`` gives every attribute at once; ``history`` gives all records of
a key, withdrawn ones included, ordered by ``valid_from`` then ``recorded_at``.

Backends implement :class:`KeyTransaction` (a locked transaction over one key) and the
reads; the rules above live here once, so SQLite and Postgres cannot drift apart.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Protocol, Self, TypeVar, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, field_validator

from memory.errors import (
    FactConflictError,
    FactLedgerError,
    FactNotFoundError,
    FactTenantError,
    FactWriteContentionError,
    InvalidFactError,
)
from memory.identity import Principal

T = TypeVar("T")

#: Shape version of the records this code writes (see ``memory.facts.migrations``).
RECORD_SCHEMA_VERSION = 2

MemoryType = Literal["semantic", "episodic", "procedural", "profile"]
MEMORY_TYPES: tuple[MemoryType, ...] = get_args(MemoryType)

#: Where a fact came from, weakest first: a model's guess, a tool observation, something the
#: user said, something the user confirmed when asked.
Source = Literal["inferred", "observed", "stated", "confirmed"]
SOURCES: tuple[Source, ...] = get_args(Source)
DEFAULT_SOURCE_RANKS: Mapping[str, int] = {name: rank for rank, name in enumerate(SOURCES)}

FactStatus = Literal["open", "superseded", "retracted", "withdrawn"]

MAX_NAME_LENGTH = 200


class ConflictPolicy(StrEnum):
    """What to do when a new fact starts exactly when a stored one with another value does."""

    REJECT = "reject"
    SOURCE_PRECEDENCE = "source_precedence"
    CONFIRMED_REVISION = "confirmed_revision"


def subject_for(principal: Principal) -> str:
    """The subject under which facts about the principal's user are kept."""
    return f"user:{principal.user_id}"


def utc(value: datetime, what: str = "time") -> datetime:
    """``value`` in UTC; a naive datetime is refused (its zone would be a guess)."""
    if not isinstance(value, datetime):
        raise InvalidFactError(f"{what} must be a datetime, got {value!r}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidFactError(
            f"{what} {value.isoformat()} has no time zone; pass an aware datetime, "
            "e.g. datetime(2026, 6, 3, 10, tzinfo=UTC)."
        )
    return value.astimezone(UTC)


def canonical_json(value: Any) -> str:
    """A stable JSON text for ``value`` (sorted keys); refuses NaN/Infinity and non-JSON types."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidFactError(
            f"Fact value {value!r} is not JSON ({e}); use strings, numbers, booleans, null, "
            "lists and objects."
        ) from e


def check_name(value: str, what: str) -> str:
    """A subject or attribute: non-empty, at most 200 characters, no surrounding spaces."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidFactError(f"{what} must be a non-empty string, got {value!r}.")
    value = value.strip()
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidFactError(f"{what} '{value[:40]}...' is longer than {MAX_NAME_LENGTH}.")
    return value


class MemoryDelta(BaseModel):
    """A candidate fact, as extraction (structured output or rules) hands it to the ledger.

    The ledger decides what happens to it: store it, treat it as a duplicate, or refuse it as
    a conflict. The tenant is taken from the store's principal; ``tenant_id`` may be given to
    assert it, and a different value is refused.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    subject: str = Field(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description='Normalised entity id, e.g. "user:mira" or "ticker:NVDA".',
    )
    attribute: str = Field(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description='The property being set, e.g. "passport_deadline" or "risk_tolerance".',
    )
    value: JsonValue = Field(description="The new value (any JSON).")
    valid_from: AwareDatetime = Field(
        description="When the value starts to hold (timezone-aware; stored in UTC)."
    )
    memory_type: MemoryType = "semantic"
    source_episode_id: str | None = Field(
        default=None, description="The episode (message, tool result, approval) it came from."
    )
    source: Source = Field(
        default="stated",
        description="inferred < observed < stated < confirmed (used by source_precedence).",
    )
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    retention_policy: str = Field(default="default", min_length=1, max_length=100)
    tenant_id: str | None = Field(
        default=None, description="Optional assertion of the tenant; must match the principal."
    )

    @field_validator("valid_from")
    @classmethod
    def _to_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    @field_validator("value")
    @classmethod
    def _json_only(cls, value: JsonValue) -> JsonValue:
        try:
            json.dumps(value, allow_nan=False)
        except ValueError as e:
            raise ValueError("NaN and Infinity are not JSON values") from e
        return value


@dataclass(frozen=True)
class FactRecord:
    """One stored fact. ``valid_to is None``: still holds. ``withdrawn_at``: no longer believed."""

    tenant_id: str
    memory_id: str
    subject: str
    attribute: str
    value: Any
    memory_type: MemoryType
    schema_version: int
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    supersedes_memory_id: str | None
    source_episode_id: str | None
    source: Source
    confidence: float
    retention_policy: str
    retracted_at: datetime | None = None
    retraction_episode_id: str | None = None
    withdrawn_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.valid_to is None

    @property
    def active(self) -> bool:
        return self.withdrawn_at is None

    def holds_at(self, when: datetime) -> bool:
        return (
            self.active
            and self.valid_from <= when
            and (self.valid_to is None or when < self.valid_to)
        )

    @property
    def status(self) -> FactStatus:
        if self.withdrawn_at is not None:
            return "withdrawn"
        if self.valid_to is None:
            return "open"
        return "retracted" if self.retracted_at is not None else "superseded"

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape of ``analyst facts ... --json``."""

        def iso(t: datetime | None) -> str | None:
            return None if t is None else t.isoformat()

        return {
            "tenant_id": self.tenant_id,
            "memory_id": self.memory_id,
            "subject": self.subject,
            "attribute": self.attribute,
            "value": self.value,
            "memory_type": self.memory_type,
            "schema_version": self.schema_version,
            "valid_from": iso(self.valid_from),
            "valid_to": iso(self.valid_to),
            "recorded_at": iso(self.recorded_at),
            "supersedes_memory_id": self.supersedes_memory_id,
            "source_episode_id": self.source_episode_id,
            "source": self.source,
            "confidence": self.confidence,
            "retention_policy": self.retention_policy,
            "retracted_at": iso(self.retracted_at),
            "retraction_episode_id": self.retraction_episode_id,
            "withdrawn_at": iso(self.withdrawn_at),
            "status": self.status,
        }


class KeyTransaction(Protocol):
    """One open, locked write transaction over a single (tenant, subject, attribute) key.

    Backends guarantee that no other writer changes the key until the transaction ends and
    that every method sees the transaction's own changes. "Active" means not withdrawn.
    """

    async def covering(self, at: datetime) -> FactRecord | None:
        """The active fact with ``valid_from <= at < valid_to`` (or open), if any."""
        ...

    async def next_start(self, after: datetime) -> datetime | None:
        """The earliest ``valid_from`` of an active fact strictly after ``after``."""
        ...

    async def ending_at(self, at: datetime) -> FactRecord | None:
        """The active fact whose ``valid_to`` equals ``at``, if any."""
        ...

    async def insert(self, record: FactRecord) -> None: ...

    async def set_end(
        self,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        """Close an active fact at ``valid_to`` and record why its end is where it is."""
        ...

    async def withdraw(
        self,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        """Take a fact out of the active set, keeping the row for history."""
        ...


Clock = Callable[[], datetime]


def _system_clock() -> datetime:
    return datetime.now(UTC)


class FactStore(ABC):
    """The fact ledger for one principal. Backends: SQLite (embedded) and Postgres.

    Create stores with :func:`memory.facts.open_fact_store`; the factory owns connections.
    ``with_principal`` returns a view for another principal over the same connections.
    """

    def __init__(
        self,
        principal: Principal | None,
        *,
        policy: ConflictPolicy = ConflictPolicy.REJECT,
        source_ranks: Mapping[str, int] | None = None,
        clock: Clock | None = None,
        max_attempts: int = 8,
    ) -> None:
        if principal is not None:
            _check_tenant(principal)
        self._principal = principal
        self.policy = ConflictPolicy(policy)
        self.source_ranks = dict(source_ranks or DEFAULT_SOURCE_RANKS)
        self.clock: Clock = clock or _system_clock
        self.max_attempts = max_attempts

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

    # -- backend hooks ----------------------------------------------------------------------

    @abstractmethod
    def _key_transaction(
        self, subject: str, attribute: str
    ) -> AbstractAsyncContextManager[KeyTransaction]:
        """Begin a write transaction holding the key's lock, scoped to ``self.tenant_id``."""

    @abstractmethod
    def _is_transient(self, error: BaseException) -> bool:
        """Whether ``error`` is a lock, serialization or uniqueness collision worth retrying."""

    @abstractmethod
    async def _as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None: ...

    @abstractmethod
    async def _profile(self, subject: str, when: datetime) -> list[FactRecord]: ...

    @abstractmethod
    async def _history(self, subject: str, attribute: str) -> list[FactRecord]: ...

    # -- reads ------------------------------------------------------------------------------

    async def as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None:
        """The fact that held at ``when``, or ``None``."""
        return await self._as_of(
            check_name(subject, "subject"), check_name(attribute, "attribute"), utc(when, "when")
        )

    async def current(self, subject: str, attribute: str) -> FactRecord | None:
        """The fact that holds now (by the store's clock), or ``None``."""
        return await self.as_of(subject, attribute, self.now())

    async def profile(
        self, subject: str, *, as_of: datetime | None = None
    ) -> dict[str, FactRecord]:
        """Every attribute of ``subject`` that holds at ``as_of`` (default: now), by name."""
        when = self.now() if as_of is None else utc(as_of, "as_of")
        records = await self._profile(check_name(subject, "subject"), when)
        return {r.attribute: r for r in sorted(records, key=lambda r: r.attribute)}

    async def history(self, subject: str, attribute: str) -> list[FactRecord]:
        """All records of the key, withdrawn ones included, by ``valid_from`` then recording."""
        records = await self._history(
            check_name(subject, "subject"), check_name(attribute, "attribute")
        )
        return sorted(records, key=lambda r: (r.valid_from, r.recorded_at))

    # -- writes -----------------------------------------------------------------------------

    async def record(
        self, delta: MemoryDelta, *, policy: ConflictPolicy | None = None
    ) -> FactRecord:
        """Store ``delta`` with temporal supersession; return the record now holding its place.

        Raises :class:`FactConflictError` when the policy refuses an equal-``valid_from``
        write, :class:`FactTenantError` when the delta names another tenant.
        """
        if not isinstance(delta, MemoryDelta):
            raise InvalidFactError(f"record() takes a MemoryDelta, got {type(delta).__name__}.")
        if delta.tenant_id is not None and delta.tenant_id != self.tenant_id:
            raise FactTenantError(
                f"The fact names tenant '{delta.tenant_id}' but the store acts for tenant "
                f"'{self.tenant_id}'. Tenants come from the principal; drop tenant_id or open "
                "the store for that principal."
            )
        chosen = self.policy if policy is None else ConflictPolicy(policy)
        value_key = canonical_json(delta.value)
        subject, attribute = delta.subject, delta.attribute

        async def write(tx: KeyTransaction) -> FactRecord:
            now = self.now()
            start = delta.valid_from
            cover = await tx.covering(start)
            if cover is not None and cover.valid_from == start:
                refusal = self._refusal(chosen, delta, cover)
                same = (
                    canonical_json(cover.value) == value_key
                    and cover.memory_type == delta.memory_type
                )
                if same and (refusal is not None or delta.source == cover.source):
                    return cover  # a duplicate: nothing new to record
                if refusal is not None:
                    raise FactConflictError(
                        subject,
                        attribute,
                        start.isoformat(),
                        cover.memory_id,
                        cover.value,
                        refusal,
                    )
                await tx.withdraw(
                    cover.memory_id, now, cover.retracted_at, cover.retraction_episode_id
                )
                new = self._new_record(delta, now, cover.valid_to, cover)
            elif cover is not None:
                await tx.set_end(cover.memory_id, start, None, None)
                new = self._new_record(delta, now, cover.valid_to, cover)
            else:
                new = self._new_record(delta, now, await tx.next_start(start), None)
            await tx.insert(new)
            return new

        return await self._write(subject, attribute, write)

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
        subject = check_name(subject, "subject")
        attribute = check_name(attribute, "attribute")
        given_at = None if at is None else utc(at, "at")

        async def write(tx: KeyTransaction) -> FactRecord:
            now = self.now()
            when = now if given_at is None else given_at
            cover = await tx.covering(when)
            if cover is None:
                raise FactNotFoundError(subject, attribute, when.isoformat())
            if cover.valid_from < when:
                await tx.set_end(cover.memory_id, when, now, source_episode_id)
                return replace(
                    cover, valid_to=when, retracted_at=now, retraction_episode_id=source_episode_id
                )
            await tx.withdraw(cover.memory_id, now, now, source_episode_id)
            before = await tx.ending_at(when)
            if before is not None:
                # Its end now marks the retraction, not a successor that no longer counts.
                await tx.set_end(before.memory_id, when, now, source_episode_id)
            return replace(
                cover, withdrawn_at=now, retracted_at=now, retraction_episode_id=source_episode_id
            )

        return await self._write(subject, attribute, write)

    # -- internals --------------------------------------------------------------------------

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
        )

    async def _write(
        self, subject: str, attribute: str, body: Callable[[KeyTransaction], Awaitable[T]]
    ) -> T:
        """Run ``body`` in a key transaction; retry the whole transaction on collisions."""
        delay = 0.005
        for attempt in range(1, self.max_attempts + 1):
            try:
                async with self._key_transaction(subject, attribute) as tx:
                    return await body(tx)
            except FactLedgerError:
                raise
            except Exception as e:
                if not self._is_transient(e):
                    raise
                if attempt == self.max_attempts:
                    raise FactWriteContentionError(
                        f"Writing {subject}.{attribute} collided with concurrent writers "
                        f"{attempt} times (last: {e}). Retry later, or reduce concurrent "
                        "writers on this key."
                    ) from e
                await asyncio.sleep(delay * random.uniform(0.5, 1.5))
                delay = min(delay * 2, 0.5)
        raise AssertionError("unreachable")  # pragma: no cover


def _check_tenant(principal: Principal) -> None:
    if not isinstance(principal, Principal):
        raise FactTenantError(f"Expected a memory.threads.Principal, got {principal!r}.")
    if not principal.tenant_id or not principal.tenant_id.strip():
        raise FactTenantError(
            f"Principal {principal!r} has an empty tenant_id; every fact needs a tenant."
        )
