"""QdrantStore specifics the shared conformance suite does not cover: point ids, the folder
lock, an index built for other embeddings, filter semantics, and the store factory's URLs."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp

from agent.errors import (
    ConfigurationError,
    StoreIndexMismatchError,
    StoreLockedError,
    StoreUnavailableError,
    UnsupportedBackendError,
)
from agent.settings import Settings
from memory.embeddings import HashingEmbedder
from memory.store.factory import index_config, open_store, qdrant_server_url, store_url
from memory.store.qdrant import (
    QdrantStore,
    json_equal,
    open_qdrant_client,
    point_id,
    value_matches,
)
from memory.urls import redact
from tests.support.waiting import blocked_at, wait_until


def test_point_ids_are_uuids_that_joined_strings_would_collide_on() -> None:
    pairs = [
        (("a.b",), "c"),
        (("a",), "b.c"),
        (("a", "b"), "c"),
        (("a/b",), "c"),
        (("a",), "b/c"),
        (("a", "b/c"), ""),
        (('a", "b',), "c"),
        (("a",), '", "b", "c'),
    ]
    ids = [point_id(ns, key) for ns, key in pairs]
    assert len(set(ids)) == len(ids)
    assert all(str(uuid.UUID(i)) == i for i in ids)
    assert point_id(("a", "b"), "c") == point_id(("a", "b"), "c")


def test_items_with_colliding_joined_names_stay_apart(tmp_path: Path) -> None:
    with QdrantStore.local(tmp_path / "q") as store:
        store.put(("a", "b"), "c", {"v": 1})
        store.put(("a",), "b/c", {"v": 2})
        store.put(("a/b",), "c", {"v": 3})
        assert [
            store.get(ns, k).value["v"]
            for ns, k in ((("a", "b"), "c"), (("a",), "b/c"), (("a/b",), "c"))
        ] == [1, 2, 3]


def test_a_second_opener_gets_a_clear_lock_error(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    with QdrantStore.local(folder):
        with pytest.raises(StoreLockedError) as caught:
            open_qdrant_client(path=folder, lock_timeout=0.2)
        message = str(caught.value)
        assert str(folder) in message and "QDRANT_URL" in message and "one process" in message
    open_qdrant_client(path=folder, lock_timeout=0.2).close()  # released on close


def test_a_lock_held_briefly_is_waited_for(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    holder = open_qdrant_client(path=folder)
    opened: list[Any] = []
    waiter = threading.Thread(
        target=lambda: opened.append(open_qdrant_client(path=folder, lock_timeout=60))
    )
    waiter.start()
    # Refused once, it waits to try again instead of failing.
    wait_until(
        lambda: blocked_at(waiter, open_qdrant_client, "time.sleep(") or not waiter.is_alive(),
        "the second open waiting for the holder",
    )
    assert waiter.is_alive(), "the second open did not wait for the holder"
    holder.close()
    waiter.join(timeout=60)
    [client] = opened
    try:
        assert client.get_collections().collections == []  # opened, and usable
    finally:
        client.close()


def test_reopening_with_other_embeddings_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    with QdrantStore.local(folder, index=index_config(HashingEmbedder(dims=64))) as store:
        store.put(("n",), "k", {"text": "hello"})
    with (
        pytest.raises(StoreIndexMismatchError, match="64-dimensional"),
        QdrantStore.local(folder, index=index_config(HashingEmbedder(dims=32))),
    ):
        pass
    with (
        pytest.raises(StoreIndexMismatchError, match="hashing:64:0"),
        QdrantStore.local(folder, index=index_config(HashingEmbedder(dims=64, seed=9))),
    ):
        pass
    with QdrantStore.local(folder) as plain:  # without embeddings: readable, not searchable
        assert plain.get(("n",), "k").value == {"text": "hello"}
    with QdrantStore.local(folder, index=index_config(HashingEmbedder(dims=64))) as store:
        assert [i.key for i in store.search(("n",), query="hello")] == ["k"]


def test_namespaces_are_sequences_of_valid_labels(tmp_path: Path) -> None:
    """As upstream: any sequence of labels (a list too), each label checked."""
    with QdrantStore.local(tmp_path / "q") as store:
        store.batch([PutOp(["a"], "k", {"v": 1})])  # type: ignore[arg-type]
        item = store.batch([GetOp(["a"], "k")])[0]  # type: ignore[arg-type]
        assert item is not None and item.namespace == ("a",)
        assert [i.namespace for i in store.search(["a"])] == [("a",)]  # type: ignore[arg-type]
        with pytest.raises(InvalidNamespaceError, match="must be strings"):
            store.batch([PutOp(("a", 1), "k", {"v": 1})])  # type: ignore[arg-type]
        with pytest.raises(InvalidNamespaceError, match="periods"):
            store.batch([PutOp(("a.b",), "k", {"v": 1})])


def test_filter_semantics() -> None:
    assert json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal(0, False)
    assert json_equal([1, {"a": "x"}], [1.0, {"a": "x"}]) and not json_equal([1], [1, 2])
    value = {"n": 3, "s": "beta", "tags": ["x", "y"], "meta": {"a": 1, "b": [1, 2]}, "t": True}
    assert value_matches(value, None) and value_matches(value, {})
    assert value_matches(value, {"n": 3, "s": "beta", "t": True})
    assert not value_matches(value, {"t": 1})
    assert not value_matches(value, {"tags": "x"})  # a scalar never equals a list
    assert value_matches(value, {"tags": ["x", "y"]}) and not value_matches(
        value, {"tags": ["y", "x"]}
    )
    assert value_matches(value, {"meta": {"a": 1}})
    assert value_matches(value, {"n": {"$gt": 2, "$lte": 3}}) and not value_matches(
        value, {"n": {"$gt": 3}}
    )
    assert value_matches(value, {"n": {"$gt": 10 - 8}}) and value_matches(value, {"n": {"$lt": 10}})
    assert value_matches(value, {"s": {"$gt": "alpha"}}) and not value_matches(
        value, {"s": {"$gt": 1}}
    )
    assert value_matches(value, {"missing": {"$ne": "x"}}) and not value_matches(
        value, {"missing": {"$gt": 0}}
    )
    with pytest.raises(ValueError, match=r"\$in"):
        value_matches(value, {"n": {"$in": [3]}})


def test_numeric_filters_compare_numbers_not_text(tmp_path: Path) -> None:
    with QdrantStore.local(tmp_path / "q") as store:
        for n in (2, 9, 10, 100):
            store.put(("f",), str(n), {"n": n})
        assert sorted(int(i.key) for i in store.search(("f",), filter={"n": {"$gt": 9}})) == [
            10,
            100,
        ]
        assert [i.key for i in store.search(("f",), filter={"n": 10.0})] == ["10"]


# -- factory ------------------------------------------------------------------------------------


def test_store_url_from_settings() -> None:
    assert store_url(Settings.from_env({})) == "qdrant://local"
    assert store_url(Settings.from_env({"QDRANT_URL": "http://q:6333"})) == "qdrant+http://q:6333"
    assert (
        store_url(Settings.from_env({"ANALYST_STORE": "memory://", "QDRANT_URL": "http://q"}))
        == "memory://"
    )
    with pytest.raises(ConfigurationError, match="QDRANT_URL"):
        store_url(Settings.from_env({"QDRANT_URL": "q:6333"}))
    assert qdrant_server_url("qdrant+https://h.example:6333") == "https://h.example:6333"
    with pytest.raises(ConfigurationError, match="no host"):
        qdrant_server_url("qdrant+http://")
    assert redact("postgresql://u:secret@h:5/db") == "postgresql://u:***@h:5/db"


async def test_unknown_scheme_lists_the_supported_ones() -> None:
    with pytest.raises(UnsupportedBackendError) as caught:
        async with open_store("redis://localhost", embedder=None):
            pass
    assert "qdrant://local" in str(caught.value) and "postgres://" in str(caught.value)


async def test_an_unreachable_qdrant_server_is_a_clear_error() -> None:
    with pytest.raises(StoreUnavailableError, match="QDRANT_URL"):
        async with open_store("qdrant+http://127.0.0.1:9", embedder=HashingEmbedder(dims=8)):
            pass


async def test_factory_local_store_exclusive_or_shared(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    embedder = HashingEmbedder(dims=8)
    async with open_store(
        "qdrant+local://local", embedder=embedder, qdrant_path=folder, local_access="exclusive"
    ) as store:
        assert isinstance(store, QdrantStore)
        await store.aput(("x",), "k", {"text": "hi"})
        with pytest.raises(StoreLockedError):
            open_qdrant_client(path=folder, lock_timeout=0)
    # Shared (the default): the folder is free between operations, and two stores on it see
    # each other's writes.
    async with (
        open_store("qdrant+local://local", embedder=embedder, qdrant_path=folder) as one,
        open_store("qdrant+local://local", embedder=embedder, qdrant_path=folder) as two,
    ):
        open_qdrant_client(path=folder, lock_timeout=0).close()
        item = await one.aget(("x",), "k")
        assert item is not None and json.dumps(item.value) == '{"text": "hi"}'
        await two.aput(("x",), "k2", {"text": "from two"})
        assert [i.key for i in await one.asearch(("x",), query="from two", limit=1)] == ["k2"]
        await asyncio.gather(
            *(one.aput(("y",), f"a{i}", {"text": "a"}) for i in range(10)),
            *(two.aput(("y",), f"b{i}", {"text": "b"}) for i in range(10)),
        )
        assert len(await two.asearch(("y",), limit=100)) == 20
    with pytest.raises(ConfigurationError, match="ANALYST_DATA_DIR"):
        async with open_store("qdrant+local://local", embedder=None):
            pass


_WRITER = """
import asyncio, sys
from pathlib import Path
from memory.embeddings import HashingEmbedder
from memory.store.factory import open_store

async def main(folder, name):
    async with open_store("qdrant+local://local", embedder=HashingEmbedder(dims=8),
                          qdrant_path=Path(folder), lock_timeout=60) as store:
        for i in range(15):
            await store.aput(("w", name), f"k{i}", {"text": f"{name} {i}"})

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_processes_share_a_local_folder(tmp_path: Path) -> None:
    import subprocess
    import sys

    folder = tmp_path / "q"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(folder), f"p{n}"], stderr=subprocess.PIPE, text=True
        )
        for n in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    with QdrantStore.local(folder) as store:
        assert store.list_namespaces() == [("w", "p0"), ("w", "p1"), ("w", "p2")]
        assert len(store.search(("w",), limit=100)) == 45
