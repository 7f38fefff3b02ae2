"""The planner reads the user's facts and long-term memories, scoped by the principal, and the
plan shows what it used. Real stores: Qdrant local mode with MiniLM, the SQLite fact ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.facts import MemoryDelta, subject_for
from memory.recall import aremember

pytestmark = pytest.mark.integration


async def seed(app: Any) -> str:
    """A stated fact and a remembered preference for the app's principal; returns the key."""
    await app.graph()
    who = app.principal
    key = await aremember(
        await app.tiers.store(),
        who,
        "I prefer conservative positions",
        importance=8,
        about="risk tolerance",
    )
    await app.services.facts.record(
        MemoryDelta(
            subject=subject_for(who),
            attribute="horizon",
            value="long-term",
            valid_from=datetime(2026, 1, 5, tzinfo=UTC),
            source_episode_id="chat-1",
        )
    )
    await app.services.facts.record(
        MemoryDelta(
            subject=subject_for(who),
            attribute="sector",
            value="semiconductors",
            valid_from=datetime(2026, 1, 6, tzinfo=UTC),
            source="inferred",  # inferred once: a candidate, never used
        )
    )
    return key


async def test_the_plan_cites_recalled_memories_and_current_facts(open_app: Any) -> None:
    async with open_app("alice") as app:
        key = await seed(app)
        view = await app.start("Analyze NVDA: how risky is it for me?", thread_id="A")
    assert view.status == "awaiting_approval"
    assert view.memories_used == [key]
    assert [m["key"] for m in view.recalled] == [key]
    parts = view.recalled[0]["score"]
    # The embedded store keeps sentence views: the best one is a part of the score too.
    assert set(parts) == {"recency", "importance", "relevance", "view", "total"}
    assert all(0.0 <= v <= 1.0 for v in parts.values())
    assert f"[{key}]" in view.plan_rationale
    # The memory changed the plan, visibly: a cautious user gets the risk step first.
    assert view.plan[0]["id"] == "risk:NVDA"
    assert "Risk first because memory" in view.plan_rationale
    assert set(view.facts_used) == {"horizon"}  # the inferred fact is not used
    assert view.facts_used["horizon"]["value"] == "long-term"
    assert "horizon='long-term'" in view.plan_rationale


async def test_another_user_recalls_nothing_of_it(open_app: Any) -> None:
    async with open_app("alice") as app:
        await seed(app)
    async with open_app("bob") as app:
        view = await app.start("Analyze NVDA: how risky is it for me?", thread_id="B")
    assert view.memories_used == [] and view.recalled == [] and view.facts_used == {}
    assert view.plan[0]["id"] == "returns:NVDA"


async def test_on_the_model_path_memory_reaches_the_planner_only_as_quoted_data(
    open_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.model_script import ScriptedAnalyst, fake_model, of_kind, system_prompt

    with fake_model(monkeypatch) as server:
        server.respond_with(ScriptedAnalyst())
        async with open_app("alice") as app:
            key = await seed(app)
            await app.start("Analyze NVDA", thread_id="M")
    [planner] = of_kind(server.chat_requests(), "PlanDecision")
    body = planner["messages"][-1]["content"]
    assert '<reference id="' in body and 'source="recalled memories"' in body
    assert key in body and "I prefer conservative positions" in body
    assert 'source="user\'s current facts"' in body and "long-term" in body
    assert "semiconductors" not in body  # inferred facts never reach a prompt
    assert "I prefer conservative positions" not in system_prompt(planner)
