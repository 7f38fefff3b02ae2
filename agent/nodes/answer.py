"""The answer node: a question about the user, memory or the past, answered from memory.

The router sends a question here (:func:`agent.recollection.intent.classify`). The answer is
read from the ledger, procedures, decisions, events and session summaries
(:func:`agent.recollection.answers.respond`); every claim cites its episode, and a question
memory cannot answer is answered "I don't know ... yet". On the model path the model gets the
same material as quoted data and its answer is checked for citations. Nothing is researched.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.nodes.base import Node, answered, chat_model
from agent.reasoning.chat_model import add_usage, no_usage
from agent.recollection.answers import respond
from agent.state import AnalystState, Context


class Answer(Node):
    async def __call__(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["remember"]]:
        """Answer the request's question from memory; ``remember`` ends the request."""
        usage = state.get("usage") or no_usage()
        learner = self.learner(runtime)
        if learner is None:
            reply = "Memory is not open in this run, so I cannot answer from it."
            return Command(goto="remember", update=answered({"usage": usage}, "answered", reply))
        tickers = await asyncio.to_thread(self.services.market.available_tickers)
        draft = state.get("draft")
        said, used = await respond(
            learner,
            state["query"],
            model=chat_model(self.reasoner),
            tickers=tickers,
            drafts=[draft] if draft else [],
            constraints=state.get("constraints", []),
            exclude=[state.get("episode_id") or ""],
        )
        update = {"usage": add_usage(usage, used), "cited": said.cited}
        return Command(goto="remember", update=answered(update, "answered", said.reply))
