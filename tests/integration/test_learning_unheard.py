"""Families of phrasing the rules had not heard, through the chat path with a real ledger: a
bare number given as what it is ("25 is my real limit") after a reflection that is no hedge
("thinking about it"); purchases and exits told with "I also picked up" and "got out of";
an excluded sector as the subject of a refusal ("coal and oil go against my values", "casinos
are off the table for me"); and the negatives beside them (a view of a sector with no self in
it, a reflection that is a plan).

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.sessions import app_at, chat, learned_after

pytestmark = pytest.mark.integration


async def learned(attribute: str, *turns: str) -> Any:
    """``attribute`` after ``turns`` are said in one chat session."""
    return await learned_after("unheard", attribute, turns)


async def test_a_bare_number_given_as_the_real_limit_after_a_reflection_revises() -> None:
    value = await learned(
        "max_drawdown_pct",
        "I can take a 35% drop.",
        "hmm, thinking about that, 25 is my true limit",
    )
    assert value == 25


async def test_a_reflection_about_a_plan_is_still_a_hedge() -> None:
    assert await learned("max_drawdown_pct", "I'm thinking about it, maybe 20% at most") is None


async def test_a_purchase_told_with_also_and_an_exit_told_with_got_out_of_edit_holdings() -> None:
    turns = (
        "I own Apple and Meta.",
        "I also picked up some Tesla today",
        "got out of Meta completely",
    )
    assert sorted(await learned("holdings", *turns)) == ["AAPL", "TSLA"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Coal and oil go against my values.", ["fossil_fuels"]),
        ("Casinos are off the table for me.", ["gambling"]),
        ("Bitcoin is a scam in my opinion, leave it out.", ["crypto"]),
        ("Crypto is a scam, the market says otherwise though.", None),
    ],
)
async def test_a_sector_refused_as_the_subject_of_its_clause_is_excluded(
    text: str, expected: list[str] | None
) -> None:
    assert await learned("excluded_sectors", text) == expected


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (("I'd get out if my savings halved.",), 50),
        (("The most I'd let the portfolio shrink is a quarter.",), 25),
        (("Honestly, a 35% drawdown would just be a buying opportunity for me.",), None),
        (("My portfolio halved in 2008 and I held on.",), None),
        (("A third down? No way. I'd jump ship well before that, say at 30%.",), 30),
        (("I'd cash out at 30% profit.",), None),
        (("My planner says I should keep my losses under 15%.", "Yeah, that's my number too."), 15),
    ],
)
async def test_a_loss_limit_said_by_the_falls_verb_or_adopted_as_my_number_too(
    turns: tuple[str, ...], expected: int | None
) -> None:
    assert await learned("max_drawdown_pct", *turns) == expected


async def test_a_company_in_a_relative_clause_about_another_is_no_employer() -> None:
    said = "I work in audit at a firm that reviews Nvidia, so I can't own it."
    assert await learned("employer", said) is None
    assert await learned("excluded_tickers", said) == ["NVDA"]


@pytest.mark.parametrize(
    ("text", "attribute", "expected"),
    [
        ("Put the account under Siobhán McKay, that's me.", "full_name", "Siobhán McKay"),
        (
            "this is Declan O'Brien writing from 9 Marine View, Dalkey",
            "full_name",
            "Declan O'Brien",
        ),
        (
            "this is Declan O'Brien writing from 9 Marine View, Dalkey",
            "address",
            "9 Marine View, Dalkey",
        ),
        (
            "Letters can go to my new flat at 4 Rue Oberkampf, 75011 Paris.",
            "address",
            "4 Rue Oberkampf, 75011 Paris",
        ),
        ("We visited 12 Main St. Dublin last year, lovely.", "address", None),
    ],
)
async def test_a_name_or_address_given_in_passing_is_read_whole(
    text: str, attribute: str, expected: str | None
) -> None:
    assert await learned(attribute, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Market swings give me heartburn.", "conservative"),
        ("I've got an iron stomach for volatility.", "aggressive"),
        ("Some swings are fine by me, but I won't gamble.", "moderate"),
        ("Middle of the road for me, nothing fancy.", "moderate"),
        ("I'm in the middle of a move, so reply later.", None),
    ],
)
async def test_risk_told_as_a_bodily_reaction_a_place_between_or_two_leanings_that_meet(
    text: str, expected: str | None
) -> None:
    assert await learned("risk_tolerance", text) == expected


async def test_sectors_added_to_the_list_just_named_join_it() -> None:
    turns = ("I'm interested in energy and utilities.", "Add telecom to that too.")
    assert sorted(await learned("sectors_of_interest", *turns)) == [
        "energy",
        "telecom",
        "utilities",
    ]
    assert await learned("sectors_of_interest", "Add more detail on energy please.") is None


async def test_a_ticker_never_to_be_brought_up_after_a_dislike_is_a_standing_exclusion() -> None:
    user = "bring-up"
    async with app_at(datetime(2026, 11, 20, 9, tzinfo=UTC), user) as app:
        await chat(app, "t1", "I can't stand Zuck, please never bring up Meta.")
        await chat(app, "t2", "My wife says never bring up Amazon.")
        rules = [
            c["payload"].get("rule")
            for c in await app.memory.review(status=None)
            if c["kind"] in ("preference", "procedure")
        ]
    assert {"exclude_ticker": "META"} in rules
    assert {"exclude_ticker": "AMZN"} not in rules
