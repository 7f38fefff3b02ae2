"""Someone else's claim about the user stays a claim unless the user plainly makes it theirs,
through the chat path with a real ledger: an adoption that is doubted, asked or made on a
condition ("I haven't decided if I agree", "do I agree?", "I'd agree if ...") adopts nothing;
an adoption said as "that's my limit too" or "same here" does.

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
    return app_at(datetime(2026, 12, 7, 9, tzinfo=UTC), user)


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
