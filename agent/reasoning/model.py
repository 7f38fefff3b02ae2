"""The model path: every decision through an OpenAI-compatible chat model.

:class:`ModelReasoner` uses structured output for routing, planning, report prose, criticism and
summaries, and a bounded tool-calling loop over :func:`market_tools` for each executor step
(:data:`STEP_TOOLS` says which tool a step must run). The planner gets a bounded memory look-up
turn before it decides and the executor has the run's memory tools beside the market tools
(:class:`agent.learning.tools.MemoryTools`, in :attr:`Context.memory`). What the user's profile
demands is the offline analyst's code on this path too: the planner node orders and trims the
model's plan (:func:`agent.research.suitability.shape_plan`) and the report's length, fit
statement and notes come from :func:`agent.research.report.compose_report`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from agent.errors import AnalystError
from agent.learning.tools import MEMORY_TOOLS
from agent.reasoning.base import Context, Planned, ReportRequest, profile_of
from agent.reasoning.chat_model import Usage, add_usage, invoke, no_usage, structured, usage_of
from agent.reasoning.narrowing import (
    narrative_schema,
    plan_schema,
    route_schema,
    summary_schema,
    verdict_schema,
)
from agent.reasoning.offline import offline_summary
from agent.records import Critique, Draft, Mode, ModeChoice, PlanStep
from agent.research.critic import critique as check_draft
from agent.research.planning import STEP_DESCRIPTIONS, step
from agent.research.report import collect
from agent.research.revision import edits_of
from agent.research.routing import Route
from agent.research.steps import StepResult, run_step

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, ToolMessage

    from agent.market import MarketDataProvider
    from agent.reasoning.schemas import PlanDecision, RouteDecision
    from agent.research.conventions import Conventions


#: Which tool must run for each plan step kind (the executor checks coverage).
STEP_TOOLS = {
    "snapshot": "get_snapshot",
    "returns": "get_returns",
    "risk": "get_risk",
    "trend": "get_trend",
    "beta": "get_beta",
    "peers": "get_peers",
}


def market_tools(market: MarketDataProvider) -> list[Any]:
    """LangChain tools over the market-data provider; outputs are the analytics' own dicts."""
    from langchain_core.tools import StructuredTool

    def make(kind: str, doc: str) -> Any:
        if kind == "peers":

            def peers() -> dict[str, Any]:
                return dict(run_step(step("peers", market.available_tickers()[0]), market))

            return StructuredTool.from_function(peers, name="get_peers", description=doc)

        def for_ticker(ticker: str) -> dict[str, Any]:
            return dict(run_step(step(kind, ticker.upper()), market))  # type: ignore[arg-type]

        return StructuredTool.from_function(for_ticker, name=STEP_TOOLS[kind], description=doc)

    return [make(kind, doc) for kind, doc in STEP_DESCRIPTIONS.items()]


