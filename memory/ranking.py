"""The one ranking of cold memory, and every knob it has (:class:`Knobs`, :data:`KNOBS`).

Every path that searches the principal's memories with a query reaches :func:`order`: the
planner's recall, ``analyst memory search``, the answers from memory (all through
:func:`memory.recall.arecall`), LangMem's tools and a forget by topic (a query search through
the principal's scoped view, :class:`memory.store.scoped.ScopedStore`), and the LangGraph
server's store that Studio searches (:class:`memory.store.ranked.RankedStore`). A fix to the
ranking therefore reaches them all, and its knobs are here only.

:func:`score` ranks relevance first, with recency and importance as bounded boosts that
reorder near-ties only; a time named in the question (:func:`memory.timewindows.time_window`)
becomes a soft window that ranks the memories it holds ahead of the others, dropping none;
the question's keys (:mod:`memory.recall_keys`) add a bounded part. The formula is in
docs/memory-lifecycle.md ("Long-term memories and recall").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import Item, SearchItem

from memory.errors import InvalidMemoryError
from memory.recall_keys import QuestionKeys, key_match, memory_keys, question_keys
from memory.timewindows import TimeWindow, matches, time_window


@dataclass(frozen=True)
class Knobs:
    """Every number the ranking of cold memory depends on, with why it has its default."""

    half_life_days: float = 30.0
    """Recency halves every 30 days: last month's memory still counts half, a year-old one
    next to nothing; recency only reorders near-ties (:attr:`max_boost`)."""
    recently_half_life_days: float = 7.0
    """A question that says "recently" ranks with a 7-day half-life: a week is what people
    mean by it, and the window it names has no edges to match."""
    max_boost: float = 0.1
    """The most recency and importance together add to a score that has a relevance part:
    10 % reorders memories about equally relevant, never lifts an unrelated one."""
    window_weight: float = 0.5
    """The share of the total a question's time window decides: a memory inside it (said
    then, told shortly after, or describing that time) outranks one outside it unless the
    outside one is far more relevant."""
    key_weight: float = 0.1
    """The share of the total the question's keys decide (:mod:`memory.recall_keys`): a memory
    holding every key outranks one holding none unless it is clearly less relevant. Chosen
    leave-one-conversation-out on the LoCoMo development split (``scripts/eval_recall.py``):
    0.1 was best on every pair of conversations among 0.05-0.3."""
    pool: int = 64
    """How many of the store's best candidates a ranking re-ranks at least: the store's own
    candidate depth (:attr:`store_candidates`), so the boosts cannot make the top 5 differ
    from the first 5 of the top 10 for any limit up to 16."""
    pool_per_result: int = 4
    """Beyond :attr:`pool`, the candidates re-ranked per result asked for."""
    window_pool: int = 100
    """With a time window, memories in the window may rank deeper by relevance alone: at
    least 100 candidates are re-ranked."""
    window_pool_per_result: int = 10
    """Beyond :attr:`window_pool`, the candidates re-ranked per result asked for."""
    store_candidates: int = 64
    """How many candidates each of the store's rankings (dense, BM25) contributes at least:
    the top-k of a search does not depend on the limit as long as offset + limit stays below
    it (:mod:`memory.store.scoring`)."""
    rrf_k: int = 10
    """Reciprocal-rank fusion's constant for the engine's dense and BM25 candidate lists: a
    small k lets the first places of either list decide which candidates are fetched."""
    rrf_weights: tuple[float, float] = (1.0, 1.0)
    """The weights of the dense and the BM25 ranking in the fusion: neither is trusted more."""
    reply_weight: float = 0.9
    """The share of the relevance of the turn it answers that a dialogue reply is ranked with
    when its own is lower (:mod:`memory.recall_context`): just below, so the turn the question
    matches keeps the first place. Chosen leave-one-conversation-out on the LoCoMo development
    split (figures in :mod:`memory.recall_context`)."""
    view_weight: float = 0.1
    """The share of the total a memory's best sentence view decides (the best cosine of the
    question to the memory's text or one of its sentences, :mod:`memory.store.views`): a long
    turn whose one sentence answers the question is lifted toward where that sentence alone
    would rank. Chosen
    leave-one-conversation-out on the LoCoMo development split (``scripts/
    eval_views_weight.py``; figures in :mod:`memory.store.views`)."""
    replies_per_result: int = 2
    """Whose replies a search reads: those of this many of its most relevant candidates per
    result asked for (20 for a limit of 10), so a search reads at most 2 × limit more keys."""
    meaning_score: float = 0.5
    """A forget by topic lists a stored memory found by meaning alone (its words do not name
    the topic) only at this relevance or above: half-way similar is about the topic; below,
    unrelated memories would be offered for deletion."""


KNOBS = Knobs()
"""The knobs every path ranks with."""

IMPORTANCE_MIN, IMPORTANCE_MAX, IMPORTANCE_DEFAULT = 1, 10, 5


@dataclass(frozen=True)
class RecallWeights:
    """alpha (recency), beta (importance), gamma (relevance); rescaled to sum to 1."""

    recency: float = 0.3
    importance: float = 0.2
    relevance: float = 0.5

    def __post_init__(self) -> None:
        values = (self.recency, self.importance, self.relevance)
        if not all(isinstance(v, int | float) and math.isfinite(v) and v >= 0 for v in values):
            raise InvalidMemoryError(
                f"Recall weights {values} must be finite numbers >= 0, e.g. 0.3,0.2,0.5."
            )
        if sum(values) <= 0:
            raise InvalidMemoryError("Recall weights cannot all be 0; use e.g. 0.3,0.2,0.5.")

    def normalised(self) -> RecallWeights:
        total = self.recency + self.importance + self.relevance
        return RecallWeights(self.recency / total, self.importance / total, self.relevance / total)

    @classmethod
    def parse(cls, text: str) -> RecallWeights:
        """``"0.3,0.2,0.5"`` (recency, importance, relevance) → weights."""
        parts = [p.strip() for p in text.split(",")]
        try:
            numbers = [float(p) for p in parts]
        except ValueError as e:
            raise InvalidMemoryError(
                f"Recall weights '{text}' are not three numbers; use recency,importance,relevance "
                "e.g. 0.3,0.2,0.5."
            ) from e
        if len(numbers) != 3:
            raise InvalidMemoryError(
                f"Recall weights '{text}' need three numbers (recency,importance,relevance), "
                "e.g. 0.3,0.2,0.5."
            )
        return cls(*numbers)


DEFAULT_WEIGHTS = RecallWeights()
"""Relevance half of the weight, recency and importance the rest: with :attr:`Knobs.max_boost`
the boosts reorder near-ties only, recency a little more than importance."""


@dataclass(frozen=True)
class ScoreParts:
    """The normalised components of a memory's score and their weighted total, all in [0, 1]."""

    recency: float
    importance: float
    relevance: float
    total: float
    #: 1 inside the question's time window, 0 outside; None when the question names no time
    window: float | None = None
    #: the share of the question's keys the memory holds (:mod:`memory.recall_keys`); None
    #: when the question has none
    keys: float | None = None
    #: the best cosine of the question to the memory's text or one of its sentence views
    #: (:mod:`memory.store.views`); None where the store keeps no views
    view: float | None = None

    def to_json(self) -> dict[str, float]:
        data = {
            "recency": round(self.recency, 6),
            "importance": round(self.importance, 6),
            "relevance": round(self.relevance, 6),
            "total": round(self.total, 6),
        }
        if self.window is not None:
            data["window"] = self.window
        if self.keys is not None:
            data["keys"] = round(self.keys, 6)
        if self.view is not None:
            data["view"] = round(self.view, 6)
        return data


