"""The planner node: plan the research after reading what memory knows about this user.

Deterministic first: the user's current facts from the ledger (stated or confirmed ones only;
an inference alone changes nothing), then semantic neighbours from the long-term store, ranked.
Both are scoped by the run's principal, never by anything a model produced, reach prompts only
as quoted data, and are audited as read. The plan cites what it used.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from agent.nodes.base import Node, principal, with_proposals
from agent.reasoning.chat_model import add_usage
from agent.research.routing import Route
from agent.state import AnalystState, Context
from memory.identity import Principal


class Planner(Node):
    async def __call__(self, state: AnalystState, runtime: Runtime[Context]) -> dict[str, Any]:
        """The plan, the facts and memories it read, and the keys it cites."""
        who = principal(runtime)
        facts = await self._current_facts(who, runtime)
        recalled = await self._recall(runtime.store, who, state["query"])
        learner = self.learner(runtime)
        if learner is not None:
            await learner.audit_read(
                "facts",
                [f["memory_id"] for f in facts.values()],
                reason="profile read by the planner",
                content={name: f["value"] for name, f in facts.items()},
            )
            await learner.audit_read(
                "store",
                [m["key"] for m in recalled],
                reason="memories recalled by the planner",
                content=[m["text"] for m in recalled],
            )
        route = Route(
            mode=state["mode"],
            tickers=tuple(state["tickers"]),
            reason=state.get("route_reason", ""),
        )
        conventions = await self.conventions()
        tools = self.memory_tools(runtime)
        ctx = replace(
            self.context(state, conventions),
            facts={name: fact["value"] for name, fact in facts.items()},
            memories=recalled,
            memory=tools,
        )
        planned, used = await self.reasoner.plan(route, ctx)
        return {
            "plan": planned.steps,
            "plan_rationale": planned.rationale,
            "recalled": recalled,
            "facts_used": facts,
            "memories_used": planned.memories_used,
            "step_index": 0,
            "usage": add_usage(state.get("usage"), used),
            **with_proposals(state, tools),
        }

    async def _current_facts(
        self, who: Principal, runtime: Runtime[Context]
    ) -> dict[str, dict[str, Any]]:
        """The profile facts the planner may use (``agent.recollection.reader.usable_fact``)."""
        learner = self.learner(runtime)
        if learner is not None:
            return await learner.profile()
        if self.services.facts is None:
            return {}
        from agent.recollection.reader import usable_fact
        from memory.facts import subject_for

        ledger = self.services.facts.with_principal(who)
        profile = await ledger.profile(subject_for(who))
        return {
            name: {
                "value": fact.value,
                "source": fact.source,
                "since": fact.valid_from.isoformat(),
                "memory_id": fact.memory_id,
                "episode_ids": [fact.source_episode_id] if fact.source_episode_id else [],
            }
            for name, fact in sorted(profile.items())
            if usable_fact(fact)
        }

    async def _recall(
        self, store: BaseStore | None, who: Principal, query: str
    ) -> list[dict[str, Any]]:
        if store is None:
            return []
        from memory.recall import arecall

        found = await arecall(store, who, query, limit=self.services.recall_limit)
        return [
            {
                "key": item.key,
                "text": item.text,
                "kind": item.kind,
                "about": item.about,
                "at": item.at.isoformat() if item.at else None,
                "episode_ids": list(item.metadata.get("episode_ids") or []),
                "score": item.parts.to_json(),
            }
            for item in found
        ]
