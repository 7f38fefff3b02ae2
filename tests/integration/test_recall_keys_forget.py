"""Forgetting a turn forgets every key recall reads from it (memory.recall_keys), on the
real embedded store (Qdrant Edge): before the forget, a question that names the canary
speaker and asks "when" finds the turn by its keys; after it, no memory keyed by the canary
is left, recall by the canary finds nothing of it, and no byte of the store's folder holds it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.embeddings import HashingEmbedder
from memory.identity import Principal
from memory.recall import NewMemory, aforget, alist_memories, arecall, aremember_many
from memory.recall_keys import memory_keys
from memory.store.edge import EdgeStore
from memory.store.factory import open_store
from tests.support.raw_bytes import raw_hits

pytestmark = pytest.mark.integration

ME = Principal("acme", "mira")
CANARY = "Zorvendix"
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
NOW = datetime(2023, 6, 1, tzinfo=UTC)
TURNS = [
    (f"{CANARY}: I ran a charity race for mental health last Saturday.", "D1:1"),
    ("Mira: That's great! I ran a race too, it felt amazing.", "D1:2"),
    ("Mira: I'm painting a sunrise over the lake.", "D1:3"),
    ("Theo: My kids love the dinosaur exhibit.", "D1:4"),
]


async def test_forgetting_a_turn_leaves_no_key_of_it(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    question = f"When did {CANARY} run a charity race?"
    async with open_store(
        "qdrant://local", embedder=HashingEmbedder(dims=64, seed=3), qdrant_path=folder
    ) as store:
        keys = await aremember_many(
            store,
            ME,
            [
                NewMemory(text, at=SAID, kind="dialogue", source="test", episode_ids=[turn])
                for text, turn in TURNS
            ],
        )
        found = await arecall(store, ME, question, limit=4, now=NOW)
        assert found[0].key == keys[0]
        assert found[0].parts.keys == 1.0  # said by the person named, and states a time
        assert found[0].metadata["episode_ids"] == ["D1:1"]  # the key points to its episode

        await aforget(store, ME, keys[0])

        left = await alist_memories(store, ME, now=NOW)
        assert sorted(m.key for m in left) == sorted(keys[1:])
        assert all(memory_keys(m.text).speaker != CANARY.lower() for m in left)
        after = await arecall(store, ME, question, limit=10, now=NOW)
        assert after and all(CANARY not in m.text for m in after)
        # No memory left is keyed by the canary (and none of them states a time).
        assert {m.parts.keys for m in after} == {0.0}
        # The bytes too, as the app's forget has them erased (memory.store.erasing).
        assert isinstance(store, EdgeStore)
        store.erase_deleted()
    assert raw_hits(tmp_path, CANARY) == []
