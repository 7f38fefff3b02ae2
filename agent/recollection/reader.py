"""The read path of the memory layers: what a session starts with, what the planner may use,
and what the model may look up.

:class:`Recollection` reads for one principal, scoped in storage: the profile facts the planner
may use (:func:`usable_fact`), the confirmed procedures code enforces, the session context
within a token budget, and what the model's memory tools return. The write path
(:class:`agent.learning.learner.Learner`) extends it. Nothing here takes an id a model produced;
what a caller puts into a prompt it audits with :meth:`Recollection.audit_read`. More:
``docs/memory-lifecycle.md`` (the read path).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

from memory.facts import subject_for
from memory.identity import Principal

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from agent.records import Mode
    from memory.facts import FactRecord, FactStore
    from memory.journal.base import Journal
    from memory.journal.records import Episode

#: What the planner may use at each confidence level; enforced in code below.
PLANNER_MAY_USE: Mapping[str, str] = {
    "inferred": "nothing: kept as a candidate with its quote for `analyst memory review`",
    "stated": "profile facts the user stated about themselves, cited as stated; a standing "
    "instruction holds in its own thread only",
    "confirmed": "profile facts and procedures, in every thread, until their review date",
}

#: Kinds of the cold-store memories the write path stores as notable events.
EVENT_KINDS = ("decision", "rejection", "milestone")

MemoryLayer = Literal["preference", "event", "memory"]


def memory_layer(kind: str) -> MemoryLayer:
    """Which layer a long-term memory of ``kind`` is shown in: a preference, an event (a
    decision, a rejection, a milestone, or a theme merged from them), or another memory."""
    if kind == "preference":
        return "preference"
    return "event" if kind in (*EVENT_KINDS, "theme") else "memory"


def usable_fact(record: FactRecord) -> bool:
    """Whether the planner may act on a ledger fact: stated or confirmed, never inferred."""
    return record.source in ("stated", "confirmed") and not record.candidate


def procedure_exclusions(procedures: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Tickers the user's confirmed procedures exclude, each with the procedure that says so."""
    out: dict[str, str] = {}
    for p in procedures:
        ticker = (p.get("rule") or {}).get("exclude_ticker")
        if isinstance(ticker, str) and ticker:
            out[ticker.upper()] = f"procedure {p['procedure_id']}: {p['text']}"
    return out


def procedure_mode(procedures: Sequence[Mapping[str, Any]]) -> Mode | None:
    """The research mode a confirmed procedure forces, if any (the latest one wins)."""
    modes = [
        (p.get("rule") or {}).get("mode")
        for p in procedures
        if (p.get("rule") or {}).get("mode") in ("deep", "flash")
    ]
    return cast("Mode | None", modes[-1] if modes else None)


def estimate_tokens(text: str) -> int:
    """A model-free token estimate (about four characters a token), for budgets."""
    return max(1, (len(text) + 3) // 4)


@dataclass(frozen=True)
class SessionContext:
    """What a new session starts with; ``to_json`` is ``context_loaded`` in ``--json``."""

    profile: dict[str, dict[str, Any]] = field(default_factory=dict)
    procedures: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    open_items: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    budget: int = 0
    left_out: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "procedures": self.procedures,
            "sessions": self.sessions,
            "open_items": self.open_items,
            "tokens": self.tokens,
            "budget": self.budget,
            "left_out": self.left_out,
        }

    @property
    def empty(self) -> bool:
        return not (self.profile or self.procedures or self.sessions or self.open_items)

    def describe(self) -> str:
        """One line for the chat: what was loaded."""
        if self.empty:
            return "Nothing remembered yet."
        parts = []
        if self.profile:
            parts.append(
                "profile "
                + ", ".join(f"{k}={v['value']!r}" for k, v in sorted(self.profile.items()))
            )
        if self.procedures:
            parts.append(f"{len(self.procedures)} procedure(s)")
        if self.sessions:
            parts.append(f"{len(self.sessions)} recent session(s)")
        if self.open_items:
            parts.append(f"{len(self.open_items)} open item(s)")
        return f"Loaded from memory ({self.tokens}/{self.budget} tokens): " + "; ".join(parts)


