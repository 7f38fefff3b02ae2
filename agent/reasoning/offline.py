"""The offline analyst: deterministic rules and computation, no network, no model.

The default :class:`~agent.reasoning.base.Reasoner` when no model is configured. It ignores the
run's memory tools; a cautious user (a stated fact or a recalled memory) gets the risk step first.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from agent.reasoning.base import Context, Planned
from agent.reasoning.chat_model import Usage, no_usage
from agent.research.critic import critique as check_draft
from agent.research.planning import deep_plan, snapshot_plan
from agent.research.report import compose_report
from agent.research.routing import Route, route_query
from agent.research.steps import StepResult, run_step
from agent.state import Critique, Draft, Mode, ModeChoice, PlanStep

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
        """The standard plan; a cautious user (a stated fact or a recalled memory) gets the
        risk step first. The rationale cites every fact and memory key it was given."""
        steps = snapshot_plan(route) if route.mode == "flash" else deep_plan(route)
        notes = ["Standard research plan: returns, risk, trend, beta and peers."]
        cautious = _cautious_reasons(ctx)
        if cautious and route.mode == "deep":
            steps.sort(key=lambda s: s["kind"] != "risk")  # stable: risk first, rest in order
            notes.append(f"Risk first because {'; '.join(cautious)}.")
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

    async def report(
        self,
        *,
        ticker: str,
        mode: Mode,
        results: Mapping[str, Mapping[str, Any]],
        feedback: Sequence[str],
        revision: int,
        requested: Sequence[str],
        sections: Sequence[str],
        ctx: Context,
    ) -> tuple[Draft, Usage]:
        draft = compose_report(
            ticker=ticker,
            mode=mode,
            results=results,
            feedback=feedback,
            revision=revision,
            requested=requested,
            sections=sections,
            personal=ctx.personal,
        )
        return draft, no_usage()

    async def critique(
        self, draft: Draft, *, today: date, conventions: Conventions | None
    ) -> tuple[Critique, Usage]:
        return check_draft(draft, today=today, conventions=conventions), no_usage()

    async def summarise(self, previous: str, messages: Sequence[BaseMessage]) -> tuple[str, Usage]:
        return offline_summary(previous, messages), no_usage()


_CAUTIOUS = re.compile(
    r"\b(conservative|cautious|risk[- ]averse|low[- ]risk|capital preservation|defensive)\b",
    re.IGNORECASE,
)


def _cautious_reasons(ctx: Context) -> list[str]:
    """Why the user looks risk-averse: facts first (authoritative), then recalled memories."""
    reasons = [
        f"the fact {name}={value!r}"
        for name, value in sorted(ctx.facts.items())
        if isinstance(value, str) and _CAUTIOUS.search(value)
    ]
    reasons += [
        f"memory [{m['key']}] says {str(m.get('text'))[:80]!r}"
        for m in ctx.memories
        if _CAUTIOUS.search(str(m.get("text", "")))
    ]
    return reasons


def offline_summary(previous: str, messages: Sequence[BaseMessage]) -> str:
    lines = [previous] if previous else []
    for m in messages:
        who = "user" if m.type == "human" else "analyst"
        text = " ".join(str(m.content).split())
        lines.append(f"{who}: {text[:160]}")
    return "\n".join(lines)
