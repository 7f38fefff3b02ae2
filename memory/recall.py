"""Long-term memories of a principal: remember, forget, list, and recall ranked by a score.

Every helper goes through :func:`~memory.store.scoped.scoped` (the principal's namespace of any
LangGraph ``BaseStore``), so it cannot touch another principal's data. :func:`score` ranks
relevance first, with recency and importance as bounded boosts that reorder near-ties only;
:func:`time_window` turns time named in a question into a soft window that ranks the
memories it holds (:func:`memory.timewindows.matches`) ahead of the others, dropping none.
The value layout, keys and the ranking formula are in docs/memory-lifecycle.md ("Long-term
memories and recall").
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp, SearchItem

from memory.errors import InvalidMemoryError, MemoryNotFoundError
from memory.identity import Principal
from memory.recall_context import link_replies, with_replies
from memory.recall_keys import KEY_WEIGHT, QuestionKeys, key_match, memory_keys, question_keys
from memory.store.scoped import MEMORIES, scoped
from memory.timewindows import TimeWindow, matches, time_window

IMPORTANCE_MIN, IMPORTANCE_MAX, IMPORTANCE_DEFAULT = 1, 10, 5
DEFAULT_HALF_LIFE_DAYS = 30.0
RECENTLY_HALF_LIFE_DAYS = 7.0
#: The most recency and importance together can add to a score that has a relevance part.
MAX_BOOST = 0.1
#: The share of the total a question's time window decides: a memory inside it (said then,
#: told shortly after, or describing that time) outranks one outside it unless the outside
#: one is far more relevant.
WINDOW_WEIGHT = 0.5
NAMESPACE: tuple[str, ...] = (MEMORIES,)
"""Where memories live, relative to the principal root."""


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
        return data


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


def score(
    item: Item,
    now: datetime,
    weights: RecallWeights = DEFAULT_WEIGHTS,
    half_life: timedelta = timedelta(days=DEFAULT_HALF_LIFE_DAYS),
    *,
    with_query: bool | None = None,
    window: TimeWindow | None = None,
    keys: QuestionKeys | None = None,
) -> ScoreParts:
    """The score of one stored memory (a ``SearchItem`` contributes its relevance).

    ``with_query`` (default: whether the item carries a search score) selects the bounded
    form ``(1 − B)·relevance + B·boost``; without a query the total is the boost alone.
    A time ``window`` (not "recently") then takes :data:`WINDOW_WEIGHT` of the total: 1 for a
    memory it holds (:func:`memory.timewindows.matches`), 0 for one it does not. The
    question's ``keys`` (with a query, when it has any) then take
    :data:`memory.recall_keys.KEY_WEIGHT`: the share of them the memory holds.
    """
    w = weights.normalised()
    recency = recency_score(happened_at(item), now, half_life)
    importance = importance_score(item.value.get("importance"))
    similarity = item.score if isinstance(item, SearchItem) else None
    relevance = relevance_score(similarity)
    boost_weight = w.recency + w.importance
    boost = (
        (w.recency * recency + w.importance * importance) / boost_weight if boost_weight else 0.0
    )
    queried = similarity is not None if with_query is None else with_query
    if not queried:
        total = boost if boost_weight else 0.0
    else:
        bound = min(MAX_BOOST, boost_weight)
        total = (1.0 - bound) * relevance + bound * boost
    inside = None
    if window is not None and not window.recent:
        inside = 1.0 if matches(window, happened_at(item), memory_text(item.value)) else 0.0
        total = (1.0 - WINDOW_WEIGHT) * total + WINDOW_WEIGHT * inside
    held = None
    if queried and keys is not None and keys.count:
        held = key_match(keys, memory_keys(memory_text(item.value)))
        total = (1.0 - KEY_WEIGHT) * total + KEY_WEIGHT * held
    return ScoreParts(recency, importance, relevance, _clip(total), inside, held)


_METADATA = ("source", "episode_ids", "tickers")


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
    """Score and order items: total, then relevance, then newest, then key."""
    scored = [
        _recalled(item, score(item, now, weights, half_life, window=window, keys=keys))
        for item in items
    ]
    scored.sort(key=lambda r: (-r.parts.total, -r.parts.relevance, -r.when.timestamp(), r.key))
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


# -- reading ------------------------------------------------------------------------------------


#: How many of the store's best candidates recall re-ranks at least (the store's own
#: candidate depth, :data:`memory.store.scoring.CANDIDATES`): the same pool for every limit up
#: to 16, so the boosts cannot make the top 5 differ from the first 5 of the top 10.
RERANK_POOL = 64
#: With a time window: memories in the window may rank deeper by relevance alone.
WINDOW_POOL = 100


def _candidates(limit: int) -> int:
    return max(4 * limit, RERANK_POOL)


# -- recall ---------------------------------------------------------------------------------------


async def ahas_memories(store: BaseStore, principal: Principal) -> bool:
    """Whether ``principal`` has any memory (no embedding involved)."""
    return bool(await scoped(store, principal).asearch(NAMESPACE, limit=1, refresh_ttl=False))


def _check_limit(limit: int) -> None:
    if not isinstance(limit, int) or limit < 1:
        raise InvalidMemoryError(f"limit={limit!r}: recall at least 1 memory.")


@dataclass(frozen=True)
class _Request:
    text: str
    pool: int
    window: TimeWindow | None
    now: datetime
    half_life: timedelta
    keys: QuestionKeys | None


def _request(
    query: str | None, limit: int, half_life_days: float, now: datetime | None
) -> _Request:
    _check_limit(limit)
    moment = now or datetime.now(UTC)
    text = (query or "").strip()
    window = time_window(text, moment) if text else None
    half_life = timedelta(days=half_life_days)
    pool = _candidates(limit)
    if window is not None and window.recent:
        half_life = min(half_life, timedelta(days=RECENTLY_HALF_LIFE_DAYS))
    elif window is not None:
        pool = max(10 * limit, WINDOW_POOL)
    return _Request(text, pool, window, moment, half_life, question_keys(text) if text else None)


def _ranked(
    items: Sequence[Item], req: _Request, weights: RecallWeights, limit: int
) -> list[Recalled]:
    return rank(
        items,
        now=req.now,
        weights=weights,
        half_life=req.half_life,
        limit=limit,
        window=req.window,
        keys=req.keys,
    )


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
    """The ``limit`` best memories of ``principal`` for ``query`` (None/empty: no relevance);
    a query's candidates include the replies of the dialogue turns found
    (:func:`memory.recall_context.with_replies`)."""
    req = _request(query, limit, half_life_days, now)
    view = scoped(store, principal)
    if req.text and not await view.asearch(NAMESPACE, limit=1, refresh_ttl=False):
        return []
    items = await view.asearch(NAMESPACE, query=req.text or None, limit=req.pool)
    if req.text:
        items = await with_replies(view, NAMESPACE, items, limit)
    return _ranked(items, req, weights, limit)


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
