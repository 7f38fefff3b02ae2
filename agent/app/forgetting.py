"""Forgetting: one thing, a topic, a time range, or everything of a principal -- in every
tier -- and a receipt that says so.

**Forget one thing, a topic or a time range** (:func:`forget`; ``app.memory.forget``,
``analyst memory forget ID | --topic T | --from D --to D``). What is named is resolved first:
an id is an episode, a fact's memory id, a candidate, a procedure, a session summary's id or
a cold-store memory key; a topic finds, by keyword, episodes, summaries, facts, candidates and
store memories, and by meaning store memories (hybrid search, score at least
:data:`MEANING_SCORE`; such a memory is listed as found ``by: meaning`` and deleted only when
``only`` names it, since a hybrid score is relative to what else the store holds); a range finds what was said (episodes) or derived (summaries, facts,
candidates, procedures, memories) in it. A topic or range is only *listed* until confirmed
(``confirm``: every keyword match; or ``only``: the listed ids to delete). Each forgotten episode
cascades to what was derived from it: facts whose every source (``source_episode_id`` and
``restated_in``) is forgotten (those rows, physically; a row also stated elsewhere is kept and
the receipt says why), summaries, candidates and procedures citing it (a summary citing other
episodes too is deleted all the same, and the receipt says so), cold-store memories citing it
(with their vectors), extraction jobs covering it (pending or done), the embedding-cache rows
of every deleted text, and **the threads** whose episodes are forgotten. The thread is
*deleted* (every checkpoint, write and blob, its index row and draft charts), not rewritten:
every checkpoint of the thread holds the words in its messages, and rewriting each stored
checkpoint (and the pending writes) safely is far more code than the value of resuming a
thread whose content the user asked to erase. The receipt lists the threads deleted.
Forgetting a derived item (a fact, candidate, memory) by id deletes that item only; the
episode it came from is kept (the receipt says so), and its tombstone stops it being learned
again from that episode.

**Tombstones.** Every forget stores the keyed hash (:mod:`memory.journal.audit`) of each text
unit it forgot -- each episode's text and each of its sentences, each candidate's quote and
text, each fact's value, each memory's text -- never the text
(:meth:`~memory.journal.base.Journal.add_tombstones`). Extraction
(:class:`~agent.learning.learner.Learner`) skips an episode or item that hashes to one, recording
nothing; ``remember`` refuses it. A tombstone is per user and outlives the forget; a fact
value used as a tombstone ("2 years") also stops the same value being learned from other
words, which is the conservative reading of "forget this".

**Account deletion** (:func:`forget_account`).

:func:`forget_account` is what ``app.memory.forget_account`` and ``analyst memory forget
--everything`` run. Without ``confirm`` it only reads and returns the plan (what would be
deleted, by tier); with it, it deletes, in this order:

1. **Threads** (hot tier): every thread of the principal's thread index, with every
   checkpoint, write and blob the saver holds, its index row and its draft charts
   (:meth:`~agent.app.AnalystApp.delete_thread`). The thread is deleted, never rewritten: a
   checkpoint is the state the graph resumes from, and account deletion leaves nothing to
   resume.
2. **The journal**: episodes, extraction jobs (pending ones too, so nothing re-learns the
   account afterwards), candidates, session summaries and procedures, physically deleted in
   one transaction (:meth:`~memory.journal.base.Journal.erase_principal`).
3. **The ledger**: every fact row about ``user:<id>`` with its whole history, and the grants
   the user holds (:meth:`~memory.facts.base.FactStore.erase_own`).
4. **The cold store**: every item under the principal's namespace root (memories, events,
   themes), their dense and BM25 vectors with them; a Qdrant Edge shard is then rebuilt
   (:meth:`~memory.store.edge.EdgeStore.rebuild`), because a deleted point's payload stays in
   the segment pages and the write-ahead log until the shard is rewritten.
5. **The embedding cache**: the rows of the content hash of every deleted text (episodes,
   summaries, candidates' quotes, facts' values, store items' embedded fields, thread
   requests). The cache holds hashes and vectors, never text.
6. **Freed pages**: each embedded SQLite file of the configuration is checkpointed
   (``wal_checkpoint(TRUNCATE)``) and ``VACUUM`` ed, so no free page or WAL frame keeps the
   deleted bytes. ``secure_delete`` was the alternative; it zeroes pages as they are freed but
   not the WAL copies of them, and costs every delete; one VACUUM at the end of an erasure is
   the cheaper sure thing. On Postgres the application role cannot ``VACUUM`` the owner's
   tables: deleted rows stay as dead tuples until autovacuum (or the owner's ``VACUUM``)
   reclaims them; the receipt says so.

Kept, and listed in the receipt with the reason: research notes the user published or
approved (business records), the memory audit (append-only: ids and keyed hashes, never
content), and the tombstones of earlier forgets (keyed hashes, never content: they stop a
restored backup teaching the forgotten things again). The receipt ends with the backup
statement: a backup made with ``analyst db backup`` (and the ``before-restore-*`` copies a
restore leaves in ``<data dir>/backups``) still holds the data until it is deleted.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent.errors import ThreadNotFoundError
from agent.recollection.forgettable import Remembered as _Memory
from agent.recollection.forgettable import all_items, by_keyword, profile_path, read_all
from agent.recollection.forgettable import by_ids as _by_ids
from agent.recollection.forgettable import item_key as _key
from agent.recollection.forgettable import listing as _listing
from agent.recollection.forgettable import row as _row
from memory.errors import AnalystError
from memory.facts import subject_for
from memory.journal.queries import OWNED_TABLES
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langgraph.store.base import Item

    from agent.app.service import AnalystApp

#: The fixed reason every audit entry of an account deletion carries.
REASON = "account deleted by the user"
#: The fixed reason every audit entry of a forget carries.
FORGET_REASON = "forgotten at the user's request"
#: A store memory found by meaning is a topic candidate from this hybrid-search score on.
MEANING_SCORE = 0.5
#: Research notes live here in document memory (see agent.research.publishing).
_NOTES = "research/**/*.md"
_PAGE = 1000


@dataclass
class Tier:
    """What one tier deleted: how many, and which ids."""

    ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"count": len(self.ids), "ids": self.ids}


@dataclass
class Receipt:
    """What an account deletion did (or, unconfirmed, would do)."""

    tenant_id: str
    user_id: str
    confirmed: bool
    deleted: dict[str, Tier] = field(default_factory=dict)
    kept: list[dict[str, Any]] = field(default_factory=list)
    compacted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backups: str = ""
    #: What was asked to be forgotten (a forget; empty for account deletion).
    scope: dict[str, Any] = field(default_factory=dict)
    #: The items a topic or range found, listed for confirmation: ``{tier, id, text}``.
    found: list[dict[str, Any]] = field(default_factory=list)
    #: How many tombstones the forget stored (keyed hashes, never text).
    tombstones: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "confirmed": self.confirmed,
            "scope": self.scope,
            "found": self.found,
            "tombstones": self.tombstones,
            "deleted": {tier: found.to_json() for tier, found in self.deleted.items()},
            "kept": self.kept,
            "compacted": self.compacted,
            "notes": self.notes,
            "backups": self.backups,
        }


async def forget_account(app: AnalystApp, *, confirm: bool) -> Receipt:
    """Delete everything of ``app.principal`` (``confirm``), or say what would go (not)."""
    from memory.embeddings import text_hash

    principal = app.principal
    receipt = Receipt(principal.tenant_id, principal.user_id, confirm)
    learner = await app.memory.learner()
    journal, facts = learner.journal, learner.facts
    subject = subject_for(principal)

    threads = app.index.list(principal, limit=1_000_000)
    episodes = await journal.list_episodes(limit=1_000_000)
    summaries = await journal.summaries(limit=1_000_000)
    candidates = await journal.candidates(limit=1_000_000)
    jobs = await journal.jobs(limit=1_000_000)
    procedures = await journal.procedures(status=None)
    profile = await facts.profile(subject)
    fact_rows = [r for a in profile for r in await facts.history(subject, a)]
    items = await _items(app)

    texts: list[str] = [t.query for t in threads]
    texts += [e.text for e in episodes]
    texts += [part for s in summaries for part in (s.topic, s.summary, *s.open_items)]
    texts += [c.quote for c in candidates]
    texts += [p.text for p in procedures]
    texts += [v if isinstance(v, str) else str(v) for v in (r.value for r in fact_rows)]
    texts += [v for item in items for v in item.value.values() if isinstance(v, str)]
    hashes = sorted({text_hash(t) for t in texts if t})

    receipt.deleted["threads"] = Tier(sorted(t.thread_id for t in threads))
    planned = {
        "episodes": [e.episode_id for e in episodes],
        "extraction_jobs": [j.job_id for j in jobs],
        "candidates": [c.candidate_id for c in candidates],
        "summaries": [s.session_id for s in summaries],
        "procedures": [p.procedure_id for p in procedures],
    }
    for tier in OWNED_TABLES:
        receipt.deleted[tier] = Tier(sorted(planned[tier]))
    receipt.deleted["facts"] = Tier(sorted(r.memory_id for r in fact_rows))
    receipt.deleted["grants"] = Tier(
        sorted(
            f"{g.role}:{g.subject}" for g in await facts.grants() if g.user_id == principal.user_id
        )
    )
    receipt.deleted["store"] = Tier(sorted("/".join((*i.namespace, i.key)) for i in items))
    receipt.deleted["embedding_cache"] = Tier(hashes)
    document = profile_path(principal)
    receipt.deleted["documents"] = Tier([document] if app.documents.exists(document) else [])
    receipt.kept = [
        *_kept(app, {t.thread_id for t in threads}),
        {
            "tier": "tombstones",
            "what": "tombstones of what this user forgot earlier",
            "why": "keyed hashes, never text: they stop a restored backup or a re-imported "
            "conversation from teaching the forgotten things again",
        },
    ]
    receipt.backups = _backups(app)
    if not confirm:
        return receipt

    for record in threads:
        try:
            await app.delete_thread(record.thread_id)
        except ThreadNotFoundError:  # deleted meanwhile by another process
            continue
    erased = await journal.erase_principal(reason=REASON)
    for tier, ids in erased.items():
        receipt.deleted[tier] = Tier(ids)
    fact_ids, grants = await facts.erase_own()
    receipt.deleted["facts"] = Tier(fact_ids)
    receipt.deleted["grants"] = Tier(grants)
    items = await _items(app)  # anything written since the plan goes too
    receipt.deleted["store"] = Tier(
        sorted({*receipt.deleted["store"].ids, *("/".join((*i.namespace, i.key)) for i in items)})
    )
    await _delete_items(app, items)
    if fact_ids or grants:
        await app._audit("delete", "facts", [*fact_ids, *grants], REASON)
    if receipt.deleted["store"].ids:
        await app._audit("delete", "store", receipt.deleted["store"].ids, REASON)
    _forget_vectors(app, hashes)
    if hashes:
        await app._audit("delete", "embedding_cache", hashes, REASON)
    if app.documents.delete(document):
        app.documents.reindex()  # the index's rows of the document go with it
        await app._audit("delete", "documents", [document], REASON)
    receipt.compacted = await _compact(app)
    receipt.notes = _notes(app)
    return receipt


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


async def forget(
    app: AnalystApp,
    *,
    ids: Sequence[str] = (),
    topic: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    only: Sequence[str] | None = None,
    confirm: bool = False,
) -> Receipt:
    """Forget the items ``ids``, or what ``topic`` or the range [``since``, ``until``) finds,
    with everything derived from them (see the module docstring). Ids are deleted when
    ``confirm``; a topic or range deletes its found items when ``confirm`` (all of them) or
    ``only`` names some of them (those). Otherwise nothing changes and the receipt is the plan.
    """
    from memory.errors import InvalidMemoryError

    principal = app.principal
    asked = sum([bool(ids), topic is not None, since is not None or until is not None])
    if asked != 1:
        raise InvalidMemoryError(
            "Say what to forget: one or more ids, or --topic TEXT, or --from DATE --to DATE "
            "(one of them)."
        )
    mem = await _read(app)
    scope: dict[str, Any] = {}
    if ids:
        scope["ids"] = list(ids)
        chosen = _by_ids(mem, ids)
        listed: list[dict[str, Any]] = []
    else:
        if topic is not None:
            if not topic.strip():
                raise InvalidMemoryError("Say which topic to forget (--topic TEXT).")
            scope["topic"] = topic
            listed = await _by_topic(app, mem, topic.strip())
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
    plan = _cascade(app, mem, chosen)
    receipt.deleted = {tier: Tier(sorted(found)) for tier, found in plan.deleted.items()}
    receipt.kept = [*plan.kept, *_kept(app, plan.deleted["threads"])]
    receipt.backups = _backups(app)
    if not confirm or not chosen:
        return receipt
    await _apply(app, plan, receipt)
    return receipt


@dataclass
class _Plan:
    deleted: dict[str, set[str]]
    kept: list[dict[str, Any]]
    texts: list[str]
    tombstone: list[str]
    items: list[Item]


async def _read(app: AnalystApp) -> _Memory:
    mem = await read_all(await app.memory.learner(), items=await _items(app))
    path = profile_path(app.principal)
    if app.documents.exists(path):
        mem.profile = (path, app.documents.read_text(path))
    return mem


async def _by_topic(app: AnalystApp, mem: _Memory, topic: str) -> list[dict[str, Any]]:
    """Items that mention ``topic`` (any case), and store memories about it by meaning."""
    rows = by_keyword(mem, topic)
    if mem.items:
        view = scoped(await app.store(), app.principal)
        listed = {r["id"] for r in rows}
        for hit in await view.asearch((), query=topic, limit=20, refresh_ttl=False):
            key = _key(hit)
            if key not in listed and (hit.score or 0.0) >= MEANING_SCORE:
                rows.append({**_row("store", key, str(hit.value.get("text", ""))), "by": "meaning"})
                listed.add(key)
    return rows


def _by_range(mem: _Memory, since: datetime | None, until: datetime | None) -> list[dict[str, Any]]:
    """What was said (episodes) or derived in [since, until)."""

    def within(when: datetime | str | None) -> bool:
        if when is None:
            return False
        at = datetime.fromisoformat(when) if isinstance(when, str) else when
        return (since is None or at >= since) and (until is None or at < until)

    said = {e.episode_id for e in mem.episodes if within(e.at)}
    return _listing(
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


def _cascade(app: AnalystApp, mem: _Memory, chosen: Iterable[tuple[str, str]]) -> _Plan:
    """What forgetting ``chosen`` deletes in each tier, and what it keeps and why."""
    picked: dict[str, set[str]] = {}
    for tier, item_id in chosen:
        picked.setdefault(tier, set()).add(item_id)
    by_key = {i.key: i for i in mem.items} | {_key(i): i for i in mem.items}
    gone_episodes = picked.get("episodes", set())
    kept: list[dict[str, Any]] = []

    def cites(ids: Iterable[str]) -> bool:
        return bool(gone_episodes.intersection(ids))

    summaries = [
        s
        for s in mem.summaries
        if s.session_id in picked.get("summaries", ()) or cites(s.episode_ids)
    ]
    for s in summaries:
        others = sorted(set(s.episode_ids) - gone_episodes)
        if cites(s.episode_ids) and others:
            kept.append(
                {
                    "tier": "summaries",
                    "what": f"session summary {s.session_id}",
                    "why": "deleted too, although it also summarised episodes that are kept "
                    f"({', '.join(others)}): a summary cannot be split",
                }
            )
    candidates = [
        c
        for c in mem.candidates
        if c.candidate_id in picked.get("candidates", ()) or cites(c.episode_ids)
    ]
    procedures = [
        p
        for p in mem.procedures
        if p.procedure_id in picked.get("procedures", ()) or cites(p.episode_ids)
    ]
    facts = []
    for r in mem.facts:
        sources = {s for s in (r.source_episode_id, *r.restated_in) if s}
        if r.memory_id in picked.get("facts", ()) or (sources and sources <= gone_episodes):
            facts.append(r)
        elif cites(sources):
            kept.append(
                {
                    "tier": "facts",
                    "what": f"fact {r.memory_id} ({r.attribute})",
                    "why": "also stated in episodes that are kept: "
                    + ", ".join(sorted(sources - gone_episodes)),
                }
            )
    items = {by_key[k].key: by_key[k] for k in picked.get("store", ()) if k in by_key}
    for i in mem.items:
        if cites(i.value.get("episode_ids") or ()):
            items[i.key] = i
    episodes = [e for e in mem.episodes if e.episode_id in gone_episodes]
    threads = {e.thread_id for e in episodes}
    known_threads = {t.thread_id: t for t in app.index.list(app.principal, limit=1_000_000)}
    derived_only = not episodes and (facts or candidates or items or procedures or summaries)
    if derived_only:
        kept.append(
            {
                "tier": "episodes",
                "what": "the episodes these items were learned from",
                "why": "forgetting a derived item keeps the words it came from; its tombstone "
                "stops them teaching it again. Forget the episode (its id) to remove the words",
            }
        )
    tombstone = [t for e in episodes for t in (e.text, *_SENTENCE.split(e.text))]
    tombstone += [t for c in candidates for t in (c.quote, *_strings(c.payload.values()))]
    tombstone += [t for r in facts for t in _strings([r.value])]
    tombstone += [str(i.value.get("text", "")) for i in items.values()]
    texts = [e.text for e in episodes]
    texts += [part for s in summaries for part in (s.topic, s.summary, *s.open_items)]
    texts += [c.quote for c in candidates] + [p.text for p in procedures]
    texts += [t for r in facts for t in _strings([r.value])] + [str(r.value) for r in facts]
    texts += [v for i in items.values() for v in i.value.values() if isinstance(v, str)]
    texts += [known_threads[t].query for t in threads if t in known_threads]
    # The profile document's lines: those named, and those holding a forgotten value.
    values = [t.lower() for t in tombstone if len(t.strip()) >= 3]
    lines = {
        line_id: line
        for line_id, line in mem.profile_lines()
        if line_id in picked.get("documents", ()) or any(v in line.lower() for v in values)
    }
    texts += list(lines.values())
    tombstone += list(lines.values())
    deleted = {
        "threads": {t for t in threads if t in known_threads},
        "episodes": {e.episode_id for e in episodes},
        "extraction_jobs": set(),  # read when applied: jobs are listed then
        "candidates": {c.candidate_id for c in candidates},
        "summaries": {s.session_id for s in summaries},
        "procedures": {p.procedure_id for p in procedures},
        "facts": {r.memory_id for r in facts},
        "store": {_key(i) for i in items.values()},
        "documents": set(lines),
    }
    return _Plan(deleted, kept, texts, [t for t in tombstone if t.strip()], list(items.values()))


def _strings(values: Iterable[Any]) -> list[str]:
    found: list[str] = []
    for v in values:
        if isinstance(v, str):
            found.append(v)
        elif isinstance(v, list):
            found += [x for x in v if isinstance(x, str)]
    return found


async def _apply(app: AnalystApp, plan: _Plan, receipt: Receipt) -> None:
    from memory.embeddings import text_hash

    learner = await app.memory.learner()
    journal, facts = learner.journal, learner.facts
    gone = plan.deleted["episodes"]
    jobs = [j for j in await journal.jobs(limit=1_000_000) if gone.intersection(j.episode_ids)]
    receipt.tombstones = len(await journal.add_tombstones(plan.tombstone, reason=FORGET_REASON))
    for thread_id in sorted(plan.deleted["threads"]):
        try:
            await app.delete_thread(thread_id)
        except ThreadNotFoundError:  # deleted meanwhile by another process
            continue
    ids = {tier: sorted(plan.deleted.get(tier, ())) for tier in OWNED_TABLES}
    ids["extraction_jobs"] = [j.job_id for j in jobs]
    erased = await journal.erase(ids, reason=FORGET_REASON)
    for tier, found in erased.items():
        receipt.deleted[tier] = Tier(found)
    fact_ids = await facts.erase_facts(sorted(plan.deleted["facts"]))
    receipt.deleted["facts"] = Tier(fact_ids)
    if fact_ids:
        await app._audit("delete", "facts", fact_ids, FORGET_REASON)
    await _delete_items(app, plan.items)
    if plan.deleted["documents"]:
        _drop_lines(app, plan.deleted["documents"])
        await app._audit("delete", "documents", sorted(plan.deleted["documents"]), FORGET_REASON)
    if plan.items:
        await app._audit("delete", "store", sorted(plan.deleted["store"]), FORGET_REASON)
    hashes = sorted({text_hash(t) for t in plan.texts if t})
    _forget_vectors(app, hashes)
    receipt.deleted["embedding_cache"] = Tier(hashes)
    if hashes:
        await app._audit("delete", "embedding_cache", hashes, FORGET_REASON)
    receipt.compacted = await _compact(
        app, [tier for tier, found in receipt.deleted.items() if found.ids]
    )
    receipt.notes = _notes(app)


async def _items(app: AnalystApp) -> list[Item]:
    """Every item under the principal's namespace root (none when the store was never made)."""
    if app._store is None and app._missing_store():
        return []
    return await all_items(await app.store(), app.principal)


