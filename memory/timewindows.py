"""Time in a text: "last month", "in March 2023", "the week before 23 January 2023",
"recently" as a window on when things happened.

:func:`time_window` reads a question and returns the window it names (half-open, UTC), a
"recent" marker (the caller shortens its recency half-life), or None. Relative phrases count
back from the date the question names, if it names one ("yesterday, as of 4 May 2023"), else
from ``now``. :func:`described_window` reads a memory the same way, counting back from when it
was said ("I read it in January", said on 4 February: January), so an event told after the
period it happened in is still placed in that period. :func:`matches` is the soft test recall
uses (:mod:`memory.recall`): said inside the window or up to :data:`REPORT_DAYS` after it, or
describing a time that overlaps it.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

#: How long after a period a memory said with no time of its own may still be about it
#: ("we went camping!" said four days after the weekend it happened).
REPORT_DAYS = 7
#: What "recently" spans before a date the question names.
RECENT_DAYS = 30

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_RECENTLY = re.compile(r"\b(recently|lately|these days|of late)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|during|from)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_MONTH = re.compile(
    r"\b(?:in|during|from|last)\s+(?:early\s+|late\s+|mid-?\s*)?([a-z]+)(?:\s+((?:19|20)\d\d))?\b",
    re.IGNORECASE,
)
_MAY = re.compile(r"\b(?:in|during|from|last)\s+may(?:\s+((?:19|20)\d\d))?\b", re.IGNORECASE)
_YEAR_RE = r"((?:19|20)\d\d)"
#: A calendar date: 2023-01-23, "23 January 2023", "23rd of Jan, 2023", "January 23, 2023".
_DATES = (
    re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b"),
    re.compile(
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?,?\s+{_YEAR_RE}\b",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR_RE}\b", re.IGNORECASE
    ),
)
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a few": 3,
    "a couple of": 2,
    "couple of": 2,
    "few": 3,
}
_COUNT = (
    r"(\d{1,2}|a couple of|couple of|a few|few|an|a|one|two|three|four|five|six|seven|eight|"
    r"nine|ten)"
)
#: "two weeks ago", "3 days before", "a couple of months earlier": a span back from the anchor.
_SPAN_BACK = re.compile(
    rf"\b{_COUNT}\s+(day|week|weekend|month|year)s?\s+(?:ago|before|earlier|prior)\b", re.IGNORECASE
)

#: "the week after 23 January 2023": forward from a date the text names.
_AFTER = re.compile(r"\bthe (day|week|month) after\b", re.IGNORECASE)
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASON = re.compile(
    r"\b(?:(last|past|previous|this)\s+|(?:in|during)\s+(?:the\s+)?)"
    r"(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?((?:19|20)\d\d))?\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeWindow:
    """When a text is about: ``[start, end)`` on ``at``, or just "recently" (``recent``)."""

    start: datetime | None = None
    end: datetime | None = None
    recent: bool = False

    def contains(self, moment: datetime) -> bool:
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )

    def overlaps(self, other: TimeWindow) -> bool:
        """Whether two windows share a moment (an open side reaches without limit)."""
        return (self.start is None or other.end is None or self.start < other.end) and (
            self.end is None or other.start is None or other.start < self.end
        )


def _day(moment: datetime) -> datetime:
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _next_month(moment: datetime) -> datetime:
    if moment.month == 12:
        return _month_start(moment.year + 1, 1)
    return _month_start(moment.year, moment.month + 1)


def _previous_month(moment: datetime) -> datetime:
    if moment.month == 1:
        return _month_start(moment.year - 1, 12)
    return _month_start(moment.year, moment.month - 1)


def named_date(text: str) -> datetime | None:
    """The first calendar date ``text`` names (midnight UTC), or None."""
    for pattern in _DATES:
        for m in pattern.finditer(text):
            a, b, c = m.groups()
            try:
                if pattern is _DATES[0]:
                    return datetime(int(a), int(b), int(c), tzinfo=UTC)
                if pattern is _DATES[1]:
                    return datetime(int(c), _MONTHS[b.lower()], int(a), tzinfo=UTC)
                return datetime(int(c), _MONTHS[a.lower()], int(b), tzinfo=UTC)
            except ValueError:  # "31 February": not a date
                continue
    return None


def time_window(query: str | None, now: datetime) -> TimeWindow | None:
    """The time a question asks about (None if it names none).

    Relative phrases ("yesterday", "last week", "recently", "two weeks before") count back
    from the date the question names, else from ``now``; a named date alone is that day; a
    month without a year is its latest occurrence not after that reference."""
    text = (query or "").lower()
    if not text:
        return None
    named = named_date(text)
    reference = named or _day(now)
    relative = _relative(text, reference, anchored=named is not None)
    if relative is not None:
        return relative
    if _RECENTLY.search(text):
        if named is None:
            return TimeWindow(recent=True)
        return TimeWindow(named - timedelta(days=RECENT_DAYS), named + timedelta(days=1))
    if season := _season(text, reference):  # "last summer, as of 4 October 2023"
        return season
    if named is not None:
        return TimeWindow(named, named + timedelta(days=1))
    return _calendar(text, reference)


def described_window(text: str | None, said: datetime) -> TimeWindow | None:
    """The time a memory said at ``said`` describes, when it names one ("last week", "in
    January", "two days ago"), closed at the end of the day it was said; None otherwise
    ("recently" is too vague to place)."""
    lowered = (text or "").lower()
    if not lowered:
        return None
    named = named_date(lowered)
    if named is not None:
        return TimeWindow(named, named + timedelta(days=1))
    reference = _day(said)
    window = _relative(lowered, reference, anchored=False) or _calendar(lowered, reference)
    if window is None or window.recent:
        return None
    end = reference + timedelta(days=1)
    return TimeWindow(window.start, end if window.end is None else min(window.end, end))


def matches(window: TimeWindow, said: datetime, text: str | None = None) -> bool:
    """The soft test of a memory against a question's window: said inside it, or within
    :data:`REPORT_DAYS` after its end (a memory is often told after the fact), or its text
    describes a time (:func:`described_window`) that overlaps it."""
    if window.recent:
        return True
    end = None if window.end is None else window.end + timedelta(days=REPORT_DAYS)
    if TimeWindow(window.start, end).contains(said):
        return True
    described = described_window(text, said)
    return described is not None and described.overlaps(window)


def _relative(text: str, day: datetime, *, anchored: bool) -> TimeWindow | None:
    """A phrase counted back from ``day`` (a date the text names when ``anchored``), or
    forward from a named date ("the week after 23 January")."""
    if anchored and (m := _AFTER.search(text)):
        return _span_after(day, m.group(1).lower())
    if re.search(r"\byesterday\b", text):
        return TimeWindow(day - timedelta(days=1), day)
    if re.search(r"\b(today|tonight|this morning|this evening|this afternoon)\b", text):
        return TimeWindow(day, day + timedelta(days=1))
    if m := _SPAN_BACK.search(text):
        count = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1).lower()]
        return _span_back(day, count, m.group(2).lower())
    if re.search(r"\b(last|past|previous) weekend\b|\bthe weekend before\b", text):
        return _span_back(day, 1, "weekend")
    if re.search(r"\b(last|past|previous) week\b|\bthe week before\b", text):
        if anchored:  # "the week before 23 January": the seven days before it
            return TimeWindow(day - timedelta(days=7), day)
        monday = day - timedelta(days=day.weekday())
        return TimeWindow(monday - timedelta(days=7), monday)
    if re.search(r"\bthis week\b", text):
        return TimeWindow(day - timedelta(days=day.weekday()), day + timedelta(days=1))
    if re.search(r"\b(last|past|previous) month\b|\bthe month before\b", text):
        this_month = _month_start(day.year, day.month)
        return TimeWindow(_previous_month(this_month), this_month)
    if re.search(r"\bthis month\b", text):
        return TimeWindow(_month_start(day.year, day.month), day + timedelta(days=1))
    if re.search(r"\b(last|past|previous) year\b|\bthe year before\b", text):
        return TimeWindow(_month_start(day.year - 1, 1), _month_start(day.year, 1))
    if re.search(r"\bthis year\b", text):
        return TimeWindow(_month_start(day.year, 1), day + timedelta(days=1))
    return None


def _span_after(day: datetime, unit: str) -> TimeWindow:
    """The day, seven days or calendar month that follow a named date."""
    if unit == "day":
        return TimeWindow(day + timedelta(days=1), day + timedelta(days=2))
    if unit == "week":
        return TimeWindow(day + timedelta(days=1), day + timedelta(days=8))
    following = _next_month(_month_start(day.year, day.month))
    return TimeWindow(following, _next_month(following))


def _season(text: str, reference: datetime) -> TimeWindow | None:
    """A season the text names ("last summer", "this winter", "in spring 2023", "in the
    fall"), in the northern calendar: spring March-May, summer June-August, autumn
    September-November, winter December-February ("winter 2023": the one that ends in 2023).
    "Last" is the latest one over before the
    reference day, "this" and a bare season the latest one begun by it."""
    m = _SEASON.search(text)
    if m is None:
        return None
    which, name, year_text = m.group(1), m.group(2).lower(), m.group(3)
    first = _SEASON_START[name]
    if year_text:
        start = _month_start(int(year_text) - (1 if first == 12 else 0), first)
        return TimeWindow(start, _months_later(start, 3))
    start = _month_start(reference.year, first)
    while start > reference:
        start = _month_start(start.year - 1, first)
    if which and which.lower() in ("last", "past", "previous"):
        while _months_later(start, 3) > reference:
            start = _month_start(start.year - 1, first)
    return TimeWindow(start, _months_later(start, 3))


def _months_later(start: datetime, count: int) -> datetime:
    for _ in range(count):
        start = _next_month(start)
    return start


def _span_back(day: datetime, count: int, unit: str) -> TimeWindow:
    """The unit that lies ``count`` units before ``day``: "two weeks before" is the week
    that ended a week before it; "last weekend" the latest Saturday and Sunday before it."""
    if unit == "day":
        start = day - timedelta(days=count)
        return TimeWindow(start, start + timedelta(days=1))
    if unit == "weekend":
        saturday = day - timedelta(days=(day.weekday() - 5) % 7 or 7)
        saturday -= timedelta(days=7 * (count - 1))
        return TimeWindow(saturday, saturday + timedelta(days=2))
    if unit == "week":
        return TimeWindow(day - timedelta(days=7 * count), day - timedelta(days=7 * (count - 1)))
    if unit == "month":
        start = _month_start(day.year, day.month)
        for _ in range(count):
            start = _previous_month(start)
        return TimeWindow(start, _next_month(start))
    return TimeWindow(_month_start(day.year - count, 1), _month_start(day.year - count + 1, 1))


def _calendar(text: str, reference: datetime) -> TimeWindow | None:
    """A season ("last summer"), a month ("in March", "in May 2023") or a year ("in 2023")
    the text names."""
    if season := _season(text, reference):
        return season
    if m := _MAY.search(text):
        return _month_window(5, m.group(1), reference)
    for m in _MONTH.finditer(text):
        month = _MONTHS.get(m.group(1).lower())
        if month and m.group(1).lower() != "may":  # "may" alone is far more often a verb
            return _month_window(month, m.group(2), reference)
    if m := _YEAR.search(text):
        year = int(m.group(1))
        return TimeWindow(_month_start(year, 1), _month_start(year + 1, 1))
    return None


def _month_window(month: int, year_text: str | None, reference: datetime) -> TimeWindow:
    year = int(year_text) if year_text else reference.year
    if not year_text and _month_start(year, month) > reference:
        year -= 1
    start = _month_start(year, month)
    return TimeWindow(start, _next_month(start))
