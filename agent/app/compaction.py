"""Leaving no byte of deleted memory behind: the embedding-cache rows of deleted texts, the
Qdrant Edge shard rewritten (here or by the detached eraser), and the embedded SQLite files'
write-ahead logs emptied into them and truncated (their deletes ran with ``secure_delete``)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.app.tiers import Tiers

#: The embedded SQLite files a deletion in each tier writes to, besides the ledger's file
#: (the journal, the tombstones and the audit), whose WAL every deletion empties; the
#: embeddings cache empties its own when rows are deleted from it.
FILES_OF = {
    "threads": ("checkpoints.sqlite", "threads.sqlite"),
    "documents": ("documents.sqlite",),
}


def forget_vectors(tiers: Tiers, hashes: list[str]) -> None:
    """Drop the cached vectors of the deleted texts: the file, and this process's LRU."""
    from memory.embedding_cache import (
        CachedEmbedder,
        SqliteEmbeddingCache,
        embedding_cache_path,
    )

    path = embedding_cache_path(tiers.settings)
    embedder = getattr(tiers.opened_store, "embeddings", None)
    if isinstance(embedder, CachedEmbedder):
        embedder.forget_hashes(hashes)  # this process's LRU (and its file, if it has one)
        if getattr(embedder.store, "path", None) == path:
            return  # that file was the cache file: its rows are gone, its WAL emptied
    SqliteEmbeddingCache(path).delete(hashes)  # deletes (zeroed), then empties the WAL


async def compact(tiers: Tiers, deleted: Iterable[str] | None = None) -> list[str]:
    """Rewrite what keeps the deleted bytes: the Qdrant Edge shard when store items were
    deleted, and the embedded SQLite files the deletion touched (WAL checkpointed into the
    file and truncated: :func:`vacuum`). ``deleted`` names the tiers that lost something (``None``:
    every file, as account deletion does). The Qdrant Edge shard is rewritten whole (its cost
    grows with the shard, not with what was deleted), so it is skipped when no store item
    went, and with shared access it is the detached eraser's work
    (:mod:`memory.store.erasing`): the shard is listed only when rewritten before return."""
    kinds = None if deleted is None else set(deleted)
    store = tiers.opened_store
    erase = getattr(store, "erase_deleted", None)
    names = {"facts.sqlite"} | {n for t in kinds or () for n in FILES_OF.get(t, ())}
    files = [
        str(e.path)
        for e in tiers.embedded_files()
        if e.kind == "sqlite" and (kinds is None or e.name in names) and e.path.exists()
    ]

    async def rewritten() -> bool:
        # Shared access hands the rewrite to the detached eraser (its cost is the whole
        # shard's); the receipt's notes say so while it runs (backend_notes).
        wanted = kinds is None or "store" in kinds
        return callable(erase) and wanted and await asyncio.to_thread(erase)

    # Each file on its own worker thread: the work is the disk's (writes and fsyncs), and no
    # file waits for another's.
    shard, *_ = await asyncio.gather(
        rewritten(), *(asyncio.to_thread(vacuum, path) for path in files)
    )
    done = [str(getattr(store, "path", "long-term store"))] if shard else []
    return done + files


def vacuum(path: str) -> None:
    """Leave no deleted byte in the SQLite file ``path``: empty its WAL into it and truncate
    the WAL (:func:`memory.sql.connect.truncate_wal`). The connections that delete run with
    ``secure_delete``, so the deleted rows and freed pages are zeros in the file already;
    the WAL's older frames were the last copy. No VACUUM: the cost follows what was
    deleted, not the file's size."""
    from memory.sql.connect import truncate_wal

    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        truncate_wal(conn, "SQLite file", path)
    finally:
        conn.close()
