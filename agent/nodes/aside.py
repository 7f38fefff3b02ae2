"""A message beside a paused request: stored, understood and answered without touching it.

One implementation for the two ways a message reaches a thread whose draft awaits a decision:
the application, which never runs such a message on the thread (:mod:`agent.app.aside`), and
the graph itself, where the API server starts a run with the new input anyway (the capture
node answers it, then asks for the same decision again). The message is stored as an episode
of the thread (``aside:<id>``), understood (:func:`agent.recollection.intent.classify`), and

- a statement or instruction is learned at once (the hot path) and acknowledged;
- a question is answered from memory, citing episodes (:func:`agent.recollection.answers.respond`);
- "forget ..." finds what it names and says how to confirm (nothing is deleted without a yes);
- a request for ideas that names no ticker is answered from the profile
  (:func:`agent.nodes.ideas.answer_ideas`): it researches nothing;
- a research request is not started: the reply says the draft awaits a decision;
- anything else gets the help reply.

Every reply ends by saying what is still waiting. The draft is never replaced.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.learning.learner import Learner
    from agent.nodes.services import Services


@dataclass
class Aside:
    """What a message beside a paused request was and how it was answered."""

    episode_id: str
    intent: str
    #: ``answered`` or ``noted``; ``None`` when nothing was done (a research request).
    status: str | None
    reply: str
    learned: list[dict[str, Any]] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    forget_proposed: list[dict[str, Any]] = field(default_factory=list)
    topic: str | None = None


async def answer_aside(
    learner: Learner,
    services: Services,
    thread_id: str,
    query: str,
    *,
    paused: str,
    waiting: str,
    not_started: str,
    forget_how: str,
    draft: Mapping[str, Any] | None = None,
    constraints: Sequence[str] = (),
) -> Aside:
    """Store and answer ``query`` beside ``thread_id``'s paused request (``paused``: its
    status). ``waiting`` says what still waits; ``not_started`` how to run a research request
    instead; ``forget_how`` how to confirm a forget (each in the caller's own terms)."""
    import asyncio

    from agent.recollection.intent import HELP_REPLY, classify
    from agent.research.routing import ideas_request

    listed = await asyncio.to_thread(services.market.available_tickers)
    understood = classify(query, listed)
    meta: dict[str, Any] = {"aside": paused, "intent": understood.intent}
    if understood.intent == "forget":
        meta["request"] = "forget"
    episode = await learner.record(
        thread_id, "message", query, turn=f"aside:{uuid.uuid4().hex[:12]}", meta=meta
    )
    said = Aside(episode.episode_id, understood.intent, None, "")
    if understood.intent == "question":
        return await question_beside(learner, services, said, query, listed, draft, constraints)
    if understood.intent == "forget":
        return await forget_beside(learner, said, understood.topic, forget_how, waiting)
    if understood.intent != "instruction" and ideas_request(query, listed):
        return await ideas_beside(learner, services, said, query, constraints, waiting)
    if understood.intent == "research":
        said.reply = (
            f"{waiting.rstrip('.')}, so I have not started this request (episode "
            f"{episode.episode_id}). {not_started}"
        )
        return said
    if understood.intent in ("statement", "instruction"):
        said.learned = await learner.learn_now(episode)
        said.status, said.reply = "noted", f"Noted. {_acknowledged(said)} {waiting}"
        return said
    said.status, said.reply = "answered", f"{HELP_REPLY} {waiting}"
    return said


async def question_beside(
    learner: Learner,
    services: Services,
    said: Aside,
    query: str,
    listed: Sequence[str],
    draft: Mapping[str, Any] | None,
    constraints: Sequence[str],
) -> Aside:
    """``said`` answering a question from memory (``listed``: the tickers there is data for;
    ``draft``: the paused one), citing episodes but not the question's own."""
    from agent.nodes.base import chat_model
    from agent.recollection.answers import respond

    answer, _ = await respond(
        learner,
        query,
        model=chat_model(services.reasoner),
        tickers=listed,
        drafts=[draft] if draft else [],
        constraints=constraints,
        exclude=[said.episode_id],
    )
    said.status, said.reply, said.cited = "answered", answer.reply, answer.cited
    return said


async def forget_beside(learner: Learner, said: Aside, topic: str, how: str, waiting: str) -> Aside:
    """``said`` listing what ``topic`` finds to forget (never the request itself) and ``how``
    to confirm (a template of ``{topic}``): nothing is deleted here."""
    from agent.recollection.forgettable import proposed, read_all

    found = [
        row for row in proposed(await read_all(learner), topic) if row["id"] != said.episode_id
    ]
    if not found:
        reply = f'I found nothing of yours about "{topic}": nothing to forget.'
    else:
        reply = (
            f'I found {len(found)} item(s) about "{topic}". Nothing is forgotten until '
            f"you confirm: {how.format(topic=topic)}"
        )
    said.status, said.reply = "noted", f"{reply} {waiting}"
    said.forget_proposed, said.topic = found, topic
    return said


def _acknowledged(said: Aside) -> str:
    """What a statement beside the paused request taught, or that it is kept until the
    conversation is summarised."""
    from agent.learning.learner import describe_learned

    if said.learned:
        return describe_learned(said.learned)
    return (
        f"I have kept what you said (episode {said.episode_id}); I learn from it when "
        "this conversation is summarised."
    )


async def ideas_beside(
    learner: Learner,
    services: Services,
    said: Aside,
    query: str,
    constraints: Sequence[str],
    waiting: str,
) -> Aside:
    """``said`` answering a request for ideas beside the paused request (it researches
    nothing, so nothing waits on it)."""
    from agent.nodes.ideas import answer_ideas

    ideas = await answer_ideas(
        services,
        learner,
        query,
        procedures=await learner.active_procedures(),
        constraints=constraints,
        episode_id=said.episode_id,
    )
    said.intent, said.status, said.cited = "ideas", "answered", ideas.cited
    said.reply = f"{ideas.reply}\n{waiting}"
    return said
