"""A thread read from its checkpoints alone reads exactly as the graph reads it.

``analyst threads``, ``show`` and ``history`` read threads without LangGraph's graph runtime
(:mod:`graphs.reading`). Both readings are compared here on real threads in every status
(published, awaiting approval, rejected, noted, awaiting confirmation, interrupted, running):
the latest state against the graph's own ``StateSnapshot``, every checkpoint of the history
against ``aget_state_history``, and the views the application shows (``--json``) against the
views built from the graph's snapshots.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.app.views import checkpoint_views, thread_view
from graphs.builder import reading_graph
from graphs.reading import read_history, read_state

pytestmark = pytest.mark.integration

#: What the snapshots of both readings must agree on (all that the application reads).
FIELDS = ("values", "next", "interrupts", "config", "metadata", "created_at", "parent_config")


class Stopped(Exception):
    """Raised from a run's update callback: the run stops as a killed one does."""


async def stop_after_executor(node: str, update: dict[str, Any]) -> None:
    if node == "executor":
        raise Stopped


def fields(snapshot: Any) -> dict[str, Any]:
    return {name: getattr(snapshot, name) for name in FIELDS}


async def seed(app: Any) -> dict[str, str]:
    """One thread per status, run through the application; thread id -> its status."""
    await app.decide("published", approve(await app.start("Analyze NVDA", thread_id="published")))
    await app.start("Analyze AAPL", thread_id="approval")
    view = await app.start("Analyze MSFT", thread_id="rejected")
    while view.status == "awaiting_approval":
        decision = {"approver": "tester", "draft_hash": view.draft_hash, "action": "reject"}
        view = await app.decide("rejected", {**decision, "feedback": "More on the risks."})
    await app.start("My horizon is 10 years.", thread_id="noted")
    await app.start("Forget that my horizon is 10 years", thread_id="asked")
    with pytest.raises(Stopped):
        await app.start("Analyze NVDA", thread_id="stopped", on_update=stop_after_executor)
    return {
        "published": "published",
        "approval": "awaiting_approval",
        "rejected": "rejected",
        "noted": "noted",
        "asked": "awaiting_confirmation",
        "stopped": "interrupted",
    }


def approve(view: Any) -> dict[str, Any]:
    return {"approver": "tester", "draft_hash": view.draft_hash, "action": "approve"}


async def test_reading_from_checkpoints_matches_the_graph_in_every_status(open_app: Any) -> None:
    async with open_app() as app:
        statuses = await seed(app)
        saver = await app.tiers.checkpointer()
        graph = reading_graph(saver)
        for thread in statuses:
            config: Any = {"configurable": {"thread_id": thread}}
            latest = await read_state(saver, thread)
            assert latest is not None, thread
            assert fields(latest) == fields(await graph.aget_state(config)), thread
            history = await read_history(saver, thread)
            assert history is not None, thread
            expected = [s async for s in graph.aget_state_history(config)]
            assert [fields(s) for s in history] == [fields(s) for s in expected], thread
        assert await read_history(saver, "no-such-thread") == []
        empty = await read_state(saver, "no-such-thread")
        assert empty is not None and (empty.values, empty.next, empty.interrupts) == ({}, (), ())

    async with open_app() as app, open_app() as runner:
        # A fresh app reads from checkpoints (no graph opened); ``runner`` holds one lock.
        graph = reading_graph(await app.tiers.checkpointer(create=False))
        with runner.locks.hold("stopped"):
            for thread, status in {**statuses, "stopped": "running"}.items():
                config = {"configurable": {"thread_id": thread}}
                shown = await app.view(thread)
                assert shown.status == status, thread
                snap = await graph.aget_state(config)
                busy = app.locks.busy(thread)
                model = app.tiers.model_label
                record = app.require_thread(thread)
                assert shown.to_json() == thread_view(thread, record, snap, busy, model).to_json()
                snaps = [s async for s in graph.aget_state_history(config)]
                assert await app.history(thread) == checkpoint_views(snaps), thread
        assert app.tiers.opened_store is None  # a read opens no store

    async with open_app() as app:
        # A task that finished inside a step not yet checkpointed (a process killed between
        # its writes and the checkpoint): the graph applies its writes, so these rules step
        # aside and the application reads the thread through the graph.
        saver = await app.tiers.checkpointer(create=False)
        graph = reading_graph(saver)
        config = {"configurable": {"thread_id": "stopped"}}
        (task,) = (await graph.aget_state(config)).tasks
        latest = await saver.aget_tuple(config)
        assert latest is not None
        await saver.aput_writes(latest.config, [("reply", "half done")], task.id)
        snap = await graph.aget_state(config)
        assert snap.values["reply"] == "half done" and snap.next == ()
        assert await read_state(saver, "stopped") is None
        record = app.require_thread("stopped")
        shown = await app.view("stopped")
        model = app.tiers.model_label
        assert shown.to_json() == thread_view("stopped", record, snap, False, model).to_json()
