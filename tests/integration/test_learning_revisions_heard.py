"""Revisions the rules had not heard, through the chat path with a real ledger: a repair
marker typed in a hurry or in another language's grammar ("srry ment", "I make mistake",
"I want to say"), a value set aside by a dash ("not 35 - 20"), a message that opens on the
new value in words ("fifty-one, it was my birthday"), across a session; list edits told as
"off the list", "put it back", "added back", a pronoun after the sale ("Meta, I have sell
it"), and one part of what was said taken back ("forget the Nvidia part", "scratch the
currency bit"), which is a revision and not a request to forget; a limit said as "tops",
a level said with "now"; and a value let back into an exclusion ("alcohol is fine, only
weapons").

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.sessions import learned_after

pytestmark = pytest.mark.integration


async def learned(attribute: str, *sessions: tuple[str, ...]) -> Any:
    """``attribute`` after each of ``sessions`` is said in a chat session of its own."""
    return await learned_after("heard", attribute, *sessions)


@pytest.mark.parametrize(
    ("attribute", "turns", "expected"),
    [
        ("base_currency", ("my currency is eur", "sry ment GBP, im in leeds now"), "GBP"),
        ("age", ("I am 41 years old.", "Sorry, I make mistake, I am 44 years."), 44),
        (
            "risk_tolerance",
            ("I'm conservative.", "Excuse me, I want to say aggressive."),
            "aggressive",
        ),
        ("horizon_years", ("My horizon is 12 years.", "not 12 \u2014 8"), 8),
        ("max_drawdown_pct", ("max drawdwn 45%", "acutally make taht 30"), 30),
    ],
)
async def test_a_repair_typed_in_a_hurry_or_in_another_grammar_revises(
    attribute: str, turns: tuple[str, ...], expected: object
) -> None:
    assert await learned(attribute, turns) == expected


async def test_a_message_that_opens_on_the_new_value_in_words_revises() -> None:
    assert await learned("age", ("I'm 50.", "fifty-one, it was my birthday on Monday")) == 51


async def test_a_revision_in_a_later_session_revises_the_stored_value() -> None:
    value = await learned(
        "max_drawdown_pct", ("I'd accept a 35% drawdown.",), ("not 35 \u2014 20, I slept on it",)
    )
    assert value == 20


async def test_a_limit_said_as_tops_is_stated_and_revised() -> None:
    value = await learned(
        "max_drawdown_pct", ("I can lose forty percent tops.", "I misspoke, fifteen percent tops.")
    )
    assert value == 15


async def test_a_level_said_with_now_replaces_the_one_before() -> None:
    value = await learned(
        "risk_tolerance", ("I'm aggressive.", "Since the crash I'm conservative now.")
    )
    assert value == "conservative"


@pytest.mark.parametrize(
    ("attribute", "turns", "expected"),
    [
        ("watchlist", ("Watch Meta and Amazon for me.", "Meta's off the list now."), ["AMZN"]),
        (
            "watchlist",
            ("Follow Apple and Nvidia.", "Take Nvidia off.", "Add Nvidia back, I miss it."),
            ["AAPL", "NVDA"],
        ),
        ("holdings", ("I own GOOGL.", "added back some Tesla I had sold"), ["GOOGL", "TSLA"]),
        ("holdings", ("I have shares of Meta and of Apple.", "Meta, I have sell it."), ["AAPL"]),
        ("holdings", ("I hold Nvidia and Microsoft.", "Forget the Nvidia part."), ["MSFT"]),
    ],
)
async def test_a_list_edit_told_in_other_words_edits_the_list(
    attribute: str, turns: tuple[str, ...], expected: list[str]
) -> None:
    assert sorted(await learned(attribute, turns)) == sorted(expected)


async def test_taking_back_the_only_ticker_ends_the_list() -> None:
    assert await learned("holdings", ("I'm 30 and I hold Tesla.", "Forget the Tesla part.")) is None


async def test_taking_back_one_attribute_by_its_noun_keeps_the_rest() -> None:
    turns = ("My currency is USD and my goal is growth.", "Scratch the currency bit.")
    assert await learned("base_currency", turns) is None
    assert await learned("goal", turns) == "growth"


async def test_a_value_let_back_into_an_exclusion_leaves_it() -> None:
    turns = (
        "Keep weapons and alcohol out of my reports.",
        "On reflection, alcohol is fine, only weapons.",
    )
    assert await learned("excluded_sectors", turns) == ["weapons"]