# -- scoring ------------------------------------------------------------------------------------


def _clip(x: float) -> float:
    return 0.0 if x <= 0.0 else 1.0 if x >= 1.0 else float(x)


def recency_score(updated_at: datetime, now: datetime, half_life: timedelta) -> float:
    """``0.5 ** (age / half_life)``: 1 for a memory updated now, 0.5 one half-life ago."""
    if half_life <= timedelta(0):
        raise InvalidMemoryError(f"The recency half-life must be positive, got {half_life}.")
    age = (now - updated_at) / half_life
    return _clip(0.5 ** max(age, 0.0))


def importance_score(importance: Any) -> float:
    """``(importance − 1) / 9``; a value that is not a number counts as the default, 5."""
    if not isinstance(importance, int | float) or isinstance(importance, bool):
        importance = IMPORTANCE_DEFAULT
    if not math.isfinite(importance):
        importance = IMPORTANCE_DEFAULT
    bounded = min(max(float(importance), IMPORTANCE_MIN), IMPORTANCE_MAX)
    return (bounded - IMPORTANCE_MIN) / (IMPORTANCE_MAX - IMPORTANCE_MIN)


def relevance_score(similarity: float | None) -> float:
    """The store's search score (a similarity in [0, 1]: cosine, raised by the query's words on
    a hybrid store; ``docs/architecture.md``, "Hybrid search") clipped to [0, 1]; no
    similarity (no query) is 0."""
    if similarity is None or not math.isfinite(similarity):
        return 0.0
    return _clip(similarity)


def happened_at(item: Item) -> datetime:
    """When the memory happened (its ``at``), else when it was last stored."""
    return parse_at(item.value.get("at")) or item.updated_at


