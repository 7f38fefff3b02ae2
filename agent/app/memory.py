"""Every memory operation of one principal, behind one object: :class:`MemoryControls`.

It is :attr:`AnalystApp.memory <agent.app.AnalystApp.memory>`, what ``analyst memory`` and the
chat call: long-term memories (add, recall, list, forget one), what the analyst learned
(review, confirm, reject; procedures, sessions, episodes, events; the extraction queue and
consolidation), what the user asks for (show, why, remember, list, export), forgetting and
account deletion, backup and restore, and retention (sweep). Each goes through the
:class:`~agent.app.tiers.Tiers` of the principal, over the ledger and journal the graph uses.

The start-up retention sweep runs from one place, :meth:`MemoryControls.sweep_on_start`: the
first memory command of the app (through :meth:`MemoryControls.learner`) and the first run of
a thread call it, after the command's validation, so a refused command writes nothing.

Text a user gives to be remembered is redacted (:func:`memory.pii.redact`) as it arrives, so
a memory's key and a fact's evidence quote are those of the text as stored.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# The remember vocabulary lives with its write path in the domain (agent.learning.remembering),
# so the graph's ``remember`` tool stores exactly what ``analyst memory remember`` does.
from agent.app.limits import within_limit
from agent.errors import AnalystError, InvalidMemoryError
from agent.learning.remembering import RememberAs
from memory.pii import redact

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent.app.tiers import Tiers
    from agent.app.views import ThreadView
    from agent.learning.learner import Learner
    from memory.recall import Recalled, RecallWeights

__all__ = ["MemoryControls", "RememberAs", "ThreadViews"]


class ThreadViews(Protocol):
    """What :meth:`MemoryControls.why` reads a thread through: the app's view of it
    (:meth:`AnalystApp.view <agent.app.AnalystApp.view>`). A protocol, so the controls
    need not import the app that holds them."""

    async def view(self, thread_id: str) -> ThreadView: ...


class MemoryControls:
    """Every memory operation for one principal, over its :class:`Tiers`; ``threads`` (the
    app) answers :meth:`why` from a thread's state."""

    def __init__(self, tiers: Tiers, threads: ThreadViews | None = None) -> None:
        self.tiers = tiers
        self.threads = threads
        #: Whether the start-up sweep ran (or was replaced by an explicit one) already.
        self.swept = False

    async def sweep_on_start(self) -> None:
        """The start-up retention sweep (``ANALYST_SWEEP_ON_START``): once per app, when it
        first uses memory for a command, and at most once a day per principal (one indexed
        audit read when not due). Called by :meth:`learner` and by the app before a thread
        runs; opening a tier never sweeps."""
        if self.swept or not self.tiers.settings.sweep_on_start:
            return
        self.swept = True
        if not os.access(self.tiers.settings.data_dir, os.W_OK):
            return  # a read-only data folder: nothing can be swept; reads go on (README)
        from agent.app.retention import due_for_sweep, sweep

        try:
            if await due_for_sweep(self.tiers):
                await sweep(self.tiers, await self.tiers.learner())
        except AnalystError as error:
            error.add_note(
                "This was the daily retention sweep at start-up; run `analyst memory sweep` to "
                "see it alone, or set ANALYST_SWEEP_ON_START=0 to leave sweeps to that command."
            )
            raise

    async def learner(self) -> Learner:
        """The memory write and read paths (episodes, extraction, candidates, procedures),
        after the start-up sweep: every memory command begins here."""
        await self.sweep_on_start()
        return await self.tiers.learner()

    # -- long-term memories -----------------------------------------------------------

    async def add_memory(
        self, text: str, *, importance: int = 5, kind: str = "note", about: str | None = None
    ) -> str:
        """Remember ``text`` in the long-term store; returns its key (the same text, the same
        key)."""
        from memory.recall import aremember

        text, about = redact(text), None if about is None else redact(about)
        for part, what in ((text, "memory"), (about or "", "--about text")):
            within_limit(
                part,
                self.tiers.settings.max_memory_chars,
                what,
                "ANALYST_MAX_MEMORY_CHARS",
                InvalidMemoryError,
            )
        return await aremember(
            await self.tiers.store(),
            self.tiers.principal,
            text,
            importance=importance,
            kind=kind,
            about=about,
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

        if self.tiers.store_missing():
            return []  # nothing remembered yet, and a search creates no store
        return await arecall(
            await self.tiers.store(),
            self.tiers.principal,
            query,
            limit=limit,
            weights=weights or DEFAULT_WEIGHTS,
            half_life_days=DEFAULT_HALF_LIFE_DAYS if half_life_days is None else half_life_days,
        )

    async def memories(self, limit: int = 100) -> list[Recalled]:
        """The principal's long-term memories, newest first (no embedding involved)."""
        from memory.recall import alist_memories

        if self.tiers.store_missing():
            return []  # nothing remembered yet, and a listing creates no store
        return await alist_memories(await self.tiers.store(), self.tiers.principal, limit=limit)

    async def forget_memory(self, key: str) -> None:
        """Forget one long-term memory as any forget does (:meth:`forget`: a tombstone, its
        cached vector, the store rewritten so no byte of it is left);
        :class:`MemoryNotFoundError` if there is none."""
        from memory.errors import MemoryNotFoundError
        from memory.recall import NAMESPACE
        from memory.store.scoped import scoped

        view = scoped(await self.tiers.store(), self.tiers.principal)
        if await view.aget(NAMESPACE, key, refresh_ttl=False) is None:
            raise MemoryNotFoundError(key)
        await self.forget(["/".join((*NAMESPACE, key))], confirm=True)

    # -- what the analyst learned -----------------------------------------------------

    async def end_session(self, thread_id: str) -> list[dict[str, Any]]:
        """End the conversation on ``thread_id``: queue its session-end extraction and, unless
        extraction runs in a worker (``ANALYST_EXTRACT_INLINE=0``), run the queue now."""
        storage = self.tiers.require_thread(thread_id).storage_id
        learner = await self.learner()
        await learner.end_session(storage)
        return await self.extract_due(learner)

    async def drain(self, *, close_idle: bool = True) -> list[dict[str, Any]]:
        """Run every due extraction job of the principal (``analyst memory worker``), after
        ending the sessions idle for longer than ``ANALYST_SESSION_IDLE_MINUTES``."""
        learner = await self.learner()
        if close_idle:
            await learner.close_idle_sessions(
                timedelta(minutes=self.tiers.settings.session_idle_minutes)
            )
        return [job.to_json() for job in await learner.drain()]

    async def review(self, *, status: str | None = "pending") -> list[dict[str, Any]]:
        """The principal's memory candidates (default: those awaiting review), oldest first."""
        learner = await self.learner()
        found = await learner.journal.candidates(status=status, limit=1000)  # type: ignore[arg-type]
        return [c.to_json() for c in found]

    async def confirm(
        self, candidate_id: str, edited: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Confirm a candidate (a procedure, fact, preference or repeated behaviour)."""
        return await (await self.learner()).confirm(candidate_id, edited=edited)

    async def reject(self, candidate_id: str, reason: str) -> dict[str, Any]:
        """Reject a pending candidate: it is kept, rejected, and never applied."""
        return (await (await self.learner()).reject(candidate_id, reason)).to_json()

    async def jobs(self, *, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The principal's extraction jobs, newest first (the write state)."""
        learner = await self.learner()
        found = await learner.journal.jobs(status=status, limit=limit)  # type: ignore[arg-type]
        return [j.to_json() for j in found]

    async def context(self) -> dict[str, Any]:
        """What a new session of the principal would load now (``context_loaded``)."""
        learner = await self.learner()
        return (await learner.load_context(self.tiers.settings.context_tokens)).to_json()

    async def procedures(self, *, status: str | None = "active") -> list[dict[str, Any]]:
        """The principal's procedures (default: those in force)."""
        learner = await self.learner()
        return [p.to_json() for p in await learner.journal.procedures(status=status)]

    async def retire_procedure(self, procedure_id: str) -> dict[str, Any]:
        """Stop enforcing a procedure (kept, retired)."""
        learner = await self.learner()
        return (await learner.journal.retire_procedure(procedure_id)).to_json()

    async def audit(
        self, *, since: str | None = None, user: str | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The memory audit of the principal (or, for a tenant admin, of ``user``), oldest
        first: writes, confirmations, reads into a prompt, retirements and deletions, with ids
        and keyed hashes only. ``since`` is a date or time (``2026-11-01``) or an age (``7d``)."""
        from memory.retention import parse_since

        learner = await self.learner()
        start = None if since is None else parse_since(since, self.tiers.services.clock())
        found = await learner.journal.audit_log(since=start, user=user, limit=limit)
        return [entry.to_json() for entry in found]

    async def forget_account(self, *, confirm: bool = False) -> dict[str, Any]:
        """Account deletion (:mod:`agent.app.forgetting`): with ``confirm``, delete everything of
        the principal in every tier and return the receipt; without, only the plan (what
        would be deleted, what is kept and why), deleting nothing."""
        from agent.app.erasure import forget_account

        learner = await self.learner()
        return (await forget_account(self.tiers, learner, confirm=confirm)).to_json()

    async def forget(
        self,
        ids: Sequence[str] = (),
        *,
        topic: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        only: Sequence[str] | None = None,
        confirm: bool = False,
        about: str | None = None,
        drafts: bool = False,
    ) -> dict[str, Any]:
        """Forget items by id, or what a topic, a description of facts (``about``: "that I
        own NVDA") or a time range finds (:func:`agent.app.forgetting.forget`): the receipt,
        per tier, of what was (or, unconfirmed, would be) deleted or rewritten, what is kept
        and why, and the backups that still hold it. A topic, description or range deletes
        only with ``confirm`` (everything listed) or ``only`` (those listed ids); a thread
        whose draft awaits a decision only with ``drafts``."""
        from agent.app.forgetting import check_request, forget

        check_request(ids, topic, since, until, about)  # refused before memory is opened
        receipt = await forget(
            self.tiers,
            await self.learner(),
            ids=ids,
            topic=topic,
            since=since,
            until=until,
            only=only,
            confirm=confirm,
            about=about,
            drafts=drafts,
        )
        return receipt.to_json()

    async def backup(self, dest: str | os.PathLike[str]) -> dict[str, Any]:
        """Write everything kept of the principal to the new file ``dest`` (a logical backup
        of one user, on any backend: :mod:`agent.app.memory_backup`); answer counts per tier."""
        from agent.app.memory_backup import backup, check_target

        check_target(dest)  # refused before memory is opened
        return await backup(self.tiers, await self.learner(), dest)

    async def restore(self, src: str | os.PathLike[str]) -> dict[str, Any]:
        """Put back a backup made by :meth:`backup`, except what was forgotten since it was
        made (tombstones and deletes the audit records): the receipt, per tier."""
        from agent.app.memory_backup import load, restore

        content = load(Path(src), self.tiers)  # refused before memory is opened
        return (await restore(self.tiers, await self.learner(), content, src)).to_json()

    async def reapply_forgets(self) -> dict[str, int]:
        """After the embedded files were restored: forget again what they hold that the
        principal had forgotten (:func:`agent.app.memory_backup.reapply_forgets`); answers
        the count deleted per tier."""
        from agent.app.memory_backup import reapply_forgets

        return await reapply_forgets(self.tiers, await self.learner())

    def storage_id(self, thread_id: str) -> str:
        """Where the principal's thread ``thread_id`` keeps its episodes (its storage id;
        the id itself if the principal has no such thread)."""
        record = self.tiers.index.get(self.tiers.principal, thread_id)
        return thread_id if record is None else record.storage_id

    async def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        """The principal's session summaries, newest first."""
        learner = await self.learner()
        return [s.to_json() for s in await learner.journal.summaries(limit=limit)]

    async def episodes(
        self, *, thread_id: str | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The principal's stored turns, oldest first."""
        learner = await self.learner()
        thread_id = None if thread_id is None else self.storage_id(thread_id)
        found = await learner.journal.list_episodes(thread_id=thread_id, limit=limit)
        return [e.to_json() for e in found]

    async def events(
        self, query: str | None = None, *, ticker: str | None = None, limit: int = 10
    ) -> list[Recalled]:
        """The principal's notable events (decisions, rejections, milestones, themes) found by
        meaning and time ("what did we decide about NVDA last month?"), or newest first without
        a query; ``ticker`` keeps those about it."""
        from agent.recollection.reader import EVENT_KINDS
        from memory.recall import alist_memories, arecall

        if self.tiers.store_missing():
            return []
        store = await self.tiers.store()
        if query:
            found = await arecall(store, self.tiers.principal, query, limit=max(50, limit * 5))
        else:
            found = await alist_memories(store, self.tiers.principal, limit=10_000)
        wanted = (ticker or "").upper()
        return [
            m
            for m in found
            if m.kind in (*EVENT_KINDS, "theme")
            and (not wanted or wanted in (m.metadata.get("tickers") or []))
        ][:limit]

    async def consolidate(self, *, older_than_days: int = 30, min_group: int = 3) -> dict[str, Any]:
        """Merge the principal's older events into themes and decay them (nothing deleted)."""
        from agent.learning.consolidation import consolidate

        return await consolidate(
            await self.tiers.store(),
            self.tiers.principal,
            now=self.tiers.services.clock(),
            older_than=timedelta(days=older_than_days),
            min_group=min_group,
        )

    async def extract_due(self, learner: Learner | None = None) -> list[dict[str, Any]]:
        """Run the due extraction jobs now, unless extraction is left to a worker
        (``ANALYST_EXTRACT_INLINE=0``); return them as they ended."""
        if not self.tiers.settings.extract_inline:
            return []
        learner = learner or await self.learner()
        return [job.to_json() for job in await learner.drain()]

    # -- what the user inspects and asks for ------------------------------------------

    async def show(self, *, sessions: int = 5) -> dict[str, Any]:
        """What the agent remembers about the principal, each item with the command that
        edits or deletes it: the profile facts the planner uses, procedures in force, the most
        recent ``sessions`` session summaries with their open items, preferences, events and
        other long-term memories, and the candidates awaiting the principal's word."""
        from agent.app.kinds import SHOWN

        learner = await self.learner()
        shown = {
            "tenant_id": self.tiers.principal.tenant_id,
            "user_id": self.tiers.principal.user_id,
        }
        for kind in SHOWN:
            shown |= await kind.shown(self.tiers, learner, sessions=sessions)
        return shown

    async def why(self, thread_id: str) -> dict[str, Any]:
        """What the thread's last request used from memory, read from the thread's own state
        (never a new search): the profile facts the planner read, the procedures enforced,
        the long-term memories recalled for the plan (with their score parts; ``cited`` when
        the plan names them), and what the session loaded at its start, each with its ids."""
        assert self.threads is not None, "why() reads a thread: controls of an app"
        view = await self.threads.view(thread_id)
        cited = set(view.memories_used)
        return {
            "thread_id": view.thread_id,
            "status": view.status,
            "query": view.query,
            "mode": view.mode,
            "planned": bool(view.plan),
            "plan": [step["id"] for step in view.plan],
            "plan_rationale": view.plan_rationale,
            "route_reason": view.route_reason,
            "facts": [{"attribute": k, **v} for k, v in sorted(view.facts_used.items())],
            "procedures": list(view.procedures),
            "recalled": [{**m, "cited": m.get("key") in cited} for m in view.recalled],
            "memories_used": list(view.memories_used),
            "constraints": list(view.constraints),
            "learned": list(view.learned),
            "context_loaded": dict(view.context_loaded),
        }

    async def remember(
        self, text: str, *, as_: RememberAs = "preference", thread_id: str | None = None
    ) -> dict[str, Any]:
        """Remember ``text`` because the principal said so, in every conversation, as a
        ``fact``, ``preference`` or ``procedure`` (:func:`agent.learning.remembering.remember`, the write
        path the model's ``remember`` tool shares): stored first as an episode of
        ``thread_id`` (the conversation it was said in; ``memory:remember`` from the command
        line), or refused with nothing stored."""
        from agent.learning.remembering import remember

        return await remember(
            await self.learner(),
            redact(text),
            as_=as_,
            thread_id=None if thread_id is None else self.storage_id(thread_id),
            max_chars=self.tiers.settings.max_memory_chars,
        )

    async def listing(self) -> list[dict[str, Any]]:
        """Everything remembered about the principal, one short row per item across the
        layers (facts, procedures, preferences, events, other memories, sessions), with its
        id: ``analyst memory list``."""
        return await (await self.learner()).listing()

    async def export(self) -> dict[str, Any]:
        """Everything kept of the principal, as one JSON document with stable keys (data
        portability): episodes, the history of every attribute of the principal's subject,
        candidates, procedures, session summaries and extraction jobs of every status, and
        the long-term memories. Storage is scoped to the principal, so nothing of another
        user is in it."""
        from agent.app.kinds import EXPORTED

        learner = await self.learner()
        return {
            "format": "analyst-memory-export",
            "version": 1,
            "exported_at": learner.clock().isoformat(),
            "tenant_id": self.tiers.principal.tenant_id,
            "user_id": self.tiers.principal.user_id,
            "subject": learner.subject,
            **{kind.export_key: await kind.exported(self.tiers, learner) for kind in EXPORTED},
        }

    async def sweep(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Enforce the retention policy (``ANALYST_RETENTION``) now, at the services clock
        (:func:`agent.app.retention.sweep`): delete what has expired in every tier, with what
        was derived from it, and return the receipt (per tier, counts and ids; what was kept
        and why, with the items due for review). ``dry_run`` deletes nothing."""
        from agent.app.retention import sweep

        self.swept = True  # an explicit sweep (or dry run) replaces the start-up one
        learner = await self.tiers.learner()
        return (await sweep(self.tiers, learner, dry_run=dry_run)).to_json()
