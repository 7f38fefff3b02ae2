"""One ranking of cold memory: every path that searches it with a query returns one order.

The same question asked through the planner's recall (:func:`memory.recall.arecall`, as the
planner node and the answers from memory call it), ``analyst memory search`` (a real
process), LangMem's search tool (on the principal's scoped view, as docs/langmem.md wires
it), the LangGraph server's store as Studio searches it (``graphs/studio_store.py``: the whole
namespace, no principal's view: :class:`memory.store.ranked.RankedStore`) and a forget by topic's search
(:func:`agent.app.forgetting.by_meaning`) comes back in the ranking's order
(:mod:`memory.ranking`) on the default store (Qdrant Edge, MiniLM). The memories are chosen
so that the store's own similarity order differs from the ranking's (a time window and the
importance decide), so a path that skipped the ranking would show.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langmem import create_search_memory_tool

from agent.app.forgetting import by_meaning
from agent.nodes.services import Services
from agent.settings import Settings
from memory.identity import Principal
from memory.recall import arecall, aremember
from memory.store.factory import open_store_from_settings
from memory.store.ranked import RankedStore
from memory.store.scoped import memories_namespace, scoped

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUESTION = "What did I do with my Tesla shares in March 2026?"
#: (key, text, when it happened, importance)
MEMORIES = [
    ("tsla-doubt", "I think Tesla shares are overpriced", datetime(2025, 11, 2, tzinfo=UTC), 5),
    ("tsla-sold", "I sold half of my Tesla shares", datetime(2026, 3, 10, tzinfo=UTC), 5),
    ("tsla-bought", "I bought more Tesla stock", datetime(2026, 3, 24, tzinfo=UTC), 9),
    ("tsla-cars", "Tesla deliveries disappointed me", datetime(2026, 1, 15, tzinfo=UTC), 3),
    ("tsla-plan", "My plan for my Tesla shares is to hold", datetime(2025, 6, 1, tzinfo=UTC), 2),
    ("violin", "My daughter plays the violin", datetime(2026, 3, 12, tzinfo=UTC), 3),
]


def run(env: dict[str, str], body: Any) -> Any:
    """``body(store, principal)`` on the test's store, opened as the application opens it."""

    async def go() -> Any:
        settings = Settings.from_env(env)
        async with open_store_from_settings(settings) as store:
            return await body(store, Principal(settings.tenant_id, "tester"))

    return asyncio.run(go())


async def seed(store: BaseStore, who: Principal) -> None:
    for key, text, at, importance in MEMORIES:
        await aremember(store, who, text, key=key, at=at, importance=importance, kind="note")


async def in_process_paths(store: BaseStore, who: Principal) -> dict[str, list[str]]:
    """The keys each in-process path returns for :data:`QUESTION`, and the store's own order."""
    limit = len(MEMORIES)
    planner = await arecall(store, who, QUESTION, limit=Services.recall_limit)
    everything = await arecall(store, who, QUESTION, limit=limit)
    tool = create_search_memory_tool(("memories",), store=scoped(store, who))
    langmem = json.loads(await tool.ainvoke({"query": QUESTION, "limit": limit}))
    studio = await RankedStore(store).asearch(memories_namespace(who), query=QUESTION, limit=limit)
    forget = await by_meaning(store, who, QUESTION)
    similarity = await store.asearch(memories_namespace(who), query=QUESTION, limit=limit)
    return {
        "planner": [m.key for m in planner],
        "recall": [m.key for m in everything],
        "langmem": [m["key"] for m in langmem],
        "studio": [i.key for i in studio],
        "forget": [i.key for i in forget],
        "similarity": [i.key for i in similarity],
    }


def in_order(keys: Sequence[str], ranking: Sequence[str]) -> list[str]:
    """``ranking`` restricted to ``keys``: the order ``keys`` must come in."""
    wanted = set(keys)
    return [k for k in ranking if k in wanted]


def test_every_path_returns_the_rankings_order(analyst: Any) -> None:
    run(analyst.env, seed)
    cli = [m["key"] for m in analyst.json("memory", "search", QUESTION, "--limit", "6")["memories"]]
    paths = run(analyst.env, in_process_paths)

    ranking = paths["recall"]
    assert len(ranking) == len(MEMORIES)
    # The memories of March 2026 come first: the question's window decides, not similarity.
    assert set(ranking[:3]) == {"tsla-sold", "tsla-bought", "violin"}, ranking
    # Without the ranking the order would differ: the test can tell a path that skips it.
    assert paths["similarity"] != ranking, paths
    assert cli == ranking
    assert paths["langmem"] == ranking
    assert paths["studio"] == ranking
    assert paths["planner"] == ranking[: Services.recall_limit]
    assert paths["forget"], "a forget by topic found nothing by meaning"
    assert paths["forget"] == in_order(paths["forget"], ranking)
