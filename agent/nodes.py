"""The analyst's graph nodes: router, planner, executor, reporter, critic, approval, publish.

Each node reads state and returns an update (never mutates state in place). Jumps are typed
``Command[Literal[...]]`` so the routing is visible in the graph. Dependencies come from the
:class:`~agent.services.Services` the builder binds; per-run identity from ``runtime.context``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from agent.critic import critique
from agent.decisions import validate_decision
from agent.errors import InvalidDecisionError, StaleDraftError
from agent.planning import deep_plan, snapshot_plan
from agent.report import compose_report, content_hash
from agent.routing import Route, route_query
from agent.services import Services
from agent.state import MAX_REVISIONS, AnalystState, Context, Draft
from agent.tools import run_step


class AnalystNodes:
    def __init__(self, services: Services) -> None:
        self.services = services

    # -- research -----------------------------------------------------------------------

    def router(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["planner", "executor"]]:
        """Classify the request from its text alone; reset the working state for it."""
        mode = runtime.context.mode if runtime.context else "auto"
        route = route_query(state["query"], self.services.market.available_tickers(), mode)
        fresh: dict[str, Any] = {
            "mode": route.mode,
            "tickers": list(route.tickers),
            "plan": [],
            "memories_used": [],
            "step_index": 0,
            "results": {},
            "feedback": [],
            "revisions": 0,
            "decisions": [],
            "decision_error": None,
            "status": "running",
            "stop_reason": "",
        }
        if route.mode == "flash":
            return Command(goto="executor", update={**fresh, "plan": snapshot_plan(route)})
        return Command(goto="planner", update=fresh)

    def planner(self, state: AnalystState) -> dict[str, Any]:
        route = Route(mode=state["mode"], tickers=tuple(state["tickers"]), reason="")
        return {"plan": deep_plan(route), "step_index": 0}

    def executor(self, state: AnalystState) -> Command[Literal["executor", "reporter"]]:
        """Run exactly one plan step; each step therefore ends in its own checkpoint."""
        index = state.get("step_index", 0)
        plan = state["plan"]
        if self.services.step_delay:
            time.sleep(self.services.step_delay)
        result = run_step(plan[index], self.services.market)
        update = {
            "results": {**state.get("results", {}), result["step_id"]: dict(result)},
            "step_index": index + 1,
        }
        return Command(goto="executor" if index + 1 < len(plan) else "reporter", update=update)

    def reporter(self, state: AnalystState, config: RunnableConfig) -> dict[str, Any]:
        draft = compose_report(
            ticker=state["tickers"][0],
            mode=state["mode"],
            results=state["results"],
            feedback=state.get("feedback", []),
            revision=state.get("revisions", 0),
            requested=state["tickers"],
        )
        draft["chart_path"] = str(self._chart(draft, config))
        return {"draft": draft, "status": "running"}

    def _chart(self, draft: Draft, config: RunnableConfig) -> Path:
        from agent.chart import render_price_chart

        thread_id = str(config.get("configurable", {}).get("thread_id") or "no-thread")
        path = self.services.artifacts_dir / _safe_name(thread_id) / f"{draft['hash'][:16]}.png"
        if not path.exists():
            render_price_chart(self.services.market.history(draft["ticker"]), path)
        return path

    def critic(self, state: AnalystState) -> dict[str, Any]:
        """Judge the draft alone: the critic is given nothing from the run but the draft."""
        verdict = critique(state["draft"], today=self.services.clock().date())
        return {"critique": verdict, "status": "awaiting_approval"}

    # -- human in the loop ----------------------------------------------------------------

    def approval(
        self, state: AnalystState, config: RunnableConfig
    ) -> Command[Literal["publish", "reporter", "approval", "__end__"]]:
        """Pause for a human decision bound to this exact draft; route on the answer."""
        draft, review = state["draft"], state["critique"]
        revisions = state.get("revisions", 0)
        raw = interrupt(
            {
                "kind": "approval",
                "ticker": draft["ticker"],
                "title": draft["title"],
                "draft_hash": draft["hash"],
                "revision": draft["revision"],
                "revisions_left": MAX_REVISIONS - revisions,
                "verdict": review["verdict"],
                "findings": review["findings"],
                "markdown": draft["markdown"],
                "chart_path": draft["chart_path"],
                "error": state.get("decision_error"),
                "actions": ["approve", "reject", "edit"],
            }
        )
        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        try:
            decision = validate_decision(raw, draft, thread_id=thread_id, now=self.services.clock())
        except (InvalidDecisionError, StaleDraftError) as error:
            # Refused decisions never publish: ask again, with the reason on record.
            return Command(goto="approval", update={"decision_error": str(error)})
        decisions = [*state.get("decisions", []), decision]
        base: dict[str, Any] = {"decisions": decisions, "decision_error": None}
        if decision["action"] == "approve":
            return Command(goto="publish", update={**base, "status": "running"})
        if decision["action"] == "edit":
            text = decision["text"]
            edited = Draft(**{**draft, "markdown": text, "hash": content_hash(text)})
            return Command(goto="publish", update={**base, "draft": edited, "status": "running"})
        feedback = [*state.get("feedback", []), decision["feedback"]]
        if revisions >= MAX_REVISIONS:
            reason = (
                f"Rejected {revisions + 1} times; the limit is {MAX_REVISIONS} revisions. "
                "The thread is closed without publishing; start a new run to try again."
            )
            return Command(
                goto="__end__",
                update={**base, "feedback": feedback, "status": "rejected", "stop_reason": reason},
            )
        return Command(
            goto="reporter",
            update={**base, "feedback": feedback, "revisions": revisions + 1, "status": "running"},
        )

    def publish(self, state: AnalystState, config: RunnableConfig) -> dict[str, Any]:
        from agent.publishing import publish_report

        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        publication = publish_report(
            self.services.documents,
            thread_id=thread_id,
            draft=state["draft"],
            decision=state["decisions"][-1],
        )
        return {"publication": publication, "status": "published"}


def _safe_name(thread_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in thread_id)[:120]
