"""What the write path keeps from ordinary chat: corrections across turns end with the corrected
value, a corrected list drops what the correction names, someone else's claim stays a
candidate, a rejection's recurring feedback becomes a question, and a session's summary says
what it was about, decided, learned and left open.

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime

import pytest

from agent.app import AnalystApp
from tests.support.sessions import app_at, chat, current

pytestmark = pytest.mark.integration


def session(day: int, user: str = "rhea") -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 11, day, 9, tzinfo=UTC), user)


async def test_a_correction_in_the_next_turn_ends_with_the_corrected_value() -> None:
    async with session(1) as app:
        await chat(app, "c1", "my time frame is 7 years", "oops, 17. fat fingers")
        assert await current(app, "horizon_years") == 17
        await chat(app, "c2", "I own shares of AMZN", "sorry, not AMZN, I meant AAPL")
        assert await current(app, "holdings") == ["AAPL"]
        learner = await app.memory.learner()
        (summary, *_) = [s for s in await learner.journal.summaries() if s.thread_id == "c1"]
    assert "Learned: horizon years 17" in summary.summary
    assert summary.facts_learned


async def test_someone_elses_claim_is_a_candidate_never_a_fact() -> None:
    async with session(2) as app:
        await chat(app, "t1", "My broker reckons my horizon is about 4 years")
        assert await current(app, "horizon_years") is None
        pending = await app.memory.review()
    (candidate,) = [c for c in pending if c["kind"] == "fact"]
    assert candidate["payload"] == {"attribute": "horizon_years", "value": 4, "source": "broker"}
    assert "your broker" in candidate["reason"]


async def test_recurring_rejection_feedback_becomes_a_behaviour_to_confirm() -> None:
    feedback = "Less jargon, more plain numbers."
    for day, thread in ((3, "r1"), (10, "r2")):
        async with session(day) as app:
            learner = await app.memory.learner()
            await learner.record(thread, "reject", feedback, turn="1", meta={"ticker": "NVDA"})
            await learner.end_session(thread)
            await learner.drain()
            pending = await app.memory.review()
    kinds = sorted(c["kind"] for c in pending)
    assert kinds == ["behaviour", "preference", "preference"]
    async with session(11) as app:
        learner = await app.memory.learner()
        summaries = await learner.journal.summaries()
    assert any("Decided: Rejected the NVDA draft" in s.summary for s in summaries)
