"""Account deletion: everything of one principal, in every tier, and a receipt that says so.

:func:`forget_account` without ``confirm`` only reads and returns the plan (what would be
deleted, by kind); with it, it deletes the threads, the journal, the ledger's rows and grants,
the store's items, the embedding-cache rows of every deleted text and the profile document,
then compacts every embedded file. What is kept on purpose (published research notes, the
audit, earlier tombstones) is listed with its reason. The order and the reasons are in
``docs/memory-lifecycle.md``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agent.app.compaction import compact, forget_vectors
from agent.app.kinds import DOCUMENTS, FACTS, JOURNAL_KINDS, KINDS, STORE, THREADS
from agent.app.receipts import (
    REASON,
    Receipt,
    Tier,
    backend_notes,
    backups_statement,
    kept_records,
)
from agent.recollection.forgettable import item_key, profile_path

if TYPE_CHECKING:
    from agent.app.kinds import Kind
    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner


async def forget_account(tiers: Tiers, learner: Learner, *, confirm: bool) -> Receipt:
    """Delete everything of ``tiers.principal`` (``confirm``), or say what would go (not).
    Confirmed, the store is listed once, after the tiers its items derive from are deleted:
    the receipt names the items and cache rows deleted then."""
    principal = tiers.principal
    receipt = Receipt(principal.tenant_id, principal.user_id, confirm)
    journal, facts = learner.journal, learner.facts

    held: dict[Kind, list[Any]] = {}
    for kind in KINDS:
        if kind is FACTS:  # the rows of every attribute the user has a current fact of
            held[kind] = await FACTS.fetch(tiers, learner, registry=False)
        elif confirm and (kind is STORE or kind in JOURNAL_KINDS):
            # Read by their deletes (below): the store's after what its items derive from
            # is gone, the journal's rows answered by the statements that delete them.
            held[kind] = []
        elif kind is not DOCUMENTS:  # the profile document goes whole, not by line
            held[kind] = await kind.fetch(tiers, learner)
    for kind, items in held.items():
        receipt.deleted[kind.tier] = Tier(sorted(kind.id(i) for i in items))
        if kind is FACTS:
            grants = await facts.grants()
            receipt.deleted["grants"] = Tier(
                sorted(f"{g.role}:{g.subject}" for g in grants if g.user_id == principal.user_id)
            )
    # Confirmed, the rows are known once the store is read (below).
    receipt.deleted["embedding_cache"] = Tier([] if confirm else cache_rows(held))
    documents = tiers.documents
    document = profile_path(principal)
    receipt.deleted["documents"] = Tier([document] if documents.exists(document) else [])
    receipt.kept = [
        *kept_records(tiers, {t.thread_id for t in held[THREADS]}),
        {
            "tier": "tombstones",
            "what": "tombstones of what this user forgot earlier",
            "why": "keyed hashes, never text: they stop a restored backup or a re-imported "
            "conversation from teaching the forgotten things again",
        },
    ]
    receipt.backups = backups_statement(tiers)
    if not confirm:
        return receipt

    # The threads' locks are taken first (refused, before anything is deleted, while one
    # runs). Under them go the journal and the ledger (one file, one after the other), then
    # the threads' files alongside the store: they share no file, and each waits mostly on
    # its own writes.
    async with tiers.threads_held(t.thread_id for t in held[THREADS]) as thread_ids:
        erased = await journal.erase_principal(reason=REASON)
        fact_rows, grants_gone = await facts.erase_own_records()
        # Read now rather than with the plan: an item written meanwhile goes too, and the
        # listing, the costliest read of a deletion, is made once, with the deletes.
        gone, taken = await asyncio.gather(
            tiers.delete_held_threads(thread_ids), STORE.remove_all(tiers), return_exceptions=True
        )
    # Both ran to their end; a failure of either is the deletion's.
    if isinstance(gone, BaseException):
        raise gone
    if isinstance(taken, BaseException):
        raise taken
    items = taken
    for kind in JOURNAL_KINDS:
        held[kind] = erased[kind.tier]
        receipt.deleted[kind.tier] = Tier([kind.id(r) for r in held[kind]])
    # Every deleted row's texts, not only the current facts' histories the plan read: a
    # value an attribute held before its fact was retracted may be in the cache too.
    held[FACTS] = fact_rows
    fact_ids = [r.memory_id for r in fact_rows]
    receipt.deleted["facts"] = Tier(fact_ids)
    receipt.deleted["grants"] = Tier(grants_gone)
    held[STORE] = items
    receipt.deleted["store"] = Tier(sorted(item_key(i) for i in items))
    hashes = cache_rows(held)
    receipt.deleted["embedding_cache"] = Tier(hashes)

    async def audited_and_document() -> None:
        if fact_ids or grants_gone:
            await tiers.audit("delete", "facts", [*fact_ids, *grants_gone], REASON)
        if receipt.deleted["store"].ids:
            await tiers.audit("delete", "store", receipt.deleted["store"].ids, REASON)
        owned = await tiers.owned_documents()
        if await owned.delete(document, reason=REASON):  # audited; a damaged one goes too
            documents.reindex()  # the index's rows of the document go with it

    # The cache's rows go on a worker thread, alongside the audit and the profile document:
    # each writes its own file. The cache's deletion is audited once it is done.
    await asyncio.gather(asyncio.to_thread(forget_vectors, tiers, hashes), audited_and_document())
    if hashes:
        await tiers.audit("delete", "embedding_cache", hashes, REASON)
    receipt.compacted = await compact(tiers)
    receipt.notes = backend_notes(tiers)
    return receipt


def cache_rows(held: dict[Kind, list[Any]]) -> list[str]:
    """The embedding-cache rows of every text of the ``held`` items (their text hashes)."""
    from memory.embeddings import text_hash

    texts = {t for kind, items in held.items() for i in items for t in kind.texts(i) if t}
    return sorted({text_hash(t) for t in texts})  # each text hashed once (kinds repeat them)
