"""Someone else's claim about the user stays a claim unless the user plainly makes it theirs,
through the chat path with a real ledger: an adoption that is doubted, asked or made on a
condition ("I haven't decided if I agree", "do I agree?", "I'd agree if ...") adopts nothing;
a claim attributed after it ("..., my husband says"), by hearsay ("I've been told ...") or as
an instrument's verdict ("the result of my risk quiz was ...") is theirs too.

Real graph and stores (embedded defaults), one application per session at an injected time.
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


def session(user: str) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 11, 20, 9, tzinfo=UTC), user)


async def pending_claims(app: AnalystApp) -> set[tuple[str, Any]]:
    return {
        (c["payload"]["attribute"], c["payload"]["value"])
        for c in await app.memory.review(status=None)
        if c["kind"] == "fact" and c["status"] == "pending"
    }


@pytest.mark.parametrize(
    "turns",
    [
        ("The questionnaire said my tolerance is moderate. I haven't decided if I agree.",),
        ("My planner says my tolerance is moderate.", "Do I agree? Not sure yet."),
        ("My planner says my tolerance is moderate.", "I'd agree if we were talking about bonds"),
        ("My planner says my tolerance is moderate.", "whether she's right, I don't know"),
    ],
)
async def test_an_adoption_doubted_asked_or_made_on_a_condition_adopts_nothing(
    turns: tuple[str, ...],
) -> None:
    async with session("doubt-" + hashlib.sha256("|".join(turns).encode()).hexdigest()[:10]) as app:
        await chat(app, "t1", *turns)
        assert await current(app, "risk_tolerance") is None
        assert ("risk_tolerance", "moderate") in await pending_claims(app)


@pytest.mark.parametrize(
    ("text", "attribute", "value", "source"),
    [
        (
            "I'm a conservative investor, my husband says.",
            "risk_tolerance",
            "conservative",
            "husband",
        ),
        ("My horizon is 15 years, or so my planner says.", "horizon_years", 15, "planner"),
        ("I can handle a 30% drop, my advisor reckons.", "max_drawdown_pct", 30, "advisor"),
        ("Growth over dividends, says my dad.", "income_preference", "growth", "dad"),
        (
            "I'm moderate - at least that's what the app thinks.",
            "risk_tolerance",
            "moderate",
            "app",
        ),
        ("I've been told I can stomach a 40% drop.", "max_drawdown_pct", 40, "someone else"),
        ("Apparently I'm a growth investor.", "income_preference", "growth", "someone else"),
        ("Vanguard rated me conservative.", "risk_tolerance", "conservative", "vanguard"),
        ("The result of my risk quiz was aggressive.", "risk_tolerance", "aggressive", "quiz"),
        (
            "Everyone in my family says I'm too cautious.",
            "risk_tolerance",
            "conservative",
            "everyone",
        ),
        (
            "My mum, who's an accountant, says I'm too aggressive.",
            "risk_tolerance",
            "aggressive",
            "mum",
        ),
        (
            "Judging by the questionnaire, I'm conservative.",
            "risk_tolerance",
            "conservative",
            "questionnaire",
        ),
        ("My adviser pencilled in 25 years as my horizon.", "horizon_years", 25, "adviser"),
        ("My sister, she thinks I'm aggressive.", "risk_tolerance", "aggressive", "sister"),
        (
            "Ask my husband and he'll tell you I'm cautious.",
            "risk_tolerance",
            "conservative",
            "husband",
        ),
    ],
)
async def test_a_claim_attributed_after_it_by_hearsay_or_as_a_verdict_is_theirs(
    text: str, attribute: str, value: Any, source: str
) -> None:
    async with session("said-" + hashlib.sha256(text.encode()).hexdigest()[:10]) as app:
        await chat(app, "t1", text)
        assert await current(app, attribute) is None
        claims = {
            (c["payload"]["attribute"], c["payload"]["value"], c["payload"]["source"])
            for c in await app.memory.review(status=None)
            if c["kind"] == "fact" and c["status"] == "pending"
        }
        assert (attribute, value, source) in claims


@pytest.mark.parametrize(
    "text",
    ["My friend would bail if it fell 20%.", "My wife can't stomach more than a 10% drop."],
)
async def test_what_someone_else_would_do_or_cannot_bear_is_theirs_not_the_users(text: str) -> None:
    async with session("theirs-" + hashlib.sha256(text.encode()).hexdigest()[:10]) as app:
        await chat(app, "t1", text)
        assert await current(app, "max_drawdown_pct") is None


async def test_what_someone_else_would_tell_you_of_the_user_is_their_claim() -> None:
    async with session("tell-you") as app:
        await chat(app, "t1", "My wife'd tell you my horizon is 5 years.")
        assert await current(app, "horizon_years") is None
        assert ("horizon_years", 5) in await pending_claims(app)
