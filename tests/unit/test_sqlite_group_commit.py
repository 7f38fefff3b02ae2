"""SQLite group commit: each write is committed when its call returns, groups fail together,
cancelled callers are not written, concurrent writers all land."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from memory.checkpoint import open_checkpointer


def _config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def _count(path: Path, table: str, thread: str) -> int:
    with sqlite3.connect(path) as db:  # another connection: sees committed rows only
        return int(
            db.execute(f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread,)).fetchone()[0]
        )


async def test_every_call_is_committed_when_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    async with open_checkpointer(f"sqlite:///{path}") as saver:

        async def one(i: int) -> None:
            thread = f"t{i}"
            cp = empty_checkpoint()
            cfg = await saver.aput(_config(thread), cp, {"step": i}, {})
            assert _count(path, "checkpoints", thread) == 1
            await saver.aput_writes(cfg, [("a", i), ("b", [i])], task_id=f"task{i}")
            assert _count(path, "writes", thread) == 2

        await asyncio.gather(*(one(i) for i in range(40)))
        got = await saver.aget_tuple(_config("t7"))
        assert got is not None and got.metadata["step"] == 7
        assert sorted(w[1] for w in got.pending_writes or []) == ["a", "b"]


async def test_a_failing_group_fails_every_caller_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    async with open_checkpointer(f"sqlite:///{path}") as saver:
        await saver.aput(_config("warm"), empty_checkpoint(), {}, {})
        with sqlite3.connect(path) as db:  # make the writes table reject every row
            db.execute(
                "CREATE TRIGGER no_writes BEFORE INSERT ON writes "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        cfg = await saver.aput(_config("x"), empty_checkpoint(), {}, {})
        results = await asyncio.gather(
            saver.aput(_config("y"), empty_checkpoint(), {}, {}),
            saver.aput_writes(cfg, [("a", 1)], task_id="t"),
            return_exceptions=True,
        )
        assert all(isinstance(r, sqlite3.IntegrityError) for r in results), results
        assert _count(path, "checkpoints", "y") == 0 and _count(path, "writes", "x") == 0
        # The next group is unaffected.
        await saver.aput(_config("z"), empty_checkpoint(), {}, {})
        assert _count(path, "checkpoints", "z") == 1


async def test_a_cancelled_caller_is_not_written_the_rest_of_its_group_is(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    async with open_checkpointer(f"sqlite:///{path}") as saver:
        await saver.aput(_config("warm"), empty_checkpoint(), {}, {})
        kept = asyncio.ensure_future(saver.aput(_config("kept"), empty_checkpoint(), {}, {}))
        gone = asyncio.ensure_future(saver.aput(_config("gone"), empty_checkpoint(), {}, {}))
        await asyncio.sleep(0)  # both queued, the flush not run yet
        gone.cancel()
        await kept
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert _count(path, "checkpoints", "kept") == 1
        assert _count(path, "checkpoints", "gone") == 0
