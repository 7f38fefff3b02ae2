"""Building a Qdrant Edge shard's vector index without holding the shard while it builds.

Qdrant Edge builds HNSW only when asked (``EdgeShard.optimize``), and that call holds the
shard for its whole duration: measured at 107 s for 20,000 MiniLM-sized vectors on a busy
2-core machine, with a read on the same shard waiting all along. One process opens the shard
at a time (its folder lock), so building in place would stall every other process, a CLI
command included, for minutes. Instead :func:`start_indexer` launches a detached process
(``python -m memory.store.indexing <shard>``) that

1. takes ``<shard>.indexing.lock`` (one indexer per shard; a killed one's lock goes with it);
2. waits until no write batch has landed for :data:`QUIET` seconds (a bulk load writes for
   minutes: a copy taken meanwhile would be discarded, and a writer that finds the indexer
   still running starts no other, so a build given up during the load was never retried);
   then, under the shard's folder lock, copies the shard folder and notes its generation (a
   counter every write batch bumps, :data:`GENERATION_FILE`);
3. holding no shard lock, loads the copy and optimises it: processes keep taking turns on the
   shard meanwhile;
4. under the folder lock again, swaps the copy in if the generation is unchanged (a write
   landed meanwhile: the copy is discarded and the build starts over, at most
   :data:`ATTEMPTS` times). TTL refreshes do not count as writes (every recall makes some,
   so a build would never land): the expiry times that changed meanwhile are carried into
   the copy before the swap (:func:`carry_expiry`).

The swap is two renames (``<shard>`` → ``<shard>.old``, ``<shard>.new`` → ``<shard>``);
:func:`recover` (called before every open) puts the old folder back if a crash fell between
them. The writer never waits for the build, so a short CLI command and a long server leave it
to the indexer alike.
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

from memory.errors import StoreLockedError
from memory.store.detached import DetachedWorker, handed_lock
from memory.store.lock import folder_lock

logger = logging.getLogger(__name__)

#: Bumped (under the folder lock) by every write batch: a copy is current while it is equal.
GENERATION_FILE = "analyst-generation"
#: Vectors written since the last build (the shard's own counts do not tell: its
#: ``indexed_vectors_count`` includes the BM25 vectors, which are always indexed).
UNINDEXED_FILE = "analyst-unindexed"
#: Written into a copy the indexer swaps in: the generation it was built at.
BUILT_FILE = "analyst-index.json"
#: Builds tried before giving up until the next trigger (each discarded if writes landed).
ATTEMPTS = 3
#: Seconds without a write batch before the indexer takes its copy, and the longest it waits
#: for such a pause before giving up (the next write batch starts it again).
QUIET = 2.0
QUIET_LIMIT = 1800.0


def generation(path: Path) -> int:
    """The shard's write generation (0 before the first write)."""
    try:
        return int((path / GENERATION_FILE).read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return 0


def bump_generation(path: Path) -> None:
    """Record that a write batch changed the shard (caller holds the folder lock)."""
    (path / GENERATION_FILE).write_text(str(generation(path) + 1), encoding="ascii")


def unindexed(path: Path) -> int | None:
    """Vectors written since the last index build (``None``: never counted, e.g. a shard from
    before this counter)."""
    try:
        return int((path / UNINDEXED_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def set_unindexed(path: Path, count: int) -> None:
    """Record how many vectors are unindexed (caller holds the folder lock)."""
    (path / UNINDEXED_FILE).write_text(str(count), encoding="ascii")


def recover(path: Path) -> None:
    """Finish a swap a crash interrupted (caller holds the folder lock): ``<shard>`` missing
    and ``<shard>.old`` present puts the old shard back; both present means the new one was
    in place, so the old one (which may hold what a rebuild erased) is removed."""
    old = path.with_name(path.name + ".old")
    if not old.is_dir():
        return
    if (path / "segments").exists():
        shutil.rmtree(old)
        return
    if path.exists():
        shutil.rmtree(path)
    old.rename(path)
    logger.warning("Restored the Qdrant Edge shard %s after an interrupted index swap.", path)


def swap_in(path: Path, copy: Path) -> None:
    """Replace the shard in ``path`` by the closed shard in ``copy`` and delete the old one:
    two renames through ``<shard>.old``, which :func:`recover` puts back if a crash falls
    between them (caller holds the folder lock; neither shard is open)."""
    old = path.with_name(path.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    path.rename(old)
    copy.rename(path)
    shutil.rmtree(old)


#: The detached indexer (``python -m memory.store.indexing <shard>``), locked and logged as
#: ``<shard>.indexing``.
INDEXER = DetachedWorker("indexing", "memory.store.indexing")


def _indexer_lock(path: Path) -> int | None:
    """The indexer's own lock, or ``None`` when another indexer holds it."""
    return INDEXER.lock(path)


def indexer_running(path: Path) -> bool:
    """Whether an indexer process holds the shard's indexing lock now."""
    return INDEXER.running(path)


def start_indexer(path: Path) -> subprocess.Popen[bytes] | None:
    """Launch the detached indexer for the shard in ``path`` unless one runs; its output goes
    to ``<shard>.indexing.log`` (private to the user)."""
    return INDEXER.start(path)


def _expiries(shard: Any) -> dict[Any, int]:
    """Point id → ``expires_us`` of every point with a TTL."""
    import qdrant_edge as qe

    has_ttl = qe.Filter(must=[qe.FieldCondition("expires_us", range=qe.RangeFloat(gte=0.0))])
    found: dict[Any, int] = {}
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            qe.ScrollRequest(offset=offset, limit=1024, filter=has_ttl, with_payload=True)
        )
        for record in records:
            found[record.id] = int((record.payload or {})["expires_us"])
        if offset is None:
            return found


def carry_expiry(source: Path, target: Path) -> int:
    """Set on the shard in ``target`` the ``expires_us`` of every point whose expiry differs
    in ``source`` (TTL refreshes made while ``target`` was built); return how many. Neither
    shard may be open elsewhere (caller holds the folder lock)."""
    import qdrant_edge as qe

    main = qe.EdgeShard.load(str(source))
    try:
        wanted = _expiries(main)
    finally:
        main.close()
    copy = qe.EdgeShard.load(str(target))
    try:
        have = _expiries(copy)
        by_value: dict[int, list[Any]] = {}
        for point, expires in wanted.items():
            if point in have and have[point] != expires:
                by_value.setdefault(expires, []).append(point)
        for expires, points in by_value.items():
            copy.update(qe.UpdateOperation.set_payload(points, {"expires_us": expires}))
        copy.flush()
        return sum(len(points) for points in by_value.values())
    finally:
        copy.close()


def wait_for_quiet(
    path: Path,
    quiet: float = QUIET,
    limit: float = QUIET_LIMIT,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait until the shard's generation has not moved for ``quiet`` seconds; False when
    writes kept landing for ``limit`` seconds (``clock`` and ``sleep``: a test's own)."""
    started = since = clock()
    last = generation(path)
    while (now := clock()) - since < quiet:
        if now - started > limit:
            return False
        sleep(min(0.25, quiet))
        if (current := generation(path)) != last:
            last, since = current, clock()
    return True


def build(path: Path, lock_timeout: float = 60.0, held: int | None = None) -> bool:
    """Build the shard's index out of place and swap it in (the module docstring); True when
    an indexed copy replaced the shard. ``held``: the indexer's lock, taken by the launcher
    (:class:`~memory.store.detached.DetachedWorker`)."""
    import qdrant_edge as qe

    if held is None:
        held = _indexer_lock(path)
    if held is None:
        return False
    copy = path.with_name(path.name + ".new")
    try:
        for _ in range(ATTEMPTS):
            if not wait_for_quiet(path):
                logger.info("Index build for %s: writes never paused; left to the next", path)
                return False
            shutil.rmtree(copy, ignore_errors=True)
            with folder_lock(path, lock_timeout):
                recover(path)
                if not (path / "segments").exists():
                    return False
                started_at = generation(path)
                shutil.copytree(path, copy)
            shard = qe.EdgeShard.load(str(copy))
            try:
                shard.optimize()
                shard.flush()
            finally:
                shard.close()
            with folder_lock(path, lock_timeout):
                if generation(path) != started_at:
                    continue
                carry_expiry(path, copy)
                set_unindexed(copy, 0)
                (copy / BUILT_FILE).write_text(json.dumps({"generation": started_at}))
                swap_in(path, copy)
                return True
        return False
    except StoreLockedError as e:
        logger.warning("Index build for %s gave up: %s", path, e)
        return False
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        os.close(held)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    swapped = build(Path(sys.argv[1]), held=handed_lock(sys.argv))
    logger.info("index build for %s: %s", sys.argv[1], "swapped in" if swapped else "not swapped")
