"""The ledger's rules, written once as generators that ask for seeks and writes by name.

A rule yields ``(operation, arguments)`` requests (:data:`Request`) and receives the answers;
:func:`run_sync` and :func:`run_async` drive it over a backend's plain or ``async`` methods of
those names (:class:`KeyOps` for writes, :class:`ReadOps` for reads). SQLite and Postgres
answer the same requests, so their semantics cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any, Protocol, TypeVar, cast

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
