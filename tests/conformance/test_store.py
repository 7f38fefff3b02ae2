"""One ``BaseStore`` contract, run against InMemoryStore, QdrantStore (local) and PostgresStore.

Each test runs on every backend (``backend`` fixture) and, where it calls the public methods,
both ways (``api_mode``: the async methods, and the sync ones on a worker thread). Where the
backends legitimately differ, the test reads the difference from ``Backend`` instead of
skipping.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memory.embeddings import HashingEmbedder
from memory.store.common import now_us
from memory.store.engine import QdrantFormatStore
from memory.store.factory import sweep_expired
from tests.support.pgvector_server import pgvector_server
from tests.support.store_backends import (
    BACKENDS,
    Api,
    Backend,
    OpenBackend,
    Storage,
    opener,
    storage_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pgvector_admin() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def storage(backend: Backend, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Storage]:
    with storage_for(
        backend.name, tmp_path, lambda: request.getfixturevalue("pgvector_admin")
    ) as s:
        yield s


@pytest.fixture
def open_backend(storage: Storage) -> OpenBackend:
    return opener(storage)


@pytest.fixture(params=["async", "sync"])
def api_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_put_get_roundtrip(open_backend: OpenBackend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        before = datetime.now(UTC)
        value = {"text": "hello", "n": 3, "nested": {"a": [1, 2, {"b": None}]}, "ok": True}
        await api.put(("users", "u1", "prefs"), "k1", value)
        item = await api.get(("users", "u1", "prefs"), "k1")
        assert item is not None
        assert item.key == "k1"
        assert item.namespace == ("users", "u1", "prefs")
        assert item.value == value
        assert item.created_at.tzinfo is not None and item.updated_at.tzinfo is not None
        assert item.created_at <= item.updated_at
        assert abs((item.created_at - before).total_seconds()) < 60
        assert await api.get(("users", "u1", "prefs"), "missing") is None
        assert await api.get(("users", "u1"), "k1") is None
        assert await api.get(("users", "u1", "prefs", "deeper"), "k1") is None


async def test_update_replaces_value(
    open_backend: OpenBackend, backend: Backend, api_mode: str
) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        await api.put(("docs",), "d", {"text": "first", "v": 1})
        first = await api.get(("docs",), "d")
        if isinstance(store, QdrantFormatStore):
            fake_clock(store).advance(1)
        else:  # InMemoryStore and PostgresStore stamp with this machine's clock
            await until(lambda: _past(first.updated_at))
        await api.put(("docs",), "d", {"text": "second"})
        second = await api.get(("docs",), "d")
        assert second.value == {"text": "second"}
        assert second.updated_at > first.updated_at
        if backend.keeps_created_at:
            assert second.created_at == first.created_at
        assert [i.key for i in await api.search(("docs",))] == ["d"]


async def test_delete(open_backend: OpenBackend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        await api.put(("docs",), "a", {"text": "alpha"})
        await api.put(("docs",), "b", {"text": "beta"})
        await api.delete(("docs",), "a")
        assert await api.get(("docs",), "a") is None
        assert [i.key for i in await api.search(("docs",))] == ["b"]
        assert [i.key for i in await api.search(("docs",), query="alpha")] == ["b"]
        await api.delete(("docs",), "never-existed")
        await api.delete(("docs",), "a")
        assert (await api.get(("docs",), "b")).value == {"text": "beta"}


async def test_batch_reads_see_state_before_writes(
    open_backend: OpenBackend, api_mode: str
) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        await api.put(("b",), "old", {"text": "old"})
        results = await api.batch(
            [
                PutOp(("b",), "new", {"text": "one"}),
                PutOp(("b",), "new", {"text": "two"}),
                GetOp(("b",), "new"),
                PutOp(("b",), "old", None),
                GetOp(("b",), "old"),
                SearchOp(("b",)),
                ListNamespacesOp(),
            ]
        )
        assert results[0] is None and results[1] is None and results[3] is None
        assert results[2] is None
        assert results[4].value == {"text": "old"}
        assert [i.key for i in results[5]] == ["old"]
        assert results[6] == [("b",)]
        assert (await api.get(("b",), "new")).value == {"text": "two"}
        assert await api.get(("b",), "old") is None


async def test_search_scope_and_pagination(open_backend: OpenBackend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        keys = [f"k{i}" for i in range(5)]
        for key in keys:
            await api.put(("a", "b"), key, {"text": f"item {key}"})
        await api.put(("a",), "top", {"text": "at the prefix itself"})
        await api.put(("ab",), "other", {"text": "a different first label"})
        await api.put(("x", "a", "b"), "deep", {"text": "a and b deeper down"})

        everything = await api.search(("a",), limit=100)
        assert sorted(i.key for i in everything) == sorted([*keys, "top"])
        assert all(i.score is None for i in everything)
        assert {i.namespace for i in everything} == {("a", "b"), ("a",)}

        pages = [await api.search(("a", "b"), limit=2, offset=o) for o in (0, 2, 4)]
        assert [len(p) for p in pages] == [2, 2, 1]
        paged = [i.key for p in pages for i in p]
        assert sorted(paged) == keys and len(set(paged)) == 5
        assert await api.search(("a", "b"), limit=2, offset=5) == []
        assert len(await api.search((), limit=100)) == 8


async def test_search_filters(open_backend: OpenBackend, backend: Backend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        rows = {
            "r1": {"text": "one", "n": 1, "color": "red", "flag": True, "meta": {"x": 1, "y": "a"}},
            "r2": {
                "text": "two",
                "n": 2,
                "color": "blue",
                "flag": False,
                "meta": {"x": 2, "y": "b"},
            },
            "r3": {
                "text": "three",
                "n": 3,
                "color": "red",
                "flag": False,
                "meta": {"x": 3, "y": "c"},
            },
            "r4": {
                "text": "four",
                "n": 4,
                "color": "green",
                "flag": True,
                "meta": {"x": 4, "y": "d"},
            },
            "r5": {
                "text": "five",
                "n": 5,
                "color": "red",
                "flag": True,
                "meta": {"x": 5, "y": "e"},
            },
        }
        for key, value in rows.items():
            await api.put(("f",), key, value)

        async def keys(flt: dict) -> list[str]:
            return sorted(i.key for i in await api.search(("f",), filter=flt, limit=100))

        assert await keys({"color": "red"}) == ["r1", "r3", "r5"]
        assert await keys({"n": 2}) == ["r2"]
        assert await keys({"flag": True}) == ["r1", "r4", "r5"]
        assert await keys({"color": "red", "flag": True}) == ["r1", "r5"]
        if backend.nested_filters:
            assert await keys({"meta": {"x": 3, "y": "c"}}) == ["r3"]
            assert await keys({"meta": {"x": 3}}) == ["r3"]
        assert await keys({"color": {"$eq": "blue"}}) == ["r2"]
        assert await keys({"color": {"$ne": "red"}}) == ["r2", "r4"]
        assert await keys({"n": {"$gt": 3}}) == ["r4", "r5"]
        assert await keys({"n": {"$gte": 3}}) == ["r3", "r4", "r5"]
        assert await keys({"n": {"$lt": 3}}) == ["r1", "r2"]
        assert await keys({"n": {"$lte": 3}}) == ["r1", "r2", "r3"]
        assert await keys({"n": {"$gt": 1, "$lt": 5}}) == ["r2", "r3", "r4"]
        assert await keys({"n": {"$gte": 2}, "color": "red"}) == ["r3", "r5"]
        assert await keys({"color": "purple"}) == []
        assert await keys({"missing": "x"}) == []
        page = await api.search(("f",), filter={"color": "red"}, limit=2, offset=1)
        assert len(page) == 2 and {i.key for i in page} <= {"r1", "r3", "r5"}


async def test_search_by_query(open_backend: OpenBackend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        docs = {
            "py": "python tutorial for beginners",
            "ts": "typescript guide",
            "pasta": "cooking recipes for pasta",
            "snakes": "python snakes in the wild",
        }
        for key, text in docs.items():
            await api.put(
                ("docs",), key, {"text": text, "kind": "animal" if key == "snakes" else "doc"}
            )
        hits = await api.search(("docs",), query="python tutorial", limit=4)
        assert [h.key for h in hits][:2] == ["py", "snakes"]
        scores = [h.score for h in hits]
        assert all(isinstance(s, float) and -1.0 <= s <= 1.0 + 1e-6 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert scores[0] == pytest.approx(max(scores))
        first = await api.search(("docs",), query="python tutorial", limit=1, offset=0)
        second = await api.search(("docs",), query="python tutorial", limit=1, offset=1)
        assert [first[0].key, second[0].key] == ["py", "snakes"]
        filtered = await api.search(("docs",), query="python tutorial", filter={"kind": "animal"})
        assert [h.key for h in filtered] == ["snakes"]
        assert await api.search(("elsewhere",), query="python tutorial") == []


async def test_index_options(open_backend: OpenBackend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        await api.put(("i",), "hidden", {"text": "python python python"}, index=False)
        await api.put(("i",), "titled", {"title": "python snakes", "text": "zzz"}, index=["title"])
        await api.put(("i",), "plain", {"text": "rust and go"})
        assert (await api.get(("i",), "hidden")).value == {"text": "python python python"}
        assert sorted(
            i.key for i in await api.search(("i",), filter={"text": "python python python"})
        ) == ["hidden"]
        hits = await api.search(("i",), query="python snakes", limit=2)
        assert hits[0].key == "titled"
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)


async def test_list_namespaces(open_backend: OpenBackend, backend: Backend, api_mode: str) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        spaces = [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("x", "y"),
        ]
        for ns in spaces:
            await api.put(ns, "k", {"text": "v"})
            await api.put(ns, "k2", {"text": "w"})
        assert await api.list_namespaces() == sorted(spaces)
        assert await api.list_namespaces(prefix=("a", "b")) == sorted(spaces[:4])
        assert await api.list_namespaces(prefix=("a", "b"), max_depth=3) == [
            ("a", "b", "c"),
            ("a", "b", "d"),
            ("a", "b", "f"),
        ]
        assert await api.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
        assert await api.list_namespaces(prefix=("a", "*", "f")) == [
            ("a", "b", "f"),
            ("a", "c", "f"),
        ]
        assert await api.list_namespaces(suffix=("d", "*")) == [
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
        ]
        assert await api.list_namespaces(prefix=("a",), suffix=("f",), max_depth=2) == [
            ("a", "b"),
            ("a", "c"),
        ]
        assert await api.list_namespaces(max_depth=1) == [("a",), ("x",)]
        assert await api.list_namespaces(limit=2, offset=1) == sorted(spaces)[1:3]
        assert await api.list_namespaces(prefix=("nothing",)) == []
        await api.delete(("x", "y"), "k")
        await api.delete(("x", "y"), "k2")
        assert (("x", "y") in await api.list_namespaces()) != backend.drops_empty_namespaces


@pytest.mark.parametrize(
    "namespace",
    [("a.b",), ("",), ("ok", ""), ("bad\x00label",)],
    ids=["dot", "empty", "empty2", "nul"],
)
async def test_bad_namespace_labels_are_refused(
    open_backend: OpenBackend, api_mode: str, namespace: tuple[str, ...]
) -> None:
    async with open_backend() as store:
        api = Api(store, api_mode)
        with pytest.raises(InvalidNamespaceError):
            await api.put(namespace, "k", {"text": "v"})
        with pytest.raises(InvalidNamespaceError):
            await api.get(namespace, "k")
        with pytest.raises(InvalidNamespaceError):
            await api.search(namespace)
        with pytest.raises(InvalidNamespaceError):
            await api.list_namespaces(prefix=namespace)
        with pytest.raises(InvalidNamespaceError):
            await api.put(("langgraph", "x"), "k", {"text": "v"})
        with pytest.raises(InvalidNamespaceError):
            await api.put((), "k", {"text": "v"})
        assert await api.list_namespaces() == []


class FakeClock:
    """A store clock (microseconds since the epoch) that moves only when a test moves it."""

    def __init__(self) -> None:
        self.us = now_us()

    def __call__(self) -> int:
        return self.us

    def advance(self, seconds: float) -> None:
        self.us += int(seconds * 1_000_000)


def fake_clock(store: BaseStore) -> FakeClock:
    """Give ``store`` (a Qdrant-format store: its clock is injectable) a :class:`FakeClock`."""
    assert isinstance(store, QdrantFormatStore), type(store)
    clock = FakeClock()
    store.clock = clock
    return clock


async def _past(moment: datetime) -> bool:
    """Whether the wall clock has moved past ``moment``."""
    return datetime.now(UTC) > moment


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 60.0) -> None:
    """Wait until ``condition()`` holds (polled), or fail after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "the condition never held"
        await asyncio.sleep(0.1)


