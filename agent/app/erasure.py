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
    held = await _read(tiers, learner, confirm=confirm)
    await _list_plan(tiers, learner, receipt, held, confirm=confirm)
    if not confirm:
        return receipt

    gone, grants_gone = await _erase_tiers(tiers, learner, held)
    hashes = _list_erased(receipt, gone, grants_gone)
    await _erase_derived(tiers, receipt, hashes)
    receipt.compacted = await compact(tiers)
    receipt.notes = backend_notes(tiers)
    return receipt


async def _read(tiers: Tiers, learner: Learner, *, confirm: bool) -> dict[Kind, list[Any]]:
    """What the plan lists, by kind. Confirmed, the store and the journal are left to their
    deletes (empty here), the profile document always goes whole."""
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
    return held


async def _list_plan(
    tiers: Tiers, learner: Learner, receipt: Receipt, held: dict[Kind, list[Any]], *, confirm: bool
) -> None:
    """Lists in ``receipt`` what would be deleted, tier by tier (the user's grants with
    the facts), what is kept on purpose and why, and what the backups hold."""
    principal = tiers.principal
    for kind, items in held.items():
        receipt.deleted[kind.tier] = Tier(sorted(kind.id(i) for i in items))
        if kind is FACTS:
            grants = await learner.facts.grants()
            receipt.deleted["grants"] = Tier(
                sorted(f"{g.role}:{g.subject}" for g in grants if g.user_id == principal.user_id)
            )
    # Confirmed, the rows are known once the store is read (below).
    receipt.deleted["embedding_cache"] = Tier([] if confirm else cache_rows(held))
    document = profile_path(principal)
    receipt.deleted["documents"] = Tier([document] if tiers.documents.exists(document) else [])
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


async def _erase_tiers(
    tiers: Tiers, learner: Learner, held: dict[Kind, list[Any]]
) -> tuple[dict[Kind, list[Any]], list[str]]:
    """Delete the threads, the journal, the ledger's rows and grants and the store's items;
    ``held`` with what the deletes found in place of the plan's reads, and the grants
    removed."""
    # The threads' locks are taken first (refused, before anything is deleted, while one
    # runs). Under them go the journal and the ledger (one file, one after the other), then
    # the threads' files alongside the store: they share no file, and each waits mostly on
    # its own writes.
    async with tiers.threads_held(t.thread_id for t in held[THREADS]) as thread_ids:
        erased = await learner.journal.erase_principal(reason=REASON)
        fact_rows, grants_gone = await learner.facts.erase_own_records()
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
    deleted = dict(held)
    for kind in JOURNAL_KINDS:
        deleted[kind] = erased[kind.tier]
    # Every deleted row's texts, not only the current facts' histories the plan read: a
    # value an attribute held before its fact was retracted may be in the cache too.
    deleted[FACTS] = fact_rows
    deleted[STORE] = taken
    return deleted, grants_gone


def _list_erased(receipt: Receipt, gone: dict[Kind, list[Any]], grants: list[str]) -> list[str]:
    """Lists in ``receipt`` what the deletes found; the embedding-cache rows of their texts
    (listed too), which go next."""
    for kind in JOURNAL_KINDS:
        receipt.deleted[kind.tier] = Tier([kind.id(r) for r in gone[kind]])
    receipt.deleted["facts"] = Tier([r.memory_id for r in gone[FACTS]])
    receipt.deleted["grants"] = Tier(grants)
    receipt.deleted["store"] = Tier(sorted(item_key(i) for i in gone[STORE]))
    hashes = cache_rows(gone)
    receipt.deleted["embedding_cache"] = Tier(hashes)
    return hashes


async def _erase_derived(tiers: Tiers, receipt: Receipt, hashes: list[str]) -> None:
    """Audit the ledger's and the store's deletes, delete the cache rows ``hashes`` and the
    profile document."""
    fact_ids, grants_gone = receipt.deleted["facts"].ids, receipt.deleted["grants"].ids
    document = profile_path(tiers.principal)

    async def audited_and_document() -> None:
        if fact_ids or grants_gone:
            await tiers.audit("delete", "facts", [*fact_ids, *grants_gone], REASON)
        if receipt.deleted["store"].ids:
            await tiers.audit("delete", "store", receipt.deleted["store"].ids, REASON)
        owned = await tiers.owned_documents()
        if await owned.delete(document, reason=REASON):  # audited; a damaged one goes too
            tiers.documents.reindex()  # the index's rows of the document go with it

    # The cache's rows go on a worker thread, alongside the audit and the profile document:
    # each writes its own file. The cache's deletion is audited once it is done.
    await asyncio.gather(asyncio.to_thread(forget_vectors, tiers, hashes), audited_and_document())
    if hashes:
        await tiers.audit("delete", "embedding_cache", hashes, REASON)


def cache_rows(held: dict[Kind, list[Any]]) -> list[str]:
    """The embedding-cache rows of every text of the ``held`` items (their text hashes)."""
    from memory.embeddings import text_hash

    texts = {t for kind, items in held.items() for i in items for t in kind.texts(i) if t}
    return sorted({text_hash(t) for t in texts})  # each text hashed once (kinds repeat them)
