"""Session summaries: what a session was about, what was decided, learned and left open.

:func:`session_summary` writes the summary stored at a session's end from grounded material
only: the topic, the decisions among the grounded events, the facts the ledger recorded from
the session, the preferences held for confirmation, the grounded open items and, when nothing
else happened, what the user asked, quoted from their first message. Nothing a model wrote
freely reaches it. Personal values are never written into it (they are named, not shown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.learning.profile import REGISTRY, is_personal

if TYPE_CHECKING:
    from agent.learning.extraction import Extraction
    from memory.journal.records import Episode


def _value(attribute: str, value: Any) -> str:
    if is_personal(attribute):
        return "(personal data, not shown)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _sentence(label: str, items: Sequence[str]) -> str:
    return f"{label}: {'; '.join(items)}." if items else ""


def _excerpt(text: str, limit: int = 120) -> str:
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    cut = words[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def session_summary(
    accepted: Extraction,
    learned: Sequence[Mapping[str, Any]],
    episodes: Sequence[Episode],
) -> str:
    """The summary of a session from its grounded extraction (``accepted``), the outcomes of
    the facts applied from it (``learned``: attribute and value of each recorded fact) and
    its episodes."""
    decided = [
        e.text.rstrip(".") for e in accepted.notable_events if e.type in ("decision", "rejection")
    ]
    facts: dict[str, str] = {}
    for item in learned:
        name = str(item.get("attribute", ""))
        if name in REGISTRY and "value" in item:
            facts[name] = f"{name.replace('_', ' ')} {_value(name, item['value'])}"
    noted = [s.text for s in accepted.preference_signals]
    parts = [
        f"Topic: {accepted.topic}." if accepted.topic else "",
        _sentence("Decided", decided),
        _sentence("Learned", list(facts.values())),
        _sentence("Preferences to confirm", [_excerpt(t, 80) for t in noted]),
        _sentence("Open", [_excerpt(i.text, 80) for i in accepted.open_items]),
    ]
    if not (decided or facts or noted or accepted.open_items):
        first = next((e.text for e in episodes if e.kind == "message" and e.text.strip()), "")
        if first:
            parts.append(f'Asked: "{_excerpt(first)}".')
    return " ".join(p for p in parts if p)