async def _delete_items(app: AnalystApp, items: list[Item]) -> None:
    from langgraph.store.base import PutOp

    if not items:
        return
    view = scoped(await app.store(), app.principal)
    for start in range(0, len(items), _PAGE):
        chunk = items[start : start + _PAGE]
        await view.abatch([PutOp(tuple(i.namespace), i.key, None) for i in chunk])


def _drop_lines(app: AnalystApp, line_ids: set[str]) -> None:
    """Rewrite the profile document without the lines ``path#L<n>`` (under the document's
    lock; a document left with nothing but headings is deleted), then bring the document
    index up to date so its rows of the old text go too."""
    path = profile_path(app.principal)
    gone = {int(i.rsplit("#L", 1)[1]) for i in line_ids if i.startswith(f"{path}#L")}

    def without(text: str | None) -> str:
        lines = (text or "").splitlines(keepends=True)
        return "".join(line for n, line in enumerate(lines, 1) if n not in gone)

    app.documents.update(path, without)
    left = app.documents.read_text(path)
    if not any(line.strip() and not line.lstrip().startswith("#") for line in left.splitlines()):
        app.documents.delete(path)
    app.documents.reindex()


def _forget_vectors(app: AnalystApp, hashes: list[str]) -> None:
    """Drop the cached vectors of the deleted texts: the file, and this process's LRU."""
    from memory.embeddings import CachedEmbedder, SqliteEmbeddingCache, embedding_cache_path

    path = embedding_cache_path(app.settings)
    embedder = getattr(app._store, "embeddings", None)
    if isinstance(embedder, CachedEmbedder):
        embedder.forget_hashes(hashes)  # this process's LRU (and its file, if it has one)
        if getattr(embedder.store, "path", None) == path:
            return  # that file was the cache file: its rows are gone and it was rewritten
    SqliteEmbeddingCache(path).delete(hashes)  # deletes, then rewrites the file


