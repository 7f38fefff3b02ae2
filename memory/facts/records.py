"""Records of the fact ledger: the ``MemoryDelta`` a writer proposes, the ``FactRecord`` the
ledger stores, and the small value rules both obey (UTC times, names, canonical JSON values).

The semantics of writing and reading them are :mod:`memory.facts.base`'s.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, TypeVar, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, field_validator

from memory.errors import (
    InvalidFactError,
)
from memory.identity import Principal

T = TypeVar("T")

#: Shape version of the records this code writes (see ``memory.facts.migrations``).
RECORD_SCHEMA_VERSION = 4

MemoryType = Literal["semantic", "episodic", "procedural", "profile"]
MEMORY_TYPES: tuple[MemoryType, ...] = get_args(MemoryType)

#: Where a fact came from, weakest first: a model's guess, a tool observation, something the
#: user said, something the user confirmed when asked.
Source = Literal["inferred", "observed", "stated", "confirmed"]
SOURCES: tuple[Source, ...] = get_args(Source)
DEFAULT_SOURCE_RANKS: Mapping[str, int] = {name: rank for rank, name in enumerate(SOURCES)}

FactStatus = Literal["open", "superseded", "retracted", "withdrawn", "candidate"]
#: What a write did: stored a new fact, replaced one with the same ``valid_from`` (policy),
#: or found the same fact stored already.
WriteOutcome = Literal["recorded", "replaced", "duplicate"]

MAX_NAME_LENGTH = 200

#: Attributes of a user subject that identify the person (the profile registry's ``personal``
#: ones, ``agent.learning.profile``): shown only to that user; a tenant admin reads them only
#: on request, audited in the owner's memory audit. Postgres holds the same list in
#: ``analyst_facts.may_read`` (migration 9): a change here is a new migration there.
PERSONAL_ATTRIBUTES = frozenset({"full_name", "address", "age"})


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


_json_string: Callable[[str], str] = json.encoder.encode_basestring_ascii


def canonical_json(value: Any) -> str:
    """A stable JSON text for ``value`` (sorted keys); refuses NaN/Infinity and non-JSON types."""
    if type(value) is str:  # most values: the same text, without json.dumps' set-up per call
        return _json_string(value)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidFactError(
            f"Fact value {value!r} is not JSON ({e}); use strings, numbers, booleans, null, "
            "lists and objects."
        ) from e


#: Value types that are JSON whatever their value.
_PLAIN_JSON = frozenset({str, int, bool, type(None)})


def new_memory_id() -> str:
    """A new fact's memory id: a version-7 UUID as 32 hex digits (48 bits of Unix
    milliseconds, then 74 random bits).

    Ids made close in time sort close together, so a group's new rows land at the right edge
    of the ``(tenant_id, memory_id)`` index instead of one random page each: a commit writes
    the pages its facts changed, not a page per fact. Uniqueness rests on the random bits,
    as with ``uuid4`` (which has 122), drawn from :mod:`random` (seeded from the OS and
    again in a forked child): an id names a fact, it grants nothing, and a system call per
    id was a sixth of the rules' time in a bulk import. Nothing reads time from an id.
    """
    rand = random.getrandbits(80)
    high = (time.time_ns() // 1_000_000) << 80
    return f"{high | 0x7 << 76 | (rand >> 68) << 64 | 0x2 << 62 | rand & (1 << 62) - 1:032x}"


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
        if type(value) in _PLAIN_JSON:  # most values: nothing to check (NaN is a float)
            return value
        try:
            json.dumps(value, allow_nan=False)
        except ValueError as e:
            raise ValueError("NaN and Infinity are not JSON values") from e
        return value


@dataclass(frozen=True, init=False)
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
    #: Later episodes that stated the same value from the same ``valid_from`` (provenance).
    restated_in: tuple[str, ...] = ()
    #: The user whose principal wrote the record (``None`` on records older than schema 4).
    recorded_by: str | None = None
    #: Set on what a write returns: what the write did. ``None`` on what a read returns.
    outcome: WriteOutcome | None = field(default=None, compare=False)

    def __init__(
        self,
        tenant_id: str,
        memory_id: str,
        subject: str,
        attribute: str,
        value: Any,
        memory_type: MemoryType,
        schema_version: int,
        valid_from: datetime,
        valid_to: datetime | None,
        recorded_at: datetime,
        supersedes_memory_id: str | None,
        source_episode_id: str | None,
        source: Source,
        confidence: float,
        retention_policy: str,
        retracted_at: datetime | None = None,
        retraction_episode_id: str | None = None,
        withdrawn_at: datetime | None = None,
        restated_in: tuple[str, ...] = (),
        recorded_by: str | None = None,
        outcome: WriteOutcome | None = None,
    ) -> None:
        # The fields go into the instance's dict at once: a frozen dataclass's own __init__
        # sets each through object.__setattr__, about ten times the cost, and every fact
        # read or written makes a record.
        vars(self).update(
            tenant_id=tenant_id,
            memory_id=memory_id,
            subject=subject,
            attribute=attribute,
            value=value,
            memory_type=memory_type,
            schema_version=schema_version,
            valid_from=valid_from,
            valid_to=valid_to,
            recorded_at=recorded_at,
            supersedes_memory_id=supersedes_memory_id,
            source_episode_id=source_episode_id,
            source=source,
            confidence=confidence,
            retention_policy=retention_policy,
            retracted_at=retracted_at,
            retraction_episode_id=retraction_episode_id,
            withdrawn_at=withdrawn_at,
            restated_in=restated_in,
            recorded_by=recorded_by,
            outcome=outcome,
        )

    @property
    def duplicate(self) -> bool:
        """Whether the write that returned this record found it already stored."""
        return self.outcome == "duplicate"

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
    def candidate(self) -> bool:
        """A fact about a user stated by someone else: kept for review, never in force.

        It is stored withdrawn (outside the timeline) with source ``inferred``; it counts only
        once that user records it themselves."""
        return (
            self.recorded_by is not None
            and self.subject.startswith("user:")
            and self.subject != f"user:{self.recorded_by}"
        )

    @property
    def status(self) -> FactStatus:
        if self.candidate:
            return "candidate"
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
            "restated_in": list(self.restated_in),
            "recorded_by": self.recorded_by,
            "status": self.status,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class Grant:
    """Authority over subjects other than one's own (see ``analyst facts grant``): ``writer``
    (writes and reads) or ``reader`` (reads only) of ``subject`` (exact, or a ``prefix*``
    pattern such as ``team:*``), or ``admin`` of the whole tenant (``subject`` is ``*``)."""

    tenant_id: str
    user_id: str
    role: Literal["writer", "reader", "admin"]
    subject: str
    granted_by: str | None = None
    granted_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "role": self.role,
            "subject": self.subject,
            "granted_by": self.granted_by,
            "granted_at": None if self.granted_at is None else self.granted_at.isoformat(),
        }


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
