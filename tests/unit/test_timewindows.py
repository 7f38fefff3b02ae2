"""Time phrases in questions and memories (memory.timewindows), each with an injected "now"
far from the dates the texts name, so a phrase anchored to "now" by mistake fails."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.timewindows import (
    RECENT_DAYS,
    REPORT_DAYS,
    TimeWindow,
    described_window,
    matches,
    named_date,
    time_window,
)

#: Years after the conversations: a phrase counted back from here lands in 2026.
NOW = datetime(2026, 6, 10, 9, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the week before 23 January 2023", day(2023, 1, 23)),
        ("as of 23 January, 2023", day(2023, 1, 23)),
        ("on January 23, 2023?", day(2023, 1, 23)),
        ("on the 3rd of June 2023", day(2023, 6, 3)),
        ("on May 25, 2023", day(2023, 5, 25)),
        ("on 2023-01-23", day(2023, 1, 23)),
        ("on 31 February 2023", None),
        ("I may buy NVDA in 2023", None),
    ],
)
def test_a_named_date_is_read_in_every_usual_spelling(text: str, expected: datetime | None) -> None:
    assert named_date(text) == expected


def test_last_week_before_a_named_date_is_the_week_before_it() -> None:
    assert time_window("What did I read last week before 23 January 2023?", NOW) == TimeWindow(
        day(2023, 1, 16), day(2023, 1, 23)
    )
    assert time_window("What did John do the week before August 3, 2023?", NOW) == TimeWindow(
        day(2023, 7, 27), day(2023, 8, 3)
    )


def test_last_week_without_a_date_is_the_calendar_week_before_now() -> None:
    # NOW is Wednesday 10 June 2026: last week is Monday 1 to Monday 8 June.
    assert time_window("what did I buy last week", NOW) == TimeWindow(
        day(2026, 6, 1), day(2026, 6, 8)
    )


def test_yesterday_counts_back_from_the_named_date_else_from_now() -> None:
    assert time_window("What did I sell yesterday, on 4 May 2023?", NOW) == TimeWindow(
        day(2023, 5, 3), day(2023, 5, 4)
    )
    assert time_window("what did I sell yesterday", NOW) == TimeWindow(
        day(2026, 6, 9), day(2026, 6, 10)
    )


def test_weekends_and_spans_back_from_a_named_date() -> None:
    # 10 April 2023 is a Monday: last weekend is Saturday 8 and Sunday 9.
    assert time_window("What did Maria do last weekend before April 10, 2023?", NOW) == TimeWindow(
        day(2023, 4, 8), day(2023, 4, 10)
    )
    assert time_window("the puppy she got two weeks before August 11, 2023", NOW) == TimeWindow(
        day(2023, 7, 28), day(2023, 8, 4)
    )
    assert time_window("camping two weekends before 17 July 2023", NOW) == TimeWindow(
        day(2023, 7, 8), day(2023, 7, 10)
    )
    assert time_window("the month before 5 March 2023", NOW) == TimeWindow(
        day(2023, 2, 1), day(2023, 3, 1)
    )


def test_recently_is_relative_to_a_named_past_date() -> None:
    window = time_window("What did Maria start recently, as mentioned on 3 June, 2023?", NOW)
    assert window == TimeWindow(day(2023, 6, 3) - timedelta(days=RECENT_DAYS), day(2023, 6, 4))
    assert not window.recent
    # Without a date, "recently" is about now: the caller shortens its recency half-life.
    assert time_window("what did I say recently", NOW) == TimeWindow(recent=True)


def test_a_named_day_alone_is_that_day_and_a_month_its_latest_before_the_reference() -> None:
    assert time_window("What happened on 7 July, 2023?", NOW) == TimeWindow(
        day(2023, 7, 7), day(2023, 7, 8)
    )
    assert time_window("What did I read in January 2023?", NOW) == TimeWindow(
        day(2023, 1, 1), day(2023, 2, 1)
    )
    assert time_window("plans in December", NOW) == TimeWindow(day(2025, 12, 1), day(2026, 1, 1))
    assert time_window("how risky is NVDA", NOW) is None


def test_a_memory_describes_the_time_it_names_counted_from_when_it_was_said() -> None:
    said = datetime(2023, 2, 4, 15, tzinfo=UTC)
    assert described_window("I read it in January", said) == TimeWindow(
        day(2023, 1, 1), day(2023, 2, 1)
    )
    assert described_window("We went camping last weekend", said) == TimeWindow(
        day(2023, 1, 28), day(2023, 1, 30)
    )
    assert described_window("I got a puppy two weeks ago", said) == TimeWindow(
        day(2023, 1, 21), day(2023, 1, 28)
    )
    # "this year" ends the day it was said, not at the end of the year.
    assert described_window("this year is going well", said) == TimeWindow(
        day(2023, 1, 1), day(2023, 2, 5)
    )
    assert described_window("I have been reading recently", said) is None
    assert described_window("I love books", said) is None


def test_an_event_told_after_its_period_still_matches_it() -> None:
    january = time_window("what did I read in January 2023", NOW)
    assert january is not None
    told_later = datetime(2023, 2, 4, 15, tzinfo=UTC)
    assert matches(january, told_later, "I read Dune in January, loved it")
    # Said shortly after the period with no time of its own: may be about it.
    assert matches(january, told_later, "Finished Dune, loved it")
    # Long after, with no time that places it in January: not held.
    weeks_later = day(2023, 2, 1) + timedelta(days=REPORT_DAYS + 1)
    assert not matches(january, weeks_later, "Finished Dune, loved it")
    # Said before the period: not held, whatever it says.
    assert not matches(january, day(2022, 12, 20), "I will read Dune in January")
    assert matches(january, day(2023, 1, 15), "anything said in January")
    # "recently" without a date filters nothing.
    assert matches(TimeWindow(recent=True), day(1999, 1, 1), "anything")


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("the week after 23 January 2023", day(2023, 1, 24), day(2023, 1, 31)),
        ("the day after 23 January 2023", day(2023, 1, 24), day(2023, 1, 25)),
        ("the month after 23 January 2023", day(2023, 2, 1), day(2023, 3, 1)),
    ],
)
def test_after_a_named_date_counts_forward_from_it(
    text: str, start: datetime, end: datetime
) -> None:
    assert time_window(f"What did she do {text}?", NOW) == TimeWindow(start, end)


def test_after_without_a_named_date_is_no_window() -> None:
    assert time_window("What did she do the week after the concert?", NOW) is None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # NOW is 10 June 2026: summer 2026 has begun, so "last summer" is 2025's.
        ("last summer", day(2025, 6, 1), day(2025, 9, 1)),
        ("this summer", day(2026, 6, 1), day(2026, 9, 1)),
        ("in the spring", day(2026, 3, 1), day(2026, 6, 1)),
        ("last spring", day(2026, 3, 1), day(2026, 6, 1)),  # over on 1 June
        ("last winter", day(2025, 12, 1), day(2026, 3, 1)),
        ("in the fall", day(2025, 9, 1), day(2025, 12, 1)),
        ("in summer 2023", day(2023, 6, 1), day(2023, 9, 1)),
        ("during the winter of 2023", day(2022, 12, 1), day(2023, 3, 1)),
    ],
)
def test_a_season_is_placed_relative_to_now(text: str, start: datetime, end: datetime) -> None:
    assert time_window(f"Where did they go {text}?", NOW) == TimeWindow(start, end)


def test_a_season_counts_from_the_named_date_not_from_now() -> None:
    assert time_window("what did she do last summer, as of 4 October 2023?", NOW) == TimeWindow(
        day(2023, 6, 1), day(2023, 9, 1)
    )


def test_a_memory_placed_by_its_season_matches_a_question_about_it() -> None:
    said = day(2023, 10, 4)
    assert described_window("We went camping last summer!", said) == TimeWindow(
        day(2023, 6, 1), day(2023, 9, 1)
    )
    question = time_window("What did Melanie do in summer 2023?", NOW)
    assert question is not None
    assert matches(question, said, "We went camping last summer!")
    assert not matches(question, said, "We went camping last winter!")