#: The embedded SQLite files a deletion in each tier leaves freed pages in (the ledger's file,
#: which holds the journal, the tombstones and the audit, is rewritten after every deletion;
#: the embeddings cache rewrites itself when rows are deleted from it).
_FILES_OF = {
    "threads": ("checkpoints.sqlite", "threads.sqlite"),
    "documents": ("documents.sqlite",),
}


async def _compact(app: AnalystApp, deleted: Iterable[str] | None = None) -> list[str]:
    """Rewrite what keeps the deleted bytes: the Qdrant Edge shard when store items were
    deleted, and the embedded SQLite files the deletion touched (WAL checkpointed and
    truncated, then VACUUM). ``deleted`` names the tiers that lost something (``None``:
    every file, as account deletion does). The shard is rebuilt whole (its cost grows with
    the shard, not with what was deleted), so it is skipped when no store item went."""
    import asyncio

    tiers = None if deleted is None else set(deleted)
    done: list[str] = []
    store = app._store
    rebuild = getattr(store, "rebuild", None)
    if callable(rebuild) and (tiers is None or "store" in tiers):
        await asyncio.to_thread(rebuild)
        done.append(str(getattr(store, "path", "long-term store")))
    names = {"facts.sqlite"} | {n for t in tiers or () for n in _FILES_OF.get(t, ())}
    for embedded in app.embedded_files():
        wanted = tiers is None or embedded.name in names
        if embedded.kind == "sqlite" and wanted and embedded.path.exists():
            await asyncio.to_thread(_vacuum, str(embedded.path))
            done.append(str(embedded.path))
    return done


