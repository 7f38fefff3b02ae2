"""``EdgeStore`` specifics the conformance suite does not cover: several processes sharing one
shard at once, the lock naming its holder, an index built for other embeddings, and hybrid
(dense + BM25) query search."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from memory.embeddings import HashingEmbedder
from memory.errors import StoreIndexMismatchError, StoreLockedError
from memory.store.edge import EdgeStore
from memory.store.factory import edge_path, index_config, open_store
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

_WORKER = """
import asyncio, json, sys
from pathlib import Path
from memory.embeddings import HashingEmbedder
from memory.store.factory import open_store

async def main(folder, name):
    seen = []
    async with open_store("qdrant+edge://local", embedder=HashingEmbedder(dims=16, seed=7),
                          qdrant_path=Path(folder), lock_timeout=60) as store:
        for i in range(20):
            await store.aput(("w", name), f"k{i}", {"text": f"{name} item {i}", "i": i})
            hits = await store.asearch(("w", name), query=f"{name} item {i}", limit=3)
            seen.append(len(hits))
            await store.asearch(("w",), limit=5)  # reads across everyone's writes
        # Sync calls from a worker thread as well (LangGraph runs sync nodes so).
        await asyncio.to_thread(store.put, ("w", name), "sync", {"text": f"{name} sync"})
    print(json.dumps({"seen": seen}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_three_processes_write_and_search_at_once_and_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(folder), f"p{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        seen = json.loads(out.strip().splitlines()[-1])["seen"]
        assert seen == [min(i + 1, 3) for i in range(20)]  # each search saw its own writes
    store = EdgeStore(
        edge_path(folder), access="exclusive", index=index_config(HashingEmbedder(dims=16, seed=7))
    )
    store.setup()
    try:
        assert store.list_namespaces() == [("w", "p0"), ("w", "p1"), ("w", "p2")]
        items = store.search(("w",), limit=1000)
        assert len(items) == 63
        for n in range(3):
            mine = {i.key: i.value for i in items if i.namespace == ("w", f"p{n}")}
            assert mine["sync"] == {"text": f"p{n} sync"}
            assert {mine[f"k{i}"]["i"] for i in range(20)} == set(range(20))
            top = store.search(("w", f"p{n}"), query=f"p{n} item 7", limit=1)
            assert top[0].key == "k7"
    finally:
        store.close()


def test_a_held_shard_makes_others_wait_then_names_its_holder(tmp_path: Path) -> None:
    index = index_config(HashingEmbedder(dims=8))
    holder = EdgeStore(tmp_path / "s", access="exclusive", index=index)
    holder.setup()
    try:
        holder.put(("x",), "k", {"text": "hi"})
        waiting = EdgeStore(tmp_path / "s", lock_timeout=0.2, index=index)
        with pytest.raises(StoreLockedError, match=r"held by pid \d+"):
            waiting.setup()
    finally:
        holder.close()
    waiting.setup()  # released on close
    item = waiting.get(("x",), "k")
    assert item is not None and item.value == {"text": "hi"}


def test_other_embeddings_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    first = EdgeStore(folder, index=index_config(HashingEmbedder(dims=16)))
    first.setup()
    with pytest.raises(StoreIndexMismatchError, match="16-dimensional"):
        EdgeStore(folder, index=index_config(HashingEmbedder(dims=8))).setup()


async def test_hybrid_search_finds_an_exact_term_that_dense_ranks_low(tmp_path: Path) -> None:
    """A rare exact word (a ticker, a name) is found by BM25 even when the dense vectors (here
    random-ish hashing vectors) rank it anywhere; plain cosine (``hybrid=False``) may not."""
    embedder = HashingEmbedder(dims=8, seed=3)  # tiny: dense ranking is close to noise
    async with open_store(
        "qdrant+edge://local", embedder=embedder, qdrant_path=tmp_path / "qdrant"
    ) as store:
        for i in range(60):
            await store.aput(("h",), f"n{i}", {"text": f"note number {i} about markets"})
        await store.aput(("h",), "target", {"text": "Caroline adopted a puppy named Zephyr"})
        hits = await store.asearch(("h",), query="Zephyr", limit=3)
        assert hits[0].key == "target"
        score = hits[0].score
        assert score is not None and 0.0 < score <= 1.0


async def test_the_default_store_is_edge_and_copies_in_a_local_mode_store(tmp_path: Path) -> None:
    """Upgrading keeps every memory: the first open of the Edge shard copies the items that
    qdrant-client's local mode kept in ``<data dir>/qdrant`` (vectors, times, TTLs)."""
    embedder = HashingEmbedder(dims=16, seed=5)
    folder = tmp_path / "qdrant"
    async with open_store("qdrant+local://local", embedder=embedder, qdrant_path=folder) as old:
        await old.aput(("m",), "a", {"text": "python tutorial for beginners", "n": 1})
        await old.aput(("m",), "b", {"text": "cooking pasta", "n": 2}, ttl=60)
        await old.aput(("m", "x"), "c", {"text": "not embedded"}, index=False)
        before = {i.key: i for i in await old.asearch(("m",), limit=10)}
    async with open_store("qdrant://local", embedder=embedder, qdrant_path=folder) as store:
        assert isinstance(store, EdgeStore) and store.path == edge_path(folder)
        after = {i.key: i for i in await store.asearch(("m",), limit=10)}
        assert {k: (i.value, i.created_at) for k, i in after.items()} == {
            k: (i.value, i.created_at) for k, i in before.items()
        }
        hits = await store.asearch(("m",), query="python tutorial", limit=1)
        assert [h.key for h in hits] == ["a"]
        assert await store.alist_namespaces() == [("m",), ("m", "x")]
        await store.aput(("m",), "d", {"text": "new after the upgrade"})
    # Only the first open copies: the shard is not overwritten again.
    async with open_store("qdrant://local", embedder=embedder, qdrant_path=folder) as store:
        assert len(await store.asearch(("m",), limit=10)) == 4


async def test_a_query_of_stop_words_only_is_scored_by_meaning_alone(tmp_path: Path) -> None:
    """No BM25 term survives "what is the": no BM25 candidates, every lexical part is 0 and the
    score is the cosine (clipped to [0, 1]); a real term raises the score of the items that
    contain it toward 1."""
    embedder = HashingEmbedder(dims=32, seed=3)
    async with open_store(
        "qdrant://local", embedder=embedder, qdrant_path=tmp_path / "qdrant"
    ) as store:
        for i, text in enumerate(["what is the plan", "dividend stocks", "the bond market"]):
            await store.aput(("s",), f"k{i}", {"text": text})
        hits = await store.asearch(("s",), query="what is the", limit=3)
        assert len(hits) == 3
        for hit in hits:
            parts = hit.parts()  # type: ignore[attr-defined]
            assert parts["lexical"] == 0.0
            assert hit.score == max(parts["dense"], 0.0)
        [top] = await store.asearch(("s",), query="dividend", limit=1)
        assert top.key == "k1" and top.parts()["lexical"] == 1.0 and top.score == 1.0  # type: ignore[attr-defined]


_HOLD_AND_WAIT = """
import sys
from pathlib import Path
from memory.store.edge import folder_lock

with folder_lock(Path(sys.argv[1]), timeout=30):
    print("held", flush=True)
    sys.stdin.read()  # until killed
"""


def test_the_lock_file_names_pid_and_program_only_and_is_private(tmp_path: Path) -> None:
    """A holder killed with SIGKILL leaves its lock file behind: it says which process held the
    shard, never the arguments (``analyst memories add my secret pin is 4242``), and only the
    user can read it."""
    lock = tmp_path / "qdrant-edge.lock"
    lock.write_text("pid 1: analyst memories add an older version's command line\n")
    lock.chmod(0o644)  # as an older version left it
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _HOLD_AND_WAIT,
            str(tmp_path / "qdrant-edge"),
            "my",
            "secret",
            "4242",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = lock.read_text()
    assert text == f"pid {proc.pid}: {Path(sys.executable).name}"
    assert "secret" not in text and "4242" not in text and "memories add" not in text
    assert lock.stat().st_mode & 0o777 == 0o600
    waiting = EdgeStore(tmp_path / "qdrant-edge", lock_timeout=5)
    waiting.setup()  # the dead holder's flock went with it
    waiting.close()


def test_the_index_is_built_out_of_place_while_the_store_stays_readable(tmp_path: Path) -> None:
    """Enough unindexed vectors start the detached indexer: it copies the shard, builds the
    index on the copy while this process keeps reading and writing, and swaps it in; results
    are those of before, and writes made during a build are not lost (the stale copy is
    discarded, the build starts over)."""
    from memory.store.indexing import indexer_running

    folder = tmp_path / "qdrant-edge"
    store = EdgeStore(folder, index=index_config(HashingEmbedder(dims=16, seed=2)), index_after=300)
    store.setup()
    try:
        store.batch(
            [
                PutOp(("m",), f"k{i}", {"text": f"memory {i} about topic {i % 17}"})
                for i in range(400)
            ]
        )
        before = [(h.key, h.score) for h in store.search(("m",), query="topic 5", limit=10)]
        written = 0

        def swapped_in() -> bool:
            """Whether the built index is in (a swap writes its file); meanwhile reads give what
            they gave before, and writes made during the build must survive its copy."""
            nonlocal written
            if (folder / "analyst-index.json").exists():
                return True
            assert [
                (h.key, h.score) for h in store.search(("m",), query="topic 5", limit=10)
            ] == before
            if written < 3:
                store.put(
                    ("other",), f"w{written}", {"text": "written during the build"}, index=False
                )
                written += 1
            return False

        wait_until(swapped_in, "the index build and its swap", timeout=600, interval=0.2)
        assert [(h.key, h.score) for h in store.search(("m",), query="topic 5", limit=10)] == before
        assert store.shard_info()["segments"] >= 2  # the indexed segment and a new appendable one
        assert {i.key for i in store.search(("other",), limit=10)} == {
            f"w{n}" for n in range(written)
        }
        store.close()
        wait_until(lambda: not indexer_running(folder), "the indexer's exit", interval=0.1)
        assert not folder.with_name("qdrant-edge.new").exists()
        assert not folder.with_name("qdrant-edge.old").exists()
    finally:
        store.close()


def test_ttl_refreshes_made_during_an_index_build_are_carried_into_the_copy(tmp_path: Path) -> None:
    """A read that refreshes a TTL while the indexer builds its copy does not discard the build
    (it is not a write), and the refreshed expiry is what the swapped-in copy holds."""
    from memory.store.common import now_us, point_id
    from memory.store.indexing import carry_expiry, generation

    folder, copy = tmp_path / "s", tmp_path / "copy"
    index = index_config(HashingEmbedder(dims=8))
    store = EdgeStore(folder, index=index, ttl={"refresh_on_read": True}, index_after=None)
    store.setup()
    store.batch([PutOp(("m",), k, {"text": k}, ttl=60) for k in ("a", "b")])
    store.close()
    shutil.copytree(folder, copy)  # what the indexer copies
    written = generation(folder)
    store.clock = lambda: now_us() + 3_600_000_000  # an hour later
    assert store.get(("m",), "a") is not None  # refreshes a's TTL
    store.close()
    assert generation(folder) == written
    assert carry_expiry(folder, copy) == 1

    def expiry(path: Path, key: str) -> int:
        opened = EdgeStore(path, index=index, index_after=None)
        opened.setup()
        try:
            with opened._connected() as shard:
                return int(
                    opened._retrieve(shard, [point_id(("m",), key)])[point_id(("m",), key)][
                        "expires_us"
                    ]
                )
        finally:
            opened.close()

    assert expiry(copy, "a") == expiry(folder, "a")
    assert expiry(copy, "b") == expiry(folder, "b")


def test_a_rebuild_that_fails_part_way_keeps_every_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild (what erases deleted bytes) copies the live items into a new shard beside
    the live one and swaps it in only when complete: a failure while copying (here a full disk
    once every item is copied) leaves the store as it was, and the next rebuild erases."""
    from memory.store import erasing
    from tests.support.raw_bytes import raw_hits

    folder = tmp_path / "qdrant-edge"
    index = index_config(HashingEmbedder(dims=16, seed=3))
    store = EdgeStore(folder, index=index, index_after=None)
    store.setup()
    store.batch([PutOp(("m",), f"k{i}", {"text": f"note zq{i:03d}x"}) for i in range(50)])
    store.delete(("m",), "k0")
    copy = erasing.copy_points

    def full_disk(source: object, target: object) -> int:
        copy(source, target)  # type: ignore[arg-type]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(erasing, "copy_points", full_disk)
    with pytest.raises(OSError, match="No space left"):
        store.rebuild()
    monkeypatch.undo()
    assert store.count() == 49
    store.close()
    reopened = EdgeStore(folder, index=index, index_after=None)
    reopened.setup()
    try:
        assert reopened.count() == 49
        assert [h.key for h in reopened.search(("m",), query="note zq007x", limit=1)] == ["k7"]
        assert raw_hits(tmp_path, "zq000x")  # deleted, not yet erased
        assert reopened.rebuild() == 49
        assert raw_hits(tmp_path, "zq000x") == []
        assert reopened.get(("m",), "k49") is not None
    finally:
        reopened.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "qdrant-edge",
        "qdrant-edge.lock",
        "qdrant-edge.wait",  # held by processes waiting for the lock (memory.store.lock)
    ]


def test_a_swap_a_crash_interrupted_is_finished_when_the_shard_opens(tmp_path: Path) -> None:
    """A rebuild or an index build swaps its shard in by two renames through ``<shard>.old``:
    a crash between them puts the old shard back on the next open; a crash after them (the
    old folder not yet removed) removes it, so no byte a rebuild erased stays in it."""
    folder = tmp_path / "qdrant-edge"
    old = tmp_path / "qdrant-edge.old"
    store = EdgeStore(folder, index=index_config(HashingEmbedder(dims=8)), index_after=None)
    store.setup()
    store.put(("m",), "kept", {"text": "kept zq1x"})
    store.close()

    folder.rename(old)  # crashed between the renames
    store.setup()
    assert store.get(("m",), "kept") is not None and not old.exists()
    store.close()

    shutil.copytree(folder, old)  # crashed before the old folder was removed
    store.setup()
    assert store.get(("m",), "kept") is not None and not old.exists()
    store.close()


def test_an_erasure_asked_after_the_lease_ended_reopens_no_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Account deletion asks for the erasure once the deleting lease may have ended: the
    request is recorded under the folder lock alone, and the eraser still removes every byte
    of the deleted item."""
    from memory.store import erasing
    from tests.support.raw_bytes import raw_hits

    folder = tmp_path / "qdrant-edge"
    store = EdgeStore(folder, index=index_config(HashingEmbedder(dims=8)), index_after=None)
    store.setup()
    store.put(("m",), "kept", {"text": "kept zq1x"})
    store.put(("m",), "gone", {"text": "gone qv7w"})
    store.delete(("m",), "gone")
    store.close()  # the lease that deleted has ended

    def refused() -> None:
        raise AssertionError("the shard was reopened to record an erasure")

    monkeypatch.setattr(store, "_open_shard", refused)
    assert store.erase_deleted() is False
    assert erasing.pending(folder) or erasing.eraser_running(folder)
    assert raw_hits(tmp_path, "qv7w") == []
    assert raw_hits(tmp_path, "zq1x") != []


@pytest.mark.parametrize("module", ["erasing", "indexing"])
def test_a_detached_worker_counts_as_running_from_its_launch(tmp_path: Path, module: str) -> None:
    """The launcher holds the worker's lock before the child starts and hands it over, so a
    caller polling for the worker (``wait_erased``) launches one, never one per poll while
    the first is still importing; the lock goes when the child ends."""
    from memory.store.erasing import ERASER
    from memory.store.indexing import INDEXER

    worker = {"erasing": ERASER, "indexing": INDEXER}[module]
    folder = tmp_path / "qdrant-edge"
    folder.mkdir()  # no shard and no request: the worker has nothing to do and ends
    first = worker.start(folder)
    assert first is not None
    try:
        assert worker.running(folder)
        assert worker.start(folder) is None
    finally:
        assert first.wait(timeout=120) == 0
    assert not worker.running(folder)
    again = worker.start(folder)
    assert again is not None and again.wait(timeout=120) == 0


def test_the_indexer_copies_the_shard_only_once_writes_pause(tmp_path: Path) -> None:
    """A bulk load writes batch after batch: the indexer waits for a pause before it copies
    (a copy taken during the load is discarded, and a build given up during it was never
    retried), and gives up, for the next write to restart it, when no pause comes."""
    from memory.store.indexing import bump_generation, generation, wait_for_quiet

    folder = tmp_path / "shard"
    folder.mkdir()
    now = [0.0]

    def clock() -> float:
        return now[0]

    def loading(batches: int):  # a write batch lands during each of the first `batches` waits
        def sleep(seconds: float) -> None:
            now[0] += seconds
            if generation(folder) < batches:
                bump_generation(folder)

        return sleep

    # Twenty batches, one every 0.25 s: the copy waits for 2 s without one after the last.
    assert wait_for_quiet(folder, quiet=2.0, limit=600.0, clock=clock, sleep=loading(20))
    assert generation(folder) == 20
    assert now[0] == 20 * 0.25 + 2.0
    # Writes that never pause within the limit leave the build to the next write.
    now[0] = 0.0
    assert not wait_for_quiet(folder, quiet=2.0, limit=10.0, clock=clock, sleep=loading(10**6))
    assert now[0] <= 10.0 + 0.25


def test_a_fresh_shard_counts_each_new_vector_once(tmp_path: Path) -> None:
    from memory.store.indexing import unindexed

    folder = tmp_path / "qdrant-edge"
    store = EdgeStore(folder, index=index_config(HashingEmbedder(dims=16, seed=2)))
    store.setup()
    try:
        store.batch([PutOp(("m",), f"k{i}", {"text": f"memory {i}"}) for i in range(10)])
        assert unindexed(folder) == 10
        store.batch([PutOp(("m",), f"k{i}", {"text": f"memory {i}"}) for i in range(10, 25)])
        assert unindexed(folder) == 25
    finally:
        store.close()


def test_kept_bm25_statistics_follow_every_change_to_the_scope(tmp_path: Path) -> None:
    """A search keeps its scope's BM25 counts between searches: they must be those a fresh
    store counts after a write by another process and after an item expires."""
    from memory.embeddings import HashingEmbedder as Embedder
    from memory.store.common import now_us

    folder = tmp_path / "qdrant-edge"
    index = index_config(Embedder(dims=16, seed=3))
    ttl = {"omit_expired": True, "refresh_on_read": False}
    start = now_us()

    def opened() -> EdgeStore:
        store = EdgeStore(folder, index=index, ttl=ttl, index_after=None)  # type: ignore[arg-type]
        store.setup()
        return store

    def ranked(store: EdgeStore, at: int) -> list[tuple[str, float, float | None]]:
        store.clock = lambda: at
        return [
            (h.key, h.score or 0.0, getattr(h, "lexical", None))
            for h in store.search(("m",), query="alpha beta", limit=10)
        ]

    kept = opened()
    try:
        kept.clock = lambda: start
        kept.batch(
            [PutOp(("m",), f"k{i}", {"text": f"alpha note {i}"}) for i in range(6)]
            + [PutOp(("m",), "short", {"text": "beta expires soon"}, ttl=1)]
        )
        first = ranked(kept, start)
        # Another process (another store on the folder) writes into the scope.
        other = opened()
        other.clock = lambda: start
        other.batch([PutOp(("m",), f"b{i}", {"text": f"beta fact {i}"}) for i in range(4)])
        other.close()
        after_write = ranked(kept, start)
        assert after_write != first
        fresh = opened()
        assert ranked(fresh, start) == after_write
        fresh.close()
        # Two minutes later the short item has expired (not yet swept): beta is rarer.
        later = start + 120_000_000
        after_expiry = ranked(kept, later)
        assert "short" not in {key for key, _, _ in after_expiry}
        fresh = opened()
        assert ranked(fresh, later) == after_expiry
        fresh.close()
    finally:
        kept.close()
