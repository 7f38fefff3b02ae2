"""The system clock of the SQL tiers, and how an instant is written as SQLite text.

Times are timezone-aware; SQLite stores them as fixed-width ISO-8601 UTC text
(``2026-06-03T10:00:00.000000+00:00``), which orders lexicographically exactly as the
instants do.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, in UTC: the default clock of the fact ledger and the journal."""
    return datetime.now(UTC)


def encode_time(value: datetime) -> str:
    """Fixed-width ISO-8601 in UTC with microseconds: sorts like the instants it names."""
    if value.tzinfo is not UTC:  # most times are UTC already: no conversion then
        value = value.astimezone(UTC)
    return value.isoformat(timespec="microseconds")


def encode_optional(value: datetime | None) -> str | None:
    """:func:`encode_time`, or ``None`` for ``None``."""
    return None if value is None else encode_time(value)
