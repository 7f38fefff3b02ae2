"""Candidates: what the write path holds back for the user, and the user's answer.

A candidate is an extracted item that is not applied on its own: a standing instruction, a
preference, a fact whose authority is unclear, or an item the grounding check refused (kept
``ungrounded``, for review only). :class:`CandidateDesk` makes candidates with stable ids (the
same item from the same episodes is one candidate however often it is extracted), asks about a
preference that recurs across sessions, and applies what the user confirms: a procedure, a
confirmed ledger fact, or a long-term preference memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from agent.recollection.reader import Recollection
from memory.facts import MemoryDelta
from memory.journal.records import Candidate, Procedure, stable_id

if TYPE_CHECKING:
    from agent.learning.extraction import PreferenceSignal
    from memory.facts import FactRecord

#: Candidate kinds a user can confirm (the others, such as refused items, are for review only).
CONFIRMABLE = ("procedure", "behaviour", "fact", "preference")
#: Candidate kinds the chat asks about at a natural pause.
ASK_AT_PAUSE = ("procedure", "behaviour", "fact")
#: Distinct sessions in which the same preference must recur before a confirmation is asked.
BEHAVIOUR_SESSIONS = 2


def normal(text: str) -> str:
    """``text`` lower-cased with single spaces: the form in which preference texts and
    statements are compared."""
    return " ".join(text.lower().split())


@dataclass
class CandidateDesk(Recollection):
    """The candidates of one principal, and their confirmation (and, inherited, the read path).

    A confirmed procedure or fact is due for review ``review_days`` after it is confirmed.
    """

    review_days: int = 180

    async def apply_preferences(
        self, signals: Sequence[PreferenceSignal], job_id: str | None
    ) -> list[str]:
        """Standing instructions and preferences become candidates; a preference that recurs
        across sessions asks for confirmation (a ``behaviour`` candidate), never silently."""
        new = [
            self.new_candidate(
                "procedure" if s.standing else "preference",
                {"text": s.text, "rule": s.rule},
                s.quote,
                s.episode_ids,
                status="pending",
                reason="stated as a standing instruction: confirm to apply it in every thread"
                if s.standing
                else "stated preference: confirm to keep it",
                job_id=job_id,
            )
            for s in signals
        ]
        stored = await self.journal.add_candidates(new) if new else []
        ids = [c.candidate_id for c in stored]
        ids += await self._repeated_behaviour([c for c in stored if c.kind == "preference"])
        return ids

    async def _repeated_behaviour(self, fresh: Sequence[Candidate]) -> list[str]:
        if not fresh:
            return []
        earlier = await self.journal.candidates(kind="preference", limit=10_000)
        threads: dict[str, set[str]] = {}
        episodes = await self.journal.episodes(sorted({i for c in earlier for i in c.episode_ids}))
        thread_of = {e.episode_id: e.thread_id for e in episodes}
        for c in earlier:
            key = normal(str(c.payload.get("text", "")))
            threads.setdefault(key, set()).update(
                thread_of[i] for i in c.episode_ids if i in thread_of
            )
        asks = []
        for c in fresh:
            seen = threads.get(normal(str(c.payload.get("text", ""))), set())
            if len(seen) >= BEHAVIOUR_SESSIONS:
                asks.append(
                    self.new_candidate(
                        "behaviour",
                        dict(c.payload),
                        c.quote,
                        c.episode_ids,
                        status="pending",
                        reason=f"repeated in {len(seen)} sessions: make it a procedure?",
                        job_id=c.job_id,
                        key=normal(str(c.payload.get("text", ""))),
                    )
                )
        stored = await self.journal.add_candidates(asks) if asks else []
        return [c.candidate_id for c in stored]

    def new_candidate(
        self,
        kind: Any,
        payload: Mapping[str, Any],
        quote: str,
        episode_ids: Sequence[str],
        *,
        status: Any,
        reason: str,
        job_id: str | None,
        key: str | None = None,
    ) -> Candidate:
        p = self.principal
        return Candidate(
            tenant_id=p.tenant_id,
            # The same item from the same episodes is one candidate however often it is
            # extracted (hot path, session end, a replayed job); ``key`` names it outright.
            candidate_id=stable_id(
                "cand",
                p.tenant_id,
                p.user_id,
                kind,
                *((key,) if key else (dict(payload), quote, status, sorted(episode_ids))),
            ),
            user_id=p.user_id,
            kind=kind,
            payload=dict(payload),
            quote=quote,
            episode_ids=tuple(episode_ids),
            status=status,
            reason=reason,
            created_at=self.clock(),
            job_id=job_id,
        )

    # -- confirmation -------------------------------------------------------------------------

    async def confirm(
        self, candidate_id: str, *, edited: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Confirm a pending candidate (optionally with an edited payload) and apply it:
        a procedure or repeated behaviour becomes a procedure, a fact a confirmed ledger fact,
        a preference a long-term memory. Returns what was stored."""
        candidate = await self._pending(candidate_id)
        payload = {**candidate.payload, **(edited or {})}
        now = self.clock()
        stored: dict[str, Any]
        if candidate.kind in ("procedure", "behaviour"):
            procedure = await self.journal.put_procedure(
                Procedure(
                    tenant_id=self.principal.tenant_id,
                    procedure_id=stable_id("proc", candidate.candidate_id),
                    user_id=self.principal.user_id,
                    text=str(payload.get("text", "")),
                    rule=dict(payload.get("rule") or {}),
                    status="active",
                    confirmed_at=now,
                    review_at=now + timedelta(days=self.review_days),
                    episode_ids=candidate.episode_ids,
                    candidate_id=candidate.candidate_id,
                )
            )
            stored = {"procedure": procedure.to_json()}
        elif candidate.kind == "fact":
            from agent.learning.profile import validate

            attribute = str(payload["attribute"])
            record = await self.facts.record(
                MemoryDelta(
                    subject=self.subject,
                    attribute=attribute,
                    value=validate(attribute, payload["value"]),
                    valid_from=now,
                    memory_type="profile",
                    source="confirmed",
                    source_episode_id=candidate.episode_ids[0] if candidate.episode_ids else None,
                )
            )
            await self.audit_fact(record, "confirmed by the user")
            stored = {"fact": record.to_json()}
        elif candidate.kind == "preference":
            from memory.recall import aremember

            if self.store is None:
                from agent.errors import ConfigurationError

                raise ConfigurationError("Confirming a preference needs the long-term store.")
            key = await aremember(
                self.store,
                self.principal,
                str(payload.get("text", "")),
                kind="preference",
                importance=7,
                source="confirmed",
                episode_ids=list(candidate.episode_ids),
            )
            await self.journal.audit(
                "write",
                "store",
                [key],
                reason="preference confirmed by the user",
                content=str(payload.get("text", "")),
            )
            stored = {"memory": key}
        else:
            from memory.errors import JournalError

            raise JournalError(
                f"A {candidate.kind} candidate is for review only; reject it or leave it."
            )
        decided = await self.journal.decide(candidate_id, "confirmed", "confirmed by the user")
        return {"candidate": decided.to_json(), **stored}

    async def audit_fact(self, record: FactRecord, how: str) -> None:
        """Audit a ledger write: its fact id and the keyed hash of attribute and value."""
        await self.journal.audit(
            "write",
            "facts",
            [record.memory_id],
            reason=f"profile fact {how} ({record.outcome or 'recorded'})",
            content=[record.attribute, record.value],
        )

    async def reject(self, candidate_id: str, reason: str = "rejected by the user") -> Candidate:
        await self._pending(candidate_id)
        return await self.journal.decide(candidate_id, "rejected", reason)

    async def _pending(self, candidate_id: str) -> Candidate:
        from memory.errors import CandidateNotFoundError, JournalError

        for candidate in await self.journal.candidates(limit=100_000):
            if candidate.candidate_id == candidate_id:
                if candidate.status != "pending":
                    raise JournalError(
                        f"Candidate {candidate_id} is {candidate.status}, not pending; only a "
                        "pending candidate can be confirmed or rejected."
                    )
                return candidate
        raise CandidateNotFoundError("candidate", candidate_id)

    async def to_confirm(self) -> list[Candidate]:
        """Pending candidates a user is asked about at a natural pause: standing instructions,
        repeated behaviour and facts whose authority was unclear (plain preferences wait for
        ``analyst memory review``)."""
        pending = await self.journal.candidates(status="pending")
        return [c for c in pending if c.kind in ASK_AT_PAUSE]

    async def answer(self, answer: Mapping[str, Any], asked: Sequence[str]) -> dict[str, Any]:
        """Apply a user's answer to a confirmation request: ``{"confirm": [ids], "reject":
        [ids]}`` among the ``asked`` candidates; anything else waits (still pending). A
        candidate no longer pending (answered elsewhere meanwhile) is skipped, so replaying an
        answer changes nothing."""
        done: dict[str, list[Any]] = {"confirmed": [], "rejected": []}
        pending = {c.candidate_id for c in await self.journal.candidates(status="pending")}
        for candidate_id in answer.get("confirm") or []:
            if candidate_id in asked and candidate_id in pending:
                done["confirmed"].append(await self.confirm(candidate_id))
        for candidate_id in answer.get("reject") or []:
            if candidate_id in asked and candidate_id in pending:
                done["rejected"].append((await self.reject(candidate_id)).to_json())
        return done
