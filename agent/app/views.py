"""What the application returns about threads: plain views for the CLI, chat, scripts and JSON.

:class:`ThreadView` is a thread as a caller sees it (``to_json`` is the stable shape of
``--json`` output); :class:`CheckpointView` one entry of a thread's history;
:func:`thread_status` the one reading of a thread's status from its latest checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ThreadView:
    """A thread as callers see it. ``to_json`` is the stable shape of ``--json`` output."""

    thread_id: str
    status: str
    query: str = ""
    ticker: str | None = None
    mode: str | None = None
    draft_hash: str | None = None
    draft_markdown: str | None = None
    chart_path: str | None = None
    revision: int = 0
    verdict: str | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    publication: dict[str, Any] | None = None
    publications: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    decision_error: str | None = None
    next_nodes: list[str] = field(default_factory=list)
    plan: list[dict[str, Any]] = field(default_factory=list)
    route_reason: str = ""
    plan_rationale: str = ""
    memories_used: list[str] = field(default_factory=list)
    recalled: list[dict[str, Any]] = field(default_factory=list)
    facts_used: dict[str, Any] = field(default_factory=dict)
    constraints: list[str] = field(default_factory=list)
    reply: str = ""
    step_notes: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    model: str = "offline"
    created_at: str | None = None
    updated_at: str | None = None
    #: What the thread's first request loaded from memory (profile, procedures, sessions).
    context_loaded: dict[str, Any] = field(default_factory=dict)
    #: Profile facts the last message stated or corrected, applied at once.
    learned: list[dict[str, Any]] = field(default_factory=list)
    #: The user's confirmed procedures the last request enforced.
    procedures: list[dict[str, Any]] = field(default_factory=list)
    #: Extraction jobs the command ran after the graph (set by the app, not stored in state).
    memory_jobs: list[dict[str, Any]] = field(default_factory=list)
    #: Why extraction did not complete (its job stays queued and is retried).
    memory_warning: str | None = None
    #: What the thread asks the user to confirm (status ``awaiting_confirmation``): what to
    #: remember (``kind`` ``memory_confirmation``) or what to forget (``forget_confirmation``).
    confirmation: dict[str, Any] | None = None
    #: The receipt of the forget the user just confirmed (set by the app, not stored in state).
    forgotten: dict[str, Any] | None = None
    #: Whether that forget deleted this thread (it held forgotten words): it is gone now.
    thread_deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "status": self.status,
            "query": self.query,
            "ticker": self.ticker,
            "mode": self.mode,
            "draft_hash": self.draft_hash,
            "revision": self.revision,
            "verdict": self.verdict,
            "findings": self.findings,
            "chart_path": self.chart_path,
            "publication": self.publication,
            "publications": self.publications,
            "stop_reason": self.stop_reason,
            "decision_error": self.decision_error,
            "next": self.next_nodes,
            "plan": [step["id"] for step in self.plan],
            "route_reason": self.route_reason,
            "plan_rationale": self.plan_rationale,
            "memories_used": self.memories_used,
            "recalled": self.recalled,
            "facts_used": self.facts_used,
            "constraints": self.constraints,
            "reply": self.reply,
            "step_notes": self.step_notes,
            "usage": self.usage,
            "model": self.model,
            "context_loaded": self.context_loaded,
            "learned": self.learned,
            "procedures": self.procedures,
            "memory_jobs": self.memory_jobs,
            "memory_warning": self.memory_warning,
            "confirmation": self.confirmation,
            "forgotten": self.forgotten,
            "thread_deleted": self.thread_deleted,
            "draft_markdown": self.draft_markdown,
        }


@dataclass(frozen=True)
class CheckpointView:
    checkpoint_id: str
    parent_id: str | None
    step: int
    source: str
    created_at: str
    next_nodes: list[str]
    ran: list[str]


def thread_status(snap: Any, busy: bool) -> str:
    """The thread's status from its latest checkpoint and whether a process holds its lock.

    awaiting_approval, awaiting_confirmation (paused after its answer to ask the user to
    confirm what to remember or what to forget), a finished status (published, rejected, noted, declined),
    running, interrupted (stopped mid-run; resumable), or new (registered, no checkpoint yet).
    """
    from agent.state import FINISHED

    values = snap.values or {}
    if snap.interrupts:
        if confirmation_request(snap) is not None:
            return "awaiting_confirmation"
        return "awaiting_approval"
    if not snap.next and values.get("status") in FINISHED:
        return str(values["status"])
    if busy:
        return "running"
    return "interrupted" if values else "new"


#: The questions the ``remember`` node asks (``agent.nodes.analyst``).
CONFIRMATION_KINDS = ("memory_confirmation", "forget_confirmation")


def confirmation_request(snap: Any) -> dict[str, Any] | None:
    """The question the thread is paused on in its ``remember`` node, if any: what to
    remember (``memory_confirmation``) or what to forget (``forget_confirmation``)."""
    for pending in snap.interrupts or ():
        value = getattr(pending, "value", None)
        if isinstance(value, dict) and value.get("kind") in CONFIRMATION_KINDS:
            return value
    return None
