"""Retention: the per-type policy (:class:`RetentionPolicy`, ``ANALYST_RETENTION``) and the
pruning of whole idle threads (:func:`prune_threads`; never part of a thread's history, never
a thread a live process runs). Nothing is kept indefinitely by default; current facts, active
procedures and high-importance memories are reported for review instead of deleted by age.
The types, their clocks and the review rule are in docs/memory-lifecycle.md ("Retention
policy and idle threads"); the sweep itself is :mod:`agent.app.retention`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory.errors import ConfigurationError

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from memory.identity import Principal
    from memory.threads import ThreadIndex

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str, *, what: str = "--older-than") -> timedelta:
    """``90d``, ``12h``, ``30m``, ``45s``, ``2w`` → a positive timedelta."""
    match = _AGE.match(text or "")
    if not match or float(match.group(1)) <= 0:
        raise ConfigurationError(
            f"{what} '{text}' is not a duration; use a number and a unit (s, m, h, d, w), "
            "e.g. 90d or 12h."
        )
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def parse_since(text: str, now: datetime, *, what: str = "--since") -> datetime:
    """A start time from a date or time (``2026-11-01``, ``2026-11-01T09:00``; UTC unless it
    says otherwise) or an age before ``now`` (``7d``, ``12h``)."""
    try:
        value = datetime.fromisoformat((text or "").strip())
    except ValueError:
        if _AGE.match(text or ""):
            return now - parse_age(text, what=what)
        raise ConfigurationError(
            f"{what} '{text}' is neither a date (2026-11-01, or 2026-11-01T09:00) nor an age "
            "(a number and a unit: 7d, 12h, 2w)."
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


#: Every retention type and its default age (see the module docstring).
DEFAULT_RETENTION: dict[str, str] = {
    "episodes": "365d",
    "summaries": "90d",
    "events": "180d",
    "memories": "365d",
    "candidates": "90d",
    "jobs": "30d",
    "fact_history": "365d",
    "procedures": "365d",
    "threads": "90d",
}
#: A cold-store memory of this importance or more is reviewed, not deleted by age.
HIGH_IMPORTANCE = 8


@dataclass(frozen=True)
class RetentionPolicy:
    """How long each retention type is kept: ``labels`` maps every type of
    :data:`DEFAULT_RETENTION` to its age as written (``90d``)."""

    labels: tuple[tuple[str, str], ...] = tuple(DEFAULT_RETENTION.items())

    @classmethod
    def parse(cls, text: str | None, *, what: str = "ANALYST_RETENTION") -> RetentionPolicy:
        """``summaries=90d,events=180d`` over the defaults; an unknown type, a pair without
        ``=`` or an age that is not a duration is a :class:`ConfigurationError`."""
        ages = dict(DEFAULT_RETENTION)
        for part in (text or "").split(","):
            if not part.strip():
                continue
            name, sep, age = part.partition("=")
            name = name.strip().lower()
            if not sep:
                raise ConfigurationError(
                    f"{what}: '{part.strip()}' is not type=age; write e.g. summaries=90d,events=180d."
                )
            if name not in DEFAULT_RETENTION:
                raise ConfigurationError(
                    f"{what}: '{name}' is not a memory type; use one of "
                    f"{', '.join(DEFAULT_RETENTION)} (e.g. summaries=90d)."
                )
            parse_age(age, what=f"{what} {name}")
            ages[name] = age.strip()
        return cls(tuple(ages.items()))

    def label(self, kind: str) -> str:
        return dict(self.labels)[kind]

    def age(self, kind: str) -> timedelta:
        return parse_age(self.label(kind))

    def to_json(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class PruneCandidate:
    thread_id: str
    last_activity: str
    idle_days: float
    #: Where its checkpoints and charts were kept (:class:`memory.threads.ThreadRecord`).
    storage_id: str = field(default="", compare=False)


@dataclass
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove) and what it kept."""

    older_than: str
    cutoff: str
    dry_run: bool
    deleted: list[PruneCandidate] = field(default_factory=list)
    kept: int = 0
    skipped_running: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "older_than": self.older_than,
            "cutoff": self.cutoff,
            "dry_run": self.dry_run,
            "deleted": [
                {k: v for k, v in vars(c).items() if k != "storage_id"} for c in self.deleted
            ],
            "kept": self.kept,
            "skipped_running": self.skipped_running,
        }


async def last_activity(saver: BaseCheckpointSaver[Any], thread_id: str) -> datetime | None:
    """When the thread's latest checkpoint was written, or None if it has none."""
    found = await saver.aget_tuple({"configurable": {"thread_id": thread_id}})
    if found is None:
        return None
    return _parse_time(str(found.checkpoint["ts"]))


async def prune_threads(
    saver: BaseCheckpointSaver[Any],
    index: ThreadIndex,
    who: Principal,
    *,
    older_than: timedelta,
    label: str,
    dry_run: bool = False,
    now: datetime | None = None,
    busy: Callable[[str], bool] = lambda thread_id: False,
) -> PruneReport:
    """Delete (or with ``dry_run`` list) the threads of ``who`` idle since before now - age.

    ``busy(storage_id)`` says whether a live process is running the thread (kept under that
    storage id); those are skipped.
    """
    now = now or datetime.now(UTC)
    cutoff = now - older_than
    report = PruneReport(
        older_than=label, cutoff=cutoff.isoformat(timespec="seconds"), dry_run=dry_run
    )
    for record in index.list(who, limit=1_000_000):
        storage = record.storage_id or record.thread_id
        if busy(storage):
            report.skipped_running.append(record.thread_id)
            continue
        seen = await last_activity(saver, storage) or _parse_time(record.updated_at)
        if seen >= cutoff:
            report.kept += 1
            continue
        report.deleted.append(
            PruneCandidate(
                thread_id=record.thread_id,
                last_activity=seen.isoformat(timespec="seconds"),
                idle_days=round((now - seen).total_seconds() / 86400, 1),
                storage_id=storage,
            )
        )
        if not dry_run:
            await saver.adelete_thread(storage)
            index.delete(who, record.thread_id)
    return report


def _parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)
