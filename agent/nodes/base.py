"""What every node shares: its services, the run's identity and memory, the reasoning context.

A node module subclasses :class:`Node` and implements ``__call__`` (state in, an update or a
``Command`` out; state is never mutated in place). Dependencies come from the
:class:`~agent.nodes.services.Services` the builder binds, identity from the server's auth or
``runtime.context`` (:func:`principal`), never from anything a model produced; the thread from
``configurable``. A thread belongs to the principal of its first request (:func:`check_owner`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agent.errors import ConfigurationError, ThreadUnavailableError
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


async def audited_profile(learner: Learner | None, reason: str) -> dict[str, dict[str, Any]]:
    """The user's current, usable profile facts, audited as read for ``reason`` (none when
    memory is not open)."""
    if learner is None:
        return {}
    facts = await learner.profile()
    await learner.audit_read(
        "facts",
        [f["memory_id"] for f in facts.values()],
        reason=reason,
        content={name: f["value"] for name, f in facts.items()},
    )
    return facts


def principal(runtime: Runtime[Context]) -> Principal:
    """The principal the caller established for this run: the API server's authenticated
    user when the server has auth (:mod:`graphs.auth`; the run's ``context`` is then ignored),
    else ``runtime.context`` (the CLI sets it from its flags)."""
    return run_principal(get_config(), runtime.context)


def run_principal(config: RunnableConfig, context: Context | None) -> Principal:
    """:func:`principal` from a run's config and context (also read by the server's graph
    factory, outside any node)."""
    if server_authenticated(config):
        user = config["configurable"]["langgraph_auth_user"]
        tenant_id, user_id = user.get("tenant_id"), user.get("user_id")
        if not tenant_id or not user_id:
            raise ConfigurationError(
                f"The server authenticated '{user.get('identity')}' without a tenant_id and a "
                "user_id, so the run cannot know whose memory it uses; serve with the "
                "analyst's auth (langgraph.json: graphs/auth.py)."
            )
        return Principal(str(tenant_id), str(user_id))
    ctx = context or Context()
    return Principal(ctx.tenant_id, ctx.user_id)


def server_authenticated(config: RunnableConfig) -> bool:
    """Whether the run's principal comes from the API server's auth (not from ``context``)."""
    user = config.get("configurable", {}).get("langgraph_auth_user")
    return bool(user is not None and user.get("is_authenticated", True) and user.get("identity"))


def owner_record(who: Principal) -> dict[str, str]:
    """How state records a thread's owner (``AnalystState.owner``)."""
    return {"tenant_id": who.tenant_id, "user_id": who.user_id}


def check_owner(state: AnalystState, who: Principal, action: str) -> None:
    """Refuse ``action`` on a thread whose recorded owner is not ``who``.

    Defence in depth under the server's auth (which already hides other principals'
    threads), and the rule on a server without it: whatever ``context`` a caller sends, a
    thread is continued, and its draft decided, by the principal of its first request only.
    A thread older than the rule has no owner recorded and is taken by its next caller.
    """
    owner = state.get("owner")
    if owner and (owner.get("tenant_id"), owner.get("user_id")) != (who.tenant_id, who.user_id):
        raise ThreadUnavailableError(
            f"Thread '{thread_id(get_config())}' belongs to another user: only the user who "
            f"started it may {action}. Nothing was changed; start a thread of your own."
        )


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
