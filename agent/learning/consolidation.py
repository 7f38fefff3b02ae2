"""Maintenance of the episodic layer: related events merge into themes and decay, and no fact
is ever lost doing it.

:func:`consolidate` is what ``analyst memory consolidate`` runs. It works on the cold store
only, in the principal's namespace: the fact ledger, the journal (episodes, summaries,
procedures) and the events themselves are kept — decay lowers an event's retrieval priority,
it never replaces deletion.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agent.recollection.reader import EVENT_KINDS
from memory.identity import Principal
from memory.journal.records import stable_id
from memory.recall import parse_at

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore


async def consolidate(
    store: BaseStore,
    principal: Principal,
    *,
    now: datetime,
    older_than: timedelta = timedelta(days=30),
    min_group: int = 3,
) -> dict[str, Any]:
    """Merge related events into themes and decay the merged ones.

    Events (decisions, rejections, milestones) older than ``older_than`` are grouped by
    ticker; a group of at least ``min_group`` gets one ``theme`` memory (kind ``theme``,
    keyed by ticker, so consolidating again refreshes it) whose text carries every merged
    event's date and text and which cites all their episodes. Each merged event is then
    decayed once: its importance drops by one (lower retrieval priority), and it is marked
    with its theme. Nothing is deleted, and the ledger is not touched: every fact survives
    consolidation. A theme that would lose an event's text is refused.
    """
    from memory.recall import NAMESPACE, NewMemory, aremember_many
    from memory.store.scoped import scoped

    view = scoped(store, principal)
    items = await view.asearch(NAMESPACE, limit=10_000, refresh_ttl=False)
    cutoff = now - older_than
    groups: dict[str, list[Any]] = {}
    for item in items:
        value = item.value
        at = parse_at(value.get("at"))
        if value.get("kind") not in EVENT_KINDS or at is None or at > cutoff:
            continue
        for ticker in (value.get("tickers") or ["(no ticker)"])[:1]:
            groups.setdefault(str(ticker), []).append(item)
    report: dict[str, Any] = {"themes": [], "decayed": []}
    for ticker, members in sorted(groups.items()):
        if len(members) < min_group:
            continue
        members.sort(key=lambda i: (str(i.value.get("at")), i.key))
        lines = [f"{str(i.value['at'])[:10]} {i.value['kind']}: {i.value['text']}" for i in members]
        text = f"{ticker}, {len(members)} events: " + " | ".join(lines)
        if any(str(i.value["text"]) not in text for i in members):
            raise RuntimeError(f"The {ticker} theme would lose an event's text; not stored.")
        theme_key = stable_id("theme", principal.tenant_id, principal.user_id, ticker)
        episodes = sorted({e for i in members for e in i.value.get("episode_ids") or []})
        (key,) = await aremember_many(
            store,
            principal,
            [
                NewMemory(
                    text=text,
                    importance=max(int(i.value.get("importance", 5)) for i in members),
                    kind="theme",
                    about=f"{ticker} history",
                    source="consolidation",
                    episode_ids=episodes,
                    tickers=None if ticker.startswith("(") else [ticker],
                    key=theme_key,
                )
            ],
        )
        report["themes"].append({"key": key, "ticker": ticker, "events": len(members)})
        for item in members:
            if item.value.get("theme") == theme_key:
                continue  # decayed by an earlier consolidation already
            importance = max(1, int(item.value.get("importance", 5)) - 1)
            await view.aput(
                NAMESPACE, item.key, {**item.value, "importance": importance, "theme": key}
            )
            report["decayed"].append(item.key)
    return report
