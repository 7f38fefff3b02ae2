"""The offline analyst: deterministic rules and computation, no network, no model.

The default :class:`~agent.reasoning.base.Reasoner` when no model is configured. It ignores the
run's memory tools; the user's profile shapes the plan and the report
(:mod:`agent.research.suitability`), each change citing the fact, procedure or memory behind it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from agent.reasoning.base import Context, Planned, ReportRequest, profile_of
from agent.reasoning.chat_model import Usage, no_usage
from agent.records import Critique, Draft, ModeChoice, PlanStep
from agent.research.critic import critique as check_draft
from agent.research.planning import deep_plan, snapshot_plan
from agent.research.routing import Route, route_query
from agent.research.steps import StepResult, run_step
from agent.research.suitability import shape_plan

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from agent.market import MarketDataProvider
    from agent.research.conventions import Conventions


class OfflineReasoner:
    """Deterministic rules and computation; the default when no model is configured."""

    label = "offline"

    async def route(
        self, query: str, available: Sequence[str], mode: ModeChoice
    ) -> tuple[Route, Usage]:
        return route_query(query, available, mode), no_usage()

    async def plan(self, route: Route, ctx: Context) -> tuple[Planned, Usage]:
        """The standard plan shaped by the user's profile (:func:`shape_plan`: risk first for
        a cautious or short-horizon user, growth first for an aggressive or long-horizon one,
        no peer step for a brief report unless a procedure requires it). The rationale cites
        every fact, procedure and memory key it was given."""
        steps = snapshot_plan(route) if route.mode == "flash" else deep_plan(route)
        shaped: list[str] = []
        if route.mode == "deep":
            steps, shaped = shape_plan(steps, profile_of(ctx), memories=ctx.memories)
        kinds = ", ".join(s["kind"] for s in steps)
        notes = [
            f"Research plan: {kinds}." if shaped else f"Standard research plan: {kinds}.",
            *shaped,
        ]
        if ctx.facts:
            facts = ", ".join(f"{k}={v!r}" for k, v in sorted(ctx.facts.items()))
            notes.append(f"Current facts: {facts}.")
        if ctx.procedures:
            notes.append(
                "Procedures in force: "
                + "; ".join(f"[{p['procedure_id']}] {p['text']}" for p in ctx.procedures)
                + "."
            )
        if ctx.sessions:
            notes.append(
                "Recent sessions: "
                + "; ".join(f"[{s['session_id']}] {s['topic']}".rstrip(".") for s in ctx.sessions)
                + "."
            )
        used = [str(m["key"]) for m in ctx.memories]
        if used:
            notes.append(
                "Recalled memories: "
                + "; ".join(
                    f"[{m['key']}] (score {float(m.get('score', {}).get('total', 0)):.2f})"
                    for m in ctx.memories
                )
                + "."
            )
        return Planned(steps, " ".join(notes), used), no_usage()

    async def execute(
        self, step: PlanStep, market: MarketDataProvider, ctx: Context
    ) -> tuple[StepResult, Usage]:
        # Reads price files: keep it off the event loop.
        return await asyncio.to_thread(run_step, step, market), no_usage()

    async def report(self, request: ReportRequest) -> tuple[Draft, Usage]:
        return request.compose(), no_usage()

    async def critique(
        self, draft: Draft, *, today: date, conventions: Conventions | None
    ) -> tuple[Critique, Usage]:
        return check_draft(draft, today=today, conventions=conventions), no_usage()

    async def summarise(self, previous: str, messages: Sequence[BaseMessage]) -> tuple[str, Usage]:
        return offline_summary(previous, messages), no_usage()


def offline_summary(previous: str, messages: Sequence[BaseMessage]) -> str:
    lines = [previous] if previous else []
    for m in messages:
        who = "user" if m.type == "human" else "analyst"
        text = " ".join(str(m.content).split())
        lines.append(f"{who}: {text[:160]}")
    return "\n".join(lines)
