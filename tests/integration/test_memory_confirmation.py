"""Confirmation, not silence: a behaviour repeated across sessions becomes a question, never a
procedure, and nothing unconfirmed changes a plan.

Real graph and stores (embedded defaults); each session is a chat-like conversation ended as
/new ends it.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime

import pytest

from agent.app import AnalystApp
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration


def session(day: int, user: str = "ines") -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 10, day, 9, tzinfo=UTC), user)


async def test_repeated_behaviour_asks_and_changes_no_plan_until_confirmed() -> None:
    for day, thread in ((1, "b1"), (8, "b2")):
        async with session(day) as app:
            said = await app.start(
                "I prefer tables over charts.", thread_id=thread, keep_session=True
            )
            assert said.status == "noted"  # a plain preference is not asked about mid-session
            await app.memory.end_session(thread)
            pending = await app.memory.review()
    kinds = sorted(c["kind"] for c in pending)
    assert kinds == ["behaviour", "preference", "preference"]
    (behaviour,) = [c for c in pending if c["kind"] == "behaviour"]
    assert "repeated in 2 sessions" in behaviour["reason"]

    async with session(15) as app:
        assert await app.memory.procedures(status=None) == []  # a question, not a procedure
        mine = await app.start("Analyze NVDA", thread_id="b3")
        # At the next natural pause the agent asks about the repeated behaviour.
        noted = await app.start("My base currency is EUR.", thread_id="b4", keep_session=True)
        assert noted.status == "awaiting_confirmation"
        asked = [c["candidate_id"] for c in noted.confirmation["candidates"]]
        assert asked == [behaviour["candidate_id"]]
        later = await app.answer_confirmation("b4", {"reject": [behaviour["candidate_id"]]})
        assert later.status == "noted"
        assert await app.memory.procedures(status=None) == []
    async with session(15, user="someone-else") as app:
        theirs = await app.start("Analyze NVDA", thread_id="b5")
    # The unconfirmed candidates changed nothing: the same plan as a user with no memory.
    assert mine.procedures == [] and mine.plan == theirs.plan
    assert "Procedures in force" not in mine.plan_rationale
