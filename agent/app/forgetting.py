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
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent.app.compaction import compact, forget_vectors
from agent.app.kinds import (
    DERIVED,
    DOCUMENTS,
    EPISODES,
    FACTS,
    JOURNAL_KINDS,
    KINDS,
    STORE,
    THREADS,
)
from agent.app.memory_kind import Kind
from agent.app.receipts import (
    FORGET_REASON,
    Receipt,
    Tier,
    backend_notes,
    backups_statement,
    damaged_document,
    kept_records,
)
from agent.recollection.forgettable import (
    Remembered,
    by_ids,
    by_keyword,
    listing,
    profile_path,
    read_all,
    read_related,
)
from agent.recollection.forgettable import item_key as key_of
from agent.recollection.forgettable import row as listed_row
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langgraph.store.base import Item

    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner

#: A store memory found by meaning is a topic candidate from this hybrid-search score on.
MEANING_SCORE = 0.5


def check_request(
    ids: Sequence[str], topic: str | None, since: datetime | None, until: datetime | None
) -> None:
    """Refuse a forget that names not exactly one of ids, a topic or a range (or an empty
    topic), before anything is opened."""
    from memory.errors import InvalidMemoryError

    asked = sum([bool(ids), topic is not None, since is not None or until is not None])
    if asked != 1:
        raise InvalidMemoryError(
            "Say what to forget: one or more ids, or --topic TEXT, or --from DATE --to DATE "
            "(one of them)."
        )
    if not ids and topic is not None and not topic.strip():
        raise InvalidMemoryError("Say which topic to forget (--topic TEXT).")


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
) -> Receipt:
    """Forget the items ``ids``, or what ``topic`` or the range [``since``, ``until``) finds,
    with everything derived from them. Ids are deleted when ``confirm``; a topic or range
    deletes its found items when ``confirm`` (all of them) or ``only`` names some of them
    (those). Otherwise nothing changes and the receipt is the plan.
    """
    from memory.errors import InvalidMemoryError

    check_request(ids, topic, since, until)
    principal = tiers.principal
    damaged: list[dict[str, Any]] = []
    mem = await read(tiers, learner, damaged, ids=ids or None)
    scope: dict[str, Any] = {}
    if ids:
        scope["ids"] = list(ids)
        chosen = by_ids(mem, ids)
        listed: list[dict[str, Any]] = []
    else:
        if topic is not None:
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
        confirm = confirm or wanted is not None
    receipt = Receipt(principal.tenant_id, principal.user_id, confirm, scope=scope, found=listed)
    plan = cascade(tiers, mem, chosen)
    receipt.deleted = {tier: Tier(sorted(found)) for tier, found in plan.deleted.items()}
    receipt.kept = [*plan.kept, *damaged, *kept_records(tiers, plan.deleted["threads"])]
    receipt.damaged = [d["paths"][0] for d in damaged]
    receipt.backups = backups_statement(tiers)
    if not confirm or not chosen:
        return receipt
    await apply(tiers, learner, plan, receipt)
    return receipt


@dataclass
class Plan:
    """What a forget deletes, by tier (ids), what it keeps and why, the texts whose cache
    rows go, the text units hashed into tombstones, and the store items to delete."""

    deleted: dict[str, set[str]]
    kept: list[dict[str, Any]]
    texts: list[str]
    tombstone: list[str]
    items: list[Item]


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
        view = scoped(await tiers.store(), tiers.principal)
        listed = {r["id"] for r in rows}
        for hit in await view.asearch((), query=topic, limit=20, refresh_ttl=False):
            key = key_of(hit)
            if key not in listed and (hit.score or 0.0) >= MEANING_SCORE:
                text = str(hit.value.get("text", ""))
                rows.append({**listed_row("store", key, text), "by": "meaning"})
                listed.add(key)
    return rows


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
    forgotten episodes; the threads holding those episodes go, and so do the profile
    document's lines named or holding a forgotten value."""
    picked: dict[str, set[str]] = {}
    for tier, item_id in chosen:
        picked.setdefault(tier, set()).add(item_id)
    gone_episodes = picked.get("episodes", set())
    kept: list[dict[str, Any]] = []
    taken: dict[Kind, list[Any]] = {}
    for kind in DERIVED:
        named = picked.get(kind.tier, set())
        taken[kind] = []
        for item in kind.items(mem):
            follows, note = kind.follows(item, gone_episodes)
            take = follows or kind.named(item, named)
            # Said of what the cascade takes, or of what it leaves unless the user named it.
            if note is not None and (follows or not take):
                kept.append(note)
            if take:
                taken[kind].append(item)
    taken[EPISODES] = [e for e in mem.episodes if e.episode_id in gone_episodes]
    known_threads = {t.thread_id: t for t in THREADS.records(tiers)}
    threads = {e.thread_id for e in taken[EPISODES]} & set(known_threads)
    taken[THREADS] = [known_threads[t] for t in sorted(threads)]
    if not taken[EPISODES] and any(taken[kind] for kind in DERIVED):
        kept.append(
            {
                "tier": "episodes",
                "what": "the episodes these items were learned from",
                "why": "forgetting a derived item keeps the words it came from; its tombstone "
                "stops them teaching it again. Forget the episode (its id) to remove the words",
            }
        )
    tombstone = [t for kind, items in taken.items() for i in items for t in kind.tombstones(i)]
    # The profile document's lines: those named, and those holding a forgotten value.
    values = [t.lower() for t in tombstone if len(t.strip()) >= 3]
    named_lines = picked.get(DOCUMENTS.tier, set())
    taken[DOCUMENTS] = [
        line
        for line in DOCUMENTS.items(mem)
        if DOCUMENTS.named(line, named_lines) or DOCUMENTS.holds(line, values)
    ]
    tombstone += [t for line in taken[DOCUMENTS] for t in DOCUMENTS.tombstones(line)]
    texts = [t for kind, items in taken.items() for i in items for t in kind.texts(i)]
    deleted = {kind.tier: {kind.id(i) for i in taken.get(kind, ())} for kind in KINDS}
    return Plan(deleted, kept, texts, [t for t in tombstone if t.strip()], taken[STORE])


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
    lines = {i: i for i in plan.deleted["documents"]}
    await DOCUMENTS.erase(tiers, learner, lines, FORGET_REASON)
    await STORE.erase(tiers, learner, {key_of(i): i for i in plan.items}, FORGET_REASON)
    hashes = sorted({text_hash(t) for t in plan.texts if t})
    forget_vectors(tiers, hashes)
    receipt.deleted["embedding_cache"] = Tier(hashes)
    if hashes:
        await tiers.audit("delete", "embedding_cache", hashes, FORGET_REASON)
    receipt.compacted = await compact(
        tiers, [tier for tier, found in receipt.deleted.items() if found.ids]
    )
    receipt.notes = backend_notes(tiers)
