"""A Redis checkpoint save and a task's writes each take one round trip of plain commands.

The Redis savers store upstream's RedisJSON documents with packed batches instead of a Lua
script per save (a script cost about 15 us of server time per call on top of its JSON.SET).
Here the saver's own client, opened as the application opens it, talks to the real Redis
Stack through a connection class that records every batch it sends: each ``aput`` and
``aput_writes`` must be exactly one batch, with no EVAL / EVALSHA / FCALL in it, and what it
stored must read back through upstream's readers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
import redis.asyncio.connection
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from memory.checkpoint import open_checkpointer
from tests.support.servers import fresh_redis_prefix, redis_checkpointer_url, redis_client

pytestmark = [pytest.mark.integration]

#: Commands that run a server-side script.
SCRIPT_COMMANDS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}


def recording_connection(batches: list[list[str]]) -> type[redis.asyncio.connection.Connection]:
    """A redis-py connection class that appends each sent batch's command names to
    ``batches`` (one entry per write to the socket, i.e. per round trip)."""

    class Recording(redis.asyncio.connection.Connection):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.packed: list[str] = []

        def pack_command(self, *args: Any) -> list[bytes]:
            name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            self.packed.append(name.split()[0].upper())
            return super().pack_command(*args)

        async def send_packed_command(
            self, command: bytes | str | Iterable[bytes], check_health: bool = True
        ) -> None:
            batches.append(self.packed)
            self.packed = []
            await super().send_packed_command(command, check_health)

    return Recording


async def record_batches(saver: Any, batches: list[list[str]]) -> None:
    """From now on the saver's client connects through :func:`recording_connection`; the
    connection's handshake (CLIENT SETINFO) is made here and not recorded."""
    pool = saver.client.connection_pool
    await pool.disconnect()
    pool.reset()
    pool.connection_class = recording_connection(batches)
    await saver.client.ping()
    batches.clear()


@pytest.mark.parametrize("ttl", [None, "90d"], ids=["no-ttl", "ttl"])
@pytest.mark.parametrize("shallow", [False, True], ids=["full", "shallow"])
async def test_a_super_step_is_one_batch_per_call_and_no_script(
    shallow: bool, ttl: str | None
) -> None:
    options = {"ttl": ttl} if ttl else {}
    with fresh_redis_prefix() as token:
        url = redis_checkpointer_url(token, shallow=shallow, **options)
        async with open_checkpointer(url) as saver:
            thread: Any = {"configurable": {"thread_id": f"{token}-t", "checkpoint_ns": ""}}
            first = empty_checkpoint()
            saved = await saver.aput(thread, first, {"source": "input", "step": -1}, {})
            batches: list[list[str]] = []
            await record_batches(saver, batches)

            await saver.aput_writes(saved, [("a", 1), ("b", "two")], "task-1")
            assert len(batches) == 1, batches
            assert batches[0].count("JSON.SET") == 2, batches
            second = create_checkpoint(first, None, 0)
            batches.clear()
            await saver.aput(saved, second, {"source": "loop", "step": 0}, {})
            assert len(batches) == 1, batches
            assert "JSON.SET" in batches[0], batches
            assert not SCRIPT_COMMANDS & set(batches[0]), batches
            if ttl:
                assert "EXPIRE" in batches[0], batches

            latest = await saver.aget_tuple(thread)
            assert latest is not None
            assert latest.config["configurable"]["checkpoint_id"] == second["id"]
            if not shallow:
                previous = await saver.aget_tuple(saved)
                assert previous is not None
                assert sorted(previous.pending_writes or []) == [
                    ("task-1", "a", 1),
                    ("task-1", "b", "two"),
                ]


async def test_a_refused_first_checkpoint_leaves_no_pointer() -> None:
    """The batch moves the pointer even when its JSON.SET is refused at run time; for a
    thread's first checkpoint there was no pointer before, so none is left behind (a dangling
    one would name a document that does not exist), and the thread reads as empty."""
    import redis.exceptions

    client: Any = redis_client()
    with fresh_redis_prefix() as token:
        async with open_checkpointer(redis_checkpointer_url(token)) as saver:
            thread: Any = {"configurable": {"thread_id": f"{token}-t", "checkpoint_ns": ""}}
            first = empty_checkpoint()
            any_saver: Any = saver
            refused = any_saver._make_redis_checkpoint_key_cached(f"{token}-t", "", first["id"])
            client.set(refused, "not a JSON document")  # JSON.SET on it is an error
            with pytest.raises(redis.exceptions.ResponseError):
                await saver.aput(thread, first, {"source": "input", "step": -1}, {})
            latest = any_saver._make_redis_checkpoint_latest_key(f"{token}-t", "")
            assert client.exists(latest) == 0
            assert await saver.aget_tuple(thread) is None

            client.delete(refused)
            await saver.aput(thread, first, {"source": "input", "step": -1}, {})
            found = await saver.aget_tuple(thread)
            assert found is not None
            assert found.config["configurable"]["checkpoint_id"] == first["id"]
