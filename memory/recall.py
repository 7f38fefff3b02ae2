"""Long-term memories of a principal: remember, forget, list, and recall ranked by a score.

Every helper goes through :func:`~memory.store.scoped.scoped` (the principal's namespace of any
LangGraph ``BaseStore``), so it cannot touch another principal's data. :func:`score` ranks
relevance first, with recency and importance as bounded boosts that reorder near-ties only;
:func:`time_window` turns time named in a question into a soft window that ranks the
memories it holds (:func:`memory.timewindows.matches`) ahead of the others, dropping none.
The value layout, keys and the ranking formula are in docs/memory-lifecycle.md ("Long-term
memories and recall"); the ranking itself, shared by every path that searches cold memory, and
its knobs are :mod:`memory.ranking` (re-exported here under their old names).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from langgraph.store.base import BaseStore, Item, PutOp

from memory.errors import InvalidMemoryError, MemoryNotFoundError
from memory.identity import Principal
from memory.ranking import (
    DEFAULT_WEIGHTS,
    IMPORTANCE_DEFAULT,
    IMPORTANCE_MAX,
    IMPORTANCE_MIN,
    KNOBS,
    Plan,
    RankedItem,
    Ranking,
    RecallWeights,
    ScoreParts,
    check_limit,
    happened_at,
    importance_score,
    memory_text,
    order,
    parse_at,
    plan,
    recency_score,
    relevance_score,
    score,
)
from memory.recall_context import link_replies
from memory.recall_keys import QuestionKeys
from memory.store.scoped import MEMORIES, scoped
from memory.timewindows import TimeWindow

#: The ranking's knobs, under the names recall has always given them (:mod:`memory.ranking`).
DEFAULT_HALF_LIFE_DAYS = KNOBS.half_life_days
RECENTLY_HALF_LIFE_DAYS = KNOBS.recently_half_life_days
MAX_BOOST = KNOBS.max_boost
WINDOW_WEIGHT = KNOBS.window_weight
NAMESPACE: tuple[str, ...] = (MEMORIES,)
"""Where memories live, relative to the principal root."""


@dataclass(frozen=True)
class Recalled:
    """One recalled memory with the reasons for its rank."""

    key: str
    namespace: tuple[str, ...]
    text: str
    importance: int
    kind: str
    about: str | None
    created_at: datetime
    updated_at: datetime
    parts: ScoreParts
    #: when it happened or was said (None: not given; ``updated_at`` stands in)
    at: datetime | None = None
    #: metadata kept with the item: ``source``, ``episode_ids``, ``tickers``
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return self.parts.total

    @property
    def when(self) -> datetime:
        """When it happened (``at``), else when it was last stored."""
        return self.at or self.updated_at

    def to_json(self) -> dict[str, Any]:
        data = {
            "key": self.key,
            "namespace": list(self.namespace),
            "text": self.text,
            "importance": self.importance,
            "kind": self.kind,
            "about": self.about,
            "at": self.at.isoformat() if self.at else None,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "score": self.parts.to_json(),
        }
        data.update({k: list(v) if isinstance(v, tuple) else v for k, v in self.metadata.items()})
        return data


# -- ranked memories ---------------------------------------------------------------------------


_METADATA = ("source", "episode_ids", "tickers")


def _recalled(item: Item, parts: ScoreParts) -> Recalled:
    value = item.value
    importance = value.get("importance", IMPORTANCE_DEFAULT)
    about = value.get("about")
    metadata = {k: value[k] for k in _METADATA if value.get(k) not in (None, [], "")}
    return Recalled(
        key=item.key,
        namespace=item.namespace,
        text=memory_text(value),
        importance=int(importance) if isinstance(importance, int | float) else IMPORTANCE_DEFAULT,
        kind=str(value.get("kind", "note")),
        about=str(about) if about else None,
        created_at=item.created_at,
        updated_at=item.updated_at,
        parts=parts,
        at=parse_at(value.get("at")),
        metadata=metadata,
    )


def rank(
    items: Sequence[Item],
    *,
    now: datetime,
    weights: RecallWeights = DEFAULT_WEIGHTS,
    half_life: timedelta = timedelta(days=DEFAULT_HALF_LIFE_DAYS),
    limit: int | None = None,
    window: TimeWindow | None = None,
    keys: QuestionKeys | None = None,
) -> list[Recalled]:
    """Score and order items (:func:`memory.ranking.order`: total, then relevance, then
    newest, then key)."""
    planned = Plan("", 0, window, now, half_life, keys, weights)
    scored = [_recalled(item, parts) for item, parts in order(items, planned)]
    return scored if limit is None else scored[:limit]


# -- writing ------------------------------------------------------------------------------------


def memory_key(
    text: str, kind: str = "note", about: str | None = None, at: datetime | str | None = None
) -> str:
    """The default key of a memory: stable for the same kind, topic, (whitespace-normalised)
    text and, for an event, the time it happened (so distinct events never merge)."""
    canonical = " ".join(text.split())
    topic = " ".join((about or "").split())
    material = f"{kind}\x00{topic}\x00{canonical}"
    if at is not None:
        material += "\x00" + (at if isinstance(at, str) else _at_text(at))
    digest = hashlib.sha256(material.encode()).hexdigest()
    return "mem-" + digest[:12]


def _at_text(at: datetime) -> str:
    if not isinstance(at, datetime):
        raise InvalidMemoryError(f"at={at!r}: give a datetime (when it happened or was said).")
    moment = at if at.tzinfo else at.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _labels(values: Sequence[str] | None, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not all(isinstance(v, str) and v.strip() for v in values):
        raise InvalidMemoryError(f"{what} must be a list of non-empty strings, got {values!r}.")
    return list(dict.fromkeys(v.strip() for v in values))


def memory_value(
    text: str,
    *,
    importance: int,
    kind: str,
    about: str | None = None,
    at: datetime | None = None,
    source: str | None = None,
    episode_ids: Sequence[str] | None = None,
    tickers: Sequence[str] | None = None,
) -> dict[str, Any]:
    if not isinstance(text, str) or not text.strip():
        raise InvalidMemoryError("A memory needs some text; nothing was stored.")
    if (
        not isinstance(importance, int)
        or isinstance(importance, bool)
        or not IMPORTANCE_MIN <= importance <= IMPORTANCE_MAX
    ):
        raise InvalidMemoryError(
            f"Importance {importance!r} is not an integer from {IMPORTANCE_MIN} to "
            f"{IMPORTANCE_MAX}; nothing was stored."
        )
    if not kind or not kind.strip():
        raise InvalidMemoryError("A memory's kind cannot be empty (e.g. note, preference).")
    value: dict[str, Any] = {"text": text.strip(), "importance": importance, "kind": kind.strip()}
    if about is not None:
        if not about.strip():
            raise InvalidMemoryError(
                "A memory's topic (about) cannot be blank; leave it out or name it, "
                "e.g. 'risk tolerance'."
            )
        value["about"] = about.strip()
    if at is not None:
        value["at"] = _at_text(at)
    if source is not None:
        if not isinstance(source, str) or not source.strip():
            raise InvalidMemoryError("A memory's source cannot be blank (e.g. chat, cli).")
        value["source"] = source.strip()
    if episodes := _labels(episode_ids, "episode_ids"):
        value["episode_ids"] = episodes
    if symbols := _labels(tickers, "tickers"):
        value["tickers"] = [t.upper() for t in symbols]
    return value


@dataclass(frozen=True)
class NewMemory:
    """One memory to store with :func:`aremember_many` (fields as :func:`remember`'s)."""

    text: str
    importance: int = IMPORTANCE_DEFAULT
    kind: str = "note"
    about: str | None = None
    at: datetime | None = None
    source: str | None = None
    episode_ids: Sequence[str] | None = None
    tickers: Sequence[str] | None = None
    key: str | None = None

    def put(self) -> tuple[str, dict[str, Any]]:
        value = memory_value(
            self.text,
            importance=self.importance,
            kind=self.kind,
            about=self.about,
            at=self.at,
            source=self.source,
            episode_ids=self.episode_ids,
            tickers=self.tickers,
        )
        key = self.key or memory_key(
            value["text"], value["kind"], value.get("about"), value.get("at")
        )
        return key, value


async def aremember(
    store: BaseStore,
    principal: Principal,
    text: str,
    *,
    importance: int = IMPORTANCE_DEFAULT,
    kind: str = "note",
    about: str | None = None,
    key: str | None = None,
    at: datetime | None = None,
    source: str | None = None,
    episode_ids: Sequence[str] | None = None,
    tickers: Sequence[str] | None = None,
) -> str:
    """Store (or refresh) a memory for ``principal``; returns its key.

    ``at``: when it happened or was said (an event; see the module doc for keys)."""
    key, value = NewMemory(
        text, importance, kind, about, at, source, episode_ids, tickers, key
    ).put()
    await scoped(store, principal).aput(NAMESPACE, key, value)
    return key


async def aremember_many(
    store: BaseStore, principal: Principal, memories: Sequence[NewMemory]
) -> list[str]:
    """Store many memories in one store batch (their texts embedded in one call); every one
    is validated before anything is stored. Returns their keys, in order. Consecutive dialogue
    turns are stored as a transcript, each keeping its reply's key
    (:func:`memory.recall_context.link_replies`)."""
    prepared = link_replies([m.put() for m in memories])
    view = scoped(store, principal)
    # One batch unless a text repeats: LangGraph's InMemoryStore miscounts a batch in which
    # two puts embed the same text (its embeddings are de-duplicated, its slots are not).
    batch: list[PutOp] = []
    texts: set[str] = set()
    for key, value in prepared:
        fields = {value["text"], value.get("about") or value["text"]}
        if fields & texts:
            await view.abatch(batch)
            batch, texts = [], set()
        batch.append(PutOp(NAMESPACE, key, value))
        texts |= fields
    if batch:
        await view.abatch(batch)
    return [key for key, _ in prepared]


async def aforget(store: BaseStore, principal: Principal, key: str) -> None:
    """Delete one memory of ``principal``; :class:`MemoryNotFoundError` if there is none."""
    view = scoped(store, principal)
    if await view.aget(NAMESPACE, key, refresh_ttl=False) is None:
        raise MemoryNotFoundError(key)
    await view.adelete(NAMESPACE, key)


# -- recall ---------------------------------------------------------------------------------------


async def ahas_memories(store: BaseStore, principal: Principal) -> bool:
    """Whether ``principal`` has any memory (no embedding involved)."""
    return bool(await scoped(store, principal).asearch(NAMESPACE, limit=1, refresh_ttl=False))


async def arecall(
    store: BaseStore,
    principal: Principal,
    query: str | None,
    *,
    limit: int = 5,
    weights: RecallWeights = DEFAULT_WEIGHTS,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
    now: datetime | None = None,
) -> list[Recalled]:
    """The ``limit`` best memories of ``principal`` for ``query`` (None/empty: no relevance).

    A query search of the principal's scoped view ranks its candidates
    (:func:`memory.ranking.ranked`), as every other query search of cold memory does;
    without a query, the newest candidates are ranked by the boosts alone."""
    ranking = Ranking(weights, half_life_days, now)
    view = scoped(store, principal).ranked_by(ranking)
    text = (query or "").strip()
    if not text:
        planned = plan(None, limit, ranking)
        items = await view.asearch(NAMESPACE, limit=planned.pool)
        return [_recalled(item, parts) for item, parts in order(items, planned)[:limit]]
    check_limit(limit)
    if not await view.asearch(NAMESPACE, limit=1, refresh_ttl=False):
        return []
    found = await view.asearch(NAMESPACE, query=text, limit=limit)
    return [_recalled(item, cast(RankedItem, item).parts) for item in found]


async def alist_memories(
    store: BaseStore, principal: Principal, *, limit: int = 100, now: datetime | None = None
) -> list[Recalled]:
    """The principal's memories, newest first, with recency/importance scores."""
    items = await scoped(store, principal).asearch(NAMESPACE, limit=limit, refresh_ttl=False)
    return _newest_first(items, now)


def _newest_first(items: Sequence[Item], now: datetime | None) -> list[Recalled]:
    moment = now or datetime.now(UTC)
    recalled = [_recalled(i, score(i, moment)) for i in items]
    recalled.sort(key=lambda r: (-r.updated_at.timestamp(), r.key))
    return recalled


__all__ = [
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_WEIGHTS",
    "IMPORTANCE_DEFAULT",
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "MAX_BOOST",
    "NAMESPACE",
    "RECENTLY_HALF_LIFE_DAYS",
    "WINDOW_WEIGHT",
    "NewMemory",
    "RecallWeights",
    "Recalled",
    "ScoreParts",
    "aforget",
    "ahas_memories",
    "alist_memories",
    "arecall",
    "aremember",
    "aremember_many",
    "happened_at",
    "importance_score",
    "memory_key",
    "memory_text",
    "memory_value",
    "parse_at",
    "rank",
    "recency_score",
    "relevance_score",
    "score",
]
