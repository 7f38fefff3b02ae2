"""Time in a question: "last month", "in March", "in 2023", "recently" as a window on when
memories happened.

:func:`time_window` reads a question and returns the window it names (half-open, UTC), a
"recent" marker (the caller shortens its recency half-life instead of filtering), or None.
Recall (:mod:`memory.recall`) filters its candidates by it and keeps the unfiltered ranking
when nothing falls inside, so a misread date never empties an answer.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS.pop("may", None)  # "may" is far more often a verb; "in May" is matched on its own
_RECENTLY = re.compile(r"\b(recently|lately|these days|of late)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|during|from)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_MONTH = re.compile(
    r"\b(?:in|during|from|last)\s+([A-Za-z]+)(?:\s+((?:19|20)\d\d))?\b", re.IGNORECASE
)


@dataclass(frozen=True)
class TimeWindow:
    """When the question asks about: ``[start, end)`` on ``at``, or just "recently"."""

    start: datetime | None = None
    end: datetime | None = None
    recent: bool = False

    def contains(self, moment: datetime) -> bool:
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _next_month(moment: datetime) -> datetime:
    if moment.month == 12:
        return _month_start(moment.year + 1, 1)
    return _month_start(moment.year, moment.month + 1)


def time_window(query: str | None, now: datetime) -> TimeWindow | None:
    """The explicit time a question asks about (None if it names none). Relative phrases
    count back from ``now``; a month without a year is its latest occurrence before ``now``."""
    text = (query or "").lower()
    if not text:
        return None
    day = datetime(now.year, now.month, now.day, tzinfo=UTC)
    this_month = _month_start(now.year, now.month)
    if re.search(r"\byesterday\b", text):
        return TimeWindow(day - timedelta(days=1), day)
    if re.search(r"\btoday\b", text):
        return TimeWindow(day, day + timedelta(days=1))
    if re.search(r"\blast week\b", text):
        monday = day - timedelta(days=day.weekday())
        return TimeWindow(monday - timedelta(days=7), monday)
    if re.search(r"\bthis week\b", text):
        return TimeWindow(day - timedelta(days=day.weekday()), None)
    if re.search(r"\blast month\b", text):
        previous = (
            _month_start(now.year - 1, 12)
            if now.month == 1
            else _month_start(now.year, now.month - 1)
        )
        return TimeWindow(previous, this_month)
    if re.search(r"\bthis month\b", text):
        return TimeWindow(this_month, None)
    if re.search(r"\blast year\b", text):
        return TimeWindow(_month_start(now.year - 1, 1), _month_start(now.year, 1))
    if re.search(r"\bthis year\b", text):
        return TimeWindow(_month_start(now.year, 1), None)
    if m := re.search(r"\b(?:in|during|from|last)\s+may(?:\s+((?:19|20)\d\d))?\b", text):
        return _month_window(5, m.group(1), now)
    for m in _MONTH.finditer(text):
        month = _MONTHS.get(m.group(1).lower())
        if month:
            return _month_window(month, m.group(2), now)
    if m := _YEAR.search(text):
        year = int(m.group(1))
        return TimeWindow(_month_start(year, 1), _month_start(year + 1, 1))
    if _RECENTLY.search(text):
        return TimeWindow(recent=True)
    return None


def _month_window(month: int, year_text: str | None, now: datetime) -> TimeWindow:
    year = int(year_text) if year_text else now.year
    if not year_text and _month_start(year, month) > now:
        year -= 1
    start = _month_start(year, month)
    return TimeWindow(start, _next_month(start))
