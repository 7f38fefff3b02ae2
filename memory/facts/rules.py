"""The ledger's rules, written once as generators that ask for seeks and writes by name.

A rule yields ``(operation, arguments)`` requests (:data:`Request`) and receives the answers;
:func:`run_sync` and :func:`run_async` drive it over a backend's plain or ``async`` methods of
those names (:class:`KeyOps` for writes, :class:`ReadOps` for reads). SQLite and Postgres
answer the same requests, so their semantics cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar, cast

from memory.facts.records import FactRecord

T = TypeVar("T")

Key = tuple[str, str, str]
"""(tenant_id, subject, attribute): one timeline."""

#: What a rule asks of the database: an operation name on :class:`KeyOps` and its arguments.
Request = tuple[str, tuple[Any, ...]]
#: The rules are written once, as generators that yield :data:`Request` s and receive the
#: answers; :func:`run_sync` and :func:`run_async` drive them over a backend's operations.
Rules = Generator[Request, Any, T]


class KeyOps(Protocol):
    """What the write rules need, inside one open write transaction (sync or async).

    Backends implement these with the same names, as plain or ``async`` methods. "Active"
    means not withdrawn. Every method is a seek on the key's ``(valid_from)`` order.
    """

    def neighbours(self, key: Key, at: datetime) -> tuple[FactRecord | None, datetime | None]:
        """The active fact starting last at or before ``at``, and the next active start."""
        ...

    def before(self, key: Key, at: datetime) -> FactRecord | None:
        """The active fact starting last strictly before ``at``."""
        ...

    def insert(self, record: FactRecord) -> None: ...

    def set_end(
        self,
        key: Key,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        """Close an active fact at ``valid_to`` and record why its end is where it is."""
        ...

    def withdraw(
        self,
        key: Key,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        """Take a fact out of the active set, keeping the row for history."""
        ...

    def restate(self, key: Key, memory_id: str, episode_id: str) -> None:
        """Append ``episode_id`` to the fact's ``restated_in`` provenance."""
        ...

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        """The user's grants in the tenant, as ``(role, subject)`` rows, read in the write
        transaction (so a revocation committed before it is seen)."""
        ...


def run_sync(rules: Rules[T], ops: Any) -> T:
    """Drive ``rules`` over ``ops``' plain methods."""
    try:
        name, args = next(rules)
        while True:
            name, args = rules.send(getattr(ops, name)(*args))
    except StopIteration as done:
        return cast(T, done.value)


async def run_async(rules: Rules[T], ops: Any) -> T:
    """Drive ``rules`` over ``ops``' ``async`` methods."""
    try:
        name, args = next(rules)
        while True:
            name, args = rules.send(await getattr(ops, name)(*args))
    except StopIteration as done:
        return cast(T, done.value)


# -- the read rules ------------------------------------------------------------------------------


def as_of_rules(key: Key, when: datetime) -> Rules[FactRecord | None]:
    """One seek: the active fact starting last at or before ``when``, if it still holds then.

    Safe because active intervals never overlap: no earlier fact can hold at ``when``.
    """
    fact = yield ("last_from", (key, when))
    return fact if fact is not None and (fact.valid_to is None or when < fact.valid_to) else None


def current_rules(key: Key, now: datetime) -> Rules[FactRecord | None]:
    """The open fact (one seek on the open-fact index) if it has started; else :func:`as_of_rules`.

    The fallback covers a fact dated in the future (the open one has not started yet) and a
    fact closed at a future time (nothing is open, something still holds).
    """
    fact = yield ("open_fact", (key,))
    if fact is not None and fact.valid_from <= now:
        return cast(FactRecord, fact)
    return (yield from as_of_rules(key, now))


class ReadOps(Protocol):
    """The reads a backend answers, as plain or ``async`` methods of the same names."""

    def open_fact(self, key: Key) -> FactRecord | None: ...

    def last_from(self, key: Key, at: datetime) -> FactRecord | None: ...

    def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]: ...

    def history(self, key: Key) -> list[FactRecord]: ...


# -- authority ----------------------------------------------------------------------------------

#: What a principal may do to a subject: ``own`` (its own ``user:<id>``), ``granted`` (a
#: shared subject it holds a grant for), ``candidate`` (another user's subject it holds a grant
#: for: stored only as a candidate that user must confirm), or ``None`` (nothing).
Authority = Literal["own", "granted", "candidate"] | None

#: Grant roles: ``writer`` of one subject (or a ``prefix*`` pattern), ``admin`` of the tenant.
GRANT_ROLES = ("writer", "admin")


def subject_matches(pattern: str, subject: str) -> bool:
    """``team:*`` matches every subject starting ``team:``; anything else only itself."""
    if pattern.endswith("*"):
        return subject.startswith(pattern[:-1])
    return subject == pattern


def authority_of(user_id: str, subject: str, grants: list[tuple[str, str]]) -> Authority:
    """The rule (Postgres enforces the same one in ``analyst_facts.may_write``)."""
    if not user_id:
        return None
    if subject == f"user:{user_id}":
        return "own"
    if not any(role == "admin" or subject_matches(pattern, subject) for role, pattern in grants):
        return None
    return "candidate" if subject.startswith("user:") else "granted"


def authority_rules(key: Key, user_id: str) -> Rules[Authority]:
    """One read in the write transaction: the writer's grants; then :func:`authority_of`."""
    grants = yield ("grants", (key[0], user_id))
    return authority_of(user_id, key[1], list(grants))
