"""The bound that leaves sentence views unread (memory.ranking.reaching, memory.store.ranked.
Views): over seeded random pools -- ties in relevance, time and view, replies lifted above their
own relevance, items without views, a question with a time window and keys -- the page ranked
after reading the reachable candidates' views is the page ranked after reading every one's:
the same items, order, scores and parts, for every page."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from langgraph.store.base import SearchOp

from memory.ranking import RankedItem, Ranking
from memory.store.ranked import Views, narrow, widen, with_views
from memory.store.scoring import ScoredItem, UnreadViews

NOW = datetime(2023, 6, 1, tzinfo=UTC)
NAMESPACE = ("memories",)
QUESTIONS = [
    "What did Caroline do in May 2023?",
    "When did Melanie run the race?",
    "What is Melanie painting?",
    "What happened recently?",
]


class Reader:
    """A store's view reads, from the views each point really has."""

    def __init__(self, truth: dict[str, float | None]) -> None:
        self.truth = truth
        self.read = 0

    def read_views(self, unread: Sequence[UnreadViews]) -> list[float | None]:
        self.read += len(unread)
        return [self.truth[str(hit.point)] for hit in unread]

    async def aread_views(self, unread: Sequence[UnreadViews]) -> list[float | None]:
        return self.read_views(unread)


def _pool(rng: random.Random, reader: Reader, vector: list[float]) -> list[ScoredItem]:
    """About 70 candidates on a few distinct values, so that ties are frequent."""
    items = []
    for i in range(rng.randint(20, 90)):
        key = f"m{i:03d}"
        relevance = rng.choice([0.2, 0.35, 0.5, 0.5, 0.61, 0.7, 0.9])
        dense = rng.choice([relevance, relevance - 0.1, None])  # None: no text cosine read
        views = rng.choice([None, 0.3, 0.55, 0.8, 1.0, -0.2])
        floor = dense
        if rng.random() < 0.15:  # a reply lifted by the turn it answers
            relevance = max(relevance, 0.8)
            floor = relevance if floor is None else max(floor, relevance)
        reader.truth[key] = views
        at = NOW - timedelta(days=rng.choice([1, 3, 30, 40, 400]))
        speaker = rng.choice(["Caroline", "Melanie"])
        said = rng.choice(["ran a race", "painted the lake", "went to a concert in May"])
        items.append(
            ScoredItem(
                NAMESPACE,
                key,
                {"text": f"{speaker}: I {said}.", "at": at.isoformat(), "kind": "dialogue"},
                at,
                at,
                relevance,
                dense=dense,
                view=floor,
                unread=UnreadViews(reader, vector, key),
            )
        )
    rng.shuffle(items)
    return items


def _page(found: object) -> list[tuple[object, ...]]:
    assert isinstance(found, list)
    assert all(isinstance(item, RankedItem) for item in found)
    return [(item.key, item.score, item.parts) for item in found]


def test_the_reachable_candidates_views_rank_the_page_as_all_views_do() -> None:
    rng = random.Random(43)
    read = every = 0
    for trial in range(200):
        reader = Reader({})
        pool = _pool(rng, reader, [1.0, 0.0])
        offset, limit = rng.choice([(0, 1), (0, 5), (0, 10), (2, 8), (0, 30), (20, 10)])
        op = SearchOp(NAMESPACE, None, limit, offset, QUESTIONS[trial % len(QUESTIONS)], False)
        wide = [widen(op, Ranking(now=NOW))]
        pruned = with_views([op], wide, [pool])
        read += reader.read
        full = with_views([op], wide, [pool], every=True)
        every += len(Views.of([op], wide, [pool], every=True).reads)
        assert _page(narrow(op, wide[0][1], pruned[0])) == _page(narrow(op, wide[0][1], full[0])), (
            trial,
            op,
        )
    assert read < every / 2, (read, every)


def test_a_read_view_is_the_best_of_the_views_and_what_the_hit_had() -> None:
    hit = ScoredItem(NAMESPACE, "k", {}, NOW, NOW, 0.5, dense=0.4, view=0.6)
    assert hit.seen(0.7).view == 0.7
    assert hit.seen(0.5).view == 0.6
    assert hit.seen(None).view == 0.6
    assert ScoredItem(NAMESPACE, "k", {}, NOW, NOW, 0.5).seen(0.3).view == 0.3
    assert hit.seen(0.7).unread is None
