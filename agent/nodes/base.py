"""What every node shares: its services, the run's identity and memory, the reasoning context.

A node module subclasses :class:`Node` and implements ``__call__`` (state in, an update or a
``Command`` out; state is never mutated in place). Dependencies come from the
:class:`~agent.nodes.services.Services` the builder binds, identity from ``runtime.context``
(:func:`principal`), never from anything a model produced; the thread from ``configurable``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agent.learning.learner import Learner, build_learner
from agent.learning.tools import MemoryTools
from agent.nodes.services import Services
from agent.reasoning.base import Context as ReasoningContext
from agent.research.conventions import Conventions, load_conventions
from agent.state import AnalystState, Context
from memory.identity import Principal


class Node:
    """The services a node is given, and the helpers several nodes use."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.reasoner = services.reasoner

    def learner(self, runtime: Runtime[Context]) -> Learner | None:
        """The write and read paths of memory for the run's principal (None without a journal)."""
        return build_learner(self.services, principal(runtime), runtime.store)

    def memory_tools(self, runtime: Runtime[Context]) -> MemoryTools | None:
        """The run's memory tools (bound on the model path), for the run's principal and
        thread; what its ``forget`` proposes the node puts in state (:func:`with_proposals`)."""
        learner = self.learner(runtime)
        if learner is None:
            return None
        return MemoryTools(
            learner,
            thread_id=thread_id(get_config()),
            max_memory_chars=self.services.max_memory_chars,
        )

    async def conventions(self) -> Conventions:
        """Read on every use: a hand edit to the Markdown takes effect on the next node.

        File reads (like every blocking call in these async nodes) run in a worker thread, so
        the event loop of an API server is never blocked.
        """
        return await asyncio.to_thread(load_conventions, self.services.documents)

    def context(
        self, state: AnalystState, conventions: Conventions | None = None
    ) -> ReasoningContext:
        """What the reasoner may know from the thread: constraints, the recent conversation,
        conventions, procedures and what the session loaded from memory."""
        recent = [m for m in state.get("messages", [])][-self.services.history_keep :]
        conversation = "\n".join(
            filter(
                None,
                [
                    state.get("summary", ""),
                    *(f"{'user' if m.type == 'human' else 'analyst'}: {m.content}" for m in recent),
                ],
            )
        )
        loaded = state.get("context_loaded") or {}
        return ReasoningContext(
            constraints=tuple(state.get("constraints", [])),
            conversation=conversation,
            conventions=conventions.quoted() if conventions is not None else "",
            procedures=tuple(state.get("procedures") or []),
            sessions=tuple(loaded.get("sessions") or []),
            open_items=tuple(loaded.get("open_items") or []),
        )


def principal(runtime: Runtime[Context]) -> Principal:
    """The principal the caller established (CLI flags, server auth) for this run."""
    ctx = runtime.context or Context()
    return Principal(ctx.tenant_id, ctx.user_id)


def thread_id(config: RunnableConfig) -> str:
    """The run's thread id (``no-thread`` when the caller gave none)."""
    return str(config.get("configurable", {}).get("thread_id") or "no-thread")


def with_proposals(state: AnalystState, tools: MemoryTools | None) -> dict[str, Any]:
    """The state update adding what the run's ``forget`` tool proposed (once per id)."""
    if tools is None or not tools.proposals:
        return {}
    kept = list(state.get("forget_proposed") or [])
    known = {item["id"] for item in kept}
    kept += [item for item in tools.proposals if item["id"] not in known]
    return {"forget_proposed": kept}


def answered(update: dict[str, Any], status: str, reply: str) -> dict[str, Any]:
    """``update`` finishing the request with ``reply`` (said in the conversation too); the
    node that calls it goes to ``remember``."""
    return {
        **update,
        "status": status,
        "reply": reply,
        "stop_reason": reply,
        "messages": [*update.get("messages", []), AIMessage(reply)],
    }


def chat_model(reasoner: Any) -> Any:
    """The chat model behind ``reasoner`` on the model path; ``None`` offline."""
    if getattr(reasoner, "label", "offline") == "offline":
        return None
    return getattr(reasoner, "model", None)
