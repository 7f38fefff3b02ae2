"""The small typed records that travel in graph state and run context, without LangGraph.

The graph's state schema (:mod:`agent.state`) is built from these; code that only handles a
draft, a plan step or a mode (routing, reasoning, the CLI's reads) imports them from here, so
it does not pay for importing LangGraph. :mod:`agent.state` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

Mode = Literal["deep", "flash"]
ModeChoice = Literal["auto", "deep", "flash"]
Status = Literal[
    "running", "awaiting_approval", "published", "rejected", "noted", "declined", "answered"
]
#: Statuses after which a thread takes a new request ("noted": a statement or instruction was
#: kept; "answered": a question or a remark was answered; "declined": research was refused).
FINISHED: tuple[str, ...] = ("published", "rejected", "noted", "declined", "answered")
Action = Literal["approve", "reject", "edit"]
Verdict = Literal["pass", "needs_attention", "fail"]
StepKind = Literal["snapshot", "returns", "risk", "trend", "beta", "peers"]

#: Rejections after which the thread stops instead of drafting again.
MAX_REVISIONS = 3

#: The modules whose dataclasses, enums and named tuples a checkpoint may rebuild (passed to
#: ``open_checkpointer(..., allowed_modules=...)``; memory names no analyst module). Only this
#: one: :mod:`agent.state` defines TypedDicts alone (a test keeps it so), and naming it would
#: import LangGraph's graph package into every process that opens the checkpointer.
CHECKPOINT_TYPES_MODULES: tuple[str, ...] = ("agent.records",)


@dataclass(frozen=True)
class Context:
    """Per-run settings supplied by whoever invokes the graph (CLI, scripts, Studio)."""

    tenant_id: str = field(
        default="default",
        metadata={
            "description": "Tenant the run belongs to (ignored when the server authenticates "
            "the caller: the token's tenant is used)."
        },
    )
    user_id: str = field(
        default="anonymous",
        metadata={
            "description": "User the run acts for (ignored when the server authenticates the "
            "caller: the token's user is used)."
        },
    )
    mode: ModeChoice = field(
        default="auto",
        metadata={
            "description": "Force deep research or a quick snapshot; auto lets the router decide."
        },
    )
    confirm_memories: bool = field(
        default=False,
        metadata={
            "description": "At the end of a request, pause to ask the user to confirm what the "
            "agent proposes to remember (standing instructions, repeated behaviour, unclear "
            "facts). Off: they wait for `analyst memory review`."
        },
    )
    forgets_after_run: bool = field(
        default=False,
        metadata={
            "description": "The caller runs a forget the user confirmed once the run is over "
            "(the analyst application does). Off (Studio, the API server): the confirmed ids "
            "stay in the thread's state and the answer says how to forget them."
        },
    )


class PlanStep(TypedDict):
    """One unit of executor work: a single analytics computation for one ticker."""

    id: str
    kind: StepKind
    ticker: str
    description: str


class Finding(TypedDict):
    severity: Literal["info", "warning", "error"]
    message: str


class Critique(TypedDict):
    """The critic's evaluation of one draft. It informs the human; it never approves."""

    draft_hash: str
    verdict: Verdict
    findings: list[Finding]


class Draft(TypedDict):
    """A report awaiting a decision, identified by the hash of its exact Markdown."""

    ticker: str
    title: str
    markdown: str
    hash: str
    revision: int
    as_of: str
    sources: list[str]
    chart_path: str | None
    metrics: dict[str, Any]
    recommendation: dict[str, Any]
    # Metric values the report's prose states (model path), checked by the critic.
    claims: list[dict[str, Any]]
    # The prose the model wrote (model path; absent offline): the critic checks its figures.
    prose: NotRequired[list[str]]
    # The key-metric rows the report's table shows (every row when absent).
    shown_metrics: NotRequired[list[str]]
    # A revision's record: the previous draft's outline and each feedback request's status
    # (agent.research.revision); the critic checks every "addressed" one.
    revised: NotRequired[dict[str, Any]]
    # Why the plan is what it is (the planner's rationale, citing the facts that shaped it).
    plan_rationale: NotRequired[str]


class Decision(TypedDict, total=False):
    """A human's answer at the approval point, bound to one draft by its hash."""

    action: Action
    draft_hash: str
    approver: str
    decided_at: str
    feedback: str
    text: str


class Publication(TypedDict):
    path: str
    chart_path: str | None
    draft_hash: str
    approver: str
    approved_at: str
    action: Action


class Usage(TypedDict):
    calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