async def test_ttl_expiry_and_sweep(open_backend: OpenBackend, backend: Backend) -> None:
    async with open_backend() as store:
        if not backend.supports_ttl:
            assert not store.supports_ttl
            with pytest.raises(NotImplementedError):
                await store.aput(("t",), "k", {"text": "v"}, ttl=1)
            return
        assert store.supports_ttl
        # The Qdrant-format stores take an injected clock; PostgresStore expires by the
        # database's clock, so there the test waits (on a condition) past a 6-second TTL.
        clock = fake_clock(store) if backend.name != "postgres" else None
        short = 1 / 60 if clock else 0.1
        await store.aput(("t",), "short", {"text": "expires"}, ttl=short)
        await store.aput(("t",), "forever", {"text": "stays"})
        await store.aput(("t",), "long", {"text": "stays a while"}, ttl=60)
        assert (await store.aget(("t",), "short", refresh_ttl=False)) is not None
        if clock:
            clock.advance(1.3)

        async def short_expired() -> bool:
            return await store.aget(("t",), "short", refresh_ttl=False) is None

        # Expired items are hidden before the sweep (omit_expired) ...
        await until(short_expired)
        listed = sorted(i.key for i in await store.asearch(("t",), refresh_ttl=False))
        assert listed == ["forever", "long"]
        # ... and removed by it.
        assert await sweep_expired(store) == 1
        assert await sweep_expired(store) == 0
        assert sorted(i.key for i in await store.asearch(("t",))) == ["forever", "long"]


