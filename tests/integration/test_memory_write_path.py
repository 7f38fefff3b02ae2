"""The write path, replayed: a fixed four-session conversation goes into the
real graph, and after each session the journal, the ledger and the cold store are inspected.

Real parts throughout: the compiled graph, SQLite checkpoints, Qdrant Edge with MiniLM, and
the ledger and journal on each backend: the embedded SQLite file, and a fresh Postgres
database used through a non-superuser application role (``ANALYST_FACTS``). Each session is
a conversation as the chat holds it (one thread, ``keep_session=True``) ended the way /new
ends it; the clock is the services' clock, a week apart per session.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.app import AnalystApp
from memory.facts import subject_for
from memory.recall import alist_memories
from tests.support.servers import PgLedger
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

DAY = {n: datetime(2026, 9, 1 + 7 * (n - 1), 10, tzinfo=UTC) for n in (1, 2, 3, 4)}


@pytest.fixture(autouse=True)
def on_each_backend(backend: PgLedger | None) -> None:
    """Every test here runs with the ledger and the journal on each backend (``backend``:
    the embedded SQLite file, then Postgres through its application role)."""


def session(
    n: int, user: str = "mira", tenant: str = "default"
) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(DAY[n], user, tenant)


async def say(app: AnalystApp, thread: str, text: str) -> Any:
    return await app.start(text, thread_id=thread, keep_session=True)


async def decide(app: AnalystApp, thread: str, view: Any, **decision: Any) -> Any:
    payload = {"approver": app.principal.user_id, "draft_hash": view.draft_hash, **decision}
    return await app.decide(thread, payload, keep_session=True)


async def layers(app: AnalystApp) -> dict[str, Any]:
    """Everything the write path keeps for the app's principal, read back from storage."""
    learner = await app.memory.learner()
    horizon = await learner.facts.history(subject_for(app.principal), "horizon_years")
    events = [
        m
        for m in await alist_memories(await app.tiers.store(), app.principal)
        if m.kind in ("decision", "rejection", "milestone")
    ]
    return {
        "episodes": await learner.journal.list_episodes(),
        "summaries": await learner.journal.summaries(limit=50),
        "candidates": await learner.journal.candidates(limit=500),
        "procedures": await learner.journal.procedures(status=None),
        "jobs": await learner.journal.jobs(limit=500),
        "horizon": horizon,
        "profile": await learner.profile(),
        "events": events,
    }


