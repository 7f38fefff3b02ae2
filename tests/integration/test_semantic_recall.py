"""Recall by meaning with the real local model (all-MiniLM-L6-v2 from the bundled files).

Paraphrased questions must find the right memory among distractors, on the default store
(Qdrant local) and on LangGraph's InMemoryStore with the same index config. Memories written
by the write path carry ``about`` (the attribute it extracted); a few here have none, to show
that text alone is matched by meaning too. MiniLM alone does not link "how much risk am I
comfortable with" to "I prefer conservative positions" (cosine ≈ 0.12, below unrelated
memories); the topic "risk tolerance" (≈ 0.57) is what makes that recall work.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from langgraph.store.base import BaseStore

from memory.embedding_cache import CachedEmbedder
from memory.embeddings import MiniLMEmbedder
from memory.identity import Principal
from memory.ranking import KNOBS
from memory.recall import MAX_BOOST, arecall, aremember
from memory.store.factory import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ME = Principal("acme", "mira")
SOMEONE_ELSE = Principal("acme", "theo")

# (key, text, about, kind, importance)
MEMORIES = [
    ("risk", "I prefer conservative positions", "risk tolerance", "preference", 8),
    (
        "horizon",
        "My horizon is long term, ten years or more",
        "investment horizon",
        "preference",
        7,
    ),
    (
        "sectors",
        "I am interested in semiconductors and AI chips",
        "sectors of interest",
        "preference",
        6,
    ),
    ("tesla", "Last month I asked about Tesla's margins", "past questions", "question", 4),
    ("format", "Keep my reports short, bullet points only", "report format", "preference", 6),
    ("dividends", "I want high dividend yield stocks", "income and dividends", "preference", 5),
    ("violin", "My daughter plays the violin", None, "note", 5),
    ("desk", "I work from a standing desk in my home office", None, "note", 5),
    ("lisbon", "The weather in Lisbon was lovely during my trip", None, "note", 5),
]

QUESTIONS = [
    ("how much risk am I comfortable with", "risk"),
    ("what is my risk tolerance", "risk"),
    ("which sectors am I interested in", "sectors"),
    ("what did I ask about last month", "tesla"),
    ("how should my reports be formatted", "format"),
    ("do I like stocks that pay dividends", "dividends"),
    ("what instrument does my child play", "violin"),
    ("what is my workspace like", "desk"),
    ("how was my holiday in Portugal", "lisbon"),
]


@pytest.fixture(scope="module")
def minilm() -> Iterator[MiniLMEmbedder]:
    embedder = MiniLMEmbedder()
    embedder.load()
    yield embedder


@pytest.fixture(params=["qdrant", "edge", "memory"])
async def seeded(
    request: pytest.FixtureRequest, minilm: MiniLMEmbedder, tmp_path: Path
) -> AsyncIterator[BaseStore]:
    url = {"qdrant": "qdrant+local://local", "edge": "qdrant://local"}.get(
        request.param, "memory://"
    )
    async with open_store(
        url, embedder=CachedEmbedder(minilm), qdrant_path=tmp_path / "q"
    ) as store:
        for key, text, about, kind, importance in MEMORIES:
            await aremember(store, ME, text, about=about, kind=kind, importance=importance, key=key)
        # The same words for someone else: never recalled for ME.
        await aremember(
            store, SOMEONE_ELSE, "I love risky, aggressive bets", about="risk tolerance"
        )
        yield store


@pytest.mark.parametrize(("question", "expected"), QUESTIONS)
async def test_paraphrases_find_the_right_memory(
    seeded: BaseStore, question: str, expected: str
) -> None:
    found = await arecall(seeded, ME, question, limit=3)
    assert found[0].key == expected, [(m.key, m.parts) for m in found]
    top = found[0].parts
    # Fresh memories have equal recency; the winner is the most relevant one, not the most important.
    assert top.relevance == max(m.parts.relevance for m in found)
    assert top.relevance > 0.3
    assert all(m.namespace == ("memories",) for m in found)


async def test_the_score_parts_explain_the_ranking(seeded: BaseStore) -> None:
    found = await arecall(seeded, ME, "how much risk am I comfortable with", limit=len(MEMORIES))
    assert len(found) == len(MEMORIES)  # only ME's memories, all of them
    assert "theo" not in {m.text for m in found}
    totals = [m.parts.total for m in found]
    assert totals == sorted(totals, reverse=True)
    for m in found:
        assert 0 <= m.parts.recency <= 1 and m.parts.recency > 0.99  # all written just now
        boost = (0.3 * m.parts.recency + 0.2 * m.parts.importance) / 0.5
        total = (1 - MAX_BOOST) * m.parts.relevance + MAX_BOOST * boost
        if m.parts.view is not None:  # the Qdrant stores keep sentence views
            total = (1 - KNOBS.view_weight) * total + KNOBS.view_weight * max(m.parts.view, 0)
        assert m.parts.total == pytest.approx(total)
    unrelated = next(m for m in found if m.key == "lisbon")
    assert unrelated.parts.relevance < found[0].parts.relevance - 0.3
