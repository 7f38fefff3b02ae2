"""The application's memory controls: what the analyst learned from a principal's turns.

:class:`MemoryControls` is :attr:`AnalystApp.memory <agent.app.AnalystApp.memory>`, what
``analyst memory`` and the chat call: review, confirm and reject candidates; the session
context a new conversation loads; procedures, session summaries, episodes and events; the
extraction queue (jobs, the worker, ending a session) and consolidation. Each call goes through
a :class:`~agent.learning.Learner` for the app's principal, over the ledger and journal the
app's graph uses (opened once, with the app) — never a second connection of its own.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.app.service import AnalystApp
    from agent.learning import Learner
    from memory.recall import Recalled


class MemoryControls:
    """The memory write path's controls for one app (and so one principal)."""

    def __init__(self, app: AnalystApp) -> None:
        self.app = app

    async def learner(self) -> Learner:
        """The memory write and read paths (episodes, extraction, candidates, procedures)."""
        from agent.extraction import OfflineExtractor
        from agent.learning import Learner

        services = await self.app._wired()
        assert services.journal is not None and services.facts is not None
        return Learner(
            journal=services.journal,
            facts=services.facts,
            store=await self.app.store(),
            principal=self.app.principal,
            extractor=services.extractor or OfflineExtractor(),
            clock=services.clock,
            review_days=self.app.settings.review_days,
        )

    async def end_session(self, thread_id: str) -> list[dict[str, Any]]:
        """End the conversation on ``thread_id``: queue its session-end extraction and, unless
        extraction runs in a worker (``ANALYST_EXTRACT_INLINE=0``), run the queue now."""
        self.app.require_thread(thread_id)
        learner = await self.learner()
        await learner.end_session(thread_id)
        return await self.extract_due(learner)

    async def drain(self, *, close_idle: bool = True) -> list[dict[str, Any]]:
        """Run every due extraction job of the principal (``analyst memory worker``), after
        ending the sessions idle for longer than ``ANALYST_SESSION_IDLE_MINUTES``."""
        learner = await self.learner()
        if close_idle:
            await learner.close_idle_sessions(
                timedelta(minutes=self.app.settings.session_idle_minutes)
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
        return (await learner.load_context(self.app.settings.context_tokens)).to_json()

    async def procedures(self, *, status: str | None = "active") -> list[dict[str, Any]]:
        """The principal's procedures (default: those in force)."""
        learner = await self.learner()
        return [p.to_json() for p in await learner.journal.procedures(status=status)]

    async def retire_procedure(self, procedure_id: str) -> dict[str, Any]:
        """Stop enforcing a procedure (kept, retired)."""
        learner = await self.learner()
        return (await learner.journal.retire_procedure(procedure_id)).to_json()

    async def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        """The principal's session summaries, newest first."""
        learner = await self.learner()
        return [s.to_json() for s in await learner.journal.summaries(limit=limit)]

    async def episodes(
        self, *, thread_id: str | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """The principal's stored turns, oldest first."""
        learner = await self.learner()
        found = await learner.journal.list_episodes(thread_id=thread_id, limit=limit)
        return [e.to_json() for e in found]

    async def events(
        self, query: str | None = None, *, ticker: str | None = None, limit: int = 10
    ) -> list[Recalled]:
        """The principal's notable events (decisions, rejections, milestones, themes) found by
        meaning and time ("what did we decide about NVDA last month?"), or newest first without
        a query; ``ticker`` keeps those about it."""
        from agent.recollection import EVENT_KINDS
        from memory.recall import alist_memories, arecall

        if self.app._store is None and self.app._missing_store():
            return []
        store = await self.app.store()
        if query:
            found = await arecall(store, self.app.principal, query, limit=max(50, limit * 5))
        else:
            found = await alist_memories(store, self.app.principal, limit=10_000)
        wanted = (ticker or "").upper()
        return [
            m
            for m in found
            if m.kind in (*EVENT_KINDS, "theme")
            and (not wanted or wanted in (m.metadata.get("tickers") or []))
        ][:limit]

    async def consolidate(self, *, older_than_days: int = 30, min_group: int = 3) -> dict[str, Any]:
        """Merge the principal's older events into themes and decay them (nothing deleted)."""
        from agent.consolidation import consolidate

        return await consolidate(
            await self.app.store(),
            self.app.principal,
            now=self.app.services.clock(),
            older_than=timedelta(days=older_than_days),
            min_group=min_group,
        )

    async def extract_due(self, learner: Learner | None = None) -> list[dict[str, Any]]:
        """Run the due extraction jobs now, unless extraction is left to a worker
        (``ANALYST_EXTRACT_INLINE=0``); return them as they ended."""
        if not self.app.settings.extract_inline:
            return []
        learner = learner or await self.learner()
        return [job.to_json() for job in await learner.drain()]
