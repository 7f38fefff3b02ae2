"""The opened memory tiers of one principal, and their lifetimes.

:class:`Tiers` opens each tier lazily, on first use, and closes it with its exit stack: the
checkpointer and the thread index (hot), the long-term store (cold), the fact ledger with the
memory journal, and the document memory. A command that needs one tier opens only that one,
and a read never creates an embedded file that does not exist. Opening a tier never changes
memory: the start-up retention sweep is :meth:`agent.app.memory.MemoryControls.sweep_on_start`.

Besides the tiers themselves it offers what every memory operation shares: the principal's
:meth:`Tiers.audit`, a :meth:`Tiers.learner` over the ledger and journal the graph uses, the
compiled graph over these tiers, :meth:`Tiers.delete_thread` and the list of embedded files.
Heavy modules (LangGraph, the backends) are imported where they are first needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.app.charts import draft_charts, remove_charts
from agent.errors import ThreadNotFoundError
from agent.settings import Settings
from memory.identity import Principal
from memory.threads import ThreadIndex, ThreadLocks, ThreadRecord

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

    from agent.learning.learner import Learner
    from agent.nodes.services import Services
    from memory.backup import Embedded
    from memory.doc_authority import OwnedDocuments
    from memory.documents import FileMemory
    from memory.facts import FactStore
    from memory.journal.base import Journal
    from memory.journal.records import AuditAction
    from memory.retention import PruneReport
    from memory.sealing import MemoryCipher

#: The audit's reason for a deleted thread.
THREAD_DELETED = "thread deleted with its checkpoints"
#: No principal has more threads than this (the index is listed whole when threads go).
_EVERY_THREAD = 10_000_000


class Tiers:
    """Every memory tier of one principal, each opened on first use and closed with
    :attr:`stack` (use :meth:`open`, or pass the stack of an owner that closes it)."""

    def __init__(
        self,
        settings: Settings,
        principal: Principal,
        services: Services | None = None,
        stack: AsyncExitStack | None = None,
    ) -> None:
        self.settings = settings
        self.principal = principal
        self.stack = AsyncExitStack() if stack is None else stack
        self._services = services
        self._cipher: MemoryCipher | None = None
        self.index = ThreadIndex(settings.threads_path, cipher=self.memory_cipher)
        self.locks = ThreadLocks(settings.data_dir / "locks")
        self._graph: Any = None
        self._read_graph: Any = None
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._store: BaseStore | None = None
        self._facts: FactStore | None = None
        self._documents: FileMemory | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls, settings: Settings, principal: Principal, services: Services | None = None
    ) -> AsyncIterator[Tiers]:
        tiers = cls(settings, principal, services)
        async with tiers.stack:
            yield tiers

    # -- the tiers ----------------------------------------------------------------------

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
        """The Markdown document memory (its search index is closed with the tiers)."""
        if self._documents is None:
            if self._services is not None:
                self._documents = self._services.documents
            else:
                from memory.documents import FileMemory

                self._documents = FileMemory.from_settings(self.settings)
            self.stack.callback(self._documents.close)
        return self._documents

    async def owned_documents(self) -> OwnedDocuments:
        """The document memory as the principal may use it (:mod:`memory.doc_authority`):
        profile documents are their owner's or the tenant admin's (the fact ledger's admin
        grant), research notes are records, and every write goes to the memory audit."""
        from memory.doc_authority import Authority, DocumentAudit, OwnedDocuments, journal_audit

        facts = await self.facts(create=False)  # no ledger file yet: no grants, no admin
        me = self.principal.user_id
        admin = any(g.role == "admin" and g.user_id == me for g in await facts.grants())

        async def audit(entry: DocumentAudit) -> None:  # the journal opens on the first write
            await journal_audit(await self.journal())(entry)

        return OwnedDocuments(self.documents, Authority(self.principal, admin), audit)

    @property
    def memory_cipher(self) -> MemoryCipher:
        """Seals memory content at rest with ``ANALYST_MEMORY_KEY`` (none set: stores plain,
        refuses sealed content with a clear error); one for every tier opened here."""
        if self._cipher is None:
            from memory.sealing import memory_cipher

            self._cipher = memory_cipher(self.settings.memory_key)
        return self._cipher

    async def checkpointer(self, *, create: bool = True) -> BaseCheckpointSaver[Any]:
        """The hot tier (checkpoints), with the thread index brought up to date.

        ``create=False`` (what commands that only read use) refuses to create an embedded
        checkpoints file that does not exist: a typo in a path is an error, not a new
        empty database after which every thread looks new.
        """
        if self._saver is None:
            if not create:
                self._require_checkpoints_file()
            from agent.records import CHECKPOINT_TYPES_MODULES
            from memory.checkpoint import open_checkpointer

            self._saver = await self.stack.enter_async_context(
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

    async def store(self) -> BaseStore:
        """The cold tier: long-term memories (the embedding model loads on the first text)."""
        if self._store is None:
            from memory.store.factory import open_store_from_settings

            self._store = await self.stack.enter_async_context(
                open_store_from_settings(self.settings, cipher=self.memory_cipher)
            )
        return self._store

    @property
    def opened_store(self) -> BaseStore | None:
        """The long-term store if it was opened already, else ``None`` (opens nothing)."""
        return self._store

    def store_missing(self) -> bool:
        """Whether the long-term store was not opened and is an embedded folder not created
        yet: it holds nothing, and a read need not create it."""
        from memory.urls import backend_for

        if self._store is not None or self.settings.qdrant_url:
            return False
        backend = backend_for("store", self.settings.store)
        folders = {
            "qdrant-edge": self.settings.data_dir / "qdrant-edge",
            "qdrant-local": self.settings.qdrant_path,
        }
        return backend in folders and not folders[backend].exists()

    async def facts(self, *, create: bool = True) -> FactStore:
        """The typed fact ledger, scoped to the principal (one connection, shared with the
        graph once it runs).

        ``create=False`` (reads) never creates the embedded ledger file: when the default file
        does not exist yet the answer comes from an empty ledger in memory (nothing recorded
        yet); a configured ``ANALYST_FACTS`` file that does not exist is an error.
        """
        if self._facts is None and not create and self._missing_ledger():
            from memory.facts import open_fact_store

            return await self.stack.enter_async_context(
                open_fact_store("sqlite:///:memory:", self.principal, cipher=self.memory_cipher)
            )
        if self._facts is None:
            from memory.facts import open_fact_store

            self._facts = await self.stack.enter_async_context(
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

    async def wired(self) -> Services:
        """The services with the fact ledger and the memory journal open: the path every
        graph gets them by. Nodes scope each call by the run's principal, and so does the
        ledger these tiers answer with."""
        if self.services.journal is None:
            from agent.nodes.services import open_ledger

            wired = await self.stack.enter_async_context(
                open_ledger(self.services, self.settings, cipher=self.memory_cipher)
            )
            assert wired.facts is not None
            if self._facts is None:
                self._facts = wired.facts.with_principal(self.principal)
            self._services = replace(wired, facts=self._facts)
        return self.services

    async def journal(self) -> Journal:
        """The memory journal, scoped to the principal."""
        journal = (await self.wired()).journal
        assert journal is not None
        return journal.with_principal(self.principal)

    async def audit(self, action: AuditAction, tier: str, item_ids: list[str], reason: str) -> None:
        """Append one entry to the principal's memory audit (ids only; see memory.journal)."""
        await (await self.journal()).audit(action, tier, item_ids, reason=reason)

    async def learner(self) -> Learner:
        """The memory write and read paths (episodes, extraction, candidates, procedures)
        for the principal, over the ledger and journal the graph uses."""
        from agent.learning.learner import build_learner

        services = await self.wired()
        learner = build_learner(
            services, self.principal, await self.store(), review_days=self.settings.review_days
        )
        assert learner is not None
        return learner

    # -- the graph over these tiers -----------------------------------------------------

    async def graph(self) -> Any:
        """The compiled graph over the checkpointer, the store and the ledger (each opened
        here, or reused if a command opened it already)."""
        if self._graph is None:
            from graphs.builder import compile_graph

            saver = await self.checkpointer()
            store = await self.store()
            self._graph = compile_graph(saver, store=store, services=await self.wired())
        return self._graph

    async def reader(self) -> Any:
        """The graph for reading threads: the full one once opened, else its shape over the
        checkpointer alone (:func:`graphs.builder.reading_graph`: reads open no store or
        ledger, create no file, and import no node)."""
        if self._graph is not None:
            return self._graph
        if self._read_graph is None:
            from graphs.builder import reading_graph

            self._read_graph = reading_graph(await self.checkpointer(create=False))
        return self._read_graph

    async def thread_state(self, thread_id: str) -> Any:
        """The latest state (a ``StateSnapshot``'s values, next, interrupts...) of the
        principal's thread ``thread_id`` (:class:`ThreadNotFoundError` if it has none), read
        under its storage id: another principal's thread of that id is never read.

        Before the graph is opened it is read from the checkpointer alone
        (:func:`graphs.reading.read_state`: no LangGraph graph runtime imported); a
        checkpoint those rules do not cover is read through :meth:`reader`.
        """
        thread_id = self.require_thread(thread_id).storage_id
        if self._graph is None:
            from graphs.reading import read_state

            state = await read_state(await self.checkpointer(create=False), thread_id)
            if state is not None:
                return state
        graph = await self.reader()
        return await graph.aget_state({"configurable": {"thread_id": thread_id}})

    async def thread_history(self, thread_id: str) -> list[Any]:
        """Every checkpoint's state of the principal's thread, newest first, read as
        :meth:`thread_state` reads the latest (:func:`graphs.reading.read_history`)."""
        thread_id = self.require_thread(thread_id).storage_id
        if self._graph is None:
            from graphs.reading import read_history

            states = await read_history(await self.checkpointer(create=False), thread_id)
            if states is not None:
                return states
        graph = await self.reader()
        config = {"configurable": {"thread_id": thread_id}}
        return [s async for s in graph.aget_state_history(config)]

    @property
    def model_label(self) -> str:
        """The reasoner's label a thread is shown with (``offline``, ``openai:<model>``): the
        services' when they are built, else decided from the settings as they would decide it
        (a read builds no services, so it imports no model client, market data or learner)."""
        if self._services is not None:
            return self._services.reasoner.label
        from agent.reasoning.chat_model import resolve_model

        return resolve_model(self.settings).label

    # -- threads ------------------------------------------------------------------------

    def require_thread(self, thread_id: str) -> ThreadRecord:
        """The principal's thread ``thread_id``; :class:`ThreadNotFoundError` if it has none
        (another principal's thread is not found either)."""
        record = self.index.get(self.principal, thread_id)
        if record is None:
            raise ThreadNotFoundError(thread_id)
        return record

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread everywhere: every checkpoint, write and blob, its index row and
        its draft charts (published notes and their charts stay); audited."""
        self.require_thread(thread_id)
        await self.delete_threads([thread_id])

    async def delete_threads(self, thread_ids: Iterable[str]) -> list[str]:
        """:meth:`delete_thread` of each of the principal's ``thread_ids``, as one batch: all
        their locks held first (refused, before anything is deleted, while another process
        runs one of them), their checkpoints and index rows each deleted in one transaction
        where the backend allows, and one audit entry per thread, as each deletion alone
        writes, in one transaction. Ids the principal has no thread of (deleted meanwhile,
        or someone else's) are skipped. Returns the ids deleted, sorted."""
        async with self.threads_held(thread_ids) as ids:
            await self.delete_held_threads(ids)
        return ids

    @asynccontextmanager
    async def threads_held(self, thread_ids: Iterable[str]) -> AsyncIterator[list[str]]:
        """Hold the locks of the principal's ``thread_ids`` (refused, before anything is
        deleted, while another process runs one of them) and yield those ids, sorted (ids
        the principal has no thread of are skipped; a storage id stands for its thread):
        :meth:`delete_held_threads` deletes them while other work goes on under the same
        locks."""
        records = self.index.list(self.principal, limit=_EVERY_THREAD)
        owned = {r.thread_id: r.storage_id for r in records}
        # An id may be a storage id (an episode's thread): the thread it names is meant.
        named = {r.storage_id: r.thread_id for r in records}
        wanted = set(thread_ids)
        ids = sorted(owned.keys() & wanted | {named[s] for s in named.keys() & wanted})
        with ExitStack() as held:
            for thread_id in ids:  # refused while another process runs the thread
                held.enter_context(self.locks.hold(owned[thread_id]))
            yield ids

    async def delete_held_threads(self, ids: list[str]) -> None:
        """Delete the threads ``ids``, whose locks :meth:`threads_held` holds, as
        :meth:`delete_threads` says."""
        from memory.checkpoint import delete_threads

        if not ids:
            return
        kept = {r.thread_id: r.storage_id for r in self.index.list(self.principal, _EVERY_THREAD)}
        stored = [kept.get(t, t) for t in ids]  # where each one's checkpoints and charts are
        saver = await self.checkpointer()
        charts = await draft_charts(saver, self.settings, stored)
        await delete_threads(saver, stored)
        self.index.delete_many(self.principal, ids)
        journal = await self.journal()
        # The chart folders go on worker threads, alongside the audit: removing a folder
        # waits on the disk (milliseconds each on some file systems), not on the CPU.
        await asyncio.gather(
            journal.audit_each("delete", "threads", ids, reason=THREAD_DELETED),
            *(asyncio.to_thread(remove_charts, self.settings, t, charts[t]) for t in stored),
        )

    async def prune(self, older_than: str, *, dry_run: bool = False) -> PruneReport:
        """Delete the principal's threads idle for longer than ``older_than`` (e.g. ``90d``),
        with their chart folders (not audited: the caller records it)."""
        from memory.retention import parse_age, prune_threads

        report = await prune_threads(
            await self.checkpointer(),
            self.index,
            self.principal,
            older_than=parse_age(older_than),
            label=older_than,
            dry_run=dry_run,
            busy=self.locks.busy,
        )
        for item in [] if dry_run else report.deleted:
            remove_charts(self.settings, item.storage_id, set())
        return report

    # -- the embedded files -------------------------------------------------------------

    def embedded_files(self) -> list[Embedded]:
        """Every file and folder of the embedded defaults this configuration uses."""
        from memory.backup import Embedded
        from memory.urls import sqlite_path

        settings, data = self.settings, self.settings.data_dir
        files = []
        if settings.checkpointer.lower().startswith("sqlite:///"):
            path = sqlite_path(
                settings.checkpointer, tier="checkpointer", default_name="checkpoints.sqlite"
            )
            files.append(Embedded("checkpoints.sqlite", "checkpoints file", path, "sqlite"))
        files.append(Embedded("threads.sqlite", "thread index", self.index.path, "sqlite"))
        if settings.facts.lower().startswith("sqlite:///"):
            path = sqlite_path(settings.facts, tier="fact ledger", default_name="facts.sqlite")
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
        if settings.qdrant_path.exists():
            files.append(
                Embedded("qdrant", "long-term memory folder", settings.qdrant_path, "folder")
            )
        return files
