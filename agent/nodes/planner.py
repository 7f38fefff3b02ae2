"""The planner node: plan the research after reading what memory knows about this user.

Deterministic first: the user's current facts from the ledger (stated or confirmed ones only;
an inference alone changes nothing), then semantic neighbours from the long-term store, ranked,
and the confirmed preferences that ask for report content, whatever the query.
Both are scoped by the run's principal, never by anything a model produced, reach prompts only
as quoted data, and are audited as read. The plan cites what it used.

What the profile demands is enforced here in code on every path
(:mod:`agent.research.suitability`): tickers the profile excludes (``excluded_tickers``, a
sector in ``excluded_sectors``) are taken out of the request (all of them excluded: the
request is declined, naming the fact, and the executor hands it to ``remember``), and a model's deep plan is ordered and trimmed by the
same rules as the offline analyst's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from agent.nodes.base import Node, answered, principal, with_proposals
from agent.reasoning.base import Context as ReasoningContext
from agent.reasoning.base import Planned, profile_of
from agent.reasoning.chat_model import add_usage
from agent.research.constraints import included_sections
from agent.research.routing import Route
from agent.research.suitability import Profile, refusal, shape_plan
from agent.state import AnalystState, Context
from memory.identity import Principal

if TYPE_CHECKING:
    from memory.recall import Recalled


class Planner(Node):
    async def __call__(self, state: AnalystState, runtime: Runtime[Context]) -> dict[str, Any]:
        """The plan, the facts and memories it read, and the keys it cites."""
        who = principal(runtime)
        facts = await self._current_facts(who, runtime)
        recalled = await self._recall(runtime.store, who, state["query"])
        recalled += await self._preferences(runtime.store, who, {m["key"] for m in recalled})
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
        excluded = Profile.of(facts).exclusions(route.tickers)
        if len(excluded) == len(route.tickers):
            # Every ticker is excluded: answered at once (the executor sees no plan).
            update = {"plan": [], "facts_used": facts, "recalled": recalled, "step_index": 0}
            return answered(update, "declined", refusal(route.tickers, excluded))
        left_out = [f"{t} left out: {why}." for t, why in excluded.items()]
        route = Route(
            mode=route.mode,
            tickers=tuple(t for t in route.tickers if t not in excluded),
            reason=route.reason,
        )
        conventions = await self.conventions()
        tools = self.memory_tools(runtime)
        ctx = replace(
            self.context(state, conventions),
            facts={name: fact["value"] for name, fact in facts.items()},
            profile=facts,
            memories=recalled,
            memory=tools,
        )
        planned, used = await self.reasoner.plan(route, ctx)
        planned = _enforced(planned, route, ctx)
        return {
            "plan": planned.steps,
            "plan_rationale": " ".join([planned.rationale, *left_out]),
            "tickers": list(route.tickers),
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

    async def _preferences(
        self, store: BaseStore | None, who: Principal, known: set[str]
    ) -> list[dict[str, Any]]:
        """The user's confirmed preferences that ask for report content ("always include the
        peer table"), whatever the query: they hold for every report, like procedures."""
        if store is None:
            return []
        from memory.recall import alist_memories

        return [
            _recalled(item)
            for item in await alist_memories(store, who, limit=PREFERENCES_SCANNED)
            if item.kind == "preference"
            and item.key not in known
            and included_sections(item.text, standing=True)
        ]

    async def _recall(
        self, store: BaseStore | None, who: Principal, query: str
    ) -> list[dict[str, Any]]:
        if store is None:
            return []
        from memory.recall import arecall

        found = await arecall(store, who, query, limit=self.services.recall_limit)
        return [_recalled(item) for item in found]


#: How many of the user's newest long-term memories are scanned for standing preferences.
PREFERENCES_SCANNED = 200


def _recalled(item: Recalled) -> dict[str, Any]:
    return {
        "key": item.key,
        "text": item.text,
        "kind": item.kind,
        "about": item.about,
        "at": item.at.isoformat() if item.at else None,
        "episode_ids": list(item.metadata.get("episode_ids") or []),
        "score": item.parts.to_json(),
    }


def _enforced(planned: Planned, route: Route, ctx: ReasoningContext) -> Planned:
    """A model's deep plan under the same profile rules as the offline one (the offline plan
    is already shaped: shaping it again changes nothing)."""
    if route.mode != "deep" or not planned.steps:
        return planned
    steps, notes = shape_plan(planned.steps, profile_of(ctx), memories=ctx.memories)
    if steps == planned.steps:
        return planned
    return Planned(steps, " ".join([planned.rationale, *notes]), planned.memories_used)
