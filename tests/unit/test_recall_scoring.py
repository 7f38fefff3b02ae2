"""Recall ranking: each component normalised to [0, 1], the weighted total, and the helpers
that remember, forget and recall through the principal's scope (InMemoryStore, hashing
embedder: no services)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.base import SearchItem
from langgraph.store.memory import InMemoryStore

from agent.errors import InvalidMemoryError, MemoryNotFoundError
from memory.embedding_cache import CachedEmbedder
from memory.embeddings import HashingEmbedder, MiniLMEmbedder
from memory.identity import Principal
from memory.ranking import KNOBS
from memory.recall import (
    DEFAULT_WEIGHTS,
    MAX_BOOST,
    NewMemory,
    RecallWeights,
    aforget,
    ahas_memories,
    alist_memories,
    arecall,
    aremember,
    aremember_many,
    importance_score,
    memory_key,
    memory_text,
    rank,
    recency_score,
    relevance_score,
    score,
)
from memory.store.factory import index_config
from memory.store.scoring import ScoredItem
from memory.timewindows import TimeWindow, time_window

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
DAY = timedelta(days=1)
ALICE = Principal("acme", "alice")
BOB = Principal("acme", "bob")


def item(
    key: str, *, age_days: float, importance: int = 5, similarity: float | None = None
) -> SearchItem:
    when = NOW - timedelta(days=age_days)
    return SearchItem(
        namespace=("memories",),
        key=key,
        value={"text": f"memory {key}", "importance": importance, "kind": "note"},
        created_at=when,
        updated_at=when,
        score=similarity,
    )


def store(embedder: object | None = None) -> InMemoryStore:
    chosen = embedder if embedder is not None else HashingEmbedder(dims=128, seed=3)
    return InMemoryStore(index=index_config(chosen))  # type: ignore[arg-type]


# -- components --------------------------------------------------------------------------------


def test_recency_halves_every_half_life() -> None:
    half = timedelta(days=30)
    assert recency_score(NOW, NOW, half) == 1.0
    assert recency_score(NOW - 30 * DAY, NOW, half) == pytest.approx(0.5)
    assert recency_score(NOW - 60 * DAY, NOW, half) == pytest.approx(0.25)
    assert recency_score(NOW - 7 * DAY, NOW, timedelta(days=7)) == pytest.approx(0.5)
    assert recency_score(NOW + DAY, NOW, half) == 1.0  # clock skew never exceeds 1
    ages = [recency_score(NOW - d * DAY, NOW, half) for d in range(0, 400, 10)]
    assert ages == sorted(ages, reverse=True)
    assert all(0.0 <= a <= 1.0 for a in ages)
    with pytest.raises(InvalidMemoryError):
        recency_score(NOW, NOW, timedelta(0))


def test_importance_maps_one_to_ten_onto_zero_to_one() -> None:
    assert importance_score(1) == 0.0
    assert importance_score(10) == 1.0
    assert importance_score(5) == pytest.approx(4 / 9)
    assert importance_score(0) == 0.0 and importance_score(42) == 1.0
    assert importance_score(None) == importance_score(5)
    assert importance_score("high") == importance_score(5)
    assert importance_score(True) == importance_score(5)
    assert importance_score(float("nan")) == importance_score(5)


def test_relevance_is_clipped_similarity() -> None:
    assert relevance_score(None) == 0.0
    assert relevance_score(-0.4) == 0.0
    assert relevance_score(0.37) == pytest.approx(0.37)
    assert relevance_score(1.0000001) == 1.0
    assert relevance_score(float("nan")) == 0.0


def test_a_memory_reads_as_its_text_else_langmem_content() -> None:
    """LangMem's memories (no ``text``) reach recall: the tools' string ``content`` as it
    is, the store manager's structured content as compact JSON; the project's ``text`` wins."""
    assert memory_text({"text": "mine", "content": "theirs"}) == "mine"
    assert memory_text({"content": "Ann prefers dividends"}) == "Ann prefers dividends"
    structured = {"kind": "Memory", "content": {"content": "Ann prefers dividends"}}
    assert memory_text(structured) == '{"content":"Ann prefers dividends"}'
    assert memory_text({"kind": "note"}) == ""
    [recalled] = rank(
        [SearchItem(("memories", "langmem"), "k", structured, NOW, NOW, 0.5)], now=NOW
    )
    assert (recalled.text, recalled.kind) == ('{"content":"Ann prefers dividends"}', "Memory")


def test_total_is_relevance_plus_a_bounded_boost() -> None:
    parts = score(item("a", age_days=30, importance=10, similarity=0.6), NOW)
    assert (parts.recency, parts.importance, parts.relevance) == pytest.approx((0.5, 1.0, 0.6))
    boost = (0.3 * 0.5 + 0.2 * 1.0) / 0.5
    assert parts.total == pytest.approx((1 - MAX_BOOST) * 0.6 + MAX_BOOST * boost)
    assert parts.view is None  # a store without sentence views: no view part
    # With a view (memory.store.views), its best sentence's cosine takes a share.
    viewed = ScoredItem(("m",), "a", {"text": "t"}, NOW, NOW, 0.6, dense=0.5, view=0.9)
    viewed_parts = score(viewed, NOW)
    fresh = (0.3 * 1.0 + 0.2 * 4 / 9) / 0.5  # stored now, importance 5 (the default)
    w = KNOBS.view_weight
    assert viewed_parts.view == 0.9
    assert viewed_parts.total == pytest.approx(
        (1 - w) * ((1 - MAX_BOOST) * 0.6 + MAX_BOOST * fresh) + w * 0.9
    )
    # Without a query the boost is the whole score.
    plain = score(item("a", age_days=30, importance=10), NOW)
    assert plain.relevance == 0.0 and plain.total == pytest.approx(boost)
    for age in (0, 5, 90, 1000):
        for imp in (1, 5, 10):
            for sim in (None, -1.0, 0.0, 0.5, 1.0):
                p = score(item("x", age_days=age, importance=imp, similarity=sim), NOW)
                assert all(0.0 <= v <= 1.0 for v in (p.recency, p.importance, p.relevance, p.total))


def test_weights_are_rescaled_and_validated() -> None:
    a = score(item("a", age_days=3, importance=7, similarity=0.4), NOW, RecallWeights(3, 2, 5))
    b = score(item("a", age_days=3, importance=7, similarity=0.4), NOW, DEFAULT_WEIGHTS)
    assert a.total == pytest.approx(b.total)
    only_recency = RecallWeights(1, 0, 0)
    assert score(item("a", age_days=30, similarity=0.9), NOW, only_recency).total == pytest.approx(
        (1 - MAX_BOOST) * 0.9 + MAX_BOOST * 0.5
    )
    assert score(item("a", age_days=30), NOW, only_recency).total == pytest.approx(0.5)
    assert RecallWeights.parse(" 0.3, 0.2,0.5 ") == RecallWeights(0.3, 0.2, 0.5)
    for bad in ("1,2", "a,b,c", "1,2,3,4", ""):
        with pytest.raises(InvalidMemoryError):
            RecallWeights.parse(bad)
    for args in ((-1, 1, 1), (0, 0, 0), (math.nan, 1, 1), (math.inf, 1, 1)):
        with pytest.raises(InvalidMemoryError):
            RecallWeights(*args)


def test_rank_orders_by_total_then_relevance_then_recency() -> None:
    ranked = rank(
        [
            item("old-important", age_days=300, importance=10, similarity=0.5),
            item("fresh-trivial", age_days=0, importance=1, similarity=0.5),
            item("fresh-relevant", age_days=0, importance=5, similarity=0.9),
            item("unrelated", age_days=0, importance=5, similarity=-0.2),
        ],
        now=NOW,
    )
    assert [r.key for r in ranked] == [
        "fresh-relevant",
        "fresh-trivial",
        "old-important",  # 0.9·0.5 + 0.1·(0.6·0.001 + 0.4·1) = 0.49
        "unrelated",  # 0.9·0 + 0.1·(0.6·1 + 0.4·4/9) = 0.08
    ]
    totals = [r.parts.total for r in ranked]
    assert totals == sorted(totals, reverse=True)
    importance_first = rank(
        [item("a", age_days=0, importance=2), item("b", age_days=0, importance=9)],
        now=NOW,
        weights=RecallWeights(0, 1, 0),
    )
    assert [r.key for r in importance_first] == ["b", "a"]
    tie = rank([item("b", age_days=1), item("a", age_days=1)], now=NOW)
    assert [r.key for r in tie] == ["a", "b"]
    assert len(rank([item(str(i), age_days=i) for i in range(10)], now=NOW, limit=3)) == 3


# -- helpers over a store ------------------------------------------------------------------------


async def test_recall_ranks_and_explains() -> None:
    s = store()
    await aremember(s, ALICE, "python tutorial for beginners", importance=3)
    key = await aremember(s, ALICE, "python snakes are reptiles", importance=9, kind="fact")
    await aremember(s, ALICE, "cooking pasta", importance=5)
    found = await arecall(s, ALICE, "python", limit=2)
    assert found[0].key == key  # as relevant as the tutorial, more important
    assert len(found) == 2
    for r in found:
        assert r.parts.relevance > 0
        boost = (0.3 * r.parts.recency + 0.2 * r.parts.importance) / 0.5
        assert r.parts.total == pytest.approx(
            (1 - MAX_BOOST) * r.parts.relevance + MAX_BOOST * boost
        )
    data = found[0].to_json()
    assert set(data["score"]) == {"recency", "importance", "relevance", "total"}
    assert (data["key"], data["text"], data["importance"]) == (key, found[0].text, 9)
    assert data["score"]["total"] == pytest.approx(found[0].parts.total, abs=1e-6)


async def test_recall_without_query_ranks_by_recency_and_importance() -> None:
    s = store()
    await aremember(s, ALICE, "low", importance=1)
    await aremember(s, ALICE, "high", importance=10)
    found = await arecall(s, ALICE, None)
    assert [r.text for r in found] == ["high", "low"]
    assert all(r.parts.relevance == 0.0 for r in found)


async def test_recall_for_an_empty_namespace_embeds_nothing() -> None:
    hashing = HashingEmbedder(dims=64)
    s = store(hashing)
    assert await arecall(s, ALICE, "how much risk am I comfortable with") == []
    assert hashing.texts_embedded == 0
    assert not await ahas_memories(s, ALICE)
    # With the real default embedder: the model is never loaded for an empty namespace.
    minilm = MiniLMEmbedder()
    assert await arecall(store(CachedEmbedder(minilm)), ALICE, "anything at all") == []
    assert not minilm.loaded
    await aremember(s, BOB, "bob's memory")
    assert await arecall(s, ALICE, "memory") == []
    assert await ahas_memories(s, BOB) and not await ahas_memories(s, ALICE)


async def test_remember_is_idempotent_and_validated() -> None:
    s = store()
    a = await aremember(
        s, ALICE, "I prefer  conservative positions", importance=4, about="risk tolerance"
    )
    b = await aremember(
        s, ALICE, "I prefer conservative positions", importance=8, about="risk tolerance"
    )
    assert a == b == memory_key("I prefer conservative positions", "note", "risk tolerance")
    [only] = await alist_memories(s, ALICE)
    assert only.importance == 8 and only.about == "risk tolerance"
    assert await aremember(s, ALICE, "same words", kind="a") != await aremember(
        s, ALICE, "same words", kind="b"
    )
    assert await aremember(s, ALICE, "explicit", key="my-key") == "my-key"
    for bad in (
        {"text": "  "},
        {"text": "x", "importance": 0},
        {"text": "x", "importance": 11},
        {"text": "x", "importance": True},
        {"text": "x", "importance": 2.5},
        {"text": "x", "kind": " "},
        {"text": "x", "about": "  "},
    ):
        with pytest.raises(InvalidMemoryError):
            await aremember(s, ALICE, **bad)


async def test_forget_removes_one_memory_of_the_principal_only() -> None:
    s = store()
    key = await aremember(s, ALICE, "shared words")
    await aremember(s, BOB, "shared words")
    with pytest.raises(MemoryNotFoundError):
        await aforget(s, BOB, "mem-000000000000")
    await aforget(s, ALICE, key)
    assert await alist_memories(s, ALICE) == []
    assert [m.key for m in await alist_memories(s, BOB)] == [key]  # same key, other principal: kept
    with pytest.raises(MemoryNotFoundError):
        await aforget(s, ALICE, key)


# -- time, metadata, bounded boosts ----------------------------------------------------------------


def test_a_boost_never_pushes_a_clearly_relevant_memory_out_of_the_top_k() -> None:
    relevant = [
        item(f"old-{i}", age_days=3000, importance=1, similarity=0.6 - i * 0.01) for i in range(3)
    ]
    tempting = [item(f"new-{i}", age_days=0, importance=10, similarity=0.45) for i in range(20)]
    top = rank([*tempting, *relevant], now=NOW, limit=3)
    assert [r.key for r in top] == ["old-0", "old-1", "old-2"]
    # Between near-ties the boosts decide: fresher and more important first.
    tie = rank(
        [item("stale", age_days=300, similarity=0.5), item("fresh", age_days=1, similarity=0.5)],
        now=NOW,
    )
    assert [r.key for r in tie] == ["fresh", "stale"]


async def test_recency_counts_from_when_it_happened() -> None:
    s = store()
    await aremember(s, ALICE, "bought NVDA", at=NOW - 400 * DAY)
    [m] = await arecall(s, ALICE, None, now=NOW)
    assert m.at == NOW - 400 * DAY and m.parts.recency < 0.001
    assert m.to_json()["at"] == (NOW - 400 * DAY).isoformat()


async def test_distinct_events_never_merge_and_metadata_is_kept() -> None:
    s = store()
    a = await aremember(s, ALICE, "I sold half", at=NOW - 10 * DAY, source="chat", tickers=["nvda"])
    b = await aremember(s, ALICE, "I sold half", at=NOW - 3 * DAY, episode_ids=["chat-7"])
    assert a != b
    assert await aremember(s, ALICE, "I sold half", at=NOW - 3 * DAY, episode_ids=["chat-7"]) == b
    found = {m.key: m for m in await alist_memories(s, ALICE)}
    assert set(found) == {a, b}
    assert found[a].metadata == {"source": "chat", "tickers": ["NVDA"]}
    assert found[b].metadata == {"episode_ids": ["chat-7"]}
    data = json.loads(json.dumps(found[a].to_json()))
    assert data["at"] == (NOW - 10 * DAY).isoformat()
    assert (data["source"], data["tickers"]) == ("chat", ["NVDA"])
    with pytest.raises(InvalidMemoryError):
        await aremember(s, ALICE, "x", tickers="NVDA")


async def test_batch_remember_embeds_once() -> None:
    hashing = HashingEmbedder(dims=64)
    s = store(hashing)
    calls: list[int] = []
    original = hashing.embed_documents

    def counting(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return original(texts)

    hashing.embed_documents = counting  # type: ignore[method-assign]
    keys = await aremember_many(
        s, ALICE, [NewMemory(f"turn {i}", at=NOW - i * DAY) for i in range(12)]
    )
    assert len(set(keys)) == 12 and len(await alist_memories(s, ALICE)) == 12
    assert calls == [12]
    with pytest.raises(InvalidMemoryError):
        await aremember_many(s, ALICE, [NewMemory("fine"), NewMemory("  ")])
    assert len(await alist_memories(s, ALICE)) == 12  # nothing of a bad batch is stored


def test_time_in_the_question_becomes_a_window() -> None:
    now = datetime(2026, 6, 10, 9, tzinfo=UTC)
    assert time_window("what did I buy last month?", now) == TimeWindow(
        datetime(2026, 5, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)
    )
    assert time_window("what happened in March", now) == TimeWindow(
        datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)
    )
    assert time_window("plans in December", now) == TimeWindow(
        datetime(2025, 12, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)
    )
    assert time_window("trades in 2024", now) == TimeWindow(
        datetime(2024, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)
    )
    assert time_window("what did I say recently", now) == TimeWindow(recent=True)
    assert time_window("I may buy NVDA", now) is None
    assert time_window("how risky is NVDA", now) is None


async def test_recall_ranks_the_window_first_and_drops_nothing() -> None:
    s = store()
    now = datetime(2026, 6, 10, tzinfo=UTC)
    await aremember(s, ALICE, "bought NVDA shares", at=datetime(2026, 5, 12, tzinfo=UTC))
    await aremember(s, ALICE, "bought NVDA shares", at=datetime(2026, 3, 2, tzinfo=UTC))
    first, second = await arecall(s, ALICE, "what did I buy last month", limit=2, now=now)
    assert first.at == datetime(2026, 5, 12, tzinfo=UTC)
    assert (first.parts.window, second.parts.window) == (1.0, 0.0)
    assert first.score > second.score
    [m] = await arecall(s, ALICE, "what did I buy in March", limit=1, now=now)
    assert m.at == datetime(2026, 3, 2, tzinfo=UTC)
    found = await arecall(s, ALICE, "what did I buy in 2019", limit=5, now=now)
    assert len(found) == 2 and {m.parts.window for m in found} == {0.0}
    [plain] = await arecall(s, ALICE, "what did I buy", limit=1, now=now)
    assert plain.parts.window is None and "window" not in plain.parts.to_json()


async def test_an_event_told_after_the_period_it_names_is_found_for_that_period() -> None:
    """Said on 4 February about January: "read in January 2023" finds it, ahead of the
    same words said in March, and the question's date, not now, anchors its phrases."""
    s = store()
    now = datetime(2026, 6, 10, tzinfo=UTC)
    told = datetime(2023, 2, 4, 18, tzinfo=UTC)
    await aremember(s, ALICE, "I read Dune in January", at=told)
    await aremember(s, ALICE, "I read Dune again", at=datetime(2023, 3, 20, tzinfo=UTC))
    first, _ = await arecall(s, ALICE, "what did I read in January 2023", limit=2, now=now)
    assert (first.at, first.parts.window) == (told, 1.0)
    await aremember(s, BOB, "sold AAPL", at=datetime(2023, 1, 19, tzinfo=UTC))
    await aremember(s, BOB, "sold AAPL", at=datetime(2026, 6, 3, tzinfo=UTC))
    [m] = await arecall(
        s, BOB, "what did I sell last week before 23 January 2023", limit=1, now=now
    )
    assert m.at == datetime(2023, 1, 19, tzinfo=UTC)
    [m] = await arecall(s, BOB, "what did I sell last week", limit=1, now=now)
    assert m.at == datetime(2026, 6, 3, tzinfo=UTC)


async def test_the_top_five_is_the_start_of_the_top_ten() -> None:
    """Boosts re-rank the same pool of candidates whatever the limit: fresh memories the
    store lists after thirty equally relevant old ones still lead a top 5, as in the top 10."""
    s = store()
    old = [NewMemory("chips and margins", at=NOW - (300 + i) * DAY) for i in range(30)]
    fresh = [NewMemory("chips and margins", at=NOW - i * DAY) for i in range(10)]
    await aremember_many(s, ALICE, old + fresh)
    top5 = [m.key for m in await arecall(s, ALICE, "chips and margins", limit=5, now=NOW)]
    top10 = [m.key for m in await arecall(s, ALICE, "chips and margins", limit=10, now=NOW)]
    assert top5 == top10[:5]
    assert {m.at for m in await arecall(s, ALICE, "chips and margins", limit=5, now=NOW)} == {
        NOW - i * DAY for i in range(5)
    }
