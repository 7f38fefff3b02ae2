"""The system clock of the SQL tiers, and how an instant is written as SQLite text.

Times are timezone-aware; SQLite stores them as fixed-width ISO-8601 UTC text
(``2026-06-03T10:00:00.000000+00:00``), which orders lexicographically exactly as the
instants do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import repeat
from operator import floordiv, sub

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, in UTC: the default clock of the fact ledger and the journal."""
    return datetime.now(UTC)


def encode_time(value: datetime) -> str:
    """Fixed-width ISO-8601 in UTC with microseconds: sorts like the instants it names."""
    if value.tzinfo is not UTC:  # most times are UTC already: no conversion then
        value = value.astimezone(UTC)
    return value.isoformat(timespec="microseconds")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def epoch_micros(values: Iterable[datetime]) -> Iterator[int]:
    """Each of the aware ``values`` as whole microseconds since the Unix epoch, made without a
    Python call per value (a bulk write's instants; SQLite writes their text:
    :func:`sql_time_text`). ``datetime.isoformat`` costs some 3 us a value."""
    return map(floordiv, map(sub, values, repeat(_EPOCH)), repeat(_MICROSECOND))


def sql_time_text(micros: str) -> str:
    """An SQLite expression for :func:`encode_time`'s text of the instant ``micros`` (an
    expression: whole microseconds since the Unix epoch, :func:`epoch_micros`)."""
    fraction = f"(({micros}) % 1000000 + 1000000) % 1000000"
    return (
        f"strftime('%Y-%m-%dT%H:%M:%S', (({micros}) - {fraction}) / 1000000, 'unixepoch')"
        f" || printf('.%06d+00:00', {fraction})"
    )


def encode_optional(value: datetime | None) -> str | None:
    """:func:`encode_time`, or ``None`` for ``None``."""
    return None if value is None else encode_time(value)