# Only where a read can refresh a TTL shorter than a minute (see Backend.subminute_refresh):
# the Qdrant-format stores, whose clock the test moves.
@pytest.mark.parametrize(
    "backend", [n for n, b in BACKENDS.items() if b.subminute_refresh], indirect=True
)
async def test_ttl_refreshed_by_reads(open_backend: OpenBackend) -> None:
    async with open_backend() as store:
        clock = fake_clock(store)
        await store.aput(("t",), "read", {"text": "read often"}, ttl=1.5 / 60)
        await store.aput(("t",), "unread", {"text": "never read"}, ttl=1.5 / 60)
        for _ in range(3):
            clock.advance(0.7)
            assert await store.aget(("t",), "read") is not None  # refreshes
        # 2.1 s after the puts: only the item read 0.7 s ago is alive.
        assert await store.aget(("t",), "unread", refresh_ttl=False) is None
        assert [i.key for i in await store.asearch(("t",), refresh_ttl=False)] == ["read"]
        await store.asearch(("t",))  # a search refreshes what it returns, too
        clock.advance(1.0)
        assert await store.aget(("t",), "read", refresh_ttl=False) is not None
        clock.advance(1.0)  # 2.0 s after the last refresh of a 1.5 s TTL
        assert await store.aget(("t",), "read", refresh_ttl=False) is None
        assert await sweep_expired(store) == 2


