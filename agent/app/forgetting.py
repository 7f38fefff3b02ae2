"""Account deletion: forget everything of one principal, in every tier, and say so in a receipt.

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
approved (business records), and the memory audit (append-only: ids and keyed hashes,
never content). The receipt ends with the backup statement: a backup made with ``analyst db
backup`` (and the ``before-restore-*`` copies a restore leaves in ``<data dir>/backups``) still
holds the data until it is deleted.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.errors import ThreadNotFoundError
from memory.errors import AnalystError
from memory.facts import subject_for
from memory.journal.queries import OWNED_TABLES
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langgraph.store.base import Item

    from agent.app.service import AnalystApp

#: The fixed reason every audit entry of an account deletion carries.
REASON = "account deleted by the user"
#: Research notes live here in document memory (see agent.publishing).
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

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "confirmed": self.confirmed,
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
    receipt.kept = _kept(app, {t.thread_id for t in threads})
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
    receipt.compacted = await _compact(app)
    receipt.notes = _notes(app)
    return receipt


async def _items(app: AnalystApp) -> list[Item]:
    """Every item under the principal's namespace root (relative namespaces)."""
    if app._store is None and app._missing_store():
        return []
    view = scoped(await app.store(), app.principal)
    found: list[Item] = []
    offset = 0
    while True:
        page = await view.asearch((), limit=_PAGE, offset=offset, refresh_ttl=False)
        found.extend(page)
        if len(page) < _PAGE:
            return found
        offset += _PAGE


async def _delete_items(app: AnalystApp, items: list[Item]) -> None:
    from langgraph.store.base import PutOp

    if not items:
        return
    view = scoped(await app.store(), app.principal)
    for start in range(0, len(items), _PAGE):
        chunk = items[start : start + _PAGE]
        await view.abatch([PutOp(tuple(i.namespace), i.key, None) for i in chunk])


def _forget_vectors(app: AnalystApp, hashes: list[str]) -> None:
    """Drop the cached vectors of the deleted texts: the file, and this process's LRU."""
    from memory.embeddings import CachedEmbedder, SqliteEmbeddingCache, embedding_cache_path

    embedder = getattr(app._store, "embeddings", None)
    if isinstance(embedder, CachedEmbedder):
        embedder.forget_hashes(hashes)  # this process's LRU (and its file, if it has one)
    SqliteEmbeddingCache(embedding_cache_path(app.settings)).delete(hashes)


async def _compact(app: AnalystApp) -> list[str]:
    """Rewrite what keeps deleted bytes: the Qdrant Edge shard and every embedded SQLite
    file (WAL checkpointed and truncated, then VACUUM)."""
    import asyncio

    done: list[str] = []
    store = app._store
    rebuild = getattr(store, "rebuild", None)
    if callable(rebuild):
        await asyncio.to_thread(rebuild)
        done.append(str(getattr(store, "path", "long-term store")))
    for embedded in app.embedded_files():
        if embedded.kind == "sqlite" and embedded.path.exists():
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
