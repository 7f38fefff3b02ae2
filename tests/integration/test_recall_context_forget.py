"""Context keys (memory.recall_context) on the real embedded store (Qdrant Edge): an
elliptical reply is found through the turn it answers, and forgetting either turn leaves no
key of it. The canary is a word only one turn holds; after the forget no memory is lifted by
it, recall by it finds nothing of it, and no byte of the store's folder holds it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.embeddings import HashingEmbedder
from memory.identity import Principal
from memory.recall import (
    NAMESPACE,
    NewMemory,
    aforget,
    alist_memories,
    arecall,
    aremember_many,
)
from memory.recall_context import REPLY_WEIGHT
from memory.store.edge import EdgeStore
from memory.store.factory import open_store
from memory.store.ranked import RankedStore
from memory.store.scoped import memories_namespace, scoped
from tests.support.raw_bytes import raw_hits

pytestmark = pytest.mark.integration

ME = Principal("acme", "mira")
CANARY = "Zorvendix"
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
NOW = datetime(2023, 6, 1, tzinfo=UTC)
QUESTION = f"What is the name of the {CANARY} puppy?"


def turns(asked: str, answered: str) -> list[NewMemory]:
    """A short transcript: a question, its elliptical reply, and two turns about other things
    (the last one a day later: another conversation, not linked)."""
    texts = [
        (asked, SAID),
        (answered, SAID),
        ("Mira: I'm painting a sunrise over the lake.", SAID),
        ("Theo: My kids love the dinosaur exhibit.", SAID + timedelta(days=1)),
    ]
    return [
        NewMemory(text, at=at, kind="dialogue", source="test", episode_ids=[f"D1:{n}"])
        for n, (text, at) in enumerate(texts, start=1)
    ]


def by_key(found: list, key: str):
    return next((m for m in found if m.key == key), None)


async def test_forgetting_the_asked_turn_leaves_the_reply_unlifted(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    async with open_store(
        "qdrant://local", embedder=HashingEmbedder(dims=64, seed=3), qdrant_path=folder
    ) as store:
        asked, reply, *_ = await aremember_many(
            store, ME, turns(f"Mira: What did you name the {CANARY} puppy?", "Theo: Luna!")
        )
        found = await arecall(store, ME, QUESTION, limit=4, now=NOW)
        # The reply says nothing the question names; it is found through the turn it answers.
        lifted = by_key(found, reply)
        assert lifted is not None
        assert lifted.parts.relevance == pytest.approx(
            REPLY_WEIGHT * by_key(found, asked).parts.relevance, abs=1e-6
        )

        await aforget(store, ME, asked)

        after = await arecall(store, ME, QUESTION, limit=10, now=NOW)
        assert after and all(CANARY not in m.text for m in after)
        own = by_key(after, reply)
        # Its own relevance only: the turn that lifted it is gone.
        assert own is None or own.parts.relevance < lifted.parts.relevance
        assert isinstance(store, EdgeStore)
        store.erase_deleted()
    assert raw_hits(tmp_path, CANARY) == []


async def test_forgetting_the_reply_leaves_a_key_that_names_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    async with open_store(
        "qdrant://local", embedder=HashingEmbedder(dims=64, seed=3), qdrant_path=folder
    ) as store:
        asked, reply, painting, other = await aremember_many(
            store, ME, turns("Mira: What did you name the puppy?", f"Theo: {CANARY}!")
        )
        assert len(await alist_memories(store, ME, now=NOW)) == 4
        assert by_key(await arecall(store, ME, "name the puppy", limit=4, now=NOW), reply)

        await aforget(store, ME, reply)

        after = await arecall(store, ME, "What did you name the puppy?", limit=10, now=NOW)
        assert sorted(m.key for m in after) == sorted([asked, painting, other])
        assert all(CANARY not in m.text for m in after)
        by_canary = await arecall(store, ME, CANARY, limit=10, now=NOW)
        assert all(CANARY not in m.text for m in by_canary)
        store.erase_deleted()
    assert raw_hits(tmp_path, CANARY) == []


async def test_every_query_search_lifts_the_reply_as_recall_does(tmp_path: Path) -> None:
    """Context keys are part of the one ranking: the principal's view (memory search, the
    answers, LangMem, a forget by topic) and the server's ranked store (Studio) find the
    reply where recall does, in the same order."""
    folder = tmp_path / "qdrant"
    async with open_store(
        "qdrant://local", embedder=HashingEmbedder(dims=64, seed=3), qdrant_path=folder
    ) as store:
        _, reply, *_ = await aremember_many(
            store, ME, turns(f"Mira: What did you name the {CANARY} puppy?", "Theo: Luna!")
        )
        recalled = [m.key for m in await arecall(store, ME, QUESTION, limit=4, now=NOW)]
        assert reply in recalled
        view = scoped(store, ME)
        searched = [i.key for i in await view.asearch(NAMESPACE, query=QUESTION, limit=4)]
        studio = RankedStore(store)
        served = await studio.asearch(memories_namespace(ME), query=QUESTION, limit=4)
        # The question's turn first, the reply it lifted second, on every path.
        assert recalled[1] == reply
        assert searched == recalled == [i.key for i in served]
