"""The reporter node: draft the report in the sections the project conventions require.

Each draft carries a price chart (rendered once per draft hash under the thread's artifacts
folder) and a "Memory context" section citing what memory said that the report relies on
(:func:`personal_lines`). The profile facts the planner used shape the report the same way
(length, the recommendation's fit, concentration and conflict notes; see
:func:`agent.research.report.compose_report`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from agent.nodes.base import Node
from agent.reasoning.base import ReportRequest
from agent.reasoning.chat_model import add_usage
from agent.state import AnalystState, Draft
from agent.thread_ids import thread_folder


class Reporter(Node):
    async def __call__(self, state: AnalystState, config: RunnableConfig) -> dict[str, Any]:
        """The draft (revision ``revisions``, answering the feedback so far) and its chart."""
        conventions = await self.conventions()
        facts = state.get("facts_used") or {}
        request = ReportRequest(
            ticker=state["tickers"][0],
            mode=state["mode"],
            results=state["results"],
            feedback=state.get("feedback", []),
            revision=state.get("revisions", 0),
            requested=state["tickers"],
            sections=conventions.required_sections,
            ctx=replace(
                self.context(state, conventions),
                facts={name: f["value"] for name, f in facts.items()},
                profile=facts,
                memories=tuple(state.get("recalled") or []),
                personal=personal_lines(state),
            ),
            previous=state.get("draft") if state.get("feedback") else None,
        )
        draft, used = await self.reasoner.report(request)
        draft["plan_rationale"] = state.get("plan_rationale") or ""
        draft["chart_path"] = str(await asyncio.to_thread(self._chart, draft, config))
        note = (
            f"Draft {draft['hash'][:12]} for {draft['ticker']} (revision {draft['revision']}): "
            f"{draft['recommendation']['rating']}. Awaiting your decision."
        )
        return {
            "draft": draft,
            "status": "running",
            "usage": add_usage(state.get("usage"), used),
            "messages": [AIMessage(note)],
        }

    def _chart(self, draft: Draft, config: RunnableConfig) -> Path:
        from agent.research.chart_process import render

        thread_id = str(config.get("configurable", {}).get("thread_id") or "no-thread")
        folder = thread_folder(thread_id)
        path = self.services.artifacts_dir / folder / f"{draft['hash'][:16]}.png"
        if not path.exists():
            render(self.services.market.history(draft["ticker"]), path)
        return path


def personal_lines(state: AnalystState) -> list[str]:
    """What memory says about this user that the report relies on, each with its source
    (a personal attribute's value, or a financial or identifying detail such as holdings or
    the employer, is not written: reports are published business records)."""
    from agent.learning.profile import shown
    from agent.research.suitability import UNSHOWN

    lines = []
    for name, fact in sorted((state.get("facts_used") or {}).items()):
        episodes = ", ".join(fact.get("episode_ids") or []) or "no episode"
        value = "(not shown in a report)" if name in UNSHOWN else shown(name, fact["value"])
        lines.append(
            f"Your {name.replace('_', ' ')}: {value} ({fact['source']} since "
            f"{str(fact['since'])[:10]}; fact {fact['memory_id']}; episodes {episodes})."
        )
    for p in state.get("procedures") or []:
        lines.append(
            f'Procedure in force: "{p["text"]}" (procedure {p["procedure_id"]}, confirmed '
            f"{str(p['confirmed_at'])[:10]}; episodes {', '.join(p['episode_ids']) or '-'})."
        )
    for m in state.get("recalled") or []:
        if m.get("kind") == "preference":
            episodes = ", ".join(m.get("episode_ids") or []) or "no episode"
            lines.append(
                f'Your preference: "{m["text"]}" (memory {m["key"]}; episodes {episodes}).'
            )
        elif m.get("kind") in ("decision", "rejection", "milestone"):
            episodes = ", ".join(m.get("episode_ids") or []) or "no episode"
            when = str(m.get("at") or "")[:10]
            lines.append(
                f'Earlier {m["kind"]} ({when}): "{m["text"]}" (memory {m["key"]}; '
                f"episodes {episodes})."
            )
    return lines
