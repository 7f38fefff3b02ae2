"""What the write path keeps from a clause no phrasing rule was written for, read by meaning
(:mod:`agent.learning.meaning`): a reaction to losses in new words is a risk tolerance, a
dislike or a conflict excludes a ticker, a job in other words is an employer, a duration said
of the money is a horizon, a position is a holding. The same meanings said of someone else,
asked, supposed, hedged, denied or said of the market leave the profile empty; a third
party's view stays a pending candidate, never a fact.

The sentences are written for this test and are in no corpus split. Real graph and stores
(embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.app import AnalystApp
from tests.support.sessions import app_at, chat, current

pytestmark = pytest.mark.integration

ATTRIBUTES = ("risk_tolerance", "excluded_tickers", "employer", "horizon_years", "holdings")


def session(user: str) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 12, 6, 9, tzinfo=UTC), user)


async def profile_of(app: AnalystApp) -> dict[str, Any]:
    values = {a: await current(app, a) for a in ATTRIBUTES}
    return {a: v for a, v in values.items() if v is not None}


def _user(turns: tuple[str, ...]) -> str:
    return "meaning-" + hashlib.sha256("|".join(turns).encode()).hexdigest()[:12]


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (
            ("Red days in the market ruin my whole week, I can't look at the app.",),
            {"risk_tolerance": "conservative"},
        ),
        (
            ("Give me volatility any day, downturns just mean cheaper shares for me.",),
            {"risk_tolerance": "aggressive"},
        ),
        (
            ("Meta's handling of user data disgusts me, keep it out of my ideas.",),
            {"excluded_tickers": ["META"]},
        ),
        (("I write code for Google these days.",), {"employer": "Google"}),
        (("My day job is in logistics over at Amazon.",), {"employer": "Amazon"}),
        (("The money stays put for 12 years, then I'll draw on it.",), {"horizon_years": 12}),
        (("I'm not going to need this cash for another 20 years.",), {"horizon_years": 20}),
        (("My positions right now are Microsoft and Nvidia.",), {"holdings": ["MSFT", "NVDA"]}),
    ],
)
async def test_a_clause_is_read_by_what_it_means_through_the_chat(
    turns: tuple[str, ...], expected: dict[str, Any]
) -> None:
    async with session(_user(turns)) as app:
        await chat(app, _user(turns), *turns)
        assert await profile_of(app) == expected


@pytest.mark.parametrize(
    "turns",
    [
        ("My brother hates Tesla and refuses to buy it.",),
        ("My wife works at Google as a designer.",),
        ("I don't own any Microsoft shares.",),
        ("Would Nvidia be too risky for someone like me?",),
        ("I might avoid Amazon, not sure yet.",),
        ("If the market crashed 40% I wonder how I'd react.",),
        ("Volatility in chip stocks has been crazy this month.",),
    ],
)
async def test_the_same_meanings_of_someone_else_or_not_stated_leave_the_profile_empty(
    turns: tuple[str, ...],
) -> None:
    async with session(_user(turns)) as app:
        await chat(app, _user(turns), *turns)
        assert await profile_of(app) == {}


async def test_a_third_partys_view_by_meaning_is_a_candidate_never_a_fact() -> None:
    turns = ("My accountant reckons I'd freak out if stocks fell a lot.",)
    async with session(_user(turns)) as app:
        await chat(app, _user(turns), *turns)
        assert await profile_of(app) == {}
        pending = [c for c in await app.memory.review() if c["kind"] == "fact"]
    assert [c["payload"] for c in pending] == [
        {"attribute": "risk_tolerance", "value": "conservative", "source": "accountant"}
    ]