def _vacuum(path: str) -> None:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _kept(app: AnalystApp, threads: set[str]) -> list[dict[str, Any]]:
    """What account deletion keeps on purpose, each with its reason."""
    user = app.principal.user_id
    notes: list[str] = []
    documents = app.documents
    for path in documents.list(_NOTES):
        try:
            meta = documents.read(path).metadata
        except AnalystError:  # unreadable (too large, not UTF-8, bad front matter): skip
            continue
        if meta.get("approver") == user or meta.get("thread_id") in threads:
            notes.append(path)
    return [
        {
            "tier": "documents",
            "what": "published research notes",
            "paths": sorted(notes),
            "why": "business records: a published research report is kept (and so is its "
            "chart); delete one with `analyst notes` if policy allows",
        },
        {
            "tier": "audit",
            "what": "memory audit entries about this user",
            "why": "append-only: entries hold ids, actions, times and keyed hashes, never "
            "content; this deletion is recorded there too",
        },
    ]


def _notes(app: AnalystApp) -> list[str]:
    facts_url = app.settings.facts.lower()
    if facts_url.startswith(("postgres://", "postgresql://")):
        return [
            "Postgres: deleted rows stay as dead tuples until autovacuum or the owner's VACUUM "
            "reclaims them; the application role may not VACUUM the owner's tables."
        ]
    return []


def _backups(app: AnalystApp) -> str:
    folder = app.settings.data_dir / "backups"
    return (
        "Backups made before this deletion (`analyst db backup DEST`, in the folders you chose) "
        f"and the copies a restore keeps in {folder} still hold this data until they are "
        "deleted; delete them, or restore none of them, to complete the erasure."
    )
