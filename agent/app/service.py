"""The application service: run, resume, decide and inspect threads for one principal.

The CLI, the chat REPL and scripts all go through :class:`AnalystApp`; none of them touch
storage directly. The app owns the lifetimes of every memory tier it uses, and opens each one
lazily, on first use, for as long as the app is open: the checkpointer (hot), the long-term
store (cold), the fact ledger and the document memory. A command that fails validation writes
nothing, and a command that needs one tier opens only that one (``analyst facts current``
never opens Qdrant or loads an embedding model). Ownership of every thread is checked against
the principal before the checkpointer is consulted.

One app may serve many calls (the chat REPL keeps one open for a whole session, on one event
loop): a thread's cross-process lock is held only for the duration of the call that runs the
thread, never between calls, so another process can decide on a thread the session shows.

Heavy modules (LangGraph, the reasoners, the storage backends) are imported where they are
first needed, so importing this module, and the commands that never run a graph, stay fast.
What callers get back (:class:`ThreadView`, :class:`CheckpointView`) is :mod:`agent.app.views`.

What the analyst learned from the principal's turns (candidates, procedures, sessions, the
extraction queue) is reached through :attr:`AnalystApp.memory` (:mod:`agent.app.memory`).

(About 790 lines on purpose: this is the one application service; every command, the chat
and scripts reach storage only through its methods, so they are kept in one place.)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.app.views import CheckpointView, ThreadView, confirmation_request, thread_status
from agent.errors import (
    AnalystError,
    InvalidDecisionError,
    InvalidMemoryError,
    InvalidQueryError,
    NotAwaitingApprovalError,
    NotAwaitingConfirmationError,
    NoTickerError,
    ThreadNotFoundError,
    ThreadUnavailableError,
)
from agent.settings import Settings
from memory.identity import Principal
from memory.threads import ThreadIndex, ThreadLocks, ThreadRecord

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

    from agent.app.memory import MemoryControls
    from agent.app.memory_backup import Carried
    from agent.nodes.services import Services
    from agent.research.routing import Route
    from agent.state import ModeChoice
    from memory.backup import Copied, Embedded
    from memory.documents import FileMemory
    from memory.facts import FactStore
    from memory.health import FileCheck
    from memory.journal.records import AuditAction
    from memory.recall import Recalled, RecallWeights
    from memory.retention import PruneReport
    from memory.sealing import MemoryCipher

#: Statuses after which a thread's request is over (``agent.state.FINISHED``, without the import).
_FINISHED = ("published", "rejected", "noted", "declined")

#: The answer "later" to a memory confirmation: every candidate stays pending.
LATER: dict[str, list[str]] = {"confirm": [], "reject": []}

#: Called with (node name, state update) as each node finishes.
OnUpdate = Callable[[str, dict[str, Any]], Awaitable[None] | None]


class AnalystApp:
    """Everything the CLI, the chat and scripts do, for one principal.

    Threads: :meth:`start`, :meth:`resume`, :meth:`decide`, :meth:`view`, :meth:`threads`,
    :meth:`history`, :meth:`delete_thread`, :meth:`prune`. Long-term memory: :meth:`remember`,
    :meth:`recall`, :meth:`memories`, :meth:`forget`. The fact ledger: :meth:`facts`. What
    it learned from the principal's turns: :attr:`memory`, and :meth:`answer_confirmation` for
    the question a conversation paused on. Documents: :attr:`documents`. Schemas: :meth:`setup_checkpointer`, :meth:`setup_facts`.
    Use it inside :meth:`open`, which closes whatever tier was opened.
    """

    def __init__(self, settings: Settings, principal: Principal, services: Services | None = None):
        self.settings = settings
        self.principal = principal
        self._services = services
        self._cipher: MemoryCipher | None = None
        self.index = ThreadIndex(settings.threads_path, cipher=self.memory_cipher)
        self.locks = ThreadLocks(settings.data_dir / "locks")
        self._stack = AsyncExitStack()
        self._graph: Any = None
        self._read_graph: Any = None
        self._saver: BaseCheckpointSaver[Any] | None = None
        #: The tombstones and audit a ``restore`` carried over, until :meth:`reapply_forgets`.
        self._carried: Carried | None = None
        self._store: BaseStore | None = None
        self._facts: FactStore | None = None
        self._documents: FileMemory | None = None
        self._memory: MemoryControls | None = None
        #: Whether this app swept (or chose not to) already: the start-up sweep runs once.
        self._swept = False

    @classmethod
    @asynccontextmanager
    async def open(
        cls, settings: Settings, principal: Principal, services: Services | None = None
    ) -> AsyncIterator[AnalystApp]:
        app = cls(settings, principal, services)
        async with app._stack:
            yield app

    # -- the memory tiers, each opened on first use and closed with the app --------------

    @property
    def services(self) -> Services:
        """The analyst's dependencies (market data, reasoner, documents), built on first use."""
        if self._services is None:
            from agent.nodes.services import Services

            services = Services.from_settings(self.settings)
            if self._documents is not None:
                services = replace(services, documents=self._documents)
            self._services = services
        return self._services

    @property
    def documents(self) -> FileMemory:
        """The Markdown document memory (its search index is closed with the app)."""
        if self._documents is None:
            if self._services is not None:
                self._documents = self._services.documents
            else:
                from memory.documents import FileMemory

                self._documents = FileMemory.from_settings(self.settings)
            self._stack.callback(self._documents.close)
        return self._documents

    async def checkpointer(self, *, create: bool = True) -> BaseCheckpointSaver[Any]:
        """The hot tier (checkpoints), with the thread index brought up to date.

        ``create=False`` (what commands that only read use) refuses to create an embedded
        checkpoints file that does not exist: a typo in a path is an error, not a new
        empty database after which every thread looks new.
        """
        if self._saver is None:
            if not create:
                self._require_checkpoints_file()
            from agent.state import CHECKPOINT_TYPES_MODULES
            from memory.checkpoint import open_checkpointer

            self._saver = await self._stack.enter_async_context(
                open_checkpointer(
                    self.settings.checkpointer,
                    encryption_key=self.settings.checkpoint_key,
                    allowed_modules=CHECKPOINT_TYPES_MODULES,
                )
            )
            if create or self.index.path.exists():
                self.index.setup()
        return self._saver

    def _require_checkpoints_file(self) -> None:
        from memory.checkpoint.url import parse_checkpointer_url, parse_sqlite_path
        from memory.errors import StorageMissingError

        url = self.settings.checkpointer
        if parse_checkpointer_url(url).backend != "sqlite":
            return
        path = parse_sqlite_path(url)
        if not path.exists():
            raise StorageMissingError("checkpoints file", path, "ANALYST_CHECKPOINTER")

    @property
    def memory_cipher(self) -> MemoryCipher:
        """Seals memory content at rest with ``ANALYST_MEMORY_KEY`` (none set: stores plain,
        refuses sealed content with a clear error); one for every tier this app opens."""
        if self._cipher is None:
            from memory.sealing import memory_cipher

            self._cipher = memory_cipher(self.settings.memory_key)
        return self._cipher

    async def store(self) -> BaseStore:
        """The cold tier: long-term memories (the embedding model loads on the first text)."""
        if self._store is None:
            from memory.store.factory import open_store_from_settings

            self._store = await self._stack.enter_async_context(
                open_store_from_settings(self.settings, cipher=self.memory_cipher)
            )
        return self._store

    async def facts(self, *, create: bool = True) -> FactStore:
        """The typed fact ledger, scoped to this app's principal (one connection, shared with
        the graph once it runs).

        ``create=False`` (reads) never creates the embedded ledger file: when the default file
        does not exist yet the answer comes from an empty ledger in memory (nothing recorded
        yet); a configured ``ANALYST_FACTS`` file that does not exist is an error.
        """
        if self._facts is None and not create and self._missing_ledger():
            from memory.facts import open_fact_store

            return await self._stack.enter_async_context(
                open_fact_store("sqlite:///:memory:", self.principal, cipher=self.memory_cipher)
            )
        if self._facts is None:
            from memory.facts import open_fact_store

            self._facts = await self._stack.enter_async_context(
                open_fact_store(self.settings.facts, self.principal, cipher=self.memory_cipher)
            )
        return self._facts

    def _missing_ledger(self) -> bool:
        """Whether the fact ledger is an embedded file that does not exist (a configured one
        that does not exist is a :class:`StorageMissingError`)."""
        from memory.errors import StorageMissingError
        from memory.urls import sqlite_path

        url = self.settings.facts
        if not url.lower().startswith("sqlite:///"):
            return False
        path = sqlite_path(url, tier="fact ledger", default_name="facts.sqlite")
        if path.exists():
            return False
        if self.settings.facts_url:
            raise StorageMissingError("fact ledger file", path, "ANALYST_FACTS")
        return True

    def _missing_store(self) -> bool:
        """Whether the long-term store is an embedded folder not created yet (nothing in it)."""
        from memory.urls import backend_for

        if self.settings.qdrant_url:
            return False
        backend = backend_for("store", self.settings.store)
        folders = {
            "qdrant-edge": self.settings.data_dir / "qdrant-edge",
            "qdrant-local": self.settings.qdrant_path,
        }
        return backend in folders and not folders[backend].exists()

    async def graph(self) -> Any:
        """The compiled graph, with its memory tiers opened on first use.

        The checkpointer (hot), the long-term store (cold) and the fact ledger are opened
        here (or reused if a command opened them already) and closed with the app; commands
        that fail validation never get here, so they write nothing.
        """
        if self._graph is None:
            from graphs.builder import compile_graph

            saver = await self.checkpointer()
            store = await self.store()
            self._graph = compile_graph(saver, store=store, services=await self._wired())
        return self._graph

    async def _wired(self) -> Services:
        """The services with the fact ledger and the memory journal open.

        The path every graph gets them by (API server runs too); nodes scope each call by the
        run's principal, and so does this app's view of the ledger.
        """
        if self.services.journal is None:
            from agent.nodes.services import open_ledger

            wired = await self._stack.enter_async_context(
                open_ledger(self.services, self.settings, cipher=self.memory_cipher)
            )
            assert wired.facts is not None
            if self._facts is None:
                self._facts = wired.facts.with_principal(self.principal)
            self._services = replace(wired, facts=self._facts)
            await self._sweep_on_start()
        return self.services

    async def _sweep_on_start(self) -> None:
        """The start-up retention sweep (``ANALYST_SWEEP_ON_START``): when the app first opens
        memory, at most once a day per principal (:func:`agent.app.retention.sweep_on_start`;
        one indexed audit read when not due). Here rather than in :meth:`open`, so a command
        that never opens memory (``db check``, ``threads``) opens no tier for it."""
        if self._swept or not self.settings.sweep_on_start:
            return
        self._swept = True
        from agent.app.retention import sweep_on_start

        try:
            await sweep_on_start(self)
        except AnalystError as error:
            error.add_note(
                "This was the daily retention sweep at start-up; run `analyst memory sweep` to "
                "see it alone, or set ANALYST_SWEEP_ON_START=0 to leave sweeps to that command."
            )
            raise

    @property
    def memory(self) -> MemoryControls:
        """What the analyst learned from this principal's turns, and its write state: review,
        confirm, context, procedures, sessions, episodes, events, jobs (``analyst memory``)."""
        if self._memory is None:
            from agent.app.memory import MemoryControls

            self._memory = MemoryControls(self)
        return self._memory

    async def _after_run(self, thread_id: str, *, session_over: bool) -> ThreadView:
        """The thread's view after a run, with the extraction the run queued carried out.

        A failing extraction does not undo the run: its job stays queued (retried with
        backoff; ``analyst memory jobs`` shows it) and the view says why, loudly."""
        view = await self.view(thread_id)
        try:
            learner = await self.memory.learner()
            if session_over and view.status in _FINISHED:
                await learner.end_session(thread_id)
            view.memory_jobs = await self.memory.extract_due(learner)
        except AnalystError as error:
            view.memory_warning = (
                f"Memory extraction did not complete: {error} The job stays queued; see "
                "analyst memory jobs, and run analyst memory worker to retry."
            )
        return view

    # -- storage set-up and long-term memory ----------------------------------------------

    async def setup_checkpointer(self) -> str:
        """Create or migrate the checkpointer's schema (idempotent); say what was done."""
        from memory.checkpoint import setup_checkpointer

        return await setup_checkpointer(self.settings.checkpointer)

    async def setup_facts(self, app_roles: list[str] | tuple[str, ...] = ()) -> list[int]:
        """Create or upgrade the fact ledger's schema; return the migrations applied now."""
        from memory.facts import setup_fact_store

        return await setup_fact_store(self.settings.facts, app_roles=app_roles)

    async def remember(
        self, text: str, *, importance: int = 5, kind: str = "note", about: str | None = None
    ) -> str:
        """Remember ``text`` for the principal; returns its key (the same text, the same key)."""
        from memory.recall import aremember

        for part, what in ((text, "memory"), (about or "", "--about text")):
            within_limit(
                part,
                self.settings.max_memory_chars,
                what,
                "ANALYST_MAX_MEMORY_CHARS",
                InvalidMemoryError,
            )
        return await aremember(
            await self.store(), self.principal, text, importance=importance, kind=kind, about=about
        )

    async def recall(
        self,
        query: str,
        *,
        limit: int = 5,
        weights: RecallWeights | None = None,
        half_life_days: float | None = None,
    ) -> list[Recalled]:
        """The principal's ``limit`` best memories for ``query``, with their score parts."""
        from memory.recall import DEFAULT_HALF_LIFE_DAYS, DEFAULT_WEIGHTS, arecall

        if self._store is None and self._missing_store():
            return []  # nothing remembered yet, and a search creates no store
        return await arecall(
            await self.store(),
            self.principal,
            query,
            limit=limit,
            weights=weights or DEFAULT_WEIGHTS,
            half_life_days=DEFAULT_HALF_LIFE_DAYS if half_life_days is None else half_life_days,
        )

    async def memories(self, limit: int = 100) -> list[Recalled]:
        """The principal's memories, newest first (no embedding involved)."""
        from memory.recall import alist_memories

        if self._store is None and self._missing_store():
            return []  # nothing remembered yet, and a listing creates no store
        return await alist_memories(await self.store(), self.principal, limit=limit)

    async def forget(self, key: str) -> None:
        """Forget one of the principal's memories as any forget does (:meth:`MemoryControls
        .forget`: a tombstone, its cached vector, the store rewritten so no byte of it is
        left); :class:`MemoryNotFoundError` if there is none."""
        from memory.errors import MemoryNotFoundError
        from memory.recall import NAMESPACE
        from memory.store.scoped import scoped

        view = scoped(await self.store(), self.principal)
        if await view.aget(NAMESPACE, key, refresh_ttl=False) is None:
            raise MemoryNotFoundError(key)
        await self.memory.forget(["/".join((*NAMESPACE, key))], confirm=True)

    async def _audit(
        self, action: AuditAction, tier: str, item_ids: list[str], reason: str
    ) -> None:
        """Append one entry to the principal's memory audit (ids only; see memory.journal)."""
        journal = (await self._wired()).journal
        assert journal is not None
        await journal.with_principal(self.principal).audit(action, tier, item_ids, reason=reason)

    # -- the embedded files: integrity check, backup, restore ----------------------------

    def embedded_files(self) -> list[Embedded]:
        """Every file and folder of the embedded defaults this configuration uses."""
        from memory.backup import Embedded
        from memory.urls import sqlite_path

        data = self.settings.data_dir
        files = []
        if self.settings.checkpointer.lower().startswith("sqlite:///"):
            path = sqlite_path(
                self.settings.checkpointer, tier="checkpointer", default_name="checkpoints.sqlite"
            )
            files.append(Embedded("checkpoints.sqlite", "checkpoints file", path, "sqlite"))
        files.append(Embedded("threads.sqlite", "thread index", self.index.path, "sqlite"))
        if self.settings.facts.lower().startswith("sqlite:///"):
            path = sqlite_path(self.settings.facts, tier="fact ledger", default_name="facts.sqlite")
            files.append(Embedded("facts.sqlite", "fact ledger", path, "sqlite"))
        files.append(
            Embedded("embeddings.sqlite", "embeddings cache", data / "embeddings.sqlite", "sqlite")
        )
        files.append(
            Embedded("documents.sqlite", "document index", data / "documents.sqlite", "sqlite")
        )
        files.append(
            Embedded("qdrant-edge", "long-term memory folder", data / "qdrant-edge", "folder")
        )
        if self.settings.qdrant_path.exists():
            files.append(
                Embedded("qdrant", "long-term memory folder", self.settings.qdrant_path, "folder")
            )
        return files

    def check_storage(self) -> list[FileCheck]:
        """The state of every embedded file; nothing is written or created."""
        from memory.backup import check

        return check(self.embedded_files())

    def backup(self, dest: str | os.PathLike[str]) -> list[Copied]:
        """A consistent copy of every embedded file in the new folder ``dest``."""
        from memory.backup import backup

        return backup(self.embedded_files(), dest)

    def restore(self, src: str | os.PathLike[str]) -> tuple[list[Copied], str]:
        """Restore the backup in ``src``; returns what was restored and where the replaced
        files were kept."""
        from datetime import UTC, datetime

        from agent.app.memory_backup import carry, put_back
        from memory.backup import restore

        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        keep = self.settings.data_dir / "backups" / f"before-restore-{stamp}"
        files = self.embedded_files()
        ledger = next((f.path for f in files if f.name == "facts.sqlite"), None)
        self._carried = carry(ledger)  # the forgets made since the backup are not undone
        restored = restore(files, src, keep)
        put_back(self._carried)
        return restored, str(keep)

    async def reapply_forgets(self) -> dict[str, dict[str, int]]:
        """After :meth:`restore`: forget again, for every user with tombstones or deletes
        made at their request, what the restored files hold that they had forgotten
        (:func:`agent.app.memory_backup.reapply_forgets`). Answers counts per user and tier."""
        from agent.app.memory_backup import reapply_forgets

        done: dict[str, dict[str, int]] = {}
        carried, self._carried = self._carried, None
        for tenant_id, user_id in [] if carried is None else carried.principals():
            principal = Principal(tenant_id, user_id)
            if principal == self.principal:
                counts = await reapply_forgets(self)
            else:
                async with AnalystApp.open(self.settings, principal) as other:
                    counts = await reapply_forgets(other)
            if counts:
                done[f"{tenant_id}/{user_id}"] = counts
        return done

    # -- retention ----------------------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread everywhere: every checkpoint, write and blob, its index row and
        its draft charts (published notes and their charts stay)."""
        from memory.retention import delete_thread

        self.require_thread(thread_id)
        saver = await self.checkpointer()
        with self.locks.hold(thread_id):  # refused while another process runs the thread
            charts = await self._chart_files(thread_id)
            await delete_thread(saver, self.index, self.principal, thread_id)
            self._remove_charts(thread_id, charts)
        await self._audit("delete", "threads", [thread_id], "thread deleted with its checkpoints")

    async def _chart_files(self, thread_id: str) -> set[Path]:
        """Draft charts the thread's checkpoints point at inside the artifacts folder (older
        versions named folders differently, so the folder alone is not enough)."""
        graph = await self.graph()
        root = self.settings.artifacts_dir.resolve()
        found: set[Path] = set()
        async for snap in graph.aget_state_history({"configurable": {"thread_id": thread_id}}):
            chart = ((snap.values or {}).get("draft") or {}).get("chart_path")
            if chart and Path(chart).resolve().is_relative_to(root):
                found.add(Path(chart))
        return found

    def _remove_charts(self, thread_id: str, charts: set[Path]) -> None:
        import shutil

        from agent.thread_ids import thread_folder

        for chart in charts:
            chart.unlink(missing_ok=True)
        shutil.rmtree(self.settings.artifacts_dir / thread_folder(thread_id), ignore_errors=True)

    async def prune(self, older_than: str, *, dry_run: bool = False) -> PruneReport:
        """Delete this principal's threads idle for longer than ``older_than`` (e.g. ``90d``),
        with their chart folders."""
        from memory.retention import parse_age, prune_threads

        age = parse_age(older_than)
        saver = await self.checkpointer()
        report = await prune_threads(
            saver,
            self.index,
            self.principal,
            older_than=age,
            label=older_than,
            dry_run=dry_run,
            busy=self.locks.busy,
        )
        for item in [] if dry_run else report.deleted:
            self._remove_charts(item.thread_id, set())
        if report.deleted and not dry_run:
            await self._audit(
                "delete",
                "threads",
                [item.thread_id for item in report.deleted],
                f"threads idle for longer than {older_than} pruned",
            )
        return report

    # -- validation that writes nothing -------------------------------------------------

    def preflight(self, query: str, mode: ModeChoice = "auto") -> Route | None:
        """Validate the request without touching storage; raises on bad input."""
        from agent.learning.extraction import hot_path_facts
        from agent.learning.learner import remove_statements
        from agent.research.routing import check_request, forget_topic, request_universe

        if forget_topic(query) is not None:
            return None  # "forget ...": the graph proposes, the user confirms
        strict = self.services.reasoner.label == "offline"
        market = self.services.market
        available = request_universe(
            query, market.available_tickers(), open_universe=getattr(market, "open_universe", False)
        )
        stated = hot_path_facts(query, "preflight")
        if stated:
            # Statements about the user ("my horizon is 2 years", "my base currency is EUR")
            # are valid on their own and are no request: the rest, if any, is checked.
            query = remove_statements(query, [{"quotes": [f.quote]} for f in stated])
            if not query:
                return None
        return check_request(query, available, mode, strict=strict)

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
        keep_session: bool = False,
    ) -> ThreadView:
        """Start an analysis (a new thread, or a new request on a finished thread).

        When the request finishes, the session ends (its extraction is queued) unless
        ``keep_session`` (the chat keeps one session until /new, /quit or idle time)."""
        from langgraph.types import Command

        from agent.state import FINISHED
        from agent.thread_ids import check_thread_id

        thread_id = check_thread_id(new_thread_id() if thread_id is None else thread_id)
        within_limit(
            query,
            self.settings.max_query_chars,
            "query",
            "ANALYST_MAX_QUERY_CHARS",
            InvalidQueryError,
        )
        try:
            self.preflight(query, mode)
        except NoTickerError:
            # In a conversation a message that asks for no research ("my horizon is 2
            # years", a remark) is still a turn: it is stored and answered.
            if not keep_session:
                raise
        if self.index.get(self.principal, thread_id) is None and self.index.exists(thread_id):
            # Someone else's thread: refuse without saying so.
            raise ThreadUnavailableError(
                f"Thread id '{thread_id}' is not available; choose another."
            )
        await self.graph()
        with self.locks.hold(thread_id):
            if self.index.get(self.principal, thread_id) is None:
                self.index.register(self.principal, thread_id, query)
            else:
                view = await self.view(thread_id)
                while view.status == "awaiting_confirmation":
                    # A new message answers each pending question with "later": candidates
                    # stay pending for review, a proposed forget deletes nothing (only a
                    # yes does), and the thread moves on.
                    await self._drive(thread_id, Command(resume=LATER), "auto", None)
                    view = await self.view(thread_id)
                # "new": registered, but the process died before the first checkpoint.
                if view.status not in (*FINISHED, "new"):
                    raise ThreadUnavailableError(
                        f"Thread '{thread_id}' is {view.status.replace('_', ' ')}; finish it "
                        f"first (analyst show {thread_id}) or start a new thread."
                    )
            await self._drive(thread_id, {"query": query}, mode, on_update, confirm=keep_session)
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
        from agent.state import FINISHED

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
        with self.locks.hold(thread_id):
            view = await self.view(thread_id)
            if view.status == "awaiting_approval" or view.status in FINISHED:
                return view
            # A thread that died before its first checkpoint restarts from its request.
            payload = {"query": record.query} if view.status == "new" else None
            await self._drive(thread_id, payload, "auto", on_update)
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

        limits = {
            "feedback": (self.settings.max_query_chars, "ANALYST_MAX_QUERY_CHARS"),
            "text": (self.settings.max_edit_chars, "ANALYST_MAX_EDIT_CHARS"),
        }
        for key, (limit, variable) in limits.items():
            value = decision.get(key)
            if isinstance(value, str):
                what = "feedback" if key == "feedback" else "edited text"
                within_limit(value, limit, what, variable, InvalidDecisionError)
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
            await self._drive(
                thread_id, Command(resume=dict(checked)), "auto", on_update, confirm=keep_session
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
        """Answer the question the thread is paused on.

        What to remember (``memory_confirmation``): ``{"confirm": [ids], "reject": [ids]}``
        (ids not named stay pending for ``analyst memory review``).

        What to forget (``forget_confirmation``, proposed by the model's ``forget`` tool):
        ``{"forget": true}`` (all of it), ``{"forget": ["ID", ...]}`` (those of the listed
        ids) or ``{"forget": false}`` (none; so is any other answer). The run finishes first;
        then, only for a yes, the cascade (:func:`agent.app.forgetting.forget` with the
        confirmed ids, ``confirm=True``) deletes them with what was derived from them, and the
        view carries its receipt (``forgotten``). Forgetting an episode deletes the threads
        that hold it -- this one too, when the words were said here: then ``thread_deleted``
        says so (the view is the thread as it ended, just before) and the next message starts
        a new thread. Finishing the run before deleting means no checkpoint is written after
        the deletion, so nothing of what was forgotten is saved again.

        ``confirm_memories`` (the chat): after the forget question, the thread may still ask
        what to remember.
        """
        from langgraph.types import Command

        self.require_thread(thread_id)
        await self.graph()
        with self.locks.hold(thread_id):
            view = await self.view(thread_id)
            if view.status != "awaiting_confirmation":
                raise NotAwaitingConfirmationError(thread_id, view.status)
            asked = (view.confirmation or {}).get("kind")
            if asked != "forget_confirmation" and "forget" in answer:
                raise InvalidMemoryError(
                    f"Thread '{thread_id}' asks what to remember, not what to forget; answer "
                    "it in the chat, or leave it for: analyst memory review"
                )
            reply: dict[str, Any]
            if asked == "forget_confirmation":
                reply = {"forget": answer.get("forget", False)}
            else:
                # Always both keys: an empty mapping would read as "no resume value".
                reply = {
                    "confirm": list(answer.get("confirm") or []),
                    "reject": list(answer.get("reject") or []),
                }
            await self._drive(
                thread_id, Command(resume=reply), "auto", on_update, confirm=confirm_memories
            )
        view = await self.view(thread_id)
        if asked == "forget_confirmation":
            await self._forget_confirmed(view)
        return view

    async def _forget_confirmed(self, view: ThreadView) -> None:
        """Run the forget the user just confirmed on ``view``'s thread (the ids its remember
        node recorded), after the run; note the receipt on ``view``."""
        snap = await self._snapshot(view.thread_id)
        ids = list((snap.values or {}).get("forget_confirmed") or [])
        if not ids:
            return
        receipt = await self.memory.forget(ids, confirm=True)
        view.forgotten = receipt
        deleted = receipt["deleted"].get("threads", {}).get("ids", [])
        view.thread_deleted = view.thread_id in deleted

    async def _drive(
        self,
        thread_id: str,
        payload: Any,
        mode: ModeChoice,
        on_update: OnUpdate | None,
        *,
        confirm: bool = False,
    ) -> None:
        from agent.state import Context

        graph = await self.graph()
        config = {"configurable": {"thread_id": thread_id}}
        context = Context(
            tenant_id=self.principal.tenant_id,
            user_id=self.principal.user_id,
            mode=mode,
            confirm_memories=confirm,
            forgets_after_run=True,
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

    async def _reader(self) -> Any:
        """The graph for reading threads: the full one once opened, else one over the
        checkpointer alone (reads open no store or ledger, and create no file)."""
        if self._graph is not None:
            return self._graph
        if self._read_graph is None:
            from graphs.builder import compile_graph

            saver = await self.checkpointer(create=False)
            self._read_graph = compile_graph(saver, services=self.services)
        return self._read_graph

    async def _snapshot(self, thread_id: str) -> Any:
        graph = await self._reader()
        return await graph.aget_state({"configurable": {"thread_id": thread_id}})

    async def view(self, thread_id: str) -> ThreadView:
        record = self.require_thread(thread_id)
        snap = await self._snapshot(thread_id)
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
            status=thread_status(snap, self.locks.busy(thread_id)),
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
            model=self.services.reasoner.label,
            context_loaded=dict(values.get("context_loaded") or {}),
            learned=list(values.get("learned") or []),
            procedures=list(values.get("procedures") or []),
            created_at=record.created_at,
            updated_at=record.updated_at,
        )

    async def threads(self, limit: int = 100) -> list[ThreadView]:
        return [await self.view(r.thread_id) for r in self.index.list(self.principal, limit)]

    async def history(self, thread_id: str) -> list[CheckpointView]:
        self.require_thread(thread_id)
        graph = await self._reader()
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


def within_limit(
    text: str, limit: int, what: str, variable: str, error: type[AnalystError]
) -> None:
    """Refuse ``text`` longer than ``limit`` characters with ``error``, naming the setting: an
    oversized request would bloat every checkpoint, listing and prompt it reaches."""
    if len(text) > limit:
        raise error(
            f"The {what} is {len(text):,} characters long; the limit is {limit:,} "
            f"({variable}). Shorten it, or raise {variable}."
        )


def new_thread_id() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"
