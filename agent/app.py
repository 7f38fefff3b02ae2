"""The application service: run, resume, decide and inspect threads for one principal.

The CLI, the chat REPL and scripts all go through :class:`AnalystApp`; none of them touch
storage directly. The app owns the lifetimes of the checkpointer (opened lazily, so commands
that fail validation write nothing) and checks ownership of every thread against the principal
before the checkpointer is consulted.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from agent.decisions import validate_decision
from agent.errors import (
    AnalystError,
    NotAwaitingApprovalError,
    ThreadNotFoundError,
)
from agent.routing import Route, check_request
from agent.services import Services
from agent.settings import Settings
from agent.state import FINISHED, Context, ModeChoice
from memory.identity import Principal
from memory.threads import ThreadIndex, ThreadLocks, ThreadRecord

#: Called with (node name, state update) as each node finishes.
OnUpdate = Callable[[str, dict[str, Any]], Awaitable[None] | None]


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


class AnalystApp:
    def __init__(self, settings: Settings, principal: Principal, services: Services | None = None):
        self.settings = settings
        self.principal = principal
        self.services = services or Services.from_settings(settings)
        self.index = ThreadIndex(settings.threads_path)
        self.locks = ThreadLocks(settings.data_dir / "locks")
        self._stack = AsyncExitStack()
        self._graph: Any = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls, settings: Settings, principal: Principal, services: Services | None = None
    ) -> AsyncIterator[AnalystApp]:
        app = cls(settings, principal, services)
        async with app._stack:
            yield app

    async def graph(self) -> Any:
        """The compiled graph, with its memory tiers opened on first use.

        The checkpointer (hot), the long-term store (cold) and the fact ledger are opened
        here, together, and closed with the app; commands that fail validation never get here,
        so they write nothing.
        """
        if self._graph is None:
            from agent.state import CHECKPOINT_TYPES_MODULES
            from graphs.builder import compile_graph
            from memory.checkpoint import open_checkpointer

            saver = await self._stack.enter_async_context(
                open_checkpointer(
                    self.settings.checkpointer,
                    encryption_key=self.settings.checkpoint_key,
                    allowed_modules=CHECKPOINT_TYPES_MODULES,
                )
            )
            self.index.setup()
            from memory.facts import open_fact_store
            from memory.store.factory import open_store_from_settings

            # Cold memory and the fact ledger live as long as the app, like the checkpointer.
            store = await self._stack.enter_async_context(open_store_from_settings(self.settings))
            facts = await self._stack.enter_async_context(
                open_fact_store(self.settings.facts, self.principal)
            )
            self.services = replace(self.services, facts=facts)
            self._saver = saver
            self._store = store
            self._graph = compile_graph(saver, store=store, services=self.services)
        return self._graph

    # -- retention ----------------------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread everywhere: every checkpoint, write and blob, and its index row."""
        from memory.retention import delete_thread

        self.require_thread(thread_id)
        await self.graph()
        with self.locks.hold(thread_id):  # refused while another process runs the thread
            await delete_thread(self._saver, self.index, self.principal, thread_id)

    async def prune(self, older_than: str, *, dry_run: bool = False) -> Any:
        """Delete this principal's threads idle for longer than ``older_than`` (e.g. ``90d``).

        Returns a :class:`memory.retention.PruneReport`.
        """
        from memory.retention import parse_age, prune_threads

        age = parse_age(older_than)
        await self.graph()
        return await prune_threads(
            self._saver,
            self.index,
            self.principal,
            older_than=age,
            label=older_than,
            dry_run=dry_run,
            busy=self.locks.busy,
        )

    # -- validation that writes nothing -------------------------------------------------

    def preflight(self, query: str, mode: ModeChoice = "auto") -> Route | None:
        """Validate the request without touching storage; raises on bad input."""
        strict = self.services.reasoner.label == "offline"
        return check_request(query, self.services.market.available_tickers(), mode, strict=strict)

    def require_thread(self, thread_id: str) -> ThreadRecord:
        record = self.index.get(self.principal, thread_id)
        if record is None:
            raise ThreadNotFoundError(thread_id)
        return record

    # -- running ------------------------------------------------------------------------

    async def start(
        self,
        query: str,
        *,
        thread_id: str | None = None,
        mode: ModeChoice = "auto",
        on_update: OnUpdate | None = None,
    ) -> ThreadView:
        """Start an analysis (a new thread, or a new request on a finished thread)."""
        self.preflight(query, mode)
        thread_id = thread_id or new_thread_id()
        if self.index.get(self.principal, thread_id) is None and self.index.exists(thread_id):
            # Someone else's thread: refuse without saying so.
            raise AnalystError(f"Thread id '{thread_id}' is not available; choose another.")
        await self.graph()
        with self.locks.hold(thread_id):
            if self.index.get(self.principal, thread_id) is None:
                self.index.register(self.principal, thread_id, query)
            else:
                view = await self.view(thread_id)
                # "new": registered, but the process died before the first checkpoint.
                if view.status not in (*FINISHED, "new"):
                    raise AnalystError(
                        f"Thread '{thread_id}' is {view.status.replace('_', ' ')}; finish it "
                        f"first (analyst show {thread_id}) or start a new thread."
                    )
            await self._drive(thread_id, {"query": query}, mode, on_update)
        return await self.view(thread_id)

    async def resume(self, thread_id: str, *, on_update: OnUpdate | None = None) -> ThreadView:
        """Continue a thread that stopped mid-run (crash, Ctrl+C) from its last checkpoint."""
        record = self.require_thread(thread_id)
        await self.graph()
        view = await self.view(thread_id)
        if view.status == "awaiting_approval" or view.status in FINISHED:
            return view
        with self.locks.hold(thread_id):
            view = await self.view(thread_id)
            if view.status == "awaiting_approval" or view.status in FINISHED:
                return view
            # A thread that died before its first checkpoint restarts from its request.
            payload = {"query": record.query} if view.status == "new" else None
            await self._drive(thread_id, payload, "auto", on_update)
        return await self.view(thread_id)

    async def decide(
        self, thread_id: str, decision: dict[str, Any], *, on_update: OnUpdate | None = None
    ) -> ThreadView:
        """Send a human decision (approve / reject / edit) for the draft awaiting approval."""
        from langgraph.types import Command

        self.require_thread(thread_id)
        await self.graph()
        view = await self.view(thread_id)
        if view.status != "awaiting_approval":  # the common refusal, without contending
            raise NotAwaitingApprovalError(thread_id, view.status)
        # Under the thread's lock: two racing approvals cannot both resume the same pause.
        with self.locks.hold(thread_id):
            view = await self.view(thread_id)
            if view.status != "awaiting_approval":
                raise NotAwaitingApprovalError(thread_id, view.status)
            state = (await self._snapshot(thread_id)).values
            # Same gate as the approval node, applied first so the caller gets the exact error.
            checked = validate_decision(
                decision, state["draft"], thread_id=thread_id, now=self.services.clock()
            )
            await self._drive(thread_id, Command(resume=dict(checked)), "auto", on_update)
        return await self.view(thread_id)

    async def _drive(
        self, thread_id: str, payload: Any, mode: ModeChoice, on_update: OnUpdate | None
    ) -> None:
        graph = await self.graph()
        config = {"configurable": {"thread_id": thread_id}}
        context = Context(
            tenant_id=self.principal.tenant_id, user_id=self.principal.user_id, mode=mode
        )
        self.index.set_runner(thread_id, os.getpid())
        try:
            async for chunk in graph.astream(
                payload,
                config,
                context=context,
                stream_mode="updates",
                durability=self.settings.durability,
            ):
                for node, update in chunk.items():
                    if on_update is not None and node != "__interrupt__":
                        result = on_update(node, update if isinstance(update, dict) else {})
                        if result is not None:
                            await result
        finally:
            self.index.set_runner(thread_id, None)

    # -- inspecting ---------------------------------------------------------------------

    async def _snapshot(self, thread_id: str) -> Any:
        graph = await self.graph()
        return await graph.aget_state({"configurable": {"thread_id": thread_id}})

    async def view(self, thread_id: str) -> ThreadView:
        record = self.require_thread(thread_id)
        snap = await self._snapshot(thread_id)
        values: dict[str, Any] = snap.values or {}
        draft = values.get("draft") or {}
        review = values.get("critique") or {}
        return ThreadView(
            thread_id=thread_id,
            status=thread_status(snap, self.locks.busy(thread_id)),
            query=values.get("query") or record.query,
            ticker=(values.get("tickers") or [None])[0],
            mode=values.get("mode"),
            draft_hash=draft.get("hash"),
            draft_markdown=draft.get("markdown"),
            chart_path=draft.get("chart_path"),
            revision=draft.get("revision", 0),
            verdict=review.get("verdict"),
            findings=list(review.get("findings") or []),
            publication=values.get("publication") if values.get("status") == "published" else None,
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
            model=self.services.reasoner.label,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )

    async def threads(self, limit: int = 100) -> list[ThreadView]:
        return [await self.view(r.thread_id) for r in self.index.list(self.principal, limit)]

    async def history(self, thread_id: str) -> list[CheckpointView]:
        self.require_thread(thread_id)
        graph = await self.graph()
        snaps = [
            s async for s in graph.aget_state_history({"configurable": {"thread_id": thread_id}})
        ]
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


def thread_status(snap: Any, busy: bool) -> str:
    """The thread's status from its latest checkpoint and whether a process holds its lock.

    awaiting_approval, a finished status (published, rejected, noted, declined), running,
    interrupted (stopped mid-run; resumable), or new (registered, no checkpoint yet).
    """
    values = snap.values or {}
    if snap.interrupts:
        return "awaiting_approval"
    if not snap.next and values.get("status") in FINISHED:
        return str(values["status"])
    if busy:
        return "running"
    return "interrupted" if values else "new"


def new_thread_id() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"
