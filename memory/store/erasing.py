"""Erasing deleted items' bytes from a Qdrant Edge shard, out of the forgetting caller's way.

Deleting a point in Qdrant Edge only marks it deleted: its payload stays in the segment's
pages and its upsert in the write-ahead log until the segment is rewritten, and a segment
holds the whole shard's items (Qdrant Edge has no in-place erasure). Rewriting the shard
with its live points only (:func:`live_copy`) is what erases them; it costs what the shard
holds (about 1 s for 3,000 MiniLM-sized items on a 2-core machine), not what was deleted.

So a forget deletes the points (unreachable from that moment), records the request in the
shard (:data:`PENDING_FILE`, under the folder lock, in the same lease as the deletes) and
starts the detached eraser (``python -m memory.store.erasing <shard>``, :func:`start_eraser`),
which takes the folder lock, rewrites the shard and swaps it in, as the indexer does
(:func:`~memory.store.indexing.swap_in`: a crash between the renames leaves the old shard).
The rewritten shard carries no request, so a request made after the eraser took its copy
stays in the shard and is served by the next round. Until the eraser is done the deleted
bytes are still in the shard's files: :func:`pending` says so, :func:`wait_erased` waits
for it, and every writable open of the shard starts an eraser for a request a crash left.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from memory.errors import StoreLockedError
from memory.health import ERASE_PENDING
from memory.store.common import SPARSE, TERMS, VECTOR
from memory.store.detached import DetachedWorker, handed_lock
from memory.store.indexing import GENERATION_FILE, bump_generation, recover, set_unindexed, swap_in
from memory.store.lock import folder_lock
from memory.store.views import VIEWS

logger = logging.getLogger(__name__)

#: In the shard while deleted items' bytes may remain in its files (removed by the rewrite).
PENDING_FILE = ERASE_PENDING
#: The store's own files a rewrite carries into the new shard (the embedder it was built for
#: and the write generation).
META_FILE = "analyst-store.json"
_KEPT_FILES = (META_FILE, GENERATION_FILE)
_SCAN_PAGE = 1024


# -- the shard's shape ---------------------------------------------------------------------------


def shard_config(dims: int, indexing_kb: int | None, *, views: bool = True) -> qe.EdgeConfig:
    """The shard's vectors: the dense ``text`` multivector (``dims`` > 0), and the BM25
    sparse vector always (a shard needs at least one kind of vector; without an embedder it
    stays empty and the store is key-value with filters). The BM25 vector has no IDF
    modifier: the engine would count every principal's items; the query carries its scope's
    IDF instead. ``indexing_kb``: a segment is indexed once its vectors take that many
    kilobytes (``None``: Qdrant's default). ``views``: the sentence views' multivector too
    (:mod:`memory.store.views`), on disk (``Memory.Cold``: read through the page cache, never
    held), float16 and with no HNSW graph (``m=0``): it is never searched, only read for a
    query's candidates (the views kept in memory cost +1,070 MB of resident memory over a
    100k ingest)."""
    vectors: dict[str, qe.EdgeVectorParams] = {}
    if dims:
        vectors[VECTOR] = qe.EdgeVectorParams(
            size=dims,
            distance=qe.Distance.Cosine,
            multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
        )
    if dims and views:
        vectors[VIEWS] = qe.EdgeVectorParams(
            size=dims,
            distance=qe.Distance.Cosine,
            multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
            datatype=qe.VectorStorageDatatype.Float16,
            memory=qe.Memory.Cold,
            hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
        )
    # BM25 and payload indexes stay in memory: memory-mapped ones (on_disk) halved the
    # opening of 100k items (0.25 s against 0.54 s) but the first search then faulted
    # their pages in (0.43 s against 0.03 s), so a first result came later (1.10 s
    # against 0.98 s from process start) and searches were slower.
    sparse = {SPARSE: qe.EdgeSparseVectorParams()}
    optimizers = None
    if dims and indexing_kb is not None:
        optimizers = qe.EdgeOptimizersConfig(indexing_threshold=indexing_kb)
    return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse, optimizers=optimizers)


def config_of(path: Path) -> qe.EdgeConfig:
    """The config the shard in ``path`` was made with: its embedder's dimensions (the store's
    meta file) and its indexing threshold (the shard's own ``edge_config.json``)."""
    try:
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    try:
        edge = json.loads((path / "edge_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        edge = {}
    dims = int(meta.get("dims") or 0)
    if not dims:  # a shard without meta (e.g. made by an older version): its own vectors
        dims = int(((edge.get("vectors") or {}).get(VECTOR) or {}).get("size") or 0)
    threshold = (edge.get("optimizers") or {}).get("indexing_threshold")
    views = VIEWS in (edge.get("vectors") or {}) or not edge
    return shard_config(dims, None if threshold is None else int(threshold), views=views)


def has_views(path: Path) -> bool:
    """Whether the shard in ``path`` declares the sentence views' vector (its own
    ``edge_config.json``; a shard made before views does not)."""
    try:
        edge = json.loads((path / "edge_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return VIEWS in (edge.get("vectors") or {})


def create_indexes(shard: qe.EdgeShard) -> None:
    """The payload indexes every shard has (idempotent).

    No extra HNSW links per indexed value (Qdrant's default would build one more graph for
    every namespace prefix that holds many points: minutes at 100k items). A selective
    principal filter is answered from the payload index instead."""
    keyword = qe.KeywordIndexParams(enable_hnsw=False)
    integer = qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)
    term = qe.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False)
    schemas: tuple[tuple[str, Any], ...] = (
        ("ns_key", keyword),
        ("ns_prefixes", keyword),
        (TERMS, term),
        ("updated_us", integer),
        ("expires_us", integer),
    )
    existing = shard.info().payload_schema
    for name, schema in schemas:
        if name not in existing:
            shard.update(qe.UpdateOperation.create_field_index(name, schema))


# -- rewriting -----------------------------------------------------------------------------------


def live_copy(path: Path, shard: qe.EdgeShard, config: qe.EdgeConfig) -> tuple[Path, int]:
    """A new shard beside ``path`` (``<shard>.rebuilt``) holding the live points of the open
    ``shard`` only, and how many: the caller (holding the folder lock) closes ``shard`` and
    swaps the copy in with :func:`~memory.store.indexing.swap_in`, through ``<shard>.old``,
    so a failure or a crash part-way keeps every memory.

    The live points are copied as stored (payload and vectors), page by page. The store's
    files are carried over, without :data:`PENDING_FILE`: the copy holds no deleted bytes.
    Its generation moves past every earlier one, so an index build copied before is not
    swapped in (it holds what was erased). Also how a shard from before per-scope BM25
    statistics is upgraded: every item gets its ``terms`` payload, read from its stored BM25
    vector."""
    fresh_path = path.with_name(f"{path.name}.rebuilt")
    shutil.rmtree(fresh_path, ignore_errors=True)
    try:
        fresh = qe.EdgeShard.create(str(fresh_path), config)
        try:
            create_indexes(fresh)
            kept = copy_points(shard, fresh)
            fresh.flush()
        finally:
            fresh.close()
        for name in _KEPT_FILES:
            if (path / name).exists():
                shutil.copy2(path / name, fresh_path / name)
        bump_generation(fresh_path)
        set_unindexed(fresh_path, kept)
    except BaseException:
        shutil.rmtree(fresh_path, ignore_errors=True)
        raise
    return fresh_path, kept


def copy_points(source: qe.EdgeShard, target: qe.EdgeShard) -> int:
    """Upsert every live point of ``source`` into ``target`` (payload and vectors as stored,
    page by page); return how many."""
    copied = 0
    offset: Any = None
    while True:
        records, offset = source.scroll(
            qe.ScrollRequest(offset=offset, limit=_SCAN_PAGE, with_payload=True, with_vector=True)
        )
        if records:
            target.update(
                qe.UpdateOperation.upsert_points(
                    [qe.Point(r.id, r.vector or {}, with_terms(r)) for r in records]
                )
            )
            copied += len(records)
        if offset is None:
            return copied


def with_terms(record: Any) -> dict[str, Any]:
    """A stored point's payload with ``terms``: as stored, or for a point from before the
    ``terms`` payload, taken from its BM25 vector."""
    payload = record.payload or {}
    if TERMS in payload:
        return payload
    payload = dict(payload)
    sparse = (record.vector or {}).get(SPARSE) if isinstance(record.vector, dict) else None
    if sparse is not None and list(sparse.indices):
        payload[TERMS] = sorted({int(i) for i in sparse.indices})
    return payload


# -- erasure requests and the eraser ---------------------------------------------------------


def request(path: Path) -> None:
    """Record that deleted items' bytes must leave the shard (caller holds the folder lock,
    after the deletes)."""
    (path / PENDING_FILE).write_text(str(time.time()), encoding="ascii")


def pending(path: Path) -> bool:
    """Whether deleted items' bytes may still be in the shard's files."""
    return (path / PENDING_FILE).exists()


#: The detached eraser (``python -m memory.store.erasing <shard>``), locked and logged as
#: ``<shard>.erasing``.
ERASER = DetachedWorker("erasing", "memory.store.erasing")


def _eraser_lock(path: Path) -> int | None:
    """The eraser's own lock, or ``None`` when another eraser holds it."""
    return ERASER.lock(path)


def eraser_running(path: Path) -> bool:
    """Whether an eraser process holds the shard's erasing lock now."""
    return ERASER.running(path)


def start_eraser(path: Path) -> subprocess.Popen[bytes] | None:
    """Launch the detached eraser for the shard in ``path`` unless one runs (a running one
    looks for new requests before it stops); its output goes to ``<shard>.erasing.log``."""
    return ERASER.start(path)


def erase(path: Path, lock_timeout: float = 60.0, held: int | None = None) -> int:
    """Serve the shard's erasure requests (the module docstring); return how many rewrites
    ran. Another eraser running: nothing (it serves them). ``held``: the eraser's lock,
    taken by the launcher (:class:`~memory.store.detached.DetachedWorker`). Looks again
    after giving up its own lock, so a request recorded while it finished is not left
    behind."""
    rounds = 0
    while True:
        if held is None:
            held = _eraser_lock(path)
        if held is None:
            return rounds
        try:
            while pending(path):
                with folder_lock(path, lock_timeout):
                    recover(path)
                    if not pending(path) or not (path / "segments").exists():
                        break
                    shard = qe.EdgeShard.load(str(path))
                    try:
                        fresh, kept = live_copy(path, shard, config_of(path))
                    finally:
                        shard.close()
                    swap_in(path, fresh)
                    rounds += 1
                    logger.info("erased deleted items from %s (%d kept)", path, kept)
        finally:
            os.close(held)
            held = None
        if not pending(path):
            return rounds


def wait_erased(
    path: Path,
    timeout: float = 120.0,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait until no erasure request is left in the shard in ``path`` (starting an eraser if
    none runs); False after ``timeout`` seconds."""
    deadline = clock() + timeout
    while pending(path):
        if clock() >= deadline:
            return False
        start_eraser(path)
        sleep(0.05)
    return True


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        erase(Path(sys.argv[1]), held=handed_lock(sys.argv))
    except StoreLockedError as e:  # the next open of the shard starts another
        logger.warning("erasure of %s postponed: %s", sys.argv[1], e)
    except FileNotFoundError as e:  # the folder went away (deleted data folder)
        logger.info("erasure of %s: %s", sys.argv[1], e)
