"""Blocking reads of the fact ledger (:attr:`memory.facts.FactStore.sync`), and the order
every read answers in.

The same rules as the async reads (authority first, then one seek): a script or the CLI
without an event loop gets the same answers for the same principal. Another user's personal
attributes are never shown here: an admin reads them on the async path, which audits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, TypeVar

from memory.facts.records import FactRecord, check_name, utc
from memory.facts.rules import (
    Key,
    ReadAuthority,
    Rules,
    as_of_rules,
    current_rules,
    history_rules,
    profile_rules,
    run_sync,
)
from memory.identity import Principal

T = TypeVar("T")


class CheckedReads(Protocol):
    """What :class:`SyncFacts` reads through: the store's principal, clock and authority
    check (:class:`memory.facts.FactStore` provides them). Named here, below the store, so
    the blocking reads need nothing of the store's module."""

    @property
    def principal(self) -> Principal: ...

    @property
    def tenant_id(self) -> str: ...

    def now(self) -> datetime: ...

    def _key(self, subject: str, attribute: str) -> Key: ...

    def _sync_ops(self, personal: bool) -> Any: ...

    def _checked(
        self, subject: str, attribute: str | None, include_personal: bool, read: Rules[T]
    ) -> Rules[tuple[ReadAuthority, T]]: ...

    def _shown(
        self,
        subject: str,
        authority: ReadAuthority,
        include_personal: bool,
        found: list[FactRecord],
    ) -> list[FactRecord]: ...


class SyncFacts:
    """Blocking reads of a :class:`FactStore`, scoped by the same principal, same rules
    (another user's personal attributes are never shown here: that read is audited, async).

    ``store.sync.current(subject, attribute)``, ``.as_of(...)``, ``.profile(...)``,
    ``.history(...)``: the async API's answers without an event loop.
    """

    def __init__(self, store: CheckedReads) -> None:
        self._store = store
        self._ops = store._sync_ops(False)

    @property
    def principal(self) -> Principal:
        return self._store.principal

    def _read(self, subject: str, attribute: str | None, read: Rules[T]) -> tuple[Any, T]:
        return run_sync(self._store._checked(subject, attribute, False, read), self._ops)

    def as_of(self, subject: str, attribute: str, when: datetime) -> FactRecord | None:
        """The fact that held at ``when``, or ``None``."""
        key = self._store._key(subject, attribute)
        return self._read(key[1], key[2], as_of_rules(key, utc(when, "when")))[1]

    def current(self, subject: str, attribute: str) -> FactRecord | None:
        """The fact that holds now (by the store's clock), or ``None``."""
        key = self._store._key(subject, attribute)
        return self._read(key[1], key[2], current_rules(key, self._store.now()))[1]

    def profile(self, subject: str, *, as_of: datetime | None = None) -> dict[str, FactRecord]:
        """Every attribute of ``subject`` that holds at ``as_of`` (default: now), by name;
        another user's personal attributes are left out (the audited path is async only)."""
        store = self._store
        when = store.now() if as_of is None else utc(as_of, "as_of")
        subject = check_name(subject, "subject")
        authority, found = self._read(subject, None, profile_rules(store.tenant_id, subject, when))
        return by_attribute(store._shown(subject, authority, False, found))

    def history(self, subject: str, attribute: str) -> list[FactRecord]:
        """All records of the key, withdrawn ones included, by ``valid_from`` then recording."""
        key = self._store._key(subject, attribute)
        return chronological(self._read(key[1], key[2], history_rules(key))[1])


def by_attribute(records: list[FactRecord]) -> dict[str, FactRecord]:
    return {r.attribute: r for r in sorted(records, key=lambda r: r.attribute)}


def chronological(records: list[FactRecord]) -> list[FactRecord]:
    return sorted(records, key=lambda r: (r.valid_from, r.recorded_at))
