"""A loaded Qdrant Edge shard has its payload pages read back into the page cache.

Qdrant drops the page cache of a shard's files when it loads it, so without the read-ahead
every query after a load reads its candidates' payloads from disk a page at a time
(:func:`memory.store.edge_parts.read_ahead`). Residency is the kernel's own answer
(``mincore``), waited for, never slept on.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sys
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from memory.embeddings import HashingEmbedder
from memory.store.edge import EdgeStore
from memory.store.edge_parts import (
    READ_AHEAD,
    READ_AHEAD_SHARE,
    available_memory,
    read_ahead,
    read_ahead_budget,
)
from memory.store.factory import index_config
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore: Linux"),
]


def _resident_data(path: Path) -> tuple[int, int]:
    """(pages of ``path`` holding data, those of them in the page cache)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    libc.mmap.argtypes += [ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    page = mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if not size:
            return 0, 0
        data: set[int] = set()
        offset = 0
        while offset < size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            data.update(range(start // page, (end + page - 1) // page))
            offset = end
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            vector = ctypes.create_string_buffer((size + page - 1) // page)
            assert libc.mincore(address, size, vector) == 0, os.strerror(ctypes.get_errno())
            return len(data), sum(1 for p in data if vector.raw[p] & 1)
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)


def _payload_files(folder: Path) -> list[Path]:
    return [path for pattern in READ_AHEAD for path in sorted(folder.glob(pattern))]


def _all_resident(folder: Path) -> bool:
    counts = [_resident_data(path) for path in _payload_files(folder)]
    return sum(data for data, _ in counts) > 0 and all(data == held for data, held in counts)


def test_a_loaded_shard_has_its_payload_pages_read_back(tmp_path: Path) -> None:
    folder = tmp_path / "shard"
    index = index_config(HashingEmbedder(dims=8))
    writer = EdgeStore(folder, index=index, lock_timeout=60)
    writer.setup()
    text = "padding " * 40
    writer.batch([PutOp(("x",), f"k{i}", {"text": f"memory {i} {text}"}) for i in range(400)])
    writer.close()
    assert _payload_files(folder)

    reader = EdgeStore(folder, index=index, lock_timeout=60)
    try:
        assert reader.get(("x",), "k1") is not None  # loads the shard
        wait_until(lambda: _all_resident(folder), "the payload pages read back", interval=0.05)
    finally:
        reader.close()


def _evict(folder: Path) -> None:
    """Drop the payload files' pages from the page cache (written back first: a dirty page
    stays)."""
    for path in _payload_files(folder):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def test_a_read_ahead_stops_at_its_budget(tmp_path: Path) -> None:
    """Past its budget (a quarter of the available memory, when a shard loads) a read-ahead
    leaves the rest of the files on disk: a shard larger than the free memory does not push
    out what other processes use."""
    folder = tmp_path / "shard"
    writer = EdgeStore(folder, index=index_config(HashingEmbedder(dims=8)), lock_timeout=60)
    writer.setup()
    text = "padding " * 40
    writer.batch([PutOp(("x",), f"k{i}", {"text": f"memory {i} {text}"}) for i in range(2000)])
    writer.close()

    _evict(folder)
    counts = [_resident_data(path) for path in _payload_files(folder)]
    data, held = sum(d for d, _ in counts), sum(h for _, h in counts)
    assert data > 64 and held < data  # the pages to read are on disk

    read_ahead(folder, budget=mmap.PAGESIZE).join()
    assert not _all_resident(folder)

    read_ahead(folder, budget=None).join()
    assert _all_resident(folder)


def test_a_loads_read_ahead_budget_is_a_share_of_the_available_memory() -> None:
    available = available_memory()
    assert available is not None and available > 0
    budget = read_ahead_budget()
    assert budget is not None
    assert 0 < budget <= available * READ_AHEAD_SHARE * 1.5  # MemAvailable moves between reads
