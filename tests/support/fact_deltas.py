"""Facts dated in days from one start, for the tests of set-wise appends on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memory.facts import MemoryDelta
from memory.identity import Principal

MIRA = Principal("acme", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def at(days: int) -> datetime:
    """The instant ``days`` days after :data:`BASE`."""
    return BASE + timedelta(days=days)


def delta(subject: str, attribute: str, value: Any, days: int, **more: Any) -> MemoryDelta:
    """A write of ``value`` for ``subject``'s ``attribute``, valid from :func:`at` ``days``."""
    return MemoryDelta(
        subject=subject, attribute=attribute, value=value, valid_from=at(days), **more
    )
