"""The contract between the graph's nodes and whoever makes their decisions.

Nodes call one :class:`Reasoner`; :mod:`agent.reasoning.offline` (rules, no network) and
:mod:`agent.reasoning.model` (a chat model) implement it. :class:`Context` is what a reasoner may
know beyond its direct inputs; :class:`Planned` is what planning returns and
:class:`ReportRequest` what a report is written from. On every path each
figure in a report comes from tool results, never from a model's memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol

from agent.reasoning.chat_model import Usage
from agent.records import Critique, Draft, Mode, ModeChoice, PlanStep
from agent.research.routing import Route
from agent.research.steps import StepResult

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from agent.learning.tools import MemoryTools
    from agent.market import MarketDataProvider
    from agent.reasoning.schemas import ReportNarrative
    from agent.research.conventions import Conventions
    from agent.research.suitability import Profile


@dataclass(frozen=True)
class Context:
    """What a reasoner may know beyond its direct inputs. Every text field is memory or user
    content and reaches prompts only as quoted reference blocks (``conventions`` arrives
    already quoted by ``Conventions.quoted()``; the rest is quoted with ``quote_data``)."""

    constraints: Sequence[str] = ()
    conversation: str = ""
    memories: Sequence[Mapping[str, Any]] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)
    conventions: str = ""
    #: The user's confirmed procedures in force ({procedure_id, text, rule, ...}).
    procedures: Sequence[Mapping[str, Any]] = ()
    #: What the session loaded from memory: recent sessions and open items.
    sessions: Sequence[Mapping[str, Any]] = ()
    open_items: Sequence[Mapping[str, Any]] = ()
    #: The profile facts behind ``facts``, by attribute: ``{"value", "memory_id", "source",
    #: "since", ...}``, so what they change can cite them (:mod:`agent.research.suitability`).
    profile: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Lines the report's "Memory context" section states, each citing its source.
    personal: Sequence[str] = ()
    #: The run's memory read tools, built by the node for the run's principal (never from an
    #: id a model produced); the model path binds them, the offline reasoner ignores them.
    memory: MemoryTools | None = None


def profile_of(ctx: Context) -> Profile:
    """The user's profile as the suitability rules read it: the fact records (or the bare
    facts), the procedures in force, the thread's constraints and the confirmed preferences
    among the memories."""
    from agent.research.suitability import Profile

    return Profile.of(ctx.profile or ctx.facts, ctx.procedures, ctx.constraints, ctx.memories)


@dataclass(frozen=True)
class Planned:
    steps: list[PlanStep]
    rationale: str
    memories_used: list[str]


@dataclass(frozen=True)
class ReportRequest:
    """What a report for ``ticker`` is written from: the step ``results``, the reviewer's
    ``feedback`` so far (``revision`` answers it; ``previous``: the draft it revises), the
    tickers ``requested``, the ``sections`` the conventions require, and ``ctx``."""

    ticker: str
    mode: Mode
    results: Mapping[str, Mapping[str, Any]]
    feedback: Sequence[str]
    revision: int
    requested: Sequence[str]
    sections: Sequence[str]
    ctx: Context
    previous: Draft | None = None

    def compose(self, narrative: ReportNarrative | None = None) -> Draft:
        """The report as :func:`~agent.research.report.compose_report` renders it for the
        user's profile and memory context (with a model's ``narrative``, its prose)."""
        from agent.research.report import compose_report

        return compose_report(
            ticker=self.ticker,
            mode=self.mode,
            results=self.results,
            feedback=self.feedback,
            revision=self.revision,
            requested=self.requested,
            sections=self.sections,
            narrative=narrative,
            personal=self.ctx.personal,
            profile=profile_of(self.ctx),
            previous=self.previous,
        )


class Reasoner(Protocol):
    label: str

    async def route(
        self, query: str, available: Sequence[str], mode: ModeChoice
    ) -> tuple[Route, Usage]: ...

    async def plan(self, route: Route, ctx: Context) -> tuple[Planned, Usage]: ...

    async def execute(
        self, step: PlanStep, market: MarketDataProvider, ctx: Context
    ) -> tuple[StepResult, Usage]: ...

    async def report(self, request: ReportRequest) -> tuple[Draft, Usage]: ...

    async def critique(
        self, draft: Draft, *, today: date, conventions: Conventions | None
    ) -> tuple[Critique, Usage]: ...

    async def summarise(
        self, previous: str, messages: Sequence[BaseMessage]
    ) -> tuple[str, Usage]: ...
