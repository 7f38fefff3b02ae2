"""The capture node: a new message arrives; store it, start a fresh request, route nothing.

It stores the message as an episode, applies the profile facts and corrections it states (hot
path), loads the procedures in force and, on a thread's first request, the session context;
merges the constraints it states into the thread's list; summarises older turns once the
history outgrows its budget; and resets every per-request field (:func:`fresh_request`). A
request to forget is answered here: what it names is proposed, ``remember`` asks the user.
Everything else goes to the router, which classifies the text alone; a question is stored but
nothing is learned from it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, get_origin, get_type_hints

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.nodes.base import (
    Node,
    answered,
    check_owner,
    owner_record,
    principal,
    thread_id,
)
from agent.pregel_names import CONFIG_KEY_RESUMING  # set on resumed runs
from agent.reasoning.chat_model import add_usage, no_usage
from agent.recollection.intent import classify
from agent.research import constraints as rules
from agent.state import AnalystState, Context, Usage

#: Fields of :class:`~agent.state.AnalystState` that outlive a request: the conversation, and
#: what a thread loads or asks once. A field not listed here is per-request.
THREAD_FIELDS = frozenset(
    {
        "messages",
        "summary",
        "constraints",
        "publications",
        "turns",
        "context_loaded",
        "memory_asked",
        "owner",
    }
)
#: Per-request fields that capture sets itself rather than resets: the input, the episode the
#: message is stored as (when memory is open) and the request's model usage.
SET_BY_CAPTURE = frozenset({"query", "request", "episode_id", "usage"})


def fresh_request() -> dict[str, Any]:
    """Every per-request field of the state at its empty value (lists and dicts empty, text
    ``""``, counters 0, records ``None``), ``status`` running."""
    hints = get_type_hints(AnalystState)
    fresh = {
        name: _empty(hint)
        for name, hint in hints.items()
        if name not in THREAD_FIELDS and name not in SET_BY_CAPTURE
    }
    fresh["status"] = "running"
    return fresh


def _empty(hint: Any) -> Any:
    kind = get_origin(hint) or hint
    return {list: [], dict: {}, str: "", int: 0}.get(kind) if isinstance(kind, type) else None


def _episode_meta(intent: str) -> dict[str, Any] | None:
    """What the episode records about the message: a forget request, or a question (neither
    states anything to learn)."""
    if intent == "forget":
        return {"request": "forget"}
    if intent == "question":
        return {"intent": "question"}
    return None


class Capture(Node):
    async def __call__(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["router", "remember", "approval"]]:
        """Store the turn and start a fresh request; a forget request is answered at once.

        Only the thread's owner may send it a message (:func:`check_owner`). A message on a
        thread whose draft awaits a decision is answered beside it, and the same decision is
        asked again (:meth:`_beside_draft`): the draft is never replaced.
        """
        who = principal(runtime)
        check_owner(state, who, "send it a message")
        if state.get("status") == "awaiting_approval" and state.get("draft"):
            if get_config().get("configurable", {}).get(CONFIG_KEY_RESUMING):
                # Not new input: a resume of a run whose input was refused here (another
                # user's message on the paused thread). That input is not the caller's: it
                # is dropped, and the draft's decision asked for again.
                return Command(goto="approval", update={"query": state.get("request") or ""})
            return await self._beside_draft(state, runtime)
        query = state["query"]
        listed = await asyncio.to_thread(self.services.market.available_tickers)
        understood = classify(query, listed)
        forget = understood.topic if understood.intent == "forget" else None
        new_rules, _ = rules.split_constraints("" if forget else query)
        # A request to forget, or a question, is stored as the user's turn, but nothing is
        # learned from it ("is my risk tolerance aggressive?" states nothing).
        learn = understood.intent not in ("forget", "question")
        memory = await self._remember_turn(state, runtime, learn=learn, intent=understood.intent)
        update: dict[str, Any] = {
            **fresh_request(),
            "request": query,
            "owner": state.get("owner") or owner_record(who),
            "constraints": rules.merge(state.get("constraints", []), new_rules),
            **memory,
        }
        summary, trimmed, usage = await self._trim_history(state)
        update.update(summary=summary, usage=usage, messages=[*trimmed, HumanMessage(query)])
        if forget is not None:
            update["intent"] = "forget"
            return Command(
                goto="remember", update=await self._propose_forget(update, runtime, forget)
            )
        return Command(goto="router", update=update)

    async def _beside_draft(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["router", "remember", "approval"]]:
        """Answer a message sent while the draft awaits a decision (the API server runs new
        input on a paused thread; the application never does) and ask for the decision again:
        the request, its draft and hash stay as they were."""
        from agent.nodes.aside import answer_aside

        query, draft = state["query"], state["draft"]
        thread = thread_id(get_config())
        waiting = (
            f"The {draft['ticker']} draft ({draft['hash'][:12]}) still awaits your decision: "
            "resume the thread with approve, reject or edit."
        )
        update: dict[str, Any] = {"query": state.get("request") or query}
        learner = self.learner(runtime)
        if learner is None:
            reply = f"{waiting} Memory is not open in this run, so I have not kept this message."
        else:
            said = await answer_aside(
                learner,
                self.services,
                thread,
                query,
                paused="awaiting_approval",
                waiting=waiting,
                not_started="Decide the draft first, or send the request on a new thread.",
                forget_how='analyst memory forget --topic "{topic}" (it lists them and asks).',
                draft=draft,
                constraints=state.get("constraints", []),
            )
            reply = said.reply
        update["reply"] = reply
        update["messages"] = [HumanMessage(query), AIMessage(reply)]
        return Command(goto="approval", update=update)

    async def _remember_turn(
        self,
        state: AnalystState,
        runtime: Runtime[Context],
        *,
        learn: bool = True,
        intent: str = "",
    ) -> dict[str, Any]:
        """Store the message as an episode, apply what it states now (unless not ``learn``),
        load the procedures in force and, on a thread's first request, what the session
        starts with."""
        learner = self.learner(runtime)
        if learner is None:
            return {}
        turn = state.get("turns", 0) + 1
        episode = await learner.record(
            thread_id(get_config()),
            "message",
            state["query"],
            turn=f"turn:{turn}",
            meta=_episode_meta(intent),
        )
        update: dict[str, Any] = {
            "turns": turn,
            "episode_id": episode.episode_id,
            "learned": await learner.learn_now(episode) if learn else [],
            "procedures": await learner.active_procedures(),
        }
        if not state.get("context_loaded"):
            loaded = await learner.load_context(self.services.context_tokens)
            update["context_loaded"] = loaded.to_json()
            await learner.audit_read(
                "context",
                [
                    *(f["memory_id"] for f in loaded.profile.values()),
                    *(p["procedure_id"] for p in loaded.procedures),
                    *(s["session_id"] for s in loaded.sessions),
                ],
                reason="session context loaded",
                content=loaded.to_json(),
            )
        return update

    async def _trim_history(self, state: AnalystState) -> tuple[str, list[Any], Usage]:
        """Summarise older turns once the history exceeds its budget; keep the recent ones."""
        history = list(state.get("messages", []))
        summary = state.get("summary", "")
        limit, keep = self.services.history_max_messages, self.services.history_keep
        if len(history) + 1 <= limit:
            return summary, [], no_usage()
        old = history[: max(0, len(history) - keep)]
        summary, used = await self.reasoner.summarise(summary, old)
        return summary, [RemoveMessage(id=m.id) for m in old if m.id], add_usage(no_usage(), used)

    async def _propose_forget(
        self, update: dict[str, Any], runtime: Runtime[Context], topic: str
    ) -> dict[str, Any]:
        """ "Forget ...": propose the facts ``topic`` describes by attribute and value ("that
        I own NVDA": NVDA of the holdings) with what states them, else what mentions it (by
        keyword, the principal's own, as the model's ``forget`` tool does); the ``remember``
        node asks the user to confirm and nothing is deleted without a yes."""
        from agent.recollection.forgettable import proposed, read_all

        learner = self.learner(runtime)
        if learner is None:
            reply = (
                "Memory is not open in this run, so there is nothing to forget here; use "
                f'analyst memory forget --topic "{topic}".'
            )
            return answered(update, "noted", reply)
        found = proposed(await read_all(learner), topic)
        # This very request names the topic; it goes too, but alone it is not "found".
        if all(row["id"] == update.get("episode_id") for row in found):
            found = []
        if not found:
            reply = f'I found nothing of yours about "{topic}": nothing to forget.'
            return answered(update, "noted", reply)
        reply = (
            f'I found {len(found)} item(s) about "{topic}". Nothing is forgotten until you confirm.'
        )
        return answered({**update, "forget_proposed": found}, "noted", reply)