class ModelReasoner:
    """Every reasoning step through an OpenAI-compatible chat model."""

    def __init__(
        self, model: Any | Callable[[], Any], *, label: str, max_tool_iterations: int = 4
    ) -> None:
        # A factory defers building the client (and importing the SDK, ~1 s) until a node
        # actually calls the model: `analyst show` or `approve` never pay for it.
        self._model = model
        self.label = label
        self.max_tool_iterations = max_tool_iterations

    @property
    def model(self) -> Any:
        if callable(self._model) and not hasattr(self._model, "ainvoke"):
            self._model = self._model()
        return self._model

    async def route(
        self, query: str, available: Sequence[str], mode: ModeChoice
    ) -> tuple[Route, Usage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        known = {t.upper() for t in available}

        def validate(decision: RouteDecision) -> None:
            unknown = [t for t in decision.tickers if t.upper() not in known]
            if unknown:
                raise ValueError(
                    f"tickers {unknown} are not available; choose from {sorted(known)}"
                )
            if not decision.tickers:
                raise ValueError("no ticker chosen")

        messages = [
            SystemMessage(prompts.ROUTER + f"\nAvailable tickers: {', '.join(sorted(known))}."),
            HumanMessage(prompts.quote_data("user request", query)),
        ]
        decision, usage = await structured(
            self.model, route_schema(known), messages, where="routing", validate=validate
        )
        tickers = tuple(dict.fromkeys(t.upper() for t in decision.tickers))
        chosen: Mode = decision.mode if mode == "auto" else mode
        return Route(mode=chosen, tickers=tickers, reason=decision.reason), usage

    async def plan(self, route: Route, ctx: Context) -> tuple[Planned, Usage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        allowed = set(route.tickers)
        tools = await ctx.memory.available() if ctx.memory is not None else []
        system = prompts.PLANNER + (f"\n\n{prompts.MEMORY_READ}" if tools else "")
        messages: list[Any] = [
            SystemMessage(system + "\n\n" + prompts.constraints_block(ctx.constraints)),
            HumanMessage(_planning_request(route, ctx)),
        ]
        usage = no_usage()
        cited: set[str] = set()
        if tools:
            messages, cited, usage = await self._look_up(messages, tools, where="planning")
        known_keys = {str(m["key"]) for m in ctx.memories} | cited

        def validate(plan: PlanDecision) -> None:
            stray = [s.ticker for s in plan.steps if s.ticker.upper() not in allowed]
            if stray:
                raise ValueError(
                    f"steps name tickers {stray} outside the request {sorted(allowed)}"
                )
            invented = [k for k in plan.memories_used if k not in known_keys]
            if invented:
                raise ValueError(f"memories_used cites keys that were not recalled: {invented}")

        decision, used = await structured(
            self.model,
            plan_schema(allowed, known_keys),
            messages,
            where="planning",
            validate=validate,
        )
        usage = add_usage(usage, used)
        steps: list[PlanStep] = []
        seen: set[str] = set()
        for s in decision.steps:
            item = step(s.kind, s.ticker.upper())
            if item["id"] in seen:
                continue
            seen.add(item["id"])
            item["description"] = s.description or item["description"]
            steps.append(item)
        return Planned(steps, decision.rationale, list(decision.memories_used)), usage

    async def execute(
        self, step: PlanStep, market: MarketDataProvider, ctx: Context
    ) -> tuple[StepResult, Usage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        memory = await ctx.memory.available() if ctx.memory is not None else []
        tools = [*market_tools(market), *memory]
        by_name = {t.name: t for t in tools}
        bound = self.model.bind_tools(tools)
        system = prompts.EXECUTOR + (f"\n\n{prompts.MEMORY_READ}" if memory else "")
        messages: list[Any] = [
            SystemMessage(system + "\n\n" + prompts.constraints_block(ctx.constraints)),
            HumanMessage(
                f"Step {step['id']}: {step['description']}. Ticker: {step['ticker']}. "
                f"The tool for this step is {STEP_TOOLS[step['kind']]}."
            ),
        ]
        usage = no_usage()
        gathered = _Gathered()
        notes: list[str] = []
        for _ in range(self.max_tool_iterations):
            reply = await invoke(bound, messages, where=f"executor step {step['id']}")
            usage = add_usage(usage, usage_of(reply))
            messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                if call["name"] in MEMORY_TOOLS:
                    messages.append(await _read_memory(by_name, call))
                else:
                    messages.append(await _call_market(by_name, call, step, gathered))
        else:
            notes.append(
                f"Stopped after {self.max_tool_iterations} model turns (the iteration budget); "
                "the step keeps the tool results gathered so far."
            )
        return await gathered.result(step, market, notes), usage

    async def _look_up(
        self, messages: list[Any], tools: Sequence[Any], *, where: str
    ) -> tuple[list[Any], set[str], Usage]:
        """A bounded turn for the model to read the user's memory before it decides.

        Returns the conversation to decide on (``messages`` unchanged when the model looked
        nothing up; else with its calls and their quoted results), the memory ids the results
        cited (the decision may cite them), and the usage.
        """
        bound = self.model.bind_tools(list(tools))
        by_name = {t.name: t for t in tools}
        conversation = list(messages)
        usage = no_usage()
        cited: set[str] = set()
        for _ in range(self.max_tool_iterations):
            reply = await invoke(bound, conversation, where=f"{where} (memory look-up)")
            usage = add_usage(usage, usage_of(reply))
            if not reply.tool_calls:
                break
            conversation.append(reply)
            for call in reply.tool_calls:
                result = await _read_memory(by_name, call)
                conversation.append(result)
                cited.update((result.artifact or {}).get("memory_ids", []))
        looked_up = len(conversation) > len(messages)
        return (conversation if looked_up else list(messages)), cited, usage

    async def report(self, request: ReportRequest) -> tuple[Draft, Usage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        ticker, ctx, feedback = request.ticker, request.ctx, request.feedback
        metrics, peers, as_of, _ = collect(ticker, request.results)
        parts = [
            f"Write the report for {ticker} (data as of {as_of}).",
            prompts.metrics_block(metrics, peers),
        ]
        if feedback:
            parts.append(prompts.quote_data("reviewer feedback", "\n".join(feedback)))
        if ctx.facts:
            parts.append(prompts.quote_data("user's current facts", dict(ctx.facts)))
        edits = edits_of(feedback)
        parts.append(prompts.report_style(edits.style(profile_of(ctx).style)))
        if not edits.empty:
            parts.append(prompts.revision_requests(edits.labels()))
        if ctx.conventions:
            parts.append(ctx.conventions)  # already quoted reference blocks
        messages = [
            SystemMessage(prompts.REPORTER + "\n\n" + prompts.constraints_block(ctx.constraints)),
            HumanMessage("\n\n".join(parts)),
        ]
        narrative, usage = await structured(
            self.model,
            narrative_schema(set(metrics)),
            messages,
            where="report writing",
        )
        return request.compose(narrative), usage

    async def critique(
        self, draft: Draft, *, today: date, conventions: Conventions | None
    ) -> tuple[Critique, Usage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        checked = check_draft(draft, today=today, conventions=conventions)
        parts = [prompts.quote_data("draft report", draft["markdown"])]
        if conventions is not None:
            parts.append(conventions.quoted())
        messages = [SystemMessage(prompts.CRITIC), HumanMessage("\n\n".join(parts))]
        verdict, usage = await structured(self.model, verdict_schema(), messages, where="critique")
        findings = list(checked["findings"]) + [
            {"severity": f.severity, "message": f"(model) {f.message}"} for f in verdict.findings
        ]
        order = {"pass": 0, "needs_attention": 1, "fail": 2}
        worst = max(checked["verdict"], verdict.verdict, key=lambda v: order[v])
        return Critique(draft_hash=draft["hash"], verdict=worst, findings=findings), usage

    async def summarise(self, previous: str, messages: Sequence[BaseMessage]) -> tuple[str, Usage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        transcript = offline_summary(previous, messages)
        out, usage = await structured(
            self.model,
            summary_schema(),
            [
                SystemMessage(prompts.SUMMARISER),
                HumanMessage(prompts.quote_data("conversation so far", transcript)),
            ],
            where="conversation summary",
        )
        return out.summary, usage


async def _read_memory(by_name: Mapping[str, Any], call: Mapping[str, Any]) -> ToolMessage:
    """Run one memory tool call. Bad arguments go back to the model as an error it can react
    to; a storage failure is raised (memory is never silently read as empty)."""
    from langchain_core.messages import ToolMessage
    from pydantic import ValidationError

    tool = by_name.get(call["name"])
    problem = f"unknown tool {call['name']!r}; available: {', '.join(by_name)}"
    if tool is not None:
        try:
            message = await tool.ainvoke({**call, "type": "tool_call"})
        except ValidationError as error:  # the arguments, not the storage
            problem = f"invalid arguments for {call['name']}: {error}"
        else:
            assert isinstance(message, ToolMessage)
            return message
    return ToolMessage(
        f"error: {problem}", tool_call_id=call["id"], name=call["name"], status="error"
    )


@dataclass
class _Gathered:
    """What an executor step's market tool calls returned so far."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)
    called: list[str] = field(default_factory=list)
    as_of: str = ""

    async def result(
        self, step: PlanStep, market: MarketDataProvider, notes: list[str]
    ) -> StepResult:
        """The step's result, with a note if the model never ran the step's tool (its data
        date from the price history when no tool gave one)."""
        needed = STEP_TOOLS[step["kind"]]
        if needed not in self.called:
            notes.append(f"The model did not run {needed}; this step's figures are missing.")
        as_of = self.as_of
        if not as_of:
            history = await asyncio.to_thread(market.history, step["ticker"])
            as_of = history.as_of.isoformat()
        result = StepResult(
            step_id=step["id"],
            kind=step["kind"],
            ticker=step["ticker"],
            as_of=as_of,
            sources=sorted(self.sources),
            data=self.data,
        )
        result["notes"] = notes
        return result


async def _call_market(
    by_name: Mapping[str, Any], call: Mapping[str, Any], step: PlanStep, gathered: _Gathered
) -> ToolMessage:
    """Run one market tool call for ``step``, adding what it returns to ``gathered`` (the
    figures only when they are about the step's ticker, or the peers). Tool errors go back to
    the model as data it can react to."""
    from langchain_core.messages import ToolMessage

    tool = by_name.get(call["name"])
    try:
        if tool is None:
            raise ValueError(f"unknown tool {call['name']!r}; available: {', '.join(by_name)}")
        out = await tool.ainvoke(call["args"])  # sync tool: runs in a thread
    except (AnalystError, ValueError) as error:
        return ToolMessage(
            f"error: {error}", tool_call_id=call["id"], name=call["name"], status="error"
        )
    gathered.called.append(call["name"])
    if out["ticker"] == step["ticker"] or call["name"] == "get_peers":
        gathered.data.update(out["data"])
        gathered.as_of = max(gathered.as_of, out["as_of"])
    gathered.sources.update(out["sources"])
    return ToolMessage(json.dumps(out["data"]), tool_call_id=call["id"], name=call["name"])


def _planning_request(route: Route, ctx: Context) -> str:
    from agent.reasoning import prompts

    parts = [
        f"Plan {route.mode} research on {', '.join(route.tickers)} "
        f"(primary: {route.tickers[0]}). Router: {route.reason}"
    ]
    if ctx.conversation:
        parts.append(prompts.quote_data("conversation so far", ctx.conversation))
    if ctx.facts:
        parts.append(prompts.quote_data("user's current facts", ctx.facts))
    if ctx.procedures:
        parts.append(
            prompts.quote_data(
                "user's confirmed procedures",
                [{"id": p["procedure_id"], "text": p["text"]} for p in ctx.procedures],
            )
        )
    if ctx.sessions or ctx.open_items:
        parts.append(
            prompts.quote_data(
                "earlier sessions and open items",
                {"sessions": list(ctx.sessions), "open_items": list(ctx.open_items)},
            )
        )
    if ctx.memories:
        parts.append(
            prompts.quote_data(
                "recalled memories",
                [
                    {"key": m["key"], "text": m.get("text"), "score": m.get("score")}
                    for m in ctx.memories
                ],
            )
        )
    if ctx.conventions:
        parts.append(ctx.conventions)  # already quoted reference blocks
    return "\n\n".join(parts)
