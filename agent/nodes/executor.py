"""The executor node: run exactly one plan step, so each step ends in its own checkpoint.

The step reads market data through a provider that hides the tickers the thread's constraints,
the user's procedures and the user's profile (``excluded_tickers``, ``excluded_sectors``) exclude; the model path may also read memory through the run's tools.
It loops on itself until the plan is done, then hands over to the reporter. A snapshot, which
skips the planner, reads the profile here: a ticker it excludes is declined, and the facts
shape the snapshot's report as they shape a deep one.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.market import MarketDataProvider
from agent.nodes.base import Node, answered, audited_profile, with_proposals
from agent.reasoning.chat_model import add_usage
from agent.recollection.reader import procedure_exclusions
from agent.research import constraints as rules
from agent.research.suitability import Profile, refusal
from agent.state import AnalystState, Context


class Executor(Node):
    async def __call__(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["executor", "reporter", "remember"]]:
        """The next step's result; again while steps remain, else the reporter. No plan (the
        planner declined the request) or a snapshot of a ticker the profile excludes: the
        request is answered (``remember``)."""
        index = state.get("step_index", 0)
        plan = state["plan"]
        if not plan:
            return Command(goto="remember")
        facts = state.get("facts_used") or {}
        found: dict[str, Any] = {}
        if index == 0 and state.get("mode") == "flash" and not facts:
            # A snapshot skips the planner: read the profile here, for exclusions and the report.
            facts = await self._profile(runtime)
            found = {"facts_used": facts} if facts else {}
            tickers = [s["ticker"] for s in plan]
            excluded = Profile.of(facts).exclusions(tickers)
            if len(excluded) == len(set(tickers)):
                return Command(
                    goto="remember",
                    update=answered({**found, "plan": []}, "declined", refusal(tickers, excluded)),
                )
        if self.services.step_delay:
            await asyncio.sleep(self.services.step_delay)
        market = await asyncio.to_thread(self._market, state, facts)
        if index == 0:
            self._prepare_chart(state)
        tools = self.memory_tools(runtime)
        ctx = replace(self.context(state), memory=tools)
        result, used = await self.reasoner.execute(plan[index], market, ctx)
        update = {
            "results": {**state.get("results", {}), result["step_id"]: dict(result)},
            "step_index": index + 1,
            "usage": add_usage(state.get("usage"), used),
            **with_proposals(state, tools),
            **found,
        }
        return Command(goto="executor" if index + 1 < len(plan) else "reporter", update=update)

    def _prepare_chart(self, state: AnalystState) -> None:
        """Let the command's warm chart process draw the report's chart while the steps run
        (:func:`agent.research.chart_process.prepare_prices`); the reporter's chart is then
        only written."""
        from agent.research import chart_process

        if state.get("tickers"):
            chart_process.prepare_prices(self.services.market, state["tickers"][0])

    async def _profile(self, runtime: Runtime[Context]) -> dict[str, dict[str, Any]]:
        """The profile facts the planner would have read (audited the same way)."""
        return await audited_profile(
            self.learner(runtime), "profile read by the executor (snapshot)"
        )

    def _market(self, state: AnalystState, facts: dict[str, dict[str, Any]]) -> MarketDataProvider:
        listed = self.services.market.available_tickers()
        excluded = {
            **Profile.of(facts).exclusions(listed),
            **procedure_exclusions(state.get("procedures") or []),
            **rules.excluded_tickers(state.get("constraints", []), listed),
        }
        if not excluded:
            return self.services.market
        from agent.market.filtered import FilteredProvider

        return FilteredProvider(self.services.market, excluded)
