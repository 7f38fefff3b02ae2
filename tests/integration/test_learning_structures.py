"""Structures of what people say, through the chat path with a real ledger: a removal whose
object refers to the list said before ("sold them both", not "my laptop died so I sold it"), an object said before its subject
("Tesla I don't own no more"), a position said to be closed and a company said to be no longer
needed on a list, the words between a correction marker and the next value revising the value
before it, a value compared with the one set aside ("closer to X than Y"), a company named as
where the user works that is no item of a list in the same clause, losses said by their verb
("half of it evaporating"), a relative "which" that asks nothing, durations with a modifier
("fifteen-odd years"), a risk level said of the way the user invests ("I'm after cautious
growth"), a currency named with its accents by what the user is paid in ("my wages land in
złoty"), several edits of one list in one message made one edit, a purchase whose object is a pronoun
for the one company named before it ("..., I bought it") and the user's own value
after someone else's claim.

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
        "structures", attribute, turns, start=datetime(2026, 11, 22, 9, tzinfo=UTC)
    )


async def test_a_removal_that_refers_to_the_list_before_takes_it_out() -> None:
    said = ("I own shares of Amazon and Alphabet.", "I cashed out of them both today.")
    assert await learned("holdings", *said) in (None, [])


async def test_a_referring_removal_takes_nothing_when_the_count_does_not_fit() -> None:
    said = ("I hold shares of Meta, Apple and Nvidia.", "Sold both on Monday.")
    assert sorted(await learned("holdings", *said)) == ["AAPL", "META", "NVDA"]


async def test_a_referring_removal_after_another_noun_keeps_the_list() -> None:
    said = ("I own Tesla.", "The old laptop died so I sold it for parts.")
    assert await learned("holdings", *said) == ["TSLA"]


async def test_an_object_said_before_its_subject_is_what_is_taken_out() -> None:
    said = ("I have Tesla and Amazon shares.", "Tesla I don't own no more.")
    assert await learned("holdings", *said) == ["AMZN"]


async def test_a_position_said_to_be_closed_leaves_the_list() -> None:
    said = ("My positions: NVDA, MSFT.", "The Microsoft position was liquidated last week.")
    assert await learned("holdings", *said) == ["NVDA"]


async def test_a_company_the_market_dumped_stays_held() -> None:
    said = ("My positions: NVDA, MSFT.", "Microsoft got dumped hard after earnings.")
    assert sorted(await learned("holdings", *said)) == ["MSFT", "NVDA"]


async def test_a_company_no_longer_needed_on_a_list_leaves_it() -> None:
    said = ("Keep an eye on Apple and Meta for me.", "Meta is no longer of interest to me.")
    assert await learned("watchlist", *said) == ["AAPL"]


async def test_the_words_after_a_marker_revise_the_value_before_the_next_one() -> None:
    said = (
        "Quick intro: I'm 52, I'm paid in pounds, sorry no, I relocated so it's Swiss francs "
        "these days, and I'd like brief reports."
    )
    assert await learned("base_currency", said) == "CHF"
    assert await learned("age", said) == 52


async def test_a_value_compared_with_the_one_set_aside_is_the_one_meant() -> None:
    said = ("My horizon is three decades.", "Hmm, I misspoke: more like 20 years than 30.")
    assert await learned("horizon_years", *said) == 20


async def test_the_employer_in_a_list_clause_is_no_item_of_the_list() -> None:
    said = "As an Nvidia engineer I'd like alerts on Tesla, please follow it for me."
    assert await learned("watchlist", said) == ["TSLA"]
    assert await learned("employer", said) == "Nvidia"


async def test_a_loss_said_by_its_verb_is_a_limit_not_a_risk_level() -> None:
    said = "I could live with a quarter of my savings evaporating, past that I'd get out."
    assert await learned("max_drawdown_pct", said) == 25
    assert await learned("risk_tolerance", said) is None


async def test_a_relative_which_asks_nothing() -> None:
    said = ("Which means, honestly, I prefer dividends.",)
    assert await learned("income_preference", *said) == "dividends"


async def test_a_duration_with_a_modifier_is_read() -> None:
    assert await learned("horizon_years", "My horizon is fifteen-odd years.") == 15


async def test_the_users_own_value_after_someone_elses_claim_is_theirs() -> None:
    said = ("My sister thinks my horizon should be 5 years.", "Nah, for me it's 12.")
    assert await learned("horizon_years", *said) == 12


async def test_a_hedged_answer_to_someone_elses_claim_states_nothing() -> None:
    said = ("My sister thinks my horizon should be 5 years.", "Maybe she's got a point, dunno.")
    assert await learned("horizon_years", *said) is None


async def test_a_risk_level_said_of_the_way_the_user_invests_is_theirs() -> None:
    assert await learned("risk_tolerance", "Honestly I'm after cautious growth.") == "conservative"
    assert await learned("risk_tolerance", "Aggressive growth funds had a bad year.") is None


async def test_a_currency_named_with_its_accents_by_what_the_user_is_paid_in() -> None:
    said = "My wages land in złoty every month, so use that please."
    assert await learned("base_currency", said) == "PLN"


async def test_several_edits_of_a_list_in_one_message_are_one_edit() -> None:
    said = ("Track Apple, Meta and Tesla for me.", "Never mind Meta. Actually only Apple.")
    assert await learned("watchlist", *said) == ["AAPL"]
    said = ("I own Apple, Amazon and Tesla.", "Sold the Amazon. Also got out of Tesla.")
    assert await learned("holdings", *said) == ["AAPL"]


async def test_a_name_off_the_watchlist_because_it_was_bought_is_held() -> None:
    said = (
        "Put Meta and Apple on my watchlist.",
        "Meta isn't wanted on the list anymore, I bought it.",
    )
    assert await learned("watchlist", *said) == ["AAPL"]
    assert await learned("holdings", *said) == ["META"]