def parse_at(value: Any) -> datetime | None:
    """A stored ``at`` (ISO 8601 text) as an aware datetime (naive is UTC); ``None`` if absent."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def memory_text(value: Mapping[str, Any]) -> str:
    """What a memory says: its ``text``, else LangMem's ``content`` (a string as it is,
    structured content from LangMem's store manager as compact JSON), else nothing."""
    if "text" in value:
        return str(value["text"])
    content = value.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return json.dumps(
        content, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str
    )


def view_of(item: Item) -> float | None:
    """The best sentence-view cosine the store found for a searched item
    (:mod:`memory.store.views`); None for a store that keeps no views or an unsearched item."""
    found = item.found if isinstance(item, RankedItem) else item
    view = getattr(found, "view", None)
    return None if view is None or not math.isfinite(view) else float(view)


def similarity_of(item: Item) -> float | None:
    """The store's similarity of a searched item (its score before any ranking); None for an
    item of a listing."""
    if isinstance(item, RankedItem):
        return item.similarity
    return item.score if isinstance(item, SearchItem) else None


def score(
    item: Item,
    now: datetime,
    weights: RecallWeights = DEFAULT_WEIGHTS,
    half_life: timedelta = timedelta(days=KNOBS.half_life_days),
    *,
    with_query: bool | None = None,
    window: TimeWindow | None = None,
    keys: QuestionKeys | None = None,
    assume_view: float | None = None,
) -> ScoreParts:
    """The score of one stored memory (a ``SearchItem`` contributes its relevance).

    ``with_query`` (default: whether the item carries a search score) selects the bounded
    form ``(1 − B)·relevance + B·boost``; without a query the total is the boost alone. With
    a query, the item's best sentence view (:func:`view_of`: the best cosine of the question
    to its text or one of its sentences) then takes :attr:`Knobs.view_weight` of the total;
    in a store that keeps no views (Postgres) no item has one, and the total is as without
    views.
    A time ``window`` (not "recently") then takes :attr:`Knobs.window_weight` of the total: 1
    for a memory it holds (:func:`memory.timewindows.matches`), 0 for one it does not. The
    question's ``keys`` (with a query, when it has any) then take :attr:`Knobs.key_weight`:
    the share of them the memory holds. ``assume_view``: score as if its view part were this
    (a bound of it while the store has not read the item's sentence views, :func:`reaching`).
    """
    w = weights.normalised()
    recency = recency_score(happened_at(item), now, half_life)
    importance = importance_score(item.value.get("importance"))
    similarity = similarity_of(item)
    relevance = relevance_score(similarity)
    boost_weight = w.recency + w.importance
    boost = (
        (w.recency * recency + w.importance * importance) / boost_weight if boost_weight else 0.0
    )
    queried = similarity is not None if with_query is None else with_query
    if not queried:
        total = boost if boost_weight else 0.0
    else:
        bound = min(KNOBS.max_boost, boost_weight)
        total = (1.0 - bound) * relevance + bound * boost
    view = (view_of(item) if assume_view is None else assume_view) if queried else None
    if view is not None:  # a cosine: below 0 it counts (and shows) as 0, like relevance
        view = _clip(view)
        total = (1.0 - KNOBS.view_weight) * total + KNOBS.view_weight * view
    inside = None
    if window is not None and not window.recent:
        inside = 1.0 if matches(window, happened_at(item), memory_text(item.value)) else 0.0
        total = (1.0 - KNOBS.window_weight) * total + KNOBS.window_weight * inside
    held = None
    if queried and keys is not None and keys.count:
        held = key_match(keys, memory_keys(memory_text(item.value)))
        total = (1.0 - KNOBS.key_weight) * total + KNOBS.key_weight * held
    return ScoreParts(recency, importance, relevance, _clip(total), inside, held, view)


