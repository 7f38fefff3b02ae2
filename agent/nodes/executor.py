"""The executor node: run exactly one plan step, so each step ends in its own checkpoint.

The step reads market data through a provider that hides the tickers the thread's constraints,
the user's procedures and the user's profile (``excluded_tickers``, ``excluded_sectors``) exclude; the model path may also read memory through the run's tools.
It loops on itself until the plan is done, then hands over to the reporter.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.market import MarketDataProvider
from agent.nodes.base import Node, with_proposals
from agent.reasoning.chat_model import add_usage
from agent.recollection.reader import procedure_exclusions
from agent.research import constraints as rules
from agent.research.suitability import Profile
from agent.state import AnalystState, Context


class Executor(Node):
    async def __call__(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["executor", "reporter"]]:
        """The next step's result; again while steps remain, else the reporter."""
        index = state.get("step_index", 0)
        plan = state["plan"]
        if self.services.step_delay:
            await asyncio.sleep(self.services.step_delay)
        market = await asyncio.to_thread(self._market, state)
        tools = self.memory_tools(runtime)
        ctx = replace(self.context(state), memory=tools)
        result, used = await self.reasoner.execute(plan[index], market, ctx)
        update = {
            "results": {**state.get("results", {}), result["step_id"]: dict(result)},
            "step_index": index + 1,
            "usage": add_usage(state.get("usage"), used),
            **with_proposals(state, tools),
        }
        return Command(goto="executor" if index + 1 < len(plan) else "reporter", update=update)

    def _market(self, state: AnalystState) -> MarketDataProvider:
        listed = self.services.market.available_tickers()
        excluded = {
            **Profile.of(state.get("facts_used") or {}).exclusions(listed),
            **procedure_exclusions(state.get("procedures") or []),
            **rules.excluded_tickers(state.get("constraints", []), listed),
        }
        if not excluded:
            return self.services.market
        from agent.market.filtered import FilteredProvider

        return FilteredProvider(self.services.market, excluded)
