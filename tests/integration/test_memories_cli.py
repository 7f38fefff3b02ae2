"""``analyst memory add|search|list --memories|forget --key`` (and their old spelling
``analyst memories ...``): seed, list, search with score parts, forget — real processes, the
default store (Qdrant local in the test's data folder) and the real MiniLM embedder.

Memories are seeded in-process through the same settings (one model load instead of one per
``add`` process); the CLI then reads them from other processes, as a user's shell would.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from memory.embedding_cache import SqliteEmbeddingCache
from memory.identity import Principal
from memory.ranking import KNOBS
from memory.recall import MAX_BOOST, aremember
from memory.store.factory import open_store_from_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = [
    ("I prefer conservative positions", "risk tolerance", "preference", 8),
    ("I am interested in semiconductors and AI chips", "sectors of interest", "preference", 6),
    ("My daughter plays the violin", None, "note", 3),
]


def seed(env: dict[str, str], memories: dict[str, list[tuple[str, str | None, str, int]]]) -> None:
    async def go() -> None:
        settings = Settings.from_env(env)
        async with open_store_from_settings(settings) as store:
            for user, items in memories.items():
                for text, about, kind, importance in items:
                    await aremember(
                        store,
                        Principal(settings.tenant_id, user),
                        text,
                        about=about,
                        kind=kind,
                        importance=importance,
                    )

    asyncio.run(go())


def cached_embeddings(data_dir: Path) -> int:
    path = data_dir / "embeddings.sqlite"  # a read that needs no store creates no cache
    return SqliteEmbeddingCache(path).count() if path.exists() else 0


def test_search_shows_ranked_memories_with_their_score_parts(analyst: Any) -> None:
    seed(
        analyst.env,
        {
            "tester": SEED,
            "bob": [("I love aggressive, risky bets", "risk tolerance", "preference", 9)],
        },
    )

    found = analyst.json("memory", "search", "how much risk am I comfortable with")
    assert (found["user"], found["tenant"]) == ("tester", "default")
    assert found["weights"] == {"recency": 0.3, "importance": 0.2, "relevance": 0.5}
    memories = found["memories"]
    assert memories[0]["text"] == "I prefer conservative positions"
    assert len(memories) == 3  # all of tester's, none of bob's
    assert "I love aggressive, risky bets" not in {m["text"] for m in memories}
    for m in memories:
        parts = m["score"]
        assert set(parts) == {"recency", "importance", "relevance", "view", "total"}
        assert all(0.0 <= parts[k] <= 1.0 for k in parts)
        boost = (0.3 * parts["recency"] + 0.2 * parts["importance"]) / 0.5
        bounded = (1 - MAX_BOOST) * parts["relevance"] + MAX_BOOST * boost
        assert parts["total"] == pytest.approx(
            (1 - KNOBS.view_weight) * bounded + KNOBS.view_weight * parts["view"], abs=1e-5
        )
    totals = [m["score"]["total"] for m in memories]
    assert totals == sorted(totals, reverse=True)

    table = analyst("memory", "search", "which sectors do I like", "--limit", "2")
    assert table.code == 0, str(table)
    lines = table.out.splitlines()
    assert any("score" in line and "relevance" in line for line in lines)
    first_row = next(line for line in lines if line.startswith("1  mem-"))
    assert "semiconductors" in first_row
    assert "violin" not in table.out  # --limit 2

    relevance_only = analyst.json(
        "memory", "search", "which sectors do I like", "--weights", "0,0,1"
    )
    assert relevance_only["weights"] == {"recency": 0.0, "importance": 0.0, "relevance": 1.0}
    top = relevance_only["memories"][0]["score"]
    # Relevance alone: the memory's own and its best sentence view's (no recency, importance).
    w = KNOBS.view_weight
    assert top["total"] == pytest.approx((1 - w) * top["relevance"] + w * top["view"], abs=1e-5)

    # The same question again: its embedding comes from the cache, no model load.
    before = cached_embeddings(analyst.data_dir)
    bob = analyst.json("memory", "search", "how much risk am I comfortable with", "--user", "bob")
    assert cached_embeddings(analyst.data_dir) == before
    assert [m["text"] for m in bob["memories"]] == ["I love aggressive, risky bets"]


def test_add_list_forget(analyst: Any) -> None:
    added = analyst.json(
        "memory", "add", "Keep my reports short", "--importance", "9", "--about", "report format"
    )
    assert added["key"].startswith("mem-") and added["importance"] == 9
    again = analyst.json(
        "memory",
        "add",
        "  Keep my reports short ",
        "--importance",
        "9",
        "--about",
        "report format",
    )
    assert again["key"] == added["key"]  # the same memory, refreshed

    listed = analyst.json("memory", "list", "--memories")["memories"]
    assert [(m["key"], m["text"], m["about"]) for m in listed] == [
        (added["key"], "Keep my reports short", "report format")
    ]
    plain = analyst("memory", "list", "--memories")
    assert plain.code == 0 and added["key"] in plain.out and "report format" in plain.out
    assert analyst.json("memory", "list", "--memories", "--user", "someone-else")["memories"] == []

    assert analyst.json("memory", "forget", "--key", added["key"]) == {"forgotten": added["key"]}
    assert analyst.json("memory", "list", "--memories")["memories"] == []
    gone = analyst.fail("memory", "forget", "--key", added["key"])
    assert gone.code == 3 and "analyst memory list --memories" in gone.err


def test_the_old_memories_commands_still_work_and_say_their_new_spelling(analyst: Any) -> None:
    added = analyst(
        "memories", "add", "Keep my reports short", "--about", "report format", "--json"
    )
    assert added.code == 0, str(added)
    assert "`analyst memories add` is now `analyst memory add`" in added.err
    key = added.json()["key"]
    listed = analyst("memories", "list", "--json")
    assert "`analyst memories list` is now `analyst memory list --memories`" in listed.err
    # The same listing; recency (and so the total) is scored at the moment of each call.
    assert _timeless(listed.json()) == _timeless(analyst.json("memory", "list", "--memories"))
    found = analyst("memories", "search", "how long should reports be", "--json")
    assert "`analyst memories search` is now `analyst memory search`" in found.err
    assert [m["key"] for m in found.json()["memories"]] == [key]
    gone = analyst("memories", "forget", key, "--json")
    assert "`analyst memories forget` is now `analyst memory forget --key`" in gone.err
    assert gone.json() == {"forgotten": key}
    assert analyst.fail("memories", "forget", key).code == 3
    assert "memories" not in analyst("--help").out  # hidden; `memory` holds the commands


def test_nothing_to_recall_embeds_nothing(analyst: Any) -> None:
    empty = analyst("memory", "search", "how much risk am I comfortable with")
    assert empty.code == 0, str(empty)
    assert "No memories for tester" in empty.out
    # The query was not embedded (so no model was loaded): the cache holds nothing.
    assert cached_embeddings(analyst.data_dir) == 0


def test_bad_input_is_refused_clearly(analyst: Any) -> None:
    assert analyst.fail("memory", "add", "   ").code == 2
    bad_importance = analyst("memory", "add", "x", "--importance", "11")
    assert bad_importance.code == 2 and "--importance" in bad_importance.err
    assert analyst.fail("memory", "search", "q", "--weights", "1,2").code == 2
    assert analyst.fail("memory", "search", "q", "--limit", "0").code == 2
    elsewhere = dataclasses.replace(analyst, env={**analyst.env, "ANALYST_STORE": "redis://x"})
    unknown = elsewhere.fail("memory", "list", "--memories")
    assert "qdrant://local" in unknown.err


def _timeless(listing: dict[str, Any]) -> dict[str, Any]:
    """``listing`` without the score parts that depend on when it was read."""
    return {
        "memories": [
            {**m, "score": {k: v for k, v in m["score"].items() if k not in ("recency", "total")}}
            for m in listing["memories"]
        ]
    }
