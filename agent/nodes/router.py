"""The router node: classify the request from its text alone.

The constraints and statements the message made (applied by the capture node) are taken out of
the text; what remains is routed by the reasoner over the tickers the request may name. Deep
research goes to the planner, a quick snapshot straight to the executor with a one-step plan.
A message that asks for nothing, or only for tickers that constraints or procedures exclude,
is answered at once (``remember``).
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
from agent.recollection.reader import procedure_exclusions, procedure_mode
from agent.research import constraints as rules
from agent.research.planning import snapshot_plan
from agent.research.routing import Route, request_universe
from agent.state import AnalystState, Context, Usage

Goto = Literal["planner", "executor", "remember"]


class Router(Node):
    async def __call__(self, state: AnalystState, runtime: Runtime[Context]) -> Command[Goto]:
        """Route the request: planner (deep), executor (flash) or remember (answered)."""
        new_rules, request = rules.split_constraints(state["query"])
        kept = state.get("constraints", [])
        usage = state.get("usage") or no_usage()
        learned = state.get("learned") or []
        if learned:
            request = remove_statements(request, learned)
        if not request.strip():
            said = [
                *(["I will follow this from now on: " + " ".join(new_rules)] if new_rules else []),
                *([describe_learned(learned)] if learned else []),
            ]
            return _answer(usage, "noted", "Noted. " + " ".join(said))

        market = self.services.market
        procedures = state.get("procedures") or []
        mode = runtime.context.mode if runtime.context else "auto"
        if mode == "auto":
            mode = rules.forced_mode(kept) or procedure_mode(procedures) or "auto"
        listed = await asyncio.to_thread(market.available_tickers)
        available = request_universe(
            request, listed, open_universe=getattr(market, "open_universe", False)
        )
        try:
            route, used = await self.reasoner.route(request, available, mode)
        except NoTickerError as error:
            # A conversational turn that asks for no research: kept (the episode), answered.
            return _answer(usage, "noted", f"Noted. {error}")
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
            return _answer(usage, "declined", reply)
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


def _answer(usage: Usage, status: str, reply: str) -> Command[Goto]:
    return Command(goto="remember", update=answered({"usage": usage}, status, reply))
