"""Mechanisms that carry to words not seen, through the chat path with a real ledger: a
request after an opener ("Right then, would you ...?") is no question, a feeling said of
someone else inside the user's clause ("... while others around me panicked") is not the
user's, one clause of a sentence giving the topic of losses and the next its level by a
feeling, a name joined by "&" ("S&P 500") naming no tickers, a request after "so" following
someone else's part being the user's, a pronoun for the one company a fragment before it
names ("Meta? ... leave them out") for any ticker list, "plan" as a noun ("the company
savings plan") being no purchase to come, and a loss limit said as two amounts of money ("40
grand in ... fall under 30 grand": 25%), an employer said in passing (a role opening the
message, what a badge reads), a currency named as the one of the city lived in, "change X
with Y" swapping a list item, and a ticker let back in off the exclusion list (a stored
exclusion ends; a pending one is not asked about, and one asked for earlier in the session is
not proposed), "no X and no Y in the summaries" excluding both, the purpose said of the money
("these savings are for my nephew's tuition") giving the goal and "N years from now" its
horizon, years "until my pension", "in perhaps six years" rounding a time, not doubting it,
buying into a fall told with its date ("when the index tanked in the autumn of 2018 we piled
in"), a loss "okay for me" as the limit, a holding said by a possessive ("my Nvidia stock has
been on a tear") and names "in my brokerage account" as holdings, a repair setting one list
item aside ("sorry, not Tesla, it's Meta") swapping that item, and "I personally just hold X"
after a partner's holdings.

Every sentence here was written for these tests (none is taken from a corpus case). Real graph
and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.sessions import app_at, chat, learned_after

pytestmark = pytest.mark.integration


async def learned(attribute: str, *turns: str) -> Any:
    """``attribute`` after ``turns`` are said in one chat session."""
    return await learned_after(
        "generalised", attribute, turns, start=datetime(2026, 12, 7, 9, tzinfo=UTC)
    )


async def test_a_request_after_an_opener_is_no_question() -> None:
    said = "Right then, would you put Apple on my watchlist?"
    assert await learned("watchlist", said) == ["AAPL"]


async def test_a_feeling_said_of_others_is_not_the_users() -> None:
    said = "I sat tight through the 2022 slide while others around me panicked."
    assert await learned("risk_tolerance", said) is None


async def test_one_clause_gives_the_topic_of_losses_and_the_next_its_level() -> None:
    said = (
        "When my stocks drop I keep refreshing my portfolio page all evening, "
        "and I get a knot in my stomach."
    )
    assert await learned("risk_tolerance", said) == "conservative"


async def test_a_name_joined_by_an_ampersand_names_no_tickers() -> None:
    said = "My retirement account is an S&P 500 tracker and I own Nvidia shares directly."
    assert await learned("holdings", said) == ["NVDA"]


async def test_a_request_after_so_following_someone_elses_part_is_the_users() -> None:
    said = (
        "My sister works at Tesla, so to keep things clean please leave Tesla out of whatever "
        "you suggest."
    )
    assert await learned("excluded_tickers", said) == ["TSLA"]
    assert await learned("employer", said) is None


async def test_a_pronoun_for_the_company_of_a_fragment_before_it_is_excluded() -> None:
    said = "Meta? Nope, they sold my data, leave them out of whatever you suggest."
    assert await learned("excluded_tickers", said) == ["META"]


async def test_a_plan_named_as_a_noun_is_no_purchase_to_come() -> None:
    said = "Via the company savings plan I've ended up owning a lot of Apple shares."
    assert await learned("holdings", said) == ["AAPL"]


async def test_a_loss_limit_said_as_two_amounts_of_money_is_a_percentage() -> None:
    said = "I put 40 grand in and I couldn't stand seeing it fall under 30 grand, that's my limit."
    assert await learned("max_drawdown_pct", said) == 25


async def test_an_amount_with_a_thousands_comma_stays_one_number() -> None:
    # The hedge filter splits clauses at commas; "50,000" is one number, not two clauses.
    said = "Out of my 50,000 portfolio, losing 10,000 is my absolute limit."
    assert await learned("max_drawdown_pct", said) == 20


async def test_an_employer_said_in_passing_is_the_users() -> None:
    # A role opening the message with its subject left out, and what a badge reads.
    said = "Staff accountant at Pinewood Logistics, mostly month-end close work."
    assert await learned("employer", said) == "Pinewood Logistics"
    assert await learned("employer", "My work badge reads Nvidia, for what it's worth.") == "Nvidia"


async def test_a_currency_named_as_the_one_of_the_city_lived_in_is_the_base() -> None:
    assert (
        await learned("base_currency", "I live in Oslo, so everything is in crowns for me.")
        == "NOK"
    )
    said = "My cousin lives in Oslo and keeps everything in crowns."
    assert await learned("base_currency", said) is None


async def test_change_one_with_another_swaps_a_list_item() -> None:
    turns = ("I follow Amazon and Apple.", "could you change Apple with Microsoft on that list")
    assert await learned("watchlist", *turns) == ["AMZN", "MSFT"]


async def test_a_ticker_let_back_in_leaves_the_exclusion_list() -> None:
    turns = (
        "Meta gives me the creeps, keep it away from my portfolio.",
        "Eh, I'm fine with Meta these days.",
    )
    assert not await learned("excluded_tickers", *turns)


async def pending_exclusions(user: str, *turns: str) -> dict[str, str]:
    """Each ticker an exclusion candidate names after ``turns``, with the candidate's status."""
    async with app_at(datetime(2026, 12, 7, 9, tzinfo=UTC), user) as app:
        await chat(app, "t0", *turns)
        return {
            c["payload"]["rule"]["exclude_ticker"]: c["status"]
            for c in await app.memory.review(status=None)
            if (c["payload"].get("rule") or {}).get("exclude_ticker")
        }