async def test_concurrent_writes(open_backend: OpenBackend) -> None:
    async with open_backend() as store:
        await asyncio.gather(
            *(
                store.aput(("c", f"n{i % 3}"), f"k{i}", {"text": f"item {i}", "i": i})
                for i in range(30)
            )
        )
        found = await store.asearch(("c",), limit=100)
        assert sorted(i.value["i"] for i in found) == list(range(30))
        assert await store.alist_namespaces(prefix=("c",)) == [
            ("c", "n0"),
            ("c", "n1"),
            ("c", "n2"),
        ]


_WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from memory.embeddings import HashingEmbedder
    from memory.store.factory import open_store

    async def main(url, path, action, access):
        async with open_store(url, embedder=HashingEmbedder(dims=64, seed=7),
                              qdrant_path=Path(path) if path else None,
                              local_access=access) as store:
            if action == "write":
                await store.aput(("p", "q"), "one", {"text": "python tutorial", "n": 1})
                await store.aput(("p", "q"), "two", {"text": "cooking pasta", "n": 2}, ttl=60)
                await store.aput(("p",), "three", {"text": "rust guide", "n": 3}, index=False)
                print(json.dumps({"ok": True}))
            else:
                one = await store.aget(("p", "q"), "one")
                hits = await store.asearch(("p",), query="python tutorial", limit=1)
                print(json.dumps({
                    "one": one.value if one else None,
                    "created": one.created_at.isoformat() if one else None,
                    "all": sorted(i.key for i in await store.asearch(("p",), limit=10)),
                    "top": [h.key for h in hits],
                    "namespaces": [list(n) for n in await store.alist_namespaces()],
                }))

    asyncio.run(main(*sys.argv[1:5]))
    """
)


def _process(storage: Storage, action: str) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _WRITER,
            storage.url,
            str(storage.qdrant_path or ""),
            action,
            storage.local_access,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("backend", [n for n, b in BACKENDS.items() if b.persistent], indirect=True)
async def test_persistence_across_processes(storage: Storage) -> None:
    assert await asyncio.to_thread(_process, storage, "write") == {"ok": True}
    first = await asyncio.to_thread(_process, storage, "read")
    assert first["one"] == {"text": "python tutorial", "n": 1}
    assert first["all"] == ["one", "three", "two"]
    assert first["top"] == ["one"]
    assert first["namespaces"] == [["p"], ["p", "q"]]
    again = await asyncio.to_thread(_process, storage, "read")
    assert again == first


async def test_custom_embedder_dimensions(open_backend: OpenBackend) -> None:
    embedder = HashingEmbedder(dims=32, seed=1)
    async with open_backend(embedder=embedder) as store:
        await store.aput(("e",), "k", {"text": "some words here"})
        assert embedder.texts_embedded == 1
        hits = await store.asearch(("e",), query="some words")
        assert [h.key for h in hits] == ["k"]


async def test_match_condition_ops_directly(open_backend: OpenBackend) -> None:
    async with open_backend() as store:
        await store.aput(("m", "n"), "k", {"text": "v"})
        [result] = await store.abatch(
            [ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("m", "*")),))]
        )
        assert result == [("m", "n")]


async def test_query_search_finds_a_rare_exact_word(
    open_backend: OpenBackend, backend: Backend
) -> None:
    """Hybrid backends find a rare exact word (a name, a ticker) that an 8-dimensional hashing
    embedding cannot tell apart from noise; on the others the search is plain cosine."""
    async with open_backend(embedder=HashingEmbedder(dims=8, seed=3)) as store:
        await store.abatch(
            [PutOp(("h",), f"n{i}", {"text": f"note number {i} about markets"}) for i in range(40)]
            + [PutOp(("h",), "target", {"text": "Caroline adopted a puppy named Zephyr"})]
        )
        hits = await store.asearch(("h",), query="Zephyr", limit=3)
        assert len(hits) == 3
        assert all(-1.0 <= (h.score or 0.0) <= 1.0 + 1e-6 for h in hits)
        if backend.hybrid:
            assert hits[0].key == "target" and hits[0].score is not None
            assert 0.0 < hits[0].score <= 1.0


async def test_time_aware_recall(open_backend: OpenBackend) -> None:
    """Through the recall helpers on every backend: events keep the time they happened, a
    time named in the question narrows recall to it, and boosts for fresh, important memories
    never push a clearly relevant old one out of the top k."""
    from memory.identity import Principal
    from memory.recall import NewMemory, arecall, aremember_many

    me = Principal("acme", "alice")
    now = datetime(2026, 6, 10, tzinfo=UTC)
    async with open_backend() as store:
        keys = await aremember_many(
            store,
            me,
            [
                NewMemory("bought shares of NVDA", at=datetime(2026, 5, 12, tzinfo=UTC)),
                NewMemory("bought shares of NVDA", at=datetime(2026, 3, 2, tzinfo=UTC)),
                NewMemory("my daughter plays the violin", at=datetime(2023, 1, 5, tzinfo=UTC)),
                *(NewMemory(f"weekly grocery list {i}", importance=10, at=now) for i in range(8)),
            ],
        )
        assert len(set(keys)) == 11  # the same sentence on two days: two memories
        [may] = await arecall(store, me, "what shares did I buy last month", limit=1, now=now)
        assert may.at == datetime(2026, 5, 12, tzinfo=UTC)
        [march] = await arecall(store, me, "what shares did I buy in March", limit=1, now=now)
        assert march.at == datetime(2026, 3, 2, tzinfo=UTC)
        top = await arecall(store, me, "my daughter plays the violin", limit=3, now=now)
        assert top[0].text == "my daughter plays the violin"
        assert top[0].parts.recency < 0.01 and top[0].parts.relevance > 0.5


async def test_ranking_is_deterministic_and_independent_of_the_limit(
    open_backend: OpenBackend, backend: Backend, api_mode: str
) -> None:
    """Identical data gives identical results (ties broken by namespace and key), and the top
    k of a query search is the first k of a longer one (on PostgresStore, up to the order of
    tied items)."""
    texts = ["apple pie", "apple tart", "pear pie", "apple pie", "plum cake", "apple"]
    results: list[list[tuple[str, float | None]]] = []
    async with open_backend() as store:
        api = Api(store, api_mode)
        for copy in ("a", "b"):
            for i, text in enumerate(texts * 3):
                await api.put((copy,), f"k{i % 3}-{i:02d}", {"text": text})
        for copy in ("a", "b"):
            hits = await api.search((copy,), query="apple pie", limit=18)
            results.append([(h.key, h.score) for h in hits])
        if backend.stable_ties:
            assert results[0] == results[1]
        assert [score for _, score in results[0]] == [score for _, score in results[1]]
        for limit in (1, 3, 5, 10):
            hits = await api.search(("a",), query="apple pie", limit=limit)
            if backend.stable_ties:
                assert [(h.key, h.score) for h in hits] == results[0][:limit]
            else:
                assert [h.score for h in hits] == [score for _, score in results[0][:limit]]


async def test_any_field_is_searchable_by_default(open_backend: OpenBackend, api_mode: str) -> None:
    """As upstream, the whole value is embedded unless fields are named, so a value without a
    ``text`` field (a LangMem memory's ``content``) is found by a query."""
    async with open_backend() as store:
        api = Api(store, api_mode)
        await api.put(("lm", "memories"), "m1", {"content": "prefers dividend stocks"})
        await api.put(("lm", "memories"), "m2", {"content": "lives in Lisbon"})
        hits = await api.search(("lm",), query="dividend stocks", limit=1)
        assert [h.key for h in hits] == ["m1"]


async def test_a_store_opens_without_an_embedder(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest, api_mode: str
) -> None:
    """Without an embedder every backend is a key-value store with filters; a query is ignored
    (items come newest first), as in ``InMemoryStore`` without an index."""
    with storage_for(
        backend.name, tmp_path / "bare", lambda: request.getfixturevalue("pgvector_admin")
    ) as where:
        async with opener(where)(embedder=False) as bare:
            api = Api(bare, api_mode)
            await api.put(("kv",), "a", {"n": 1})
            await api.put(("kv",), "b", {"n": 2})
            assert (await api.get(("kv",), "a")).value == {"n": 1}
            assert [i.key for i in await api.search(("kv",), filter={"n": {"$gt": 1}})] == ["b"]
            found = await api.search(("kv",), query="anything")
            assert sorted(i.key for i in found) == ["a", "b"]
            assert all(i.score is None for i in found)


async def test_newest_first_ties_do_not_depend_on_the_limit(
    open_backend: OpenBackend, backend: Backend, api_mode: str
) -> None:
    """Items written in one batch share their update time on most backends; a search without
    a query breaks those ties by namespace and key, so a page is the start of a longer one."""
    async with open_backend() as store:
        api = Api(store, api_mode)
        await api.batch([PutOp(("t", str(i % 2)), f"k{i}", {"n": i}) for i in range(9)])
        full = [(i.namespace, i.key) for i in await api.search(("t",), limit=9)]
        assert len(full) == 9
        for limit in (1, 2, 4, 7):
            page = [(i.namespace, i.key) for i in await api.search(("t",), limit=limit)]
            if backend.stable_ties:
                assert page == full[:limit]
            else:
                assert len(page) == limit


async def test_every_item_of_a_principal_is_listed_once_newest_first(
    open_backend: OpenBackend, backend: Backend
) -> None:
    """``all_items`` (what forget, account deletion, retention and backup read) lists every item
    of the principal in every namespace under its root, as a search without a query orders
    them (newest first where the backend orders so), and nothing of another principal: in
    one read where the store can, else by pages."""
    from agent.recollection.forgettable import all_items
    from memory.identity import Principal
    from memory.store.scoped import scoped

    mira, other = Principal("t1", "mira"), Principal("t1", "other")
    async with open_backend() as store:
        for who in (mira, other):
            view = scoped(store, who)
            await view.abatch(
                [PutOp(("memories",), f"k{i}", {"text": f"{who.user_id} {i}"}) for i in range(5)]
                + [PutOp(("events", str(i % 2)), f"e{i}", {"n": i}) for i in range(4)]
            )
        await scoped(store, mira).aput(("memories",), "k1", {"text": "mira 1, changed"})
        listed = await all_items(store, mira)
        searched = await scoped(store, mira).asearch((), limit=100)
        assert len(listed) == 9
        assert {(i.namespace, i.key) for i in listed} == {(i.namespace, i.key) for i in searched}
        assert all(i.value.get("text", "mira").startswith("mira") for i in listed)
        if backend.hybrid:  # the Qdrant-format stores: newest first, ties by namespace and key
            assert (listed[0].namespace, listed[0].key) == (("memories",), "k1")
        if backend.stable_ties:
            assert [(i.namespace, i.key, i.value) for i in listed] == [
                (i.namespace, i.key, i.value) for i in searched
            ]


async def test_removing_every_item_of_a_principal_returns_them_and_leaves_the_others(
    open_backend: OpenBackend,
) -> None:
    """Account deletion's one step where the store has it (``ScopedStore.aremove_all``): every
    item of the principal is deleted and returned as ``all_items`` listed it; another
    principal's items stay. A store without it answers ``None`` and deletes nothing."""
    from agent.recollection.forgettable import all_items
    from memory.identity import Principal
    from memory.store.scoped import scoped

    mira, other = Principal("t1", "mira"), Principal("t1", "other")
    async with open_backend() as store:
        for who in (mira, other):
            await scoped(store, who).abatch(
                [PutOp(("memories",), f"k{i}", {"text": f"{who.user_id} {i}"}) for i in range(5)]
                + [PutOp(("events", str(i % 2)), f"e{i}", {"n": i}) for i in range(4)]
            )
        listed = [(i.namespace, i.key, i.value) for i in await all_items(store, mira)]
        taken = await scoped(store, mira).aremove_all()
        left = [(i.namespace, i.key, i.value) for i in await all_items(store, mira)]
        if taken is None:
            assert left == listed
        else:
            assert [(i.namespace, i.key, i.value) for i in taken] == listed
            assert left == []
        assert len(await all_items(store, other)) == 9
