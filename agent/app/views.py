"""What the application returns about threads: plain views for the CLI, chat, scripts and JSON.

:class:`ThreadView` is a thread as a caller sees it (``to_json`` is the stable shape of
``--json`` output); :class:`CheckpointView` one entry of a thread's history;
:func:`thread_status` the one reading of a thread's status from its latest checkpoint;
:func:`thread_view` and :func:`checkpoint_views` build them from a thread's checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.threads import ThreadRecord


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
    #: What the last message was (research, statement, question, instruction, forget,
    #: conversation; ``agent.recollection.intent``).
    intent: str | None = None
    #: The episode and memory ids the answer cites (a question answered from memory).
    cited: list[str] = field(default_factory=list)
    #: Set when the message was handled beside a paused run (``agent.app.aside``): the
    #: thread's own status, draft hash and ticker, untouched ({status, draft_hash, ticker}).
    pending: dict[str, Any] | None = None
    #: What a "forget ..." said beside a paused run names (nothing is deleted without a yes).
    forget_proposed: list[dict[str, Any]] = field(default_factory=list)
    topic: str | None = None

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
            "intent": self.intent,
            "cited": self.cited,
            "pending": self.pending,
            "forget_proposed": self.forget_proposed,
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
    from agent.records import FINISHED

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


#: The questions the ``remember`` node asks (``agent.nodes.remember``).
CONFIRMATION_KINDS = ("memory_confirmation", "forget_confirmation")


def confirmation_request(snap: Any) -> dict[str, Any] | None:
    """The question the thread is paused on in its ``remember`` node, if any: what to
    remember (``memory_confirmation``) or what to forget (``forget_confirmation``)."""
    for pending in snap.interrupts or ():
        value = getattr(pending, "value", None)
        if isinstance(value, dict) and value.get("kind") in CONFIRMATION_KINDS:
            return value
    return None


def thread_view(
    thread_id: str, record: ThreadRecord, snap: Any, busy: bool, model: str
) -> ThreadView:
    """The view of a thread from its index ``record`` and latest state ``snap`` (``busy``: a
    process runs it now; ``model``: the reasoner's label)."""
    values: dict[str, Any] = snap.values or {}
    draft = values.get("draft") or {}
    review = values.get("critique") or {}
    # Every report the thread ever published, whatever its latest request did; a thread
    # checkpointed before the list existed still has its last one in ``publication``.
    publications = [dict(p) for p in values.get("publications") or []]
    current = values.get("publication")
    if current and values.get("status") == "published" and current not in publications:
        publications.append(dict(current))
    return ThreadView(
        thread_id=thread_id,
        status=thread_status(snap, busy),
        confirmation=confirmation_request(snap),
        query=values.get("query") or record.query,
        ticker=(values.get("tickers") or [None])[0],
        mode=values.get("mode"),
        draft_hash=draft.get("hash"),
        draft_markdown=draft.get("markdown"),
        chart_path=draft.get("chart_path"),
        revision=draft.get("revision", 0),
        verdict=review.get("verdict"),
        findings=list(review.get("findings") or []),
        publication=publications[-1] if publications else None,
        publications=publications,
        stop_reason=values.get("stop_reason") or None,
        decision_error=values.get("decision_error"),
        next_nodes=list(snap.next),
        plan=list(values.get("plan") or []),
        route_reason=values.get("route_reason") or "",
        plan_rationale=values.get("plan_rationale") or "",
        memories_used=list(values.get("memories_used") or []),
        recalled=list(values.get("recalled") or []),
        facts_used=dict(values.get("facts_used") or {}),
        constraints=list(values.get("constraints") or []),
        reply=values.get("reply") or "",
        step_notes=[
            f"{step_id}: {note}"
            for step_id, result in (values.get("results") or {}).items()
            for note in result.get("notes") or []
        ],
        usage=dict(values.get("usage") or {}),
        model=model,
        context_loaded=dict(values.get("context_loaded") or {}),
        learned=list(values.get("learned") or []),
        intent=values.get("intent") or None,
        cited=list(values.get("cited") or []),
        procedures=list(values.get("procedures") or []),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def checkpoint_views(snaps: list[Any]) -> list[CheckpointView]:
    """One view per checkpoint of a thread's history (newest first, as the saver lists it)."""
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snaps}
    out = []
    for snap in snaps:
        meta = snap.metadata or {}
        parent_id = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        parent = by_id.get(parent_id) if parent_id else None
        out.append(
            CheckpointView(
                checkpoint_id=snap.config["configurable"]["checkpoint_id"],
                parent_id=parent_id,
                step=int(meta.get("step", -1)),
                source=str(meta.get("source", "")),
                created_at=snap.created_at or "",
                next_nodes=list(snap.next),
                # The nodes that ran to produce this checkpoint: its parent's next tasks.
                ran=list(parent.next) if parent is not None else [],
            )
        )
    return out
