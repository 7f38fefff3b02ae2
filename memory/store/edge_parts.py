"""Parts of a query on the Qdrant Edge shard (:mod:`memory.store.edge`): the engine
conditions a search filter becomes, the exact reads of a query's candidates -- their
cosines to the dense vector, and (when a ranking asks for them) to their sentence views
(:mod:`memory.store.views`) -- and the read-ahead of the pages every query reads
(:func:`read_ahead`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from memory.config import data_extents
from memory.store.common import VECTOR, prefilter
from memory.store.scoring import COSINE_DIGITS

# -- filters ------------------------------------------------------------------------------------


def edge_prefilter(filter: Mapping[str, Any] | None) -> list[Any]:
    """:func:`memory.store.common.prefilter` for the shard. Booleans are left to the exact
    check (the binding reads ``True`` as the integer 1)."""

    def equal(path: str, value: Any) -> Any:
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            return qe.FieldCondition(path, match=qe.MatchValue(value))
        return qe.FieldCondition(path, range=qe.RangeFloat(gte=float(value), lte=float(value)))

    def compare(path: str, name: str, bound: float) -> Any:
        return qe.FieldCondition(path, range=qe.RangeFloat(**{name: bound}))

    return prefilter(filter, equal=equal, compare=compare)


# -- exact reads of a query's candidates ---------------------------------------------------


def exact_cosines(
    shard: qe.EdgeShard, vector: list[float], ids: list[Any], using: str = VECTOR
) -> dict[Any, float]:
    """Point id → cosine of ``vector`` to the point's closest vector named ``using`` (the
    engine's MaxSim score of an exact query over ``ids``), rounded as :func:`best_cosines`
    rounds; points without such a vector are absent."""
    if not ids or not any(vector):
        return {}
    request = qe.QueryRequest(
        limit=len(ids),
        query=qe.Query.Nearest([vector], using=using),
        filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
        params=qe.SearchParams(exact=True),
        with_payload=False,
    )
    return {p.id: round(float(p.score), COSINE_DIGITS) for p in shard.query(request)}


# -- the page cache of a loaded shard -------------------------------------------------------

#: The files a query reads point by point, at random: the payloads of its candidates (Qdrant's
#: paged payload storage). Qdrant drops the page cache of a shard's files when it loads it.
READ_AHEAD = ("segments/*/payload_storage/*.dat",)
_CHUNK = 1 << 20


def available_memory() -> int | None:
    """Bytes of memory the kernel says it can give without swapping (``MemAvailable``), or
    None where it does not say (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


#: The share of the available memory a read-ahead may fill (:func:`read_ahead_budget`): the
#: page cache is the kernel's to evict, but reading a shard larger than what is free would
#: push out pages other processes (and this one's own views) are using, for queries that
#: would then read from disk all the same.
READ_AHEAD_SHARE = 0.25


def read_ahead_budget() -> int | None:
    """Bytes a read-ahead may read: :data:`READ_AHEAD_SHARE` of the available memory, or no
    limit (None) where the system does not say."""
    available = available_memory()
    return None if available is None else int(available * READ_AHEAD_SHARE)


def read_ahead(folder: Path, budget: int | None = None) -> threading.Thread:
    """Read the payload files of the shard in ``folder`` once, front to back, on a daemon
    thread, so that their pages are in the page cache (the kernel's, shared: nothing is held
    by this process) when queries read them. At most ``budget`` bytes are read (None: no
    limit; :func:`read_ahead_budget` is what a load passes): past it the rest stays on disk,
    read page by page as queries ask, as without a read-ahead.

    Without it, each query after a load reads its candidates' payloads from disk a page at a
    time: at 100k memories the fused query took 12 ms with the payload pages cold against
    4.5 ms with them cached (docs/memory-lifecycle.md, "The query path"). The files are read,
    not only advised (``posix_fadvise(WILLNEED)`` reads at most the device's read-ahead window
    of each file: 8 MB of a 32 MB payload page), their holes skipped. A file a swap or a
    rewrite removes meanwhile is skipped."""

    def read() -> None:
        buffer = memoryview(bytearray(_CHUNK))
        try:
            paths = [path for pattern in READ_AHEAD for path in sorted(folder.glob(pattern))]
        except OSError:  # the folder went away meanwhile (a swap, a removed copy)
            return
        left = budget
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                for start, end in data_extents(fd, os.fstat(fd).st_size):
                    while start < end:
                        if left is not None and left <= 0:
                            return
                        size = min(_CHUNK, end - start, _CHUNK if left is None else left)
                        got = os.preadv(fd, [buffer[:size]], start)
                        if not got:
                            break
                        start += got
                        if left is not None:
                            left -= got
            except OSError:
                pass
            finally:
                os.close(fd)

    thread = threading.Thread(target=read, name="edge-read-ahead", daemon=True)
    thread.start()
    return thread


__all__ = [
    "READ_AHEAD",
    "READ_AHEAD_SHARE",
    "available_memory",
    "edge_prefilter",
    "exact_cosines",
    "read_ahead",
    "read_ahead_budget",
]
