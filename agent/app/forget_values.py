"""What a forget of facts changes rather than deletes: an element of a list attribute (the
list's other elements kept as a new version), the session summaries that name a forgotten
value (rewritten without it), the threads whose checkpoints hold it, and the threads whose
pending draft a forget would take (asked about on their own).

:mod:`agent.app.forgetting` plans and applies a forget; this module answers these questions
for it. The rules are in ``docs/memory-lifecycle.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.recollection.forgettable import VALUE_ID, Remembered, Target, target_words

if TYPE_CHECKING:
    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner
    from memory.facts import FactRecord
    from memory.journal.records import SessionSummary

#: The mark left where a forgotten scalar value stood in a rewritten summary.
FORGOTTEN = "[forgotten]"


def value_targets(ids: Iterable[str]) -> list[Target]:
    """The ``attribute:element`` ids among ``ids`` (an attribute of the profile registry)."""
    from agent.learning.profile import REGISTRY

    found = []
    for i in ids:
        match = VALUE_ID.match(i)
        if match and match["attribute"] in REGISTRY:
            found.append(Target(match["attribute"], match["element"]))
    return found


def check_values(mem: Remembered, chosen: Sequence[Target]) -> None:
    """Refuse an ``attribute:element`` id no stored version of the principal holds."""
    from memory.errors import InvalidMemoryError

    unknown = [
        t.value_id
        for t in chosen
        if not any(r.attribute == t.attribute and t.holds(r.value) for r in mem.facts)
    ]
    if unknown:
        raise InvalidMemoryError(
            f"None of your facts holds {', '.join(unknown)}; see `analyst memory list` for "
            "what is stored (a list element is named ATTRIBUTE:ELEMENT, e.g. holdings:NVDA)."
        )


def taken_by(values: Sequence[Target], item: FactRecord) -> list[Target]:
    """The element targets whose forget takes the version ``item``."""
    return [t for t in values if t.attribute == item.attribute and t.holds(item.value)]


def new_versions(
    mem: Remembered, values: Sequence[Target], erased: set[str]
) -> dict[str, list[Any]]:
    """For each attribute an element is forgotten from: its current list without the
    forgotten elements, when the current version is erased and something is left."""
    kept: dict[str, list[Any]] = {}
    for attribute in sorted({t.attribute for t in values}):
        gone = [t for t in values if t.attribute == attribute]
        current = [r for r in mem.facts if r.attribute == attribute and r.status == "open"]
        if not current or current[-1].memory_id not in erased:
            continue
        value = current[-1].value
        rest = [v for v in value or [] if not any(t.holds([v]) for t in gone)]
        if rest:
            kept[attribute] = rest
    return kept


def forgotten_words(
    mem: Remembered, values: Sequence[Target], facts: Iterable[FactRecord]
) -> list[tuple[str, str | None, list[str]]]:
    """``(attribute, element, words)`` of what a forget removes from texts: each forgotten
    element, and each whole attribute whose versions go (its stored values' texts)."""
    found: list[tuple[str, str | None, list[str]]] = [
        (t.attribute, t.element, [str(t.element)]) for t in values
    ]
    whole = {r.attribute for r in facts} - {t.attribute for t in values}
    found += [(a, None, target_words(Target(a), mem)) for a in sorted(whole)]
    return found


def rewrite_text(text: str, forgotten: Sequence[tuple[str, str | None, list[str]]]) -> str:
    """``text`` without what is forgotten: a list element dropped from its comma list, a
    whole attribute's "label value" clause dropped, and any other mention of a forgotten
    value replaced by :data:`FORGOTTEN`."""
    for attribute, element, words in forgotten:
        label = re.escape(attribute.replace("_", " "))
        if element is None:
            text = re.sub(rf"(?i)\b{label}\b[^;]*?(?=;|\.\s|\.?$)", "", text)
        for word in words:
            w = re.escape(word)
            if element is not None:
                text = re.sub(rf"(?i),\s*{w}(?!\w)", "", text)
                text = re.sub(rf"(?i)(?<!\w){w}\s*,\s*", "", text)
                text = re.sub(rf"(?i)\b{label}\s+{w}(?!\w)", "", text)
            text = re.sub(rf"(?i)(?<!\w){w}(?!\w)", FORGOTTEN, text)
    text = re.sub(r":\s*;\s*", ": ", text)
    text = re.sub(r";\s*(?=;|\.|$)", "", text)
    text = re.sub(r"(?i)\bLearned:\s*\.", "", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def rewritten_summaries(
    summaries: Iterable[SessionSummary],
    forgotten: Sequence[tuple[str, str | None, list[str]]],
    erased: set[str],
) -> list[SessionSummary]:
    """The summaries that name a forgotten value, rewritten without it (their erased facts'
    ids dropped); those that name none are left out."""
    found = []
    for s in summaries:
        topic = rewrite_text(s.topic, forgotten)
        summary = rewrite_text(s.summary, forgotten)
        items = tuple(rewrite_text(i, forgotten) for i in s.open_items)
        if (topic, summary, items) == (s.topic, s.summary, s.open_items):
            continue
        learned = tuple(f for f in s.facts_learned if f not in erased)
        found.append(
            replace(s, topic=topic, summary=summary, open_items=items, facts_learned=learned)
        )
    return found


async def holding_threads(
    tiers: Tiers, forgotten: Sequence[tuple[str, str | None, list[str]]]
) -> list[dict[str, Any]]:
    """The principal's threads whose latest state holds a forgotten value (in the profile
    and sessions it loaded, its history summary or its messages), one listed row each."""
    from agent.app.kinds import THREADS
    from agent.recollection.forgettable import row

    words = [w for _, _, ws in forgotten for w in ws if len(w) >= 2]
    if not words:
        return []
    found = []
    for record in THREADS.records(tiers):
        values = (await tiers.thread_state(record.thread_id)).values or {}
        messages = [getattr(m, "content", "") for m in values.get("messages") or ()]
        held = json.dumps(
            [values.get("context_loaded"), values.get("summary"), messages], default=str
        )
        if any(re.search(rf"(?i)(?<!\w){re.escape(w)}(?!\w)", held) for w in words):
            found.append(
                row("threads", record.thread_id, f"a conversation holding it: {record.query}")
            )
    return found


async def pending_drafts(tiers: Tiers, thread_ids: Iterable[str]) -> list[dict[str, Any]]:
    """Of ``thread_ids``, those whose draft awaits a decision: ``{thread_id, ticker, hash}``."""
    found = []
    for thread_id in sorted(thread_ids):
        values = (await tiers.thread_state(thread_id)).values or {}
        draft = values.get("draft") or {}
        if values.get("status") == "awaiting_approval" and draft:
            found.append(
                {
                    "thread_id": thread_id,
                    "ticker": draft.get("ticker"),
                    "hash": str(draft.get("hash", ""))[:12],
                }
            )
    return found


async def write_versions(
    tiers: Tiers, learner: Learner, versions: dict[str, list[Any]], reason: str
) -> list[str]:
    """Record each attribute's list without its forgotten elements as a new version (the
    user confirmed it; no episode: the words it came from may be forgotten too), audited."""
    from memory.facts import MemoryDelta

    written = []
    for attribute, value in versions.items():
        record = await learner.facts.record(
            MemoryDelta(
                subject=learner.subject,
                attribute=attribute,
                value=value,
                valid_from=learner.clock(),
                memory_type="profile",
                source="confirmed",
            )
        )
        await learner.audit_fact(record, reason)
        written.append(record.memory_id)
    return written
