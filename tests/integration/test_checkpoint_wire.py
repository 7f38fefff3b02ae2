"""The fast checkpoint write paths store exactly what LangGraph's own savers store.

``memory.checkpoint`` replaces the write half (``aput`` / ``aput_writes``) of LangGraph's
SQLite and Redis savers with fewer round trips; their readers stay upstream's. Here the same
calls, recorded from a real offline run of the analyst graph, are written once through the
upstream saver class and once through ours, and the stored rows / JSON documents (read back
with the backend's own client) must be equal. ``StrictRedisSerializer``'s encoding fast path
must produce byte-identical output to upstream's encoder, also for the types it hands back.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import json
import sqlite3
import uuid
from collections import OrderedDict, namedtuple
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command, Interrupt, Send

from agent.market import SampleDataProvider
from agent.nodes.services import Services
from agent.state import Context
from graphs.builder import compile_graph
from memory.checkpoint import open_checkpointer
from memory.documents import FileMemory
from memory.serde import strict_redis_serializer
from tests.support.servers import (
    REDIS_STACK_URL,
    fresh_redis_prefix,
    redis_checkpointer_url,
    redis_client,
)

pytestmark = [pytest.mark.integration]


def _plain(config: dict[str, Any]) -> dict[str, Any]:
    keep = (str, int, float, bool, type(None))
    return {
        "configurable": {k: v for k, v in config["configurable"].items() if isinstance(v, keep)},
        "metadata": {k: v for k, v in config.get("metadata", {}).items() if isinstance(v, keep)},
    }


async def _recorded_calls(tmp_path: Path) -> list[tuple[str, tuple[Any, ...]]]:
    """The aput / aput_writes calls of 'Analyze NVDA' + approval, as LangGraph made them."""
    calls: list[tuple[str, tuple[Any, ...]]] = []
    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(tmp_path / "memory"),
        artifacts_dir=tmp_path / "artifacts",
    )
    async with open_checkpointer("memory://") as saver:
        put, put_writes = saver.aput, saver.aput_writes

        async def aput(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
            calls.append(("put", copy.deepcopy((_plain(config), checkpoint, metadata, versions))))
            return await put(config, checkpoint, metadata, versions)

        async def aput_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> Any:
            calls.append(("writes", copy.deepcopy((_plain(config), writes, task_id, task_path))))
            return await put_writes(config, writes, task_id, task_path)

        saver.aput, saver.aput_writes = aput, aput_writes  # type: ignore[method-assign]
        graph = compile_graph(saver, services=services)
        config = {"configurable": {"thread_id": "wire"}}
        context = Context(tenant_id="t", user_id="u")
        await graph.ainvoke({"query": "Analyze NVDA"}, config, context=context)
        draft = (await graph.aget_state(config)).values["draft"]
        resume = {"action": "approve", "draft_hash": draft["hash"], "approver": "x"}
        await graph.ainvoke(Command(resume=resume), config, context=context)
    assert {kind for kind, _ in calls} == {"put", "writes"}
    return calls


async def _replay(saver: Any, calls: list[tuple[str, tuple[Any, ...]]], thread: str) -> None:
    for kind, args in calls:
        config = copy.deepcopy(args[0])
        config["configurable"]["thread_id"] = thread
        if kind == "put":
            await saver.aput(config, *copy.deepcopy(args[1:]))
        else:
            await saver.aput_writes(config, *copy.deepcopy(args[1:]))


async def test_sqlite_rows_match_upstream(tmp_path: Path) -> None:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from memory.serde import strict_serializer

    calls = await _recorded_calls(tmp_path)
    async with aiosqlite.connect(str(tmp_path / "upstream.sqlite")) as conn:
        upstream = AsyncSqliteSaver(conn, serde=strict_serializer())
        await _replay(upstream, calls, "t")
    async with open_checkpointer(f"sqlite:///{tmp_path / 'ours.sqlite'}") as ours:
        assert type(ours) is not AsyncSqliteSaver
        # Group commit is live, not fallen back to upstream's writes (aiosqlite privates).
        assert ours._grouped()  # type: ignore[attr-defined]
        await _replay(ours, calls, "t")
        last = await ours.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        assert last is not None and last.checkpoint["channel_values"]["status"]

    def rows(name: str) -> dict[str, list[tuple[Any, ...]]]:
        with sqlite3.connect(tmp_path / name) as db:
            return {
                table: sorted(db.execute(f"SELECT * FROM {table}"), key=repr)
                for table in ("checkpoints", "writes")
            }

    assert rows("ours.sqlite") == rows("upstream.sqlite")


def _documents(client: Any, token: str, thread: str) -> dict[str, Any]:
    """Every key of ``token`` / ``thread``, JSON documents decoded, names normalised."""
    out: dict[str, Any] = {}
    for key in client.scan_iter(match=f"*{thread}*", count=1000):
        name = key.decode()
        kind = client.type(key).decode()
        if kind == "ReJSON-RL":
            value: Any = client.json().get(key)
        elif kind == "zset":
            value = [(m.decode(), s) for m, s in client.zrange(key, 0, -1, withscores=True)]
        else:
            value = client.get(key).decode()
        text = json.dumps(value, sort_keys=True).replace(token, "P").replace(thread, "T")
        out[name.replace(token, "P").replace(thread, "T")] = json.loads(text)
    for doc in out.values():
        if isinstance(doc, dict):
            doc.pop("checkpoint_ts", None)  # upstream stamps time.time() for UUIDv6 ids
    return out


@pytest.mark.parametrize("shallow", [False, True], ids=["redis", "redis+shallow"])
async def test_redis_documents_match_upstream(tmp_path: Path, shallow: bool) -> None:
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver
    from langgraph.checkpoint.redis.ashallow import AsyncShallowRedisSaver

    calls = await _recorded_calls(tmp_path)
    client: Any = redis_client()
    cls = AsyncShallowRedisSaver if shallow else AsyncRedisSaver
    with fresh_redis_prefix() as up_token, fresh_redis_prefix() as our_token:
        up_thread, our_thread = f"{up_token}-t", f"{our_token}-t"
        upstream: Any = cls(
            redis_url=REDIS_STACK_URL,
            checkpoint_prefix=f"{up_token}:checkpoint",
            checkpoint_write_prefix=f"{up_token}:checkpoint_write",
        )
        upstream.serde = strict_redis_serializer()
        try:
            await upstream.asetup()
            await _replay(upstream, calls, up_thread)
        finally:
            await upstream._redis.aclose()
        async with open_checkpointer(redis_checkpointer_url(our_token, shallow=shallow)) as ours:
            assert type(ours) is not cls
            # The one-trip path is live, not fallen back to upstream's (see redis_wire).
            assert ours.one_trip()  # type: ignore[attr-defined]
            await _replay(ours, calls, our_thread)
            config = {"configurable": {"thread_id": our_thread, "checkpoint_ns": ""}}
            last = await ours.aget_tuple(config)
            assert last is not None and last.checkpoint["channel_values"]["status"]
            assert last.pending_writes is not None
            history = [item async for item in ours.alist(config)]
            assert len(history) == (1 if shallow else sum(k == "put" for k, _ in calls))
        upstream_docs = _documents(client, up_token, up_thread)
        assert upstream_docs
        assert _documents(client, our_token, our_thread) == upstream_docs


# -- the serializer's encoding fast path ------------------------------------------------


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    label: str


Pair = namedtuple("Pair", "a b")


class Tagged(dict):  # type: ignore[type-arg]
    pass


VALUES: list[Any] = [
    {"a": [1, 2.5, "x", None, True], "b": {"c": (1, 2)}},
    {"nested": [{"deep": [[[]]]}, (), ("t", ["u"])]},
    {1, 2, 3},
    {"s": {"x"}},
    Pair(1, [2]),
    {"p": Pair("a", {"b": 1})},
    Point(1, "p"),
    {"points": [Point(2, "q")]},
    Colour.RED,
    {"c": Colour.RED},
    datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
    uuid.UUID(int=7),
    Tagged(a=1, b=[Tagged(c=2)]),
    OrderedDict(z=1, a=2),
    [HumanMessage("hi"), AIMessage("yo", id="m1")],
    {"messages": [AIMessage("x", tool_calls=[])]},
    Interrupt(value={"q": "approve?"}, id="i1"),
    [Send("node", {"arg": (1, 2)})],
    b"raw",
    {"blob": b"\x00\x01"},
    [b"x", {"y": bytearray(b"z")}],
    "plain",
    0,
    None,
    {"big": 2**70},
    {1: "non-str key"},
    # Nodes orjson hands back, holding values it would otherwise encode its own way.
    AIMessage("x", additional_kwargs={"tags": {"a"}, "at": Point(3, "r")}),
    {"m": [HumanMessage("q", additional_kwargs={"raw": b"\x00"})]},
    Tagged(s={1}, p=Point(4, "s")),
    Pair(Point(5, "t"), {"u"}),
    (Interrupt(value=Point(6, "v"), id="i2"),),
    True,
    1.5,
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_redis_encoding_matches_upstream(value: Any) -> None:
    from langgraph.checkpoint.redis.jsonplus_redis import JsonPlusRedisSerializer

    def outcome(serde: Any) -> Any:
        try:
            return serde.dumps_typed(value)
        except Exception as e:  # a value upstream cannot store must fail the same way
            return type(e)

    assert outcome(strict_redis_serializer()) == outcome(JsonPlusRedisSerializer())


# -- the checkpoint save batch and the write batches ----------------------------------------


@dataclasses.dataclass
class _Started:
    """A Redis saver under a fresh prefix with one checkpoint stored, and a raw client."""

    client: Any
    saver: Any
    thread: str
    config: Any  # the thread's config, for reading its latest checkpoint
    first: Any  # the stored checkpoint
    saved: Any  # the config aput returned for it


@contextlib.asynccontextmanager
async def _redis_thread_started() -> AsyncIterator[_Started]:
    from langgraph.checkpoint.base import empty_checkpoint

    client: Any = redis_client()
    with fresh_redis_prefix() as token:
        async with open_checkpointer(redis_checkpointer_url(token)) as saver:
            thread = f"{token}-t"
            config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            first = empty_checkpoint()
            saved = await saver.aput(config, first, {"source": "input", "step": -1}, {})
            yield _Started(client, saver, thread, config, first, saved)


async def test_redis_put_moves_the_latest_pointer_only_after_storing_the_document() -> None:
    """The pointer never names a checkpoint the server refused (it is set back to the one it
    named before), and the next save of that checkpoint succeeds."""
    import redis.exceptions
    from langgraph.checkpoint.base import create_checkpoint

    async with _redis_thread_started() as t:
        second = create_checkpoint(t.first, None, 0)
        refused_key = t.saver._make_redis_checkpoint_key_cached(t.thread, "", second["id"])
        t.client.set(refused_key, "not a JSON document")  # JSON.SET on it is an error
        with pytest.raises(redis.exceptions.ResponseError):
            await t.saver.aput(t.saved, second, {"source": "loop", "step": 0}, {})
        latest = await t.saver.aget_tuple(t.config)
        assert latest is not None
        assert latest.config["configurable"]["checkpoint_id"] == t.first["id"]

        t.client.delete(refused_key)
        await t.saver.aput(t.saved, second, {"source": "loop", "step": 0}, {})
        latest = await t.saver.aget_tuple(t.config)
        assert latest is not None
        assert latest.config["configurable"]["checkpoint_id"] == second["id"]
        history = [c.config["configurable"]["checkpoint_id"] async for c in t.saver.alist(t.config)]
        assert history == [second["id"], t.first["id"]]


async def test_redis_error_reply_in_a_write_batch_is_raised() -> None:
    """Writes go out as one packed batch; an error reply in the middle of it is raised to
    the caller (LangGraph then saves the task's writes again), and the saver goes on."""
    import redis.exceptions

    async with _redis_thread_started() as t:
        blocked = t.saver._make_redis_checkpoint_writes_key_cached(
            t.thread, "", t.first["id"], "t1", 1
        )
        t.client.set(blocked, "not a JSON document")
        writes = [("a", 1), ("b", 2), ("c", 3)]
        with pytest.raises(redis.exceptions.ResponseError):
            await t.saver.aput_writes(t.saved, writes, "t1")
        t.client.delete(blocked)
        for _ in range(3):
            await t.saver.aput_writes(t.saved, writes, "t2")
            found = await t.saver.aget_tuple(t.config)
            assert found is not None
            assert {w for w in found.pending_writes if w[0] == "t2"} == {
                ("t2", "a", 1),
                ("t2", "b", 2),
                ("t2", "c", 3),
            }