async def test_an_exclusion_let_back_in_the_same_session_is_not_proposed() -> None:
    turns = ("Exclude Apple and Amazon from my reports.", "Apple can come back, I was being petty.")
    assert await pending_exclusions("generalised-let-back-session", *turns) == {"AMZN": "pending"}


async def test_a_pending_exclusion_taken_back_is_not_asked_about() -> None:
    turns = ("Never suggest Nvidia or Apple to me.", "Nvidia you can recommend again.")
    status = await pending_exclusions("generalised-let-back", *turns)
    assert status == {"NVDA": "rejected", "AAPL": "pending"}


async def test_no_names_in_what_the_analyst_writes_excludes_them() -> None:
    said = "Going by ethics here: no Amazon and no Nvidia in the summaries, and no Apple either."
    assert sorted(await learned("excluded_tickers", said)) == ["AAPL", "AMZN", "NVDA"]
    # what is not held is no exclusion
    assert not await learned("excluded_tickers", "There is no Microsoft in my portfolio yet.")


async def test_the_purpose_said_of_the_money_gives_the_goal_and_its_horizon() -> None:
    said = "These savings are for my nephew's tuition, roughly eight years from now."
    assert await learned("goal", said) == "education"
    assert await learned("horizon_years", said) == 8


async def test_years_until_the_pension_give_the_horizon() -> None:
    assert await learned("horizon_years", "I've got twenty-two years until my pension.") == 22


async def test_a_rounded_time_is_no_hedge_but_a_doubted_plan_is() -> None:
    said = "We are putting money aside to buy an apartment in perhaps six years."
    assert await learned("horizon_years", said) == 6
    assert await learned("horizon_years", "Perhaps we buy an apartment in six years.") is None


async def test_buying_into_a_fall_told_with_its_date_is_aggressive() -> None:
    said = "When the index tanked in the autumn of 2018 we piled in with everything spare."
    assert await learned("risk_tolerance", said) == "aggressive"


async def test_a_loss_said_to_be_okay_for_me_is_the_limit() -> None:
    said = "Watching a fifth of my portfolio evaporate would be okay for me, but that is it."
    assert await learned("max_drawdown_pct", said) == 20


async def test_a_holding_said_in_passing_by_a_possessive() -> None:
    assert await learned("holdings", "My Nvidia stock has been on a tear since spring.") == ["NVDA"]
    assert await learned("holdings", "My dad's Apple stock is up again.") is None
    assert await learned("holdings", "My Amazon shares are gone, sold them in June.") is None


async def test_names_in_my_account_are_holdings() -> None:
    said = "I have Alphabet and Tesla in my brokerage account."
    assert await learned("holdings", said) == ["GOOGL", "TSLA"]


async def test_a_repair_that_sets_one_name_aside_swaps_that_item() -> None:
    said = "My portfolio has Alphabet and Tesla. Sorry, not Tesla, it's Meta."
    assert await learned("holdings", said) == ["GOOGL", "META"]
    turns = ("I follow Nvidia and Amazon.", "oops, not Amazon, I meant Microsoft")
    assert await learned("watchlist", *turns) == ["NVDA", "MSFT"]


async def test_an_adverb_between_i_and_the_verb_still_states_a_holding() -> None:
    said = "My partner keeps Tesla and Meta in his pension; I personally just hold Apple."
    assert await learned("holdings", said) == ["AAPL"]
