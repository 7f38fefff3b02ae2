"""Graph state, run context and the small typed records that travel in them.

State is deliberately small and plain (TypedDicts of JSON-friendly values): it is written to
every checkpoint, shown in Studio and read back by other processes. Facts about users live in
memory stores, never here; clients, connections and secrets never enter state.

``Context`` carries per-run identity and knobs (``runtime.context``); under the API server's auth
the identity comes from the token instead (``agent.nodes.base.principal``). The thread id
travels in ``configurable`` and only locates checkpoints, it grants nothing: a thread records
its owner (``AnalystState.owner``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

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
#: ``open_checkpointer(..., allowed_modules=...)``; memory names no analyst module). State is
#: TypedDicts of plain values today; a dataclass added here is allowed automatically.
CHECKPOINT_TYPES_MODULES: tuple[str, ...] = ("agent.state",)


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


def append_publications(
    left: list[Publication] | None, right: list[Publication] | None
) -> list[Publication]:
    """Reducer for ``publications``: a thread's publications only ever accumulate."""
    return [*(left or []), *(right or [])]


class AnalystState(TypedDict, total=False):
    """Working state of one conversation thread.

    Per-request fields are plain last-value channels that the capture node resets when a new
    request arrives on a finished thread (a chat keeps one thread). Conversation fields persist
    across requests: ``messages`` (trimmed and summarised into ``summary`` as they grow),
    ``constraints`` — the user's explicit instructions, kept outside any summary — and
    ``publications``, every report the thread has published (``publication`` is the current
    request's only).
    """

    # conversation (persists across requests)
    messages: Annotated[list[AnyMessage], add_messages]
    summary: str
    constraints: list[str]
    publications: Annotated[list[Publication], append_publications]
    # User turns stored as episodes so far (numbers each turn's episode id).
    turns: int
    # What the thread's first request loaded from memory (profile, procedures, recent
    # sessions, open items), as ``context_loaded`` in ``--json``.
    context_loaded: dict[str, Any]
    # Candidates the user was already asked to confirm in this thread (asked once).
    memory_asked: list[str]
    # Who the thread belongs to ({tenant_id, user_id}): the principal of its first request.
    # Only they may send it a message or decide its draft (agent.nodes.base.check_owner).
    owner: dict[str, str]
    # per request
    query: str
    # The message that started the request; ``query`` is the latest input, which a message
    # sent beside a draft awaiting approval changes while the request stays the same.
    request: str
    # The episode this request's message was stored as.
    episode_id: str
    # Profile facts this message stated or corrected, applied to the ledger at once.
    learned: list[dict[str, Any]]
    # What the message is (agent.recollection.intent): research, statement, question, ...
    intent: str
    # The episode and memory ids an answer from memory cites.
    cited: list[str]
    # The user's confirmed procedures in force for this request (enforced in code).
    procedures: list[dict[str, Any]]
    # What the model's ``forget`` tool proposed this request ({tier, id, text}); nothing is
    # deleted until the user answers the ``forget_confirmation`` the remember node asks.
    forget_proposed: list[dict[str, Any]]
    # The proposed ids the user confirmed (the application then runs the cascade).
    forget_confirmed: list[str]
    reply: str
    usage: Usage
    route_reason: str
    plan_rationale: str
    mode: Mode
    tickers: list[str]
    plan: list[PlanStep]
    # What the planner read from memory for this request (cited in the plan).
    recalled: list[dict[str, Any]]
    facts_used: dict[str, dict[str, Any]]
    memories_used: list[str]
    step_index: int
    # Step results keyed by step id (one step per super-step, so no reducer is needed).
    results: dict[str, dict[str, Any]]
    draft: Draft
    critique: Critique
    feedback: list[str]
    revisions: int
    decisions: list[Decision]
    decision_error: str | None
    status: Status
    publication: Publication
    stop_reason: str


class InputState(TypedDict):
    """What a caller provides to start a run."""

    query: str
