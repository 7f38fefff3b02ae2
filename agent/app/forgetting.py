"""Forgetting one thing, a topic or a time range of a principal, in every tier, with what was
derived from it, and a receipt that says so.

:func:`forget` resolves what is named (ids, a topic, a range), lists a topic or range until it
is confirmed, and hands the chosen items to :func:`cascade`, which asks every memory kind
(:mod:`agent.app.kinds`) what follows from them; :func:`apply` deletes the plan, stores the
tombstones and compacts. Retention and restore reuse :func:`cascade`. The rules (what cascades,
what is kept and why, tombstones) are in ``docs/memory-lifecycle.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from agent.app.compaction import compact, forget_vectors
from agent.app.forget_values import (
    check_values,
    forgotten_words,
    holding_threads,
    new_versions,
    pending_drafts,
    rewritten_summaries,
    taken_by,
    value_targets,
    write_versions,
)
from agent.app.kinds import (
    DERIVED,
    DOCUMENTS,
    EPISODES,
    FACTS,
    JOURNAL_KINDS,
    KINDS,
    STORE,
    SUMMARIES,
    THREADS,
)
from agent.app.memory_kind import ALL, Kind
from agent.app.receipts import (
    FORGET_REASON,
    Receipt,
    Tier,
    backend_notes,
    backups_statement,
    damaged_document,
    kept_records,
)
from agent.learning import meaning
from agent.recollection.forgettable import (
    Remembered,
    Target,
    by_ids,
    by_keyword,
    listing,
    profile_path,
    proposed,
    read_all,
    read_related,
)
from agent.recollection.forgettable import item_key as key_of
from agent.recollection.forgettable import row as listed_row
from memory.ranking import KNOBS, RankedItem
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner
    from memory.identity import Principal
    from memory.journal.records import SessionSummary

#: A store memory found by meaning is a topic candidate from this relevance on
#: (:attr:`memory.ranking.Knobs.meaning_score`).
MEANING_SCORE = KNOBS.meaning_score


def check_request(
    ids: Sequence[str],
    topic: str | None,
    since: datetime | None,
    until: datetime | None,
    about: str | None = None,
) -> None:
    """Refuse a forget that names not exactly one of ids, a topic, a description or a range
    (or an empty topic or description), before anything is opened."""
    from memory.errors import InvalidMemoryError

    asked = sum(
        [bool(ids), topic is not None, about is not None, since is not None or until is not None]
    )
    if asked != 1:
        raise InvalidMemoryError(
            "Say what to forget: one or more ids, or --topic TEXT, or --about TEXT, or "
            "--from DATE --to DATE (one of them)."
        )
    if not ids and topic is not None and not topic.strip():
        raise InvalidMemoryError("Say which topic to forget (--topic TEXT).")
    if not ids and about is not None and not about.strip():
        raise InvalidMemoryError('Say what to forget (--about "that I own NVDA").')


async def forget(
    tiers: Tiers,
    learner: Learner,
    *,
    ids: Sequence[str] = (),
    topic: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    only: Sequence[str] | None = None,
    confirm: bool = False,
    about: str | None = None,
    drafts: bool = False,
) -> Receipt:
    """Forget the items ``ids``, or what ``topic``, the description ``about`` ("that I own
    NVDA": the facts it names by attribute and value, :func:`~agent.recollection.forgettable
    .proposed`) or the range [``since``, ``until``) finds, with everything derived from them.
    Ids are deleted when ``confirm``; a topic, description or range deletes its found items
    when ``confirm`` (all of them) or ``only`` names some of them (those). Otherwise nothing
    changes and the receipt is the plan. A thread whose draft awaits a decision is deleted
    only with ``drafts`` (the receipt's ``drafts`` names them; unconfirmed, they are listed
    as they would go with it).
    """
    check_request(ids, topic, since, until, about)
    principal = tiers.principal
    damaged: list[dict[str, Any]] = []
    mem = await read(tiers, learner, damaged, ids=ids or None)
    scope: dict[str, Any] = {}
    if ids:
        scope["ids"] = list(ids)
        chosen = await _by_ids(tiers, learner, mem, ids)
        listed: list[dict[str, Any]] = []
        if any(tier in ("facts", "values") for tier, _ in chosen):
            # The conversations whose checkpoints hold a forgotten fact (the profile they
            # loaded, answers built from it) go with it, listed.
            named = [{"tier": tier, "id": i} for tier, i in chosen]
            listed = [r for r in await _threads_holding(tiers, mem, named) if r["id"] not in ids]
            chosen += [("threads", r["id"]) for r in listed]
    else:
        scope, listed, chosen = await _found(tiers, mem, topic, about, since, until, only)
        confirm = confirm or only is not None
    if any(tier in ("facts", "values") for tier, _ in chosen):
        # A kept summary naming a forgotten value is rewritten: every summary is a candidate.
        mem.summaries = await learner.journal.summaries(limit=ALL)
    receipt = Receipt(principal.tenant_id, principal.user_id, confirm, scope=scope, found=listed)
    plan = cascade(tiers, mem, chosen)
    receipt.drafts = await pending_drafts(tiers, plan.deleted["threads"])
    if confirm and not drafts:
        for draft in receipt.drafts:
            plan.deleted["threads"].discard(draft["thread_id"])
            plan.kept.append(kept_draft(draft))
    receipt.deleted = {tier: Tier(sorted(found)) for tier, found in plan.deleted.items()}
    receipt.rewritten = {"summaries": Tier(sorted(s.session_id for s in plan.summaries))}
    receipt.kept = [*plan.kept, *damaged, *kept_records(tiers, plan.deleted["threads"])]
    receipt.damaged = [d["paths"][0] for d in damaged]
    receipt.backups = backups_statement(tiers)
    if not confirm or not chosen:
        return receipt
    await apply(tiers, learner, plan, receipt)
    return receipt


def kept_draft(draft: dict[str, Any]) -> dict[str, Any]:
    """The receipt's note for a thread kept because its draft awaits a decision."""
    return {
        "tier": "threads",
        "what": f"thread {draft['thread_id']} and its pending {draft['ticker']} draft "
        f"({draft['hash']})",
        "why": "a thread whose draft awaits your decision is deleted only when you say so; "
        "its checkpoints still hold its words. Decide the draft, then forget the thread "
        "(its id)",
    }


async def _by_ids(
    tiers: Tiers, learner: Learner, mem: Remembered, ids: Sequence[str]
) -> list[tuple[str, str]]:
    """``(tier, id)`` of each id: a list element (``holdings:NVDA``, its attribute's versions
    read into ``mem``), a thread of the principal, or any id of :func:`by_ids`."""
    from memory.facts import subject_for

    values = value_targets(ids)
    held = {r.memory_id for r in mem.facts}
    for attribute in sorted({t.attribute for t in values}):
        rows = await learner.facts.history(subject_for(tiers.principal), attribute)
        mem.facts += [r for r in rows if r.memory_id not in held]
    check_values(mem, values)
    threads = {t.thread_id for t in THREADS.records(tiers)}
    named = {t.value_id for t in values}
    chosen = [("values", i) for i in ids if i in named]
    chosen += [("threads", i) for i in ids if i in threads and i not in named]
    rest = [i for i in ids if i not in named and i not in threads]
    return chosen + (by_ids(mem, rest) if rest else [])


async def _found(
    tiers: Tiers,
    mem: Remembered,
    topic: str | None,
    about: str | None,
    since: datetime | None,
    until: datetime | None,
    only: Sequence[str] | None,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[str, str]]]:
    """The scope, the listed items and the chosen ``(tier, id)`` of a topic, description or
    range forget (``only``: those of the listed ids)."""
    from memory.errors import InvalidMemoryError

    scope: dict[str, Any] = {}
    if about is not None:
        scope["about"] = about
        listed = proposed(mem, about.strip())
        if any(r["tier"] in ("values", "facts") for r in listed):
            listed += await _threads_holding(tiers, mem, listed)
    elif topic is not None:
        scope["topic"] = topic
        listed = await _by_topic(tiers, mem, topic.strip())
    else:
        scope["from"] = None if since is None else since.isoformat()
        scope["to"] = None if until is None else until.isoformat()
        listed = _by_range(mem, since, until)
    wanted = None if only is None else set(only)
    if wanted is not None:
        unknown = sorted(wanted - {row["id"] for row in listed})
        if unknown:
            raise InvalidMemoryError(
                f"--only names ids the search did not list: {', '.join(unknown)}; "
                "choose among the listed ones."
            )
        scope["only"] = sorted(wanted)
    # ``confirm`` takes what the keywords found; a memory found only by meaning (whose
    # score is relative to the rest of the store, so a lone unrelated memory can rank
    # high) goes only when ``only`` names it.
    chosen = [
        (r["tier"], r["id"])
        for r in listed
        if (r["id"] in wanted if wanted is not None else r.get("by") != "meaning")
    ]
    return scope, listed, chosen


async def _threads_holding(
    tiers: Tiers, mem: Remembered, listed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The threads whose checkpoints hold what the listed facts and elements forget, besides
    those the listed episodes take."""
    values = value_targets(r["id"] for r in listed if r["tier"] == "values")
    named = {r["id"] for r in listed if r["tier"] == "facts"}
    facts = [r for r in mem.facts if r.memory_id in named]
    said = {r["id"] for r in listed if r["tier"] == "episodes"}
    going = {e.thread_id for e in mem.episodes if e.episode_id in said}
    found = await holding_threads(tiers, forgotten_words(mem, values, facts))
    return [r for r in found if r["id"] not in going]


@dataclass
class Plan:
    """What a forget deletes, by tier (ids), what it keeps and why, the texts whose cache
    rows go, the text units hashed into tombstones, the store items to delete, and what it
    rewrites."""

    deleted: dict[str, set[str]]
    kept: list[dict[str, Any]]
    texts: list[str]
    tombstone: list[str]
    items: list[Item]
    #: The kept summaries that named a forgotten value, rewritten without it.
    summaries: list[SessionSummary] = field(default_factory=list)
    #: Each list attribute an element is forgotten from: the rest, its new version.
    versions: dict[str, list[Any]] = field(default_factory=dict)


async def read(
    tiers: Tiers,
    learner: Learner,
    damaged: list[dict[str, Any]] | None = None,
    *,
    ids: Sequence[str] | None = None,
) -> Remembered:
    """Everything of the principal a forget chooses from, with the profile document; for a
    forget of ``ids``, only what those ids can touch (named, or citing a named episode:
    :func:`~agent.recollection.forgettable.read_related`, :meth:`~agent.app.kinds.Store.related`),
    since nothing else can be named or follow: its cost is what is forgotten, not what is kept
    (the store's lookup runs alongside the journal's and the ledger's).

    A profile document that cannot be read (not UTF-8, too large, a link refused) never
    blocks a forget: it is left out, and ``damaged`` gets the receipt's note saying so."""
    from memory.errors import DocumentPathError

    if ids is None:
        mem = await read_all(learner, items=await STORE.fetch(tiers))
    else:
        # The store is looked up (for Qdrant Edge, its shard opened) while the journal and the
        # ledger are read. Every id counts as a possible episode: an episode a forget names
        # is one of ``ids``, and an item citing an id that is no episode of the principal's
        # is read but neither named nor taken by the cascade.
        mem, items = await asyncio.gather(
            read_related(learner, ids), STORE.related(tiers, ids, set(ids))
        )
        mem.items = items
    path = profile_path(tiers.principal)
    try:
        if tiers.documents.exists(path):
            mem.profile = (path, tiers.documents.read_text(path))
    except DocumentPathError as e:
        if damaged is not None:
            damaged.append(damaged_document(path, str(e)))
    return mem


async def _by_topic(tiers: Tiers, mem: Remembered, topic: str) -> list[dict[str, Any]]:
    """Items that mention ``topic`` (any case), and store memories about it by meaning."""
    rows = by_keyword(mem, topic)
    if mem.items:
        listed = {r["id"] for r in rows}
        for hit in await by_meaning(await tiers.store(), tiers.principal, topic):
            key = key_of(hit)
            if key not in listed:
                text = str(hit.value.get("text", ""))
                rows.append({**listed_row("store", key, text), "by": "meaning"})
                listed.add(key)
    return rows


async def by_meaning(store: BaseStore, principal: Principal, topic: str) -> list[RankedItem]:
    """The principal's stored items about ``topic`` by meaning, in the ranking's order: a query
    search of the scoped view (ranked as recall ranks, :mod:`memory.ranking`), keeping those
    whose relevance reaches :data:`MEANING_SCORE`."""
    found = await scoped(store, principal).asearch((), query=topic, limit=20, refresh_ttl=False)
    hits = [cast(RankedItem, hit) for hit in found]
    return [hit for hit in hits if hit.parts.relevance >= MEANING_SCORE]


def _by_range(
    mem: Remembered, since: datetime | None, until: datetime | None
) -> list[dict[str, Any]]:
    """What was said (episodes) or derived in [since, until)."""

    def within(when: datetime | str | None) -> bool:
        if when is None:
            return False
        at = datetime.fromisoformat(when) if isinstance(when, str) else when
        return (since is None or at >= since) and (until is None or at < until)

    said = {e.episode_id for e in mem.episodes if within(e.at)}
    return listing(
        mem,
        lambda e: within(e.at),
        lambda s: within(s.started) or within(s.ended),
        lambda r: within(r.recorded_at),
        lambda c: within(c.created_at),
        # A memory is stamped with the wall clock; one learned from an episode of the range
        # was derived in it whenever it was stored.
        lambda i: (
            within(i.value.get("at") or i.created_at)
            or bool(said.intersection(i.value.get("episode_ids") or ()))
        ),
    )


def cascade(tiers: Tiers, mem: Remembered, chosen: Iterable[tuple[str, str]]) -> Plan:
    """What forgetting ``chosen`` (``(tier, id)`` pairs) deletes in each tier, and what it
    keeps and why: each derived kind takes what is named and what follows from the
    forgotten episodes; a list element (``values``) takes every version holding it; the
    threads holding those episodes (or named) go, and so do the profile document's lines
    named or holding a forgotten value. The summaries that are kept but name a forgotten
    fact's value are rewritten without it, and a list keeps its other elements."""
    picked: dict[str, set[str]] = {}
    for tier, item_id in chosen:
        picked.setdefault(tier, set()).add(item_id)
    gone_episodes = picked.get("episodes", set())
    values = value_targets(picked.get("values", ()))
    kept: list[dict[str, Any]] = []
    taken: dict[Kind, list[Any]] = {}
    for kind in DERIVED:
        named = picked.get(kind.tier, set())
        taken[kind] = []
        for item in kind.items(mem):
            follows, note = kind.follows(item, gone_episodes)
            take = follows or kind.named(item, named)
            take = take or (kind is FACTS and bool(taken_by(values, item)))
            # Said of what the cascade takes, or of what it leaves unless the user named it.
            if note is not None and (follows or not take):
                kept.append(note)
            if take:
                taken[kind].append(item)
    taken[EPISODES] = [e for e in mem.episodes if e.episode_id in gone_episodes]
    known_threads = {t.thread_id: t for t in THREADS.records(tiers)}
    threads = {e.thread_id for e in taken[EPISODES]} | picked.get("threads", set())
    taken[THREADS] = [known_threads[t] for t in sorted(threads & set(known_threads))]
    if not taken[EPISODES] and any(taken[kind] for kind in DERIVED):
        kept.append(
            {
                "tier": "episodes",
                "what": "the episodes these items were learned from",
                "why": "forgetting a derived item keeps the words it came from; its tombstone "
                "stops them teaching it again. Forget the episode (its id) to remove the words",
            }
        )
    tombstone = [t for kind, items in taken.items() for i in items for t in _units(kind, i, values)]
    # The profile document's lines: those named, and those holding a forgotten value.
    words = [t.lower() for t in tombstone if len(t.strip()) >= 3]
    named_lines = picked.get(DOCUMENTS.tier, set())
    taken[DOCUMENTS] = [
        line
        for line in DOCUMENTS.items(mem)
        if DOCUMENTS.named(line, named_lines) or DOCUMENTS.holds(line, words)
    ]
    tombstone += [t for line in taken[DOCUMENTS] for t in DOCUMENTS.tombstones(line)]
    texts = [t for kind, items in taken.items() for i in items for t in kind.texts(i)]
    deleted = {kind.tier: {kind.id(i) for i in taken.get(kind, ())} for kind in KINDS}
    erased = deleted["facts"]
    forgotten = forgotten_words(mem, values, taken[FACTS])
    summaries = rewritten_summaries(
        [s for s in mem.summaries if s.session_id not in deleted["summaries"]], forgotten, erased
    )
    texts += [
        t
        for s in mem.summaries
        for t in SUMMARIES.texts(s)
        if s.session_id in {r.session_id for r in summaries}
    ]
    return Plan(
        deleted,
        kept,
        texts,
        [t for t in tombstone if t.strip()],
        taken[STORE],
        summaries,
        new_versions(mem, values, erased),
    )


def _units(kind: Kind, item: Any, values: Sequence[Target]) -> list[str]:
    """What a taken item's tombstone holds: a version taken for a list element holds that
    element only (the list's other elements may be learned again)."""
    if kind is FACTS and any(t.attribute == item.attribute for t in values):
        return [str(t.element) for t in values if t.attribute == item.attribute]
    return kind.tombstones(item)


async def apply(tiers: Tiers, learner: Learner, plan: Plan, receipt: Receipt) -> None:
    """Delete what ``plan`` says, store its tombstones, drop the cache rows of its texts and
    compact what keeps deleted bytes; the receipt says what went."""
    from memory.embeddings import text_hash

    journal = learner.journal
    gone = plan.deleted["episodes"]
    jobs = (await journal.related(sorted(gone))).jobs if gone else ()
    receipt.tombstones = len(await journal.add_tombstones(plan.tombstone, reason=FORGET_REASON))
    await THREADS.delete(tiers, plan.deleted["threads"])
    # Every journal kind in one transaction.
    ids = {kind.tier: sorted(plan.deleted.get(kind.tier, ())) for kind in JOURNAL_KINDS}
    ids["extraction_jobs"] = [j.job_id for j in jobs]
    erased = await journal.erase(ids, reason=FORGET_REASON)
    for tier, found in erased.items():
        receipt.deleted[tier] = Tier(found)
    facts = {i: i for i in plan.deleted["facts"]}
    receipt.deleted["facts"] = Tier(await FACTS.erase(tiers, learner, facts, FORGET_REASON))
    kept = await write_versions(tiers, learner, plan.versions, "kept after forgetting an element")
    receipt.rewritten["facts"] = Tier(kept)
    for summary in plan.summaries:
        await journal.put_summary(summary)
    if plan.summaries:
        ids_ = [s.session_id for s in plan.summaries]
        await tiers.audit("write", "summaries", ids_, "rewritten: " + FORGET_REASON)
    lines = {i: i for i in plan.deleted["documents"]}
    await DOCUMENTS.erase(tiers, learner, lines, FORGET_REASON)
    await STORE.erase(tiers, learner, {key_of(i): i for i in plan.items}, FORGET_REASON)
    hashes = sorted({text_hash(t) for t in plan.texts if t})
    forget_vectors(tiers, hashes)
    meaning.forget_clauses()  # this process's clause vectors, keyed by the user's words
    receipt.deleted["embedding_cache"] = Tier(hashes)
    if hashes:
        await tiers.audit("delete", "embedding_cache", hashes, FORGET_REASON)
    changed = [tier for tier, found in receipt.deleted.items() if found.ids]
    changed += [tier for tier, found in receipt.rewritten.items() if found.ids]
    receipt.compacted = await compact(tiers, sorted(set(changed)))
    receipt.notes = backend_notes(tiers)
