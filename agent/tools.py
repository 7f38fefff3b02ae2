"""The tools: market-data steps, and the model path's memory read tools.

Market data: what one plan step computes, from prices the provider returns. Each step returns
a small JSON-friendly result (numbers, ISO dates, provenance); price series themselves never
enter graph state. The same functions back the model path's market tools.

Memory (seed 003, pattern 3): :class:`MemoryTools` gives the model path's planner and
executor three read tools over the run's principal's memory -- ``get_user_profile``,
``search_episodes(query)`` and ``list_open_items``. They are built per run by the nodes from
the principal in ``runtime.context`` (through a :class:`~agent.recollection.Recollection`, whose
journal, ledger and cold-store reads are scoped in storage); none takes a user or tenant
argument, so nothing a model produces can widen what they read. Every result is one quoted,
untrusted reference block (:func:`agent.prompts.quote_data`), cites the ids it comes from
(memory, episode, session ids) and is bounded in size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import BaseModel, Field

from agent import analytics
from agent.market import MarketDataProvider, PriceHistory
from agent.state import PlanStep

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from agent.recollection import Recollection


class StepResult(TypedDict, total=False):
    step_id: str
    kind: str
    ticker: str
    as_of: str
    sources: list[str]
    data: dict[str, Any]
    #: What the step could not do (model path: iteration budget hit, a tool never called).
    notes: list[str]


def run_step(step: PlanStep, market: MarketDataProvider) -> StepResult:
    """Compute one plan step. Raises the provider's errors (unknown ticker, no data)."""
    ticker = step["ticker"]
    history = market.history(ticker)
    kind = step["kind"]
    used: list[PriceHistory] = [history]
    data: dict[str, Any]
    if kind == "returns":
        data = analytics.returns_metrics(history)
    elif kind == "risk":
        data = analytics.risk_metrics(history)
    elif kind == "trend":
        data = analytics.trend_metrics(history)
    elif kind == "beta":
        basket = _others(market, ticker)
        used += basket
        data = analytics.beta_metrics(history, basket)
    elif kind == "peers":
        everyone = _everyone(market, history)
        used = everyone
        data = {"peers": analytics.peer_table(everyone)}
    elif kind == "snapshot":
        basket = _others(market, ticker)
        everyone = [history, *basket]
        used = everyone
        data = {
            **analytics.returns_metrics(history),
            **analytics.risk_metrics(history),
            **analytics.trend_metrics(history),
            **analytics.beta_metrics(history, basket),
            "peers": analytics.peer_table(everyone),
        }
    else:  # pragma: no cover - PlanStep.kind is a closed Literal
        raise ValueError(f"unknown plan step kind {kind!r}")
    return StepResult(
        step_id=step["id"],
        kind=kind,
        ticker=ticker,
        as_of=history.as_of.isoformat(),
        sources=sorted({h.source for h in used}),
        data=data,
    )


def _others(market: MarketDataProvider, ticker: str) -> list[PriceHistory]:
    return [market.history(t) for t in market.available_tickers() if t != ticker]


def _everyone(market: MarketDataProvider, history: PriceHistory) -> list[PriceHistory]:
    """Every listed ticker, and the step's own when the provider fetched it beyond its list."""
    listed = market.available_tickers()
    everyone = [market.history(t) for t in listed]
    return everyone if history.ticker in listed else [*everyone, history]


# -- memory read tools (model path) -------------------------------------------------------------

#: The memory tools' names, as the model sees them.
MEMORY_TOOLS = ("get_user_profile", "search_episodes", "list_open_items")


class _SearchEpisodes(BaseModel):
    query: str = Field(
        min_length=1,
        max_length=200,
        description="Words to look for in the user's earlier messages and decisions: a ticker, "
        "a topic, a phrase.",
    )


@dataclass(frozen=True)
class MemoryTools:
    """The memory read tools of one run, for its principal (the learner's).

    :meth:`available` returns them only when the principal has something stored beyond the
    current conversation (:meth:`~agent.recollection.Recollection.has_memory`): a tool that can only
    answer "nothing" costs a model turn and its schema on every request.
    """

    learner: Recollection

    async def available(self) -> list[BaseTool]:
        if not await self.learner.has_memory():
            return []
        return memory_tools(self.learner)


def memory_tools(learner: Recollection) -> list[BaseTool]:
    """``get_user_profile``, ``search_episodes`` and ``list_open_items`` over ``learner``.

    Each returns ``(content, artifact)``: the content is the quoted reference block the model
    reads, the artifact the ids it cites (``memory_ids``, ``episode_ids``, ``session_ids``).
    """
    from langchain_core.tools import StructuredTool

    from agent.prompts import quote_data

    async def result(
        label: str, payload: Any, **ids: list[str]
    ) -> tuple[str, dict[str, list[str]]]:
        """The quoted block and the ids it cites, after auditing the read (one entry)."""
        content = quote_data(f"memory: {label} (this user only)", payload)
        cited = {k: sorted(set(v)) for k, v in ids.items()}
        await learner.audit_read(
            "tools",
            [i for v in cited.values() for i in v],
            reason=f"memory tool read: {label}",
            content=payload,
        )
        return content, cited

    async def get_user_profile() -> tuple[str, dict[str, list[str]]]:
        profile = await learner.profile()
        procedures = [
            {
                "procedure_id": p["procedure_id"],
                "text": p["text"],
                "confirmed_at": p["confirmed_at"],
                "episode_ids": list(p["episode_ids"])[:5],
            }
            for p in (await learner.active_procedures())[:20]
        ]
        return await result(
            "user profile",
            {"profile": profile, "procedures": procedures},
            memory_ids=[f["memory_id"] for f in profile.values()],
            episode_ids=[i for f in profile.values() for i in f["episode_ids"]],
        )

    async def search_episodes(query: str) -> tuple[str, dict[str, list[str]]]:
        found = await learner.search_episodes(query)
        return await result(
            "episodes and events",
            found,
            memory_ids=[e["memory_id"] for e in found["events"]],
            episode_ids=[e["episode_id"] for e in found["episodes"]],
        )

    async def list_open_items() -> tuple[str, dict[str, list[str]]]:
        items = await learner.open_items()
        return await result(
            "open items",
            {"open_items": items},
            session_ids=[i["session_id"] for i in items],
        )

    return [
        StructuredTool.from_function(
            coroutine=get_user_profile,
            name="get_user_profile",
            description="The user's profile facts (stated or confirmed, each with its fact id "
            "and source episodes) and the procedures they confirmed.",
            response_format="content_and_artifact",
        ),
        StructuredTool.from_function(
            coroutine=search_episodes,
            name="search_episodes",
            description="The user's earlier messages and decisions about a query: episodes "
            "matched by keywords, and notable events (decisions, rejections, milestones) "
            "recalled by meaning, each with its id.",
            args_schema=_SearchEpisodes,
            response_format="content_and_artifact",
        ),
        StructuredTool.from_function(
            coroutine=list_open_items,
            name="list_open_items",
            description="What the user asked to revisit or follow up on in recent sessions, "
            "each with its session id.",
            response_format="content_and_artifact",
        ),
    ]
