"""Graph state: the schema LangGraph checkpoints (its records live in :mod:`agent.records`).

State is deliberately small and plain (TypedDicts of JSON-friendly values): it is written to
every checkpoint, shown in Studio and read back by other processes. Facts about users live in
memory stores, never here; clients, connections and secrets never enter state.

``Context`` carries per-run identity and knobs (``runtime.context``); under the API server's auth
the identity comes from the token instead (``agent.nodes.base.principal``). The thread id
travels in ``configurable`` and only locates checkpoints, it grants nothing: a thread records
its owner (``AnalystState.owner``).
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from agent.records import (
    CHECKPOINT_TYPES_MODULES,
    FINISHED,
    MAX_REVISIONS,
    Action,
    Context,
    Critique,
    Decision,
    Draft,
    Finding,
    Mode,
    ModeChoice,
    PlanStep,
    Publication,
    Status,
    StepKind,
    Usage,
    Verdict,
)

__all__ = [
    "CHECKPOINT_TYPES_MODULES",
    "FINISHED",
    "MAX_REVISIONS",
    "Action",
    "AnalystState",
    "Context",
    "Critique",
    "Decision",
    "Draft",
    "Finding",
    "InputState",
    "Mode",
    "ModeChoice",
    "PlanStep",
    "Publication",
    "Status",
    "StepKind",
    "Usage",
    "Verdict",
    "append_publications",
]


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
