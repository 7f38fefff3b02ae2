"""The router node: classify the request from its text alone.

The constraints and statements the message made (applied by the capture node) are taken out of
the text; what remains is understood (:func:`agent.recollection.intent.classify`). A question
about the user, memory or the past goes to ``answer``; a request for ideas that names no ticker
("what should I buy?") goes to ``ideas``; a statement, an instruction or a remark
is answered at once (``remember``) and never starts research. A research request is routed by
the reasoner over the tickers it may name: deep research to the planner, a quick snapshot
straight to the executor with a one-step plan; a request only for tickers that constraints or
procedures exclude is declined.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.errors import NoTickerError
from agent.learning.learner import describe_learned, remove_statements
from agent.nodes.base import Node, answered
from agent.reasoning.chat_model import add_usage, no_usage
from agent.recollection.intent import HELP_REPLY, Understood, classify
from agent.recollection.reader import procedure_exclusions, procedure_mode
from agent.research import constraints as rules
from agent.research.planning import snapshot_plan
from agent.research.routing import Route, ideas_request, request_universe
from agent.state import AnalystState, Context, Usage

Goto = Literal["planner", "executor", "answer", "ideas", "remember"]


class Router(Node):
    async def __call__(self, state: AnalystState, runtime: Runtime[Context]) -> Command[Goto]:
        """Route the request: planner (deep), executor (flash), answer (a question about
        memory), ideas (what to buy, no ticker named) or remember (answered)."""
        new_rules, request = rules.split_constraints(state["query"])
        kept = state.get("constraints", [])
        usage = state.get("usage") or no_usage()
        learned = state.get("learned") or []
        if learned:
            request = remove_statements(request, learned)
        said = [
            *(["I will follow this from now on: " + " ".join(new_rules)] if new_rules else []),
            *([describe_learned(learned)] if learned else []),
        ]
        if not request.strip():
            intent = "instruction" if new_rules else "statement"
            return _answer(usage, intent, "Noted. " + " ".join(said))

        market = self.services.market
        listed = await asyncio.to_thread(market.available_tickers)
        understood = classify(request, listed)
        if understood.intent == "question":
            return Command(goto="answer", update={"usage": usage, "intent": "question"})
        if understood.intent != "instruction" and ideas_request(request, listed):
            # Decided before any model routes it: a model could resolve it to tickers.
            return Command(goto="ideas", update={"usage": usage, "intent": "ideas"})
        if understood.intent != "research":
            return _answer(usage, understood.intent, _acknowledge(understood, said, state))
        procedures = state.get("procedures") or []
        mode = runtime.context.mode if runtime.context else "auto"
        if mode == "auto":
            mode = rules.forced_mode(kept) or procedure_mode(procedures) or "auto"
        available = request_universe(
            request, listed, open_universe=getattr(market, "open_universe", False)
        )
        try:
            route, used = await self.reasoner.route(request, available, mode)
        except NoTickerError:
            # A research request that names no company the provider carries: say which.
            reply = (
                "Which company should I research? Name one of "
                f'{", ".join(sorted(available))} (for example "Analyze NVDA").'
            )
            return _answer(usage, "research", reply)
        usage = add_usage(usage, used)
        by_constraint = rules.excluded_tickers(kept, available)
        excluded = {**procedure_exclusions(procedures), **by_constraint}
        allowed = tuple(t for t in route.tickers if t not in excluded)
        if not allowed:
            blocked, first = ", ".join(route.tickers), route.tickers[0]
            if first in by_constraint:
                reply = (
                    f"I won't analyse {blocked}: it is excluded by your constraint "
                    f'"{excluded[first]}". Constraints hold for this conversation; '
                    "start a new one (/new in chat, or a new thread) to drop them."
                )
            else:
                reply = (
                    f"I won't analyse {blocked}: your {excluded[first]}. Procedures hold in "
                    "every conversation; retire it with: analyst memory procedures --retire ID"
                )
            return _answer(usage, "research", reply, status="declined")
        update: dict[str, Any] = {}
        left_out = [t for t in route.tickers if t in excluded]
        reason = route.reason
        if left_out:
            why = "; ".join(f'{t}: "{excluded[t]}"' for t in left_out)
            reason += f" Left out by your constraints — {why}."
            update["reply"] = f"Leaving out {', '.join(left_out)} as your constraints ask ({why})."
        route = Route(mode=route.mode, tickers=allowed, reason=reason)
        update.update(
            mode=route.mode, tickers=list(route.tickers), usage=usage, route_reason=reason
        )
        if route.mode == "flash":
            update["plan"] = snapshot_plan(route)
            update["plan_rationale"] = "Quick snapshot: one step computes every figure."
            return Command(goto="executor", update=update)
        return Command(goto="planner", update=update)


def _answer(usage: Usage, intent: str, reply: str, *, status: str = "") -> Command[Goto]:
    """Finish the request with ``reply``: a statement or instruction is "noted", anything
    else "answered" (unless ``status`` says)."""
    status = status or ("noted" if intent in ("statement", "instruction") else "answered")
    update = {"usage": usage, "intent": intent}
    return Command(goto="remember", update=answered(update, status, reply))


def _acknowledge(understood: Understood, said: list[str], state: AnalystState) -> str:
    """The reply to a message that asks for no research."""
    if understood.intent == "conversation":
        return " ".join([*said, HELP_REPLY]) if said else HELP_REPLY
    if said:
        return "Noted. " + " ".join(said)
    episode = state.get("episode_id")
    kept = f" (episode {episode})" if episode else ""
    if understood.intent == "instruction":
        return (
            f"Noted: I have kept your instruction{kept}. I will ask you to confirm it as a "
            "standing instruction (or see analyst memory review)."
        )
    return (
        f"Noted: I have kept what you said{kept}; I learn from it when this conversation is "
        "summarised. It starts no research."
    )