@dataclass
class Recollection:
    """The read path of the memory layers for one principal.

    ``journal`` and ``facts`` are scoped to ``principal`` by the constructor; ``store`` (the
    cold store) may be ``None``: then nothing is recalled from it.
    """

    journal: Journal
    facts: FactStore
    store: BaseStore | None
    principal: Principal
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        self.journal = self.journal.with_principal(self.principal)
        self.facts = self.facts.with_principal(self.principal)

    @property
    def subject(self) -> str:
        return subject_for(self.principal)

    async def audit_read(
        self, tier: str, item_ids: Sequence[str], *, reason: str, content: Any = None
    ) -> None:
        """Audit one read of memory into a prompt (or a model's tool result): the ids read and
        a keyed hash of what was read. A read of nothing is not audited."""
        ids = [i for i in item_ids if i]
        if ids:
            await self.journal.audit("read", tier, ids, reason=reason, content=content)

    async def active_procedures(self) -> list[dict[str, Any]]:
        now = self.clock()
        return [
            p.to_json()
            for p in await self.journal.procedures(status="active")
            if p.confirmed_at <= now
        ]

    async def profile(self) -> dict[str, dict[str, Any]]:
        """The principal's profile facts the planner may use (:func:`usable_fact`)."""
        records = await self.facts.profile(self.subject)
        return {
            name: {
                "value": r.value,
                "source": r.source,
                "since": r.valid_from.isoformat(),
                "memory_id": r.memory_id,
                "episode_ids": [i for i in (r.source_episode_id, *r.restated_in) if i],
            }
            for name, r in sorted(records.items())
            if usable_fact(r)
        }

    async def load_context(self, budget: int) -> SessionContext:
        """What a new session starts with: profile and procedures first, then the most recent
        session summaries and their open items while they fit in ``budget`` tokens."""
        profile = await self.profile()
        procedures = await self.active_procedures()
        used = sum(estimate_tokens(f"{k}: {v['value']}") for k, v in profile.items()) + sum(
            estimate_tokens(p["text"]) for p in procedures
        )
        sessions: list[dict[str, Any]] = []
        items: list[dict[str, Any]] = []
        left_out = 0
        for s in await self.journal.summaries(limit=20):
            cost = estimate_tokens(s.summary) + sum(estimate_tokens(i) for i in s.open_items)
            if used + cost > budget:
                left_out += 1
                continue
            used += cost
            sessions.append(
                {
                    "session_id": s.session_id,
                    "ended": s.ended.isoformat(),
                    "topic": s.topic,
                    "summary": s.summary,
                    "episode_ids": list(s.episode_ids),
                }
            )
            items += [{"text": i, "session_id": s.session_id} for i in s.open_items]
        return SessionContext(profile, procedures, sessions, items, used, budget, left_out)

    # -- read helpers for the model path's memory tools ---------------------------------------

    async def has_memory(self) -> bool:
        """Whether the principal has anything a memory tool could return beyond the current
        conversation: profile facts, procedures, session summaries or long-term memories
        (episodes alone do not count: the conversation holds the current ones)."""
        if await self.profile() or await self.active_procedures():
            return True
        if await self.journal.summaries(limit=1):
            return True
        if self.store is None:
            return False
        from memory.recall import alist_memories

        return bool(await alist_memories(self.store, self.principal, limit=1))

    async def search_episodes(
        self,
        query: str,
        *,
        limit: int = 8,
        events: int = 5,
        days: int = 365,
        scan: int = 5000,
    ) -> dict[str, Any]:
        """The principal's episodes and notable events about ``query``, each citing its id.

        Episodes are not indexed by meaning (the journal keeps their text; only the notable
        events extracted from them are in the cold store), so they are found by keywords: the
        query's words of two characters or more, common words left out, matched whole and
        case-insensitively in the episodes of the last ``days`` (at most ``scan`` of them,
        oldest first past that cap), ranked by how many of the words they hold, newest first
        on a tie. Notable events (kinds ``decision``/``rejection``/``milestone``) are recalled
        by meaning (:func:`memory.recall.arecall`, among its ``3 * events`` best memories).
        Texts are cut to :data:`READ_TEXT_CHARS` characters.
        """
        words = _query_words(query)
        found: list[tuple[int, Episode]] = []
        if words:
            since = self.clock() - timedelta(days=days)
            for e in await self.journal.list_episodes(since=since, limit=scan):
                text = e.text.lower()
                hits = sum(1 for w in words if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text))
                if hits:
                    found.append((hits, e))
        found.sort(key=lambda pair: (-pair[0], -pair[1].at.timestamp(), pair[1].episode_id))
        recalled: list[dict[str, Any]] = []
        if self.store is not None and query.strip() and events > 0:
            from memory.recall import arecall

            for m in await arecall(self.store, self.principal, query, limit=3 * events):
                if m.kind in ("decision", "rejection", "milestone") and len(recalled) < events:
                    recalled.append(
                        {
                            "memory_id": m.key,
                            "kind": m.kind,
                            "text": _cut(m.text),
                            "at": m.when.isoformat(),
                            "episode_ids": list(m.metadata.get("episode_ids") or []),
                        }
                    )
        return {
            "query": query,
            "episodes": [
                {
                    "episode_id": e.episode_id,
                    "thread_id": e.thread_id,
                    "at": e.at.isoformat(),
                    "kind": e.kind,
                    "text": _cut(e.text),
                    "matched": hits,
                }
                for hits, e in found[:limit]
            ],
            "episodes_found": len(found),
            "events": recalled,
            "method": "episodes: keyword match on the query's words; events: recalled by meaning",
        }

    async def open_items(self, *, sessions: int = 10, limit: int = 10) -> list[dict[str, Any]]:
        """Open items of the principal's most recent ``sessions`` session summaries, newest
        session first, each citing its session (at most ``limit``)."""
        items: list[dict[str, Any]] = []
        for s in await self.journal.summaries(limit=sessions):
            for text in s.open_items:
                if len(items) < limit:
                    items.append(
                        {
                            "text": _cut(text),
                            "session_id": s.session_id,
                            "thread_id": s.thread_id,
                            "ended": s.ended.isoformat(),
                            "episode_ids": list(s.episode_ids),
                        }
                    )
        return items

    async def listing(self) -> list[dict[str, Any]]:
        """Everything remembered about the principal, one short ``{layer, id, text, when}``
        row per item: profile facts the planner uses, procedures in force, preferences,
        events, other long-term memories, session summaries (``analyst memory list``, and
        the model's ``list_what_you_remember``)."""
        from memory.recall import alist_memories

        rows = [
            _listed("fact", f["memory_id"], f"{name} = {f['value']!r}", f["since"])
            for name, f in (await self.profile()).items()
        ]
        rows += [
            _listed("procedure", p.procedure_id, p.text, p.confirmed_at.isoformat())
            for p in await self.journal.procedures(status="active")
        ]
        memories = (
            []
            if self.store is None
            else await alist_memories(self.store, self.principal, limit=_EVERYTHING)
        )
        layers: dict[str, list[dict[str, Any]]] = {"preference": [], "event": [], "memory": []}
        for m in memories:
            layer = memory_layer(m.kind)
            when = (m.at or m.updated_at).isoformat()
            name = m.kind if layer == "event" else layer
            layers[layer].append(_listed(name, m.key, m.text, when))
        rows += [r for layer in layers.values() for r in layer]
        rows += [
            _listed("session", s.session_id, s.summary, s.ended.isoformat())
            for s in await self.journal.summaries(limit=_EVERYTHING)
        ]
        return rows


def _listed(layer: str, item_id: str, text: str, when: str | None) -> dict[str, Any]:
    return {"layer": layer, "id": item_id, "text": text, "when": when}


#: As many rows as a listing may hold.
_EVERYTHING = 1_000_000


#: How much of a stored text a memory read returns (the rest is cut with an ellipsis).
READ_TEXT_CHARS = 300
#: Words a keyword search ignores.
_COMMON_WORDS = frozenset(
    "a an and are as at be by did do for from had has have i in is it me my of on or our "
    "so that the their them they this to was we were what when where which who why with you "
    "your".split()
)


def _query_words(query: str) -> list[str]:
    words = re.findall(r"\w+", query.lower())[:20]
    return list(dict.fromkeys(w for w in words if len(w) >= 2 and w not in _COMMON_WORDS))


def _cut(text: str, limit: int = READ_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
