"""A message on a thread that is paused (a draft awaiting approval, a run stopped midway).

LangGraph discards a thread's pending interrupt when new input starts a run on it, so the
application never runs a new message on a paused thread: the message is handled beside the
paused run (:func:`agent.nodes.aside.answer_aside`, which the graph's capture node uses too
when the API server runs such a message anyway): stored as an episode of the thread, learned
from, answered, or, for a research request, not started (the reply asks whether to set the
draft aside, i.e. to run the request in a new thread; the draft stays approvable).

No checkpoint of the paused thread is written: the draft, its hash and its interrupt are
untouched, so ``approve`` still publishes it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.app.tiers import Tiers
    from agent.app.views import ThreadView
    from agent.learning.learner import Learner


async def aside(
    tiers: Tiers, learner: Learner, thread_id: str, query: str, view: ThreadView
) -> ThreadView:
    """Store, understand and answer ``query`` beside ``thread_id``'s paused run; the view
    returned is the thread's (its draft still pending) with this message's answer.
    ``tiers`` are the principal's, ``learner`` their memory's write and read paths (the app's,
    after its start-up sweep)."""
    from agent.nodes.aside import answer_aside

    storage = tiers.require_thread(thread_id).storage_id  # where the thread's episodes are
    said = await answer_aside(
        learner,
        tiers.services,
        storage,
        query,
        paused=view.status,
        waiting=_waiting(thread_id, view),
        not_started=(
            "Set the draft aside and research this in a new thread? In chat answer yes; "
            f'otherwise run it in a new thread: analyst run "{query}". The draft stays '
            f"approvable: analyst approve {thread_id}."
        ),
        forget_how='analyst memory forget --topic "{topic}" (it lists them and asks).',
        draft=await _draft(tiers, storage),
        constraints=view.constraints,
    )
    pending = {"status": view.status, "draft_hash": view.draft_hash, "ticker": view.ticker}
    return replace(
        view,
        query=query,
        intent=said.intent,
        pending=pending,
        status=said.status or view.status,
        reply=said.reply,
        learned=said.learned,
        cited=said.cited,
        forget_proposed=said.forget_proposed if said.topic is not None else view.forget_proposed,
        topic=said.topic if said.topic is not None else view.topic,
        memory_jobs=[],
        usage={},
    )


def _waiting(thread_id: str, view: ThreadView) -> str:
    if view.status == "awaiting_approval":
        what = f"The {view.ticker} draft" if view.ticker else "The draft"
        return f"{what} on thread {thread_id} still awaits your decision."
    if view.status == "interrupted":
        return f"Thread {thread_id} stopped mid-run; analyst resume {thread_id} continues it."
    return f"Thread {thread_id} is {view.status.replace('_', ' ')}."


async def _draft(tiers: Tiers, storage_id: str) -> dict[str, Any] | None:
    """The draft the paused thread (kept under ``storage_id``) holds, if any (for "why did
    you recommend ...")."""
    graph = await tiers.reader()
    snap = await graph.aget_state({"configurable": {"thread_id": storage_id}})
    draft = (snap.values or {}).get("draft")
    return dict(draft) if draft else None
