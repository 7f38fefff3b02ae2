"""What moved a report's verdict or plan: the profile facts a draft cites, with the
episodes they were learned from.

A draft records the fit of its recommendation to the profile (``recommendation.profile_fit``:
each breach cites its fact as ``(fact <id>)``) and the plan's rationale (``plan_rationale``,
citing facts the same way). :func:`profile_causes` reads those citations, finds each fact in
the principal's profile, and returns one :class:`Cause` per fact: what it changed, the value,
and the episodes (with a quote of the first) it rests on. A fact the profile no longer holds
is still named, by its id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.recollection.reader import Recollection

_FACT = re.compile(r"\(fact ([^()\s]+)\)")


@dataclass
class Cause:
    """One profile fact and what it did to a draft (``effects``: by ``verdict`` or ``plan``,
    in the draft's words)."""

    memory_id: str
    attribute: str | None
    value: Any
    effects: dict[str, list[str]] = field(default_factory=dict)
    episode_ids: list[str] = field(default_factory=list)
    quote: str | None = None


def cited_facts(text: str) -> list[str]:
    """The fact ids ``text`` cites, in order, once each."""
    return list(dict.fromkeys(_FACT.findall(text)))


def _effects(draft: Mapping[str, Any]) -> dict[str, dict[str, list[str]]]:
    """What each cited fact did to the draft, by what it moved (``verdict`` or ``plan``): the
    breaches the recommendation's fit names, and the plan sentences citing it."""
    out: dict[str, dict[str, list[str]]] = {}

    def add(memory_id: str, kind: str, said: str) -> None:
        said = " ".join(_FACT.sub("", said).split()).rstrip(" ;:.,")
        listed = out.setdefault(memory_id, {}).setdefault(kind, [])
        if said and said not in listed:
            listed.append(said)

    fit = (draft.get("recommendation") or {}).get("profile_fit") or {}
    for breach in fit.get("breaches") or []:
        for memory_id in cited_facts(breach):
            add(memory_id, "verdict", re.split(r",? the fact ", breach)[0])
    if fit and not fit.get("breaches"):
        for memory_id in cited_facts(str(fit.get("statement") or "")):
            add(memory_id, "verdict", "the stock fits it")
    for sentence in re.split(r"(?<=\.)\s+", str(draft.get("plan_rationale") or "")):
        head = sentence.split(" because ", 1)[0] if " because " in sentence else sentence
        for memory_id in cited_facts(sentence):
            add(memory_id, "plan", head[:160])
    return out


async def profile_causes(reader: Recollection, draft: Mapping[str, Any]) -> list[Cause]:
    """The profile facts that moved ``draft``'s verdict or plan, each with its episodes and a
    quote of the first."""
    effects = _effects(draft)
    if not effects:
        return []
    by_id = {f["memory_id"]: (name, f) for name, f in (await reader.profile()).items()}
    causes = []
    for memory_id, said in effects.items():
        name, fact = by_id.get(memory_id, (None, {}))
        causes.append(
            Cause(
                memory_id,
                name,
                fact.get("value"),
                said,
                list(fact.get("episode_ids") or []),
            )
        )
    wanted = [c.episode_ids[0] for c in causes if c.episode_ids]
    if wanted:
        texts = {e.episode_id: e.text for e in await reader.journal.episodes(wanted)}
        for c in causes:
            if c.episode_ids:
                c.quote = texts.get(c.episode_ids[0])
    return causes