async def test_four_sessions_replayed_into_the_writer() -> None:
    # -- session 1: a stated horizon, a report approved ------------------------------------
    async with session(1) as app:
        noted = await say(app, "s1", "My investment horizon is 10 years.")
        assert noted.status == "noted"
        assert [f["value"] for f in noted.learned] == [10]
        draft = await say(app, "s1", "Analyze NVDA")
        assert draft.status == "awaiting_approval"
        published = await decide(app, "s1", draft, action="approve")
        assert published.status == "published"
        assert [j["kind"] for j in published.memory_jobs] == ["decision"]
        await app.memory.end_session("s1")
        one = await layers(app)
    episodes = one["episodes"]
    assert [(e.kind, e.thread_id) for e in episodes] == [
        ("message", "s1"),
        ("message", "s1"),
        ("approve", "s1"),
    ]
    assert [(r.value, r.source, r.source_episode_id) for r in one["horizon"]] == [
        (10, "stated", episodes[0].episode_id)
    ]
    (decision,) = one["events"]
    assert decision.kind == "decision" and decision.metadata["tickers"] == ["NVDA"]
    assert episodes[2].episode_id in decision.metadata["episode_ids"]
    (summary,) = one["summaries"]
    assert summary.thread_id == "s1"
    assert list(summary.episode_ids) == [e.episode_id for e in episodes]
    assert [c for c in one["candidates"] if c.status == "pending"] == []
    assert one["procedures"] == []
    assert {j.status for j in one["jobs"]} == {"done"}

    # -- session 2: a correction, a casual remark, a standing instruction ------------------
    async with session(2) as app:
        corrected = await say(app, "s2", "Actually my horizon is 2 years, not 10.")
        assert corrected.status == "noted" and [f["value"] for f in corrected.learned] == [2]
        remark = await say(app, "s2", "Maybe I'll try options some day.")
        assert remark.status == "noted" and remark.learned == []
        rule = await say(app, "s2", "Never analyse TSLA from now on.")
        # The answer is complete; at this pause the agent asks whether to keep the rule.
        assert rule.status == "awaiting_confirmation"
        (asked,) = rule.confirmation["candidates"]
        assert asked["kind"] == "procedure" and asked["quote"] == rule.query
        later = await app.answer_confirmation("s2", {})  # "later": it stays a candidate
        assert later.status == "noted"
        await app.memory.end_session("s2")
        two = await layers(app)
    s2 = [e for e in two["episodes"] if e.thread_id == "s2"]
    assert [e.text for e in s2] == [
        "Actually my horizon is 2 years, not 10.",
        "Maybe I'll try options some day.",
        "Never analyse TSLA from now on.",
    ]
    old, new = two["horizon"]
    assert old.value == 10 and old.valid_to == s2[0].at
    assert (new.value, new.valid_to, new.source_episode_id) == (2, None, s2[0].episode_id)
    assert new.supersedes_memory_id == old.memory_id
    assert two["profile"]["horizon_years"]["value"] == 2
    # The casual remark became nothing: no fact, no candidate, no event quotes it.
    remark_id = s2[1].episode_id
    assert all(remark_id not in c.episode_ids for c in two["candidates"])
    assert all("options" not in str(r.value) for r in two["horizon"])
    (pending,) = [c for c in two["candidates"] if c.status == "pending"]
    assert pending.kind == "procedure"
    assert pending.payload["rule"] == {"exclude_ticker": "TSLA"}
    assert pending.episode_ids == (s2[2].episode_id,)
    assert two["procedures"] == []  # stated, not confirmed: no procedure yet
    assert len(two["summaries"]) == 2

    # -- session 3: the unconfirmed instruction changes nothing; a rejection with feedback --
    async with session(3) as app:
        tsla = await say(app, "s3", "Analyze TSLA")
        assert tsla.status == "awaiting_approval" and tsla.procedures == []
        feedback = "Too little on valuation; compare it with its peers."
        revised = await decide(app, "s3", tsla, action="reject", feedback=feedback)
        assert revised.status == "awaiting_approval" and revised.revision == 1
        await app.memory.end_session("s3")
        three = await layers(app)
        # Between sessions the user reviews the candidate and confirms it.
        confirmed = await app.memory.confirm(pending.candidate_id)
    (rejection,) = [e for e in three["events"] if e.kind == "rejection"]
    assert "valuation" in rejection.text and rejection.metadata["tickers"] == ["TSLA"]
    procedure = confirmed["procedure"]
    assert procedure["rule"] == {"exclude_ticker": "TSLA"}
    assert procedure["episode_ids"] == [s2[2].episode_id]

    # -- session 4: everything learned is used, and cited --------------------------------------
    async with session(4) as app:
        view = await say(app, "s4", "Analyze NVDA")
        declined = await say(app, "s4-tsla", "Analyze TSLA")
    assert view.status == "awaiting_approval"
    loaded = view.context_loaded
    assert loaded["profile"]["horizon_years"]["value"] == 2
    assert [p["procedure_id"] for p in loaded["procedures"]] == [procedure["procedure_id"]]
    assert {s["session_id"].split("/")[0] for s in loaded["sessions"]} == {"s1", "s2", "s3"}
    # The plan and the report use the corrected horizon, the procedure and the decision.
    cited = view.to_json()
    assert cited["facts_used"]["horizon_years"]["episode_ids"] == [s2[0].episode_id]
    assert cited["procedures"][0]["episode_ids"] == [s2[2].episode_id]
    earlier = [m for m in cited["recalled"] if m["kind"] == "decision"]
    assert earlier and episodes[2].episode_id in earlier[0]["episode_ids"]
    assert "horizon_years=2" in view.plan_rationale
    assert procedure["procedure_id"] in view.plan_rationale
    markdown = view.draft_markdown or ""
    assert "## Memory context" in markdown
    assert "Your horizon years: 2" in markdown
    assert "Never analyse TSLA" in markdown
    assert "Earlier decision" in markdown
    # The confirmed procedure is enforced in code in a new thread.
    assert declined.status == "declined"
    assert procedure["procedure_id"] in declined.reply


async def test_another_user_or_tenant_sees_none_of_it() -> None:
    async with session(1) as app:
        await say(app, "m1", "My investment horizon is 10 years.")
        draft = await say(app, "m1", "Analyze NVDA")
        await decide(app, "m1", draft, action="approve")
        await app.memory.end_session("m1")
    for user, tenant in (("other", "default"), ("mira", "acme")):
        async with session(2, user, tenant) as app:
            seen = await layers(app)
            view = await say(app, f"x-{user}-{tenant}", "Analyze NVDA")
        assert all(not v for v in seen.values()), seen
        assert view.context_loaded.get("profile", {}) == {}
        assert view.facts_used == {} and view.procedures == []
        assert all(m["kind"] not in ("decision", "rejection") for m in view.recalled)
