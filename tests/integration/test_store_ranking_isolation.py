"""Ranking isolation: what other principals store never changes how one principal's search
ranks, on every backend (issue 23, "per-tenant ranking statistics").

Alice (tenant acme) holds enough memories that a query's BM25 candidates are a selection of
them (more than the 64 candidates a ranking contributes), so statistics counted over the
whole store would change which of hers are candidates and where each ranks. Her queries are
asked, through her scoped view, before and after Bob (same tenant) and Carol (another tenant)
store thousands of memories written in the same vocabulary, with some words far more frequent
in theirs than in hers; the results (keys, scores and each score's parts) must be identical.

qdrant-client's local mode (``qdrant+local://``, the former default, a Python emulation of the
engine) is held to the same keys, order, scores, dense and lexical parts; its ``fused`` part (reported
for information, not ranked on) takes the engine's order among tied candidates, which depends
on the whole collection there.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langgraph.store.base import BaseStore, PutOp

from memory.identity import Principal
from memory.ranking import RankedItem
from memory.store.scoped import scoped
from tests.support.pgvector_server import pgvector_server
from tests.support.store_backends import BACKENDS, Backend, Storage, opener, storage_for

pytestmark = pytest.mark.integration

SEED = 20261202
WORDS = (
    "dividend yield margin revenue growth buyback debt equity bond rate inflation risk "
    "drawdown horizon sector energy semis banks cash flow valuation multiple guidance "
    "earnings surprise hedge option volatility tax account pension rebalance"
).split()
#: Words the others use far more often than Alice does: their global frequency moves.
CROWDED = ["dividend", "risk", "growth", "energy"]
QUERIES = [
    "dividend growth in energy",
    "risk of a deep drawdown",
    "bond rate and inflation hedge",
    "valuation multiple after earnings surprise",
    "tax on the pension account",
]
ALICE = Principal("acme", "alice")
BOB = Principal("acme", "bob")
CAROL = Principal("globex", "carol")


@pytest.fixture(scope="module")
def pgvector_admin() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def storage(backend: Backend, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    with storage_for(
        backend.name, tmp_path, lambda: request.getfixturevalue("pgvector_admin")
    ) as s:
        yield s


def sentences(rng: random.Random, count: int, crowded: float) -> list[str]:
    """``count`` short memories from the shared vocabulary; ``crowded`` is the chance that a
    memory also uses one of :data:`CROWDED`."""
    texts = []
    for _ in range(count):
        words = rng.sample(WORDS, rng.randint(3, 7))
        if rng.random() < crowded:
            words.append(rng.choice(CROWDED))
        texts.append("I note " + " ".join(words))
    return texts


async def fill(store: BaseStore, principal: Principal, texts: list[str]) -> None:
    view = scoped(store, principal)
    for start in range(0, len(texts), 500):
        await view.abatch(
            [
                PutOp(("memories",), f"m{start + i}", {"text": text})
                for i, text in enumerate(texts[start : start + 500])
            ]
        )


async def alice_sees(store: BaseStore, emulated: bool) -> list[list[tuple[Any, ...]]]:
    """Alice's hits for each query, in her view's order: namespace, key, the store's score
    and its parts (the ones local mode reproduces, ``emulated``: see the module docstring).
    The view ranks as recall does (:mod:`memory.ranking`); the store's own score is the
    ranked item's ``found`` (the ranking's total moves with the clock, through recency)."""
    view = scoped(store, ALICE)
    seen = []
    for query in QUERIES:
        hits = await view.asearch(("memories",), query=query, limit=10)
        rows = []
        for ranked in hits:
            hit = cast(RankedItem, ranked).found
            parts = dict(getattr(hit, "parts", dict)())
            if emulated:
                parts.pop("fused")
            rows.append((hit.namespace, hit.key, hit.score, *sorted(parts.items())))
        seen.append(rows)
    return seen


async def test_others_memories_never_change_alices_ranking(storage: Storage) -> None:
    rng = random.Random(SEED)
    emulated = storage.url.startswith("qdrant+local:")
    async with opener(storage)() as store:
        await fill(store, ALICE, sentences(rng, 150, crowded=0.1))
        before = await alice_sees(store, emulated)
        assert all(len(hits) == 10 for hits in before)
        await fill(store, BOB, sentences(rng, 1500, crowded=0.9))
        await fill(store, CAROL, sentences(rng, 1500, crowded=0.9))
        after = await alice_sees(store, emulated)
    assert after == before
