"""A message on a thread that is paused (a draft awaiting approval, a run stopped midway).

LangGraph discards a thread's pending interrupt when new input starts a run on it, so a new
message must not be run on the paused thread: the draft would no longer be approvable. The
message is handled beside the paused run instead, with the same pieces the graph uses: it is
stored as an episode of the thread (``aside:<n>``), understood
(:func:`agent.recollection.intent.classify`), and

- a statement or instruction is learned at once (the hot path) and acknowledged;
- a question is answered from memory, citing episodes (:func:`agent.recollection.answers.respond`);
- "forget ..." finds what it names and says how to confirm (nothing is deleted without a yes);
- a research request is not started: the reply asks whether to set the draft aside, i.e. to
  run the request in a new thread (the draft stays approvable);
- anything else gets the help reply.

No checkpoint of the paused thread is written: the draft, its hash and its interrupt are
untouched, so ``approve`` still publishes it.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.app.service import AnalystApp
    from agent.app.views import ThreadView


async def aside(app: AnalystApp, thread_id: str, query: str, view: ThreadView) -> ThreadView:
    """Store, understand and answer ``query`` beside ``thread_id``'s paused run; the view
    returned is the thread's (its draft still pending) with this message's answer."""
    from agent.learning.learner import describe_learned
    from agent.nodes.base import chat_model
    from agent.recollection.answers import respond
    from agent.recollection.intent import HELP_REPLY, classify

    services = app.services
    listed = await asyncio.to_thread(services.market.available_tickers)
    understood = classify(query, listed)
    learner = await app.memory.learner()
    meta: dict[str, Any] = {"aside": view.status, "intent": understood.intent}
    if understood.intent == "forget":
        meta["request"] = "forget"
    episode = await learner.record(
        thread_id, "message", query, turn=f"aside:{uuid.uuid4().hex[:12]}", meta=meta
    )
    pending = {"status": view.status, "draft_hash": view.draft_hash, "ticker": view.ticker}
    out = replace(
        view,
        query=query,
        intent=understood.intent,
        pending=pending,
        learned=[],
        cited=[],
        memory_jobs=[],
        usage={},
    )
    waiting = _waiting(thread_id, view)
    if understood.intent == "question":
        snap_draft = await _draft(app, thread_id)
        said, _ = await respond(
            learner,
            query,
            model=chat_model(services.reasoner),
            tickers=listed,
            drafts=[snap_draft] if snap_draft else [],
            constraints=view.constraints,
            exclude=[episode.episode_id],
        )
        return replace(out, status="answered", reply=said.reply, cited=said.cited)
    if understood.intent == "forget":
        from agent.recollection.forgettable import by_keyword, read_all

        found = [
            row
            for row in by_keyword(await read_all(learner), understood.topic)
            if row["id"] != episode.episode_id
        ]
        if not found:
            reply = f'I found nothing of yours about "{understood.topic}": nothing to forget.'
        else:
            reply = (
                f'I found {len(found)} item(s) about "{understood.topic}". Nothing is '
                f'forgotten until you confirm: analyst memory forget --topic "{understood.topic}"'
                " (it lists them and asks)."
            )
        return replace(
            out,
            status="noted",
            reply=f"{reply} {waiting}",
            forget_proposed=found,
            topic=understood.topic,
        )
    if understood.intent == "research":
        reply = (
            f"{waiting.rstrip('.')}, so I have not started this request (episode "
            f"{episode.episode_id}). Set the draft aside and research this in a new thread? "
            f"In chat answer yes; otherwise run it in a new thread: analyst run "
            f'"{query}". The draft stays approvable: analyst approve {thread_id}.'
        )
        return replace(out, reply=reply)
    if understood.intent in ("statement", "instruction"):
        learned = await learner.learn_now(episode)
        ack = (
            describe_learned(learned)
            if learned
            else (
                f"I have kept what you said (episode {episode.episode_id}); I learn from it when "
                "this conversation is summarised."
            )
        )
        return replace(out, status="noted", reply=f"Noted. {ack} {waiting}", learned=learned)
    return replace(out, status="answered", reply=f"{HELP_REPLY} {waiting}")


def _waiting(thread_id: str, view: ThreadView) -> str:
    if view.status == "awaiting_approval":
        what = f"The {view.ticker} draft" if view.ticker else "The draft"
        return f"{what} on thread {thread_id} still awaits your decision."
    if view.status == "interrupted":
        return f"Thread {thread_id} stopped mid-run; analyst resume {thread_id} continues it."
    return f"Thread {thread_id} is {view.status.replace('_', ' ')}."


async def _draft(app: AnalystApp, thread_id: str) -> dict[str, Any] | None:
    """The draft the paused thread holds, if any (for "why did you recommend ...")."""
    graph = await app.tiers.reader()
    snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    draft = (snap.values or {}).get("draft")
    return dict(draft) if draft else None
