"""The protocol of a memory kind: what forget, retention, backup, export and show ask of
every kind of memory (:class:`Kind`), and the base of the memory journal's kinds
(:class:`JournalKind`). The adapters and the registry are :mod:`agent.app.kinds`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from memory.serde import record_from_json

if TYPE_CHECKING:
    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner
    from agent.recollection.forgettable import Remembered

#: As many rows as one read takes (everything of one principal).
ALL = 1_000_000
#: Sentences of an episode, each hashed into a tombstone of its own.
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")

#: The retention cutoff of a policy age (``episodes``, ``events``, ...): older goes.
Cutoff = Callable[[str], datetime]


def strings(values: Iterable[Any]) -> list[str]:
    """The strings among ``values``, and those inside list values."""
    found: list[str] = []
    for v in values:
        if isinstance(v, str):
            found.append(v)
        elif isinstance(v, list):
            found += [x for x in v if isinstance(x, str)]
    return found


class Kind:
    """One kind of memory; the defaults are those of a kind nothing is derived into."""

    #: The kind's name in receipts, the audit and backups.
    tier: str = ""
    #: A table of the memory journal: erased with the other journal kinds in one transaction.
    journal: bool = False
    #: The key of this kind in ``analyst memory export`` ("" when it is not exported).
    export_key: str = ""
    #: The retention ages that expire this kind, each with the words its audit reason uses.
    ages: ClassVar[dict[str, str]] = {}

    def items(self, mem: Remembered) -> Sequence[Any]:
        """The items of this kind in ``mem``."""
        return ()

    def id(self, item: Any) -> str:
        raise NotImplementedError

    def named(self, item: Any, ids: set[str]) -> bool:
        """Whether ``ids`` names ``item``."""
        return self.id(item) in ids

    def cited_by(self, item: Any) -> set[str]:
        """The episodes ``item`` was derived from."""
        return set()

    def follows(self, item: Any, gone: set[str]) -> tuple[bool, dict[str, Any] | None]:
        """Whether forgetting the episodes ``gone`` takes ``item``, and what the receipt
        keeps to say about it (``None``: nothing)."""
        return bool(gone.intersection(self.cited_by(item))), None

    def texts(self, item: Any) -> list[str]:
        """The texts whose embedding-cache rows go with ``item``."""
        return []

    def tombstones(self, item: Any) -> list[str]:
        """The text units a forget of ``item`` hashes into tombstones."""
        return []

    def expired(self, item: Any, cutoff: Cutoff) -> str | None:
        """The retention age (a key of :attr:`ages`) past which ``item`` is, if any."""
        return None

    async def fetch(self, tiers: Tiers, learner: Learner) -> list[Any]:
        """Every item of this kind of the principal, from storage."""
        return []

    def to_json(self, item: Any) -> dict[str, Any]:
        return dict(item.to_json())

    async def exported(self, tiers: Tiers, learner: Learner) -> Any:
        """What ``analyst memory export`` holds of this kind."""
        return [self.to_json(i) for i in await self.fetch(tiers, learner)]

    async def shown(self, tiers: Tiers, learner: Learner, *, sessions: int) -> dict[str, Any]:
        """The sections of ``analyst memory show`` this kind fills, each item with the
        commands that edit or delete it (none by default)."""
        return {}

    async def erase(
        self, tiers: Tiers, learner: Learner, found: dict[str, Any], reason: str
    ) -> list[str]:
        """Delete the items ``found`` (by id), audited with ``reason``; answer the ids gone."""
        raise NotImplementedError(f"{self.tier} are not deleted item by item")


class JournalKind(Kind):
    journal = True
    record: type[Any] = object
    key = ""

    def id(self, item: Any) -> str:
        return str(getattr(item, self.key))

    def cited_by(self, item: Any) -> set[str]:
        return set(getattr(item, "episode_ids", ()) or ())

    def from_json(self, row: dict[str, Any]) -> Any:
        return record_from_json(self.record, row)

    async def erase(
        self, tiers: Tiers, learner: Learner, found: dict[str, Any], reason: str
    ) -> list[str]:
        """One journal transaction (audited by the journal); a forget erases every journal
        kind in one call of :meth:`memory.journal.base.Journal.erase` instead."""
        erased = await learner.journal.erase({self.tier: sorted(found)}, reason=reason)
        return erased.get(self.tier, [])
