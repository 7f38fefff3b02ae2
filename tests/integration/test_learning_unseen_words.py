"""Words the rules were not written for, through the chat path with a real ledger: a cue or a
company misspelt by one letter ("dividnds", "horizn", "Nvdia", "folow") is read as the word
it misspells, and the fact it states is grounded on the words the user typed; someone else
as the subject by a contracted "is" ("my husband's retiring in three years") is theirs, not
the user's; a request opened with "please" in another language's word order ("Please you can
follow ...?") is a request, not a question.

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.sessions import learned_after

pytestmark = pytest.mark.integration


async def learned(attribute: str, *turns: str) -> Any:
    """``attribute`` after ``turns`` are said in one chat session."""
    return await learned_after(
        "unseen", attribute, turns, start=datetime(2026, 11, 21, 9, tzinfo=UTC)
    )


@pytest.mark.parametrize(
    ("attribute", "said", "expected"),
    [
        ("income_preference", "honestly I prefer dividnds", "dividends"),
        ("horizon_years", "time horizn is 15 yeras", 15),
        ("watchlist", "pls trak Nvdia for me", ["NVDA"]),
        ("watchlist", "could you folow Amazon and Mircosoft", ["AMZN", "MSFT"]),
    ],
)
async def test_a_word_misspelt_by_one_letter_is_read_as_the_word(
    attribute: str, said: str, expected: object
) -> None:
    value = await learned(attribute, said)
    assert sorted(value) == sorted(expected) if isinstance(expected, list) else value == expected


async def test_a_real_word_near_a_cue_is_not_respelt() -> None:
    # "wait" is one letter from "want", "gold" from "hold": real words stay themselves.
    assert await learned("holdings", "wait, I only have gold bars and some cash") is None


async def test_someone_else_as_the_subject_of_a_contracted_is_keeps_their_value() -> None:
    said = "My husband's retiring in three years and I'm 40."
    assert await learned("horizon_years", said) is None
    assert await learned("age", said) == 40


async def test_a_request_opened_with_please_in_another_word_order_is_no_question() -> None:
    value = await learned("watchlist", "Please you can follow Tesla and Apple for me?")
    assert sorted(value) == ["AAPL", "TSLA"]


async def test_a_watch_request_ends_at_a_comma_before_a_new_subject() -> None:
    value = await learned("watchlist", "keep tabs on Tesla for me, I have Meta shares already")
    assert value == ["TSLA"]


async def test_a_second_subject_after_and_is_a_clause_read_by_its_meaning() -> None:
    said = "I'm 47 and I'll give the money roughly a decade and a half."
    assert await learned("horizon_years", said) == 15


@pytest.mark.parametrize(
    ("attribute", "said", "expected"),
    [
        (
            "excluded_sectors",
            "Tobacco is a hard no for me. Ditto for gambling.",
            ["tobacco", "gambling"],
        ),
        ("watchlist", "Please follow Amazon for me. Nvidia as well.", ["AMZN", "NVDA"]),
    ],
)
async def test_a_sentence_that_adds_to_the_list_said_before_by_reference_adds(
    attribute: str, said: str, expected: list[str]
) -> None:
    assert sorted(await learned(attribute, said)) == sorted(expected)


async def test_a_ticker_kept_out_of_what_the_analyst_suggests_is_excluded_not_held() -> None:
    said = "Keep Tesla out of anything you recommend to me."
    assert await learned("excluded_tickers", said) == ["TSLA"]
    assert await learned("holdings", "keep Tesla out of my portfolio") is None


async def test_a_name_after_a_greeting_of_the_time_of_day_is_heard() -> None:
    assert await learned("full_name", "Evening - Marta Kowalczyk here.") == "Marta Kowalczyk"