# -- one search's ranking -------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """How a search ranks: the weights, the recency half-life, and the moment it ranks at
    (None: the time of the search)."""

    weights: RecallWeights = DEFAULT_WEIGHTS
    half_life_days: float = KNOBS.half_life_days
    now: datetime | None = None


@dataclass(frozen=True)
class Plan:
    """One query's ranking, planned: its text, how many candidates to re-rank (``pool``), its
    time window, moment, half-life and keys."""

    text: str
    pool: int
    window: TimeWindow | None
    now: datetime
    half_life: timedelta
    keys: QuestionKeys | None
    weights: RecallWeights = DEFAULT_WEIGHTS


def check_limit(limit: int) -> None:
    if not isinstance(limit, int) or limit < 1:
        raise InvalidMemoryError(f"limit={limit!r}: recall at least 1 memory.")


def plan(query: str | None, limit: int, ranking: Ranking = Ranking()) -> Plan:
    """The :class:`Plan` of ranking the ``limit`` best memories for ``query``: a question that
    names a time re-ranks a deeper pool; one that says "recently" a shorter half-life."""
    check_limit(limit)
    moment = ranking.now or datetime.now(UTC)
    text = (query or "").strip()
    window = time_window(text, moment) if text else None
    half_life = timedelta(days=ranking.half_life_days)
    pool = max(KNOBS.pool_per_result * limit, KNOBS.pool)
    if window is not None and window.recent:
        half_life = min(half_life, timedelta(days=KNOBS.recently_half_life_days))
    elif window is not None:
        pool = max(KNOBS.window_pool_per_result * limit, KNOBS.window_pool)
    keys = question_keys(text) if text else None
    return Plan(text, pool, window, moment, half_life, keys, ranking.weights)


def _scored(item: Item, planned: Plan, assume_view: float | None = None) -> ScoreParts:
    return score(
        item,
        planned.now,
        planned.weights,
        planned.half_life,
        window=planned.window,
        keys=planned.keys,
        assume_view=assume_view,
    )


def _place(item: Item, parts: ScoreParts) -> tuple[float, float, float, str]:
    """Where :func:`order` places a scored item: total, then relevance, then newest, then key."""
    return (-parts.total, -parts.relevance, -happened_at(item).timestamp(), item.key)


def order(items: Sequence[Item], planned: Plan) -> list[tuple[Item, ScoreParts]]:
    """``items`` scored and ordered: total, then relevance, then newest, then key."""
    scored = [(item, _scored(item, planned)) for item in items]
    scored.sort(key=lambda s: _place(*s))
    return scored


def reaching(
    items: Sequence[Item], planned: Plan, wanted: int, unknown: Sequence[bool]
) -> list[bool]:
    """For each item whose view part is ``unknown`` (its sentence views not read: its view is
    the least the part can be, 0 if it has none yet, and 1 the most), whether it can still be
    among the first ``wanted`` of :func:`order`; False for the others.

    The total is affine in the view part, rising by at most ``V`` (:attr:`Knobs.view_weight`;
    ``V·(1 − W)`` under a time window, every later step only scales it) per unit, and nothing
    else in the order depends on it. An item placed after ``wanted`` others even at view 1,
    each of them at its least, is never among the first ``wanted``: leaving its views unread
    changes neither which memories they are, nor their order, nor their scores. Each item is
    scored once (at its least); its most is that total raised by the slope, with a margin far
    above rounding."""
    if len(items) <= wanted or not any(unknown):
        return list(unknown)
    slope = KNOBS.view_weight
    if planned.window is not None and not planned.window.recent:
        slope *= 1.0 - KNOBS.window_weight
    least = [
        _scored(item, planned, (view_of(item) or 0.0) if open_ else None)
        for item, open_ in zip(items, unknown, strict=True)
    ]
    places = [_place(item, parts) for item, parts in zip(items, least, strict=True)]
    bar = sorted(places)[wanted - 1]
    reach = []
    for open_, parts, place in zip(unknown, least, places, strict=True):
        rise = slope * (1.0 - (parts.view or 0.0)) + _MARGIN
        most = (-min(1.0, parts.total + rise), *place[1:])
        reach.append(open_ and (place <= bar or most <= bar))
    return reach


#: What :func:`reaching` adds to an item's most total beyond the slope: many orders of
#: magnitude above the rounding of a few float operations (it only loosens the bound).
_MARGIN = 1e-9


class RankedItem(SearchItem):
    """A searched item as the ranking placed it: ``score`` is its total, ``parts`` the score's
    parts, ``similarity`` the store's own score (``found``: the store's item, with its parts on
    a hybrid store)."""

    __slots__ = ("found", "parts", "similarity")

    def __init__(self, found: Item, parts: ScoreParts) -> None:
        super().__init__(
            found.namespace,
            found.key,
            found.value,
            found.created_at,
            found.updated_at,
            parts.total,
        )
        self.found = found
        self.parts = parts
        self.similarity = similarity_of(found)


def ranked(items: Sequence[Item], planned: Plan) -> list[RankedItem]:
    """``items`` in the ranking's order, each as a :class:`RankedItem`."""
    return [RankedItem(item, parts) for item, parts in order(items, planned)]


__all__ = [
    "DEFAULT_WEIGHTS",
    "IMPORTANCE_DEFAULT",
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "KNOBS",
    "Knobs",
    "Plan",
    "RankedItem",
    "Ranking",
    "RecallWeights",
    "ScoreParts",
    "check_limit",
    "happened_at",
    "importance_score",
    "memory_text",
    "order",
    "parse_at",
    "plan",
    "ranked",
    "reaching",
    "recency_score",
    "relevance_score",
    "score",
    "similarity_of",
    "view_of",
]
