"""The application service: run, resume, decide and inspect threads for one principal.

The CLI, the chat REPL and scripts all go through :class:`AnalystApp`; none of them touch
storage directly. The app's tiers (:attr:`AnalystApp.tiers`, :mod:`agent.app.tiers`) open
lazily, on first use, and close with the app; every memory operation is
:attr:`AnalystApp.memory` (:mod:`agent.app.memory`), and storage administration
:attr:`AnalystApp.storage` (:mod:`agent.app.storage`). Ownership of every thread is checked
against the principal before the checkpointer is consulted, and a thread's cross-process lock
is held only for the call that runs it, so one app may serve a whole chat session. Thread
ids are the principal's own (:mod:`memory.threads`): another principal's id is, for every
call here, an id this principal has not used; checkpoints, locks and the graph's
``thread_id`` use the thread's storage id.
What callers get back (:class:`ThreadView`, :class:`CheckpointView`) is :mod:`agent.app.views`.

What a user types (a request, a rejection's feedback, an edited report) is redacted
(:func:`memory.pii.redact`) before it reaches the graph: its input is checkpointed before any
node runs, and everything stored, prompted or summarised after derives from it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agent.app.limits import within_limit
from agent.app.requests import check_decision_sizes, check_query, confirmation_reply
from agent.app.tiers import Tiers
from agent.app.views import CheckpointView, ThreadView, checkpoint_views, thread_view
from agent.errors import (
    AnalystError,
    InvalidQueryError,
    NotAwaitingApprovalError,
    NotAwaitingConfirmationError,
    NoTickerError,
    ThreadBusyError,
    ThreadUnavailableError,
)
from agent.settings import Settings
from memory.identity import Principal
from memory.pii import redact
from memory.threads import ThreadRecord

if TYPE_CHECKING:
    from agent.app.memory import MemoryControls
    from agent.app.storage import StorageAdmin
    from agent.nodes.services import Services
    from agent.records import ModeChoice
    from agent.research.routing import Route
    from memory.retention import PruneReport

__all__ = ["LATER", "AnalystApp", "OnUpdate", "new_thread_id", "within_limit"]

#: Statuses after which a thread's request is over (``agent.state.FINISHED``, without the import).
_FINISHED = ("published", "rejected", "noted", "declined", "answered")

#: Thread statuses a new message is answered beside (``agent.app.aside``), not run on: a draft
#: awaiting approval, a run stopped midway, a run another process is carrying out.
PAUSED = ("awaiting_approval", "interrupted", "running")

#: The answer "later" to a memory confirmation: every candidate stays pending.
LATER: dict[str, list[str]] = {"confirm": [], "reject": []}

#: Called with (node name, state update) as each node finishes.
OnUpdate = Callable[[str, dict[str, Any]], Awaitable[None] | None]


class AnalystApp:
    """The threads of one principal (start, resume, decide, answer, view, list, history,
    delete, prune); :attr:`memory`, :attr:`tiers` and :attr:`storage` for the rest. Use it
    inside :meth:`open`, which closes whatever tier was opened."""

    def __init__(self, settings: Settings, principal: Principal, services: Services | None = None):
        self.settings = settings
        self.principal = principal
        self.tiers = Tiers(settings, principal, services)
        self.index = self.tiers.index
        self.locks = self.tiers.locks
        self._memory: MemoryControls | None = None
        self._storage: StorageAdmin | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls, settings: Settings, principal: Principal, services: Services | None = None
    ) -> AsyncIterator[AnalystApp]:
        app = cls(settings, principal, services)
        async with app.tiers.stack:
            yield app

    @property
    def services(self) -> Services:
        """The analyst's dependencies (market data, reasoner, documents), built on first use."""
        return self.tiers.services

    @property
    def memory(self) -> MemoryControls:
        """Every memory operation of this principal (``analyst memory``)."""
        if self._memory is None:
            from agent.app.memory import MemoryControls

            self._memory = MemoryControls(self.tiers, self)
        return self._memory

    @property
    def storage(self) -> StorageAdmin:
        """Schemas, the integrity check, backup and restore of the embedded files (``analyst
        db``)."""
        if self._storage is None:
            from agent.app.storage import StorageAdmin

            self._storage = StorageAdmin(self.tiers, self.memory)
        return self._storage

    async def graph(self) -> Any:
        """The compiled graph over this principal's tiers, after the start-up sweep (a run
        is the first use of memory of a command that runs a thread); commands that fail
        validation never get here, so they write nothing."""
        graph = await self.tiers.graph()
        await self.memory.sweep_on_start()
        return graph

    async def _after_run(self, thread_id: str, *, session_over: bool) -> ThreadView:
        """The thread's view after a run, with the extraction the run queued carried out (a
        failing one stays queued, retried with backoff, and the view says why, loudly)."""
        view = await self.view(thread_id)
        try:
            learner = await self.memory.learner()
            if session_over and view.status in _FINISHED:
                await learner.end_session(self.require_thread(thread_id).storage_id)
            view.memory_jobs = await self.memory.extract_due(learner)
        except AnalystError as error:
            view.memory_warning = (
                f"Memory extraction did not complete: {error} The job stays queued; see "
                "analyst memory jobs, and run analyst memory worker to retry."
            )
        return view

    # -- deleting threads ---------------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread everywhere: every checkpoint, write and blob, its index row and
        its draft charts (published notes and their charts stay)."""
        self.require_thread(thread_id)
        await self.memory.sweep_on_start()
        await self.tiers.delete_thread(thread_id)

    async def prune(self, older_than: str, *, dry_run: bool = False) -> PruneReport:
        """Delete this principal's threads idle for longer than ``older_than`` (e.g. ``90d``),
        with their chart folders."""
        report = await self.tiers.prune(older_than, dry_run=dry_run)
        if report.deleted and not dry_run:
            await self.memory.sweep_on_start()
            await self.tiers.audit(
                "delete",
                "threads",
                [item.thread_id for item in report.deleted],
                f"threads idle for longer than {older_than} pruned",
            )
        return report

    # -- validation that writes nothing -------------------------------------------------

    def preflight(self, query: str, mode: ModeChoice = "auto") -> Route | None:
        """Validate the request without touching storage; raises on bad input."""
        return check_query(self.services, query, mode)

    async def understand(self, query: str) -> str:
        """What ``query`` is: research, statement, question, instruction, forget or
        conversation (:func:`agent.recollection.intent.classify`), or ``ideas`` (what to buy,
        no ticker named: :func:`agent.research.routing.ideas_request`); reads no storage."""
        from agent.recollection.intent import classify
        from agent.research.routing import ideas_request

        listed = self.services.market.available_tickers()
        intent = classify(query, listed).intent
        if intent not in ("question", "instruction") and ideas_request(query, listed):
            return "ideas"
        return intent

    def require_thread(self, thread_id: str) -> ThreadRecord:
        return self.tiers.require_thread(thread_id)

    # -- running ------------------------------------------------------------------------

    async def start(
        self,
        query: str,
        *,
        thread_id: str | None = None,
        mode: ModeChoice = "auto",
        on_update: OnUpdate | None = None,
        keep_session: bool = False,
    ) -> ThreadView:
        """Start a request (a new thread, or a new request on a finished thread).

        On a paused thread (:data:`PAUSED`) the message is answered beside the paused run
        (:func:`agent.app.aside.aside`): stored, learned from or answered, never run on the
        thread, so a draft awaiting approval stays approvable.

        When the request finishes, the session ends (its extraction is queued) unless
        ``keep_session`` (the chat keeps one session until /new, /quit or idle time)."""
        from langgraph.types import Command

        from agent.records import FINISHED
        from agent.thread_ids import check_thread_id

        thread_id = check_thread_id(new_thread_id() if thread_id is None else thread_id)
        query = redact(query)
        within_limit(
            query,
            self.settings.max_query_chars,
            "query",
            "ANALYST_MAX_QUERY_CHARS",
            InvalidQueryError,
        )
        try:
            route = self.preflight(query, mode)
        except NoTickerError:
            # In a conversation a message that asks for no research ("my horizon is 2
            # years", a remark) is still a turn: it is stored and answered.
            if not keep_session:
                raise
            route = None
        if route is not None and route.tickers:
            # The report's chart, drawn by the command's warm chart process (if any) while
            # the graph loads; the executor asks again once the plan is final.
            from agent.research.chart_process import prepare_prices

            prepare_prices(self.services.market, route.tickers[0])
        await self.graph()
        who = self.principal
        record = self.index.get(who, thread_id)
        if record is not None:
            view = await self.view(thread_id)
            if view.status in PAUSED:
                # Never refused for the thread's state: answered beside the paused run,
                # which stays as it is (its draft approvable).
                from agent.app.aside import aside

                return await aside(self.tiers, await self.memory.learner(), thread_id, query, view)
        # A new id (another principal's is one too) gets a storage id no thread has.
        storage = record.storage_id if record else self.index.free_storage_id(who, thread_id)
        with self.locks.hold(storage):
            record = self.index.get(who, thread_id)
            if record is None:
                record = self.index.register(who, thread_id, query, storage)
            elif record.storage_id != storage:  # registered meanwhile by another process
                raise ThreadBusyError(thread_id)
            else:
                view = await self.view(thread_id)
                while view.status == "awaiting_confirmation":
                    # A new message answers each pending question with "later": candidates
                    # stay pending for review, a proposed forget deletes nothing (only a
                    # yes does), and the thread moves on.
                    await self._drive(storage, Command(resume=LATER), "auto", None)
                    view = await self.view(thread_id)
                # "new": registered, but the process died before the first checkpoint.
                if view.status not in (*FINISHED, "new"):
                    raise ThreadUnavailableError(
                        f"Thread '{thread_id}' is {view.status.replace('_', ' ')}; finish it "
                        f"first (analyst show {thread_id}) or start a new thread."
                    )
            await self._drive(storage, {"query": query}, mode, on_update, confirm=keep_session)
        return await self._after_run(thread_id, session_over=not keep_session)

    async def resume(
        self,
        thread_id: str,
        *,
        on_update: OnUpdate | None = None,
        answer: dict[str, Any] | None = None,
    ) -> ThreadView:
        """Continue a thread that stopped mid-run (crash, Ctrl+C) from its last checkpoint.

        A thread paused on a question (``awaiting_confirmation``) continues with ``answer``
        (see :meth:`answer_confirmation`); without one it is returned as it is, question and
        all."""
        from agent.records import FINISHED

        record = self.require_thread(thread_id)
        await self.graph()
        view = await self.view(thread_id)
        if view.status == "awaiting_confirmation":
            if answer is None:
                return view
            return await self.answer_confirmation(
                thread_id, answer, on_update=on_update, confirm_memories=False
            )
        if view.status == "awaiting_approval" or view.status in FINISHED:
            return view
        with self.locks.hold(record.storage_id):
            view = await self.view(thread_id)
            if view.status == "awaiting_approval" or view.status in FINISHED:
                return view
            # A thread that died before its first checkpoint restarts from its request.
            payload = {"query": record.query} if view.status == "new" else None
            await self._drive(record.storage_id, payload, "auto", on_update)
        return await self._after_run(thread_id, session_over=False)

    async def decide(
        self,
        thread_id: str,
        decision: dict[str, Any],
        *,
        on_update: OnUpdate | None = None,
        keep_session: bool = False,
    ) -> ThreadView:
        """Send a human decision (approve / reject / edit) for the draft awaiting approval;
        its extraction runs right after (see :meth:`start` for ``keep_session``)."""
        from langgraph.types import Command

        from agent.nodes.decisions import validate_decision

        check_decision_sizes(self.settings, decision)
        storage = self.require_thread(thread_id).storage_id
        await self.graph()
        view = await self.view(thread_id)
        if view.status != "awaiting_approval":  # the common refusal, without contending
            raise NotAwaitingApprovalError(thread_id, view.status)
        # Under the thread's lock: two racing approvals cannot both resume the same pause.
        with self.locks.hold(storage):
            view = await self.view(thread_id)
            if view.status != "awaiting_approval":
                raise NotAwaitingApprovalError(thread_id, view.status)
            state = (await self._snapshot(thread_id)).values
            # Same gate as the approval node, applied first so the caller gets the exact error.
            checked = validate_decision(
                decision, state["draft"], thread_id=thread_id, now=self.services.clock()
            )
            if "feedback" in checked:
                checked["feedback"] = redact(checked["feedback"])
            if "text" in checked:
                checked["text"] = redact(checked["text"])
            await self._drive(
                storage, Command(resume=dict(checked)), "auto", on_update, confirm=keep_session
            )
        return await self._after_run(thread_id, session_over=not keep_session)

    async def answer_confirmation(
        self,
        thread_id: str,
        answer: dict[str, Any],
        *,
        on_update: OnUpdate | None = None,
        confirm_memories: bool = True,
    ) -> ThreadView:
        """Answer the question the thread is paused on: what to remember
        (``{"confirm": [ids], "reject": [ids]}``; ids not named stay pending) or what to
        forget (``{"forget": true | false | [ids]}``). A confirmed forget runs after the run
        finishes (:meth:`MemoryControls.forget <agent.app.memory.MemoryControls.forget>`), so
        no checkpoint is written after it; the view carries its receipt (``forgotten``) and
        ``thread_deleted`` when the words were said in this thread. ``confirm_memories``
        (the chat): the thread may then still ask what to remember.
        """
        from langgraph.types import Command

        storage = self.require_thread(thread_id).storage_id
        await self.graph()
        with self.locks.hold(storage):
            view = await self.view(thread_id)
            if view.status != "awaiting_confirmation":
                raise NotAwaitingConfirmationError(thread_id, view.status)
            asked = (view.confirmation or {}).get("kind")
            reply = confirmation_reply(thread_id, asked, answer)
            await self._drive(
                storage, Command(resume=reply), "auto", on_update, confirm=confirm_memories
            )
        view = await self.view(thread_id)
        if asked == "forget_confirmation":
            await self._forget_confirmed(view, drafts=answer.get("drafts") is True)
        return view

    async def _forget_confirmed(self, view: ThreadView, *, drafts: bool = False) -> None:
        """Run the forget the user just confirmed on ``view``'s thread (the ids its remember
        node recorded), after the run; note the receipt on ``view``. A thread whose draft
        awaits a decision goes only with ``drafts`` (the user said so, asked apart)."""
        snap = await self._snapshot(view.thread_id)
        ids = list((snap.values or {}).get("forget_confirmed") or [])
        if not ids:
            return
        receipt = await self.memory.forget(ids, confirm=True, drafts=drafts)
        view.forgotten = receipt
        deleted = receipt["deleted"].get("threads", {}).get("ids", [])
        view.thread_deleted = view.thread_id in deleted

    async def _drive(
        self,
        storage_id: str,
        payload: Any,
        mode: ModeChoice,
        on_update: OnUpdate | None,
        *,
        confirm: bool = False,
    ) -> None:
        from agent.records import Context

        graph = await self.graph()
        config = {"configurable": {"thread_id": storage_id}}
        context = Context(
            tenant_id=self.principal.tenant_id,
            user_id=self.principal.user_id,
            mode=mode,
            confirm_memories=confirm,
            forgets_after_run=True,
        )
        self.index.set_runner(storage_id, os.getpid())
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
            self.index.set_runner(storage_id, None)

    # -- inspecting ---------------------------------------------------------------------

    async def _snapshot(self, thread_id: str) -> Any:
        return await self.tiers.thread_state(thread_id)

    async def view(self, thread_id: str) -> ThreadView:
        record = self.require_thread(thread_id)
        snap = await self.tiers.thread_state(thread_id)
        busy = self.locks.busy(record.storage_id)
        return thread_view(thread_id, record, snap, busy, self.tiers.model_label)

    async def threads(self, limit: int = 100) -> list[ThreadView]:
        return [await self.view(r.thread_id) for r in self.index.list(self.principal, limit)]

    async def history(self, thread_id: str) -> list[CheckpointView]:
        return checkpoint_views(await self.tiers.thread_history(thread_id))


def new_thread_id() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"
