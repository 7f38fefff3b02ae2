"""The sentence of a long turn that answers a question ranks that turn first (sentence views,
memory.store.views, and the ranking's view part, memory.ranking.Knobs.view_weight), with the
real MiniLM embedder on the real embedded store (Qdrant Edge). Without views, a short turn
about running in general ranks first: the long turn's one vector is mostly about other
things."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.embedding_cache import CachedEmbedder
from memory.embeddings import MiniLMEmbedder
from memory.identity import Principal
from memory.recall import NewMemory, arecall, aremember_many
from memory.store.factory import open_store

pytestmark = pytest.mark.integration

ME = Principal("acme", "mira")
SAID = datetime(2023, 5, 8, tzinfo=UTC)
LONG = (
    "Melanie: Work has been crazy this month, three deadlines in a row and endless meetings. "
    "My car broke down on Tuesday so I've been taking the bus everywhere. "
    "The kids are doing well at school and they love their new teacher. "
    "We repainted the kitchen a pale yellow over the weekend. "
    "Oh, and I finally ran my first marathon in Boston, it took me four hours! "
    "Anyway, how is your week going?"
)
TURNS = [
    LONG,
    "Caroline: I went for a long walk by the river this morning.",
    "Caroline: Running always clears my head after a stressful day.",
    "Melanie: I bought new sneakers because my old ones were worn out.",
    "Caroline: Boston is such a lovely city to visit in the fall.",
]


async def test_the_answering_sentence_of_a_long_turn_ranks_it_first(tmp_path: Path) -> None:
    embedder = CachedEmbedder(MiniLMEmbedder())
    async with open_store("qdrant://local", embedder=embedder, qdrant_path=tmp_path / "q") as store:
        keys = await aremember_many(
            store,
            ME,
            [
                NewMemory(text, at=SAID, kind="dialogue", source="test", episode_ids=[f"D1:{i}"])
                for i, text in enumerate(TURNS)
            ],
        )
        found = await arecall(
            store,
            ME,
            "What race did Melanie complete?",
            limit=3,
            now=datetime(2023, 6, 1, tzinfo=UTC),
        )
    assert found[0].key == keys[0], [m.text for m in found]
