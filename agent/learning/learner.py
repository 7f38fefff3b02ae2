"""The write path: from what a user said to what the agent knows next session.

Every user turn is first stored as an immutable :class:`~memory.journal.Episode`; everything
else is derived from episodes and cites them. The path, per seed 003:

1. **Hot path** (:meth:`Learner.learn_now`, in the router): a stated profile fact or an
   explicit correction ("actually my horizon is 2 years, not 10") goes into the fact ledger at
   once, superseding the old value with provenance, so the very next answer uses it.
2. **Durable points**: after a human decision (:meth:`Learner.after_decision`) and at session
   end (:meth:`Learner.end_session`) an extraction job is queued in the journal, keyed by the
   episodes it covers. :meth:`Learner.drain` runs due jobs: extract → ground → apply. Every
   write it makes has a deterministic id (ledger duplicates, memory keys, candidate and
   procedure ids), so a job replayed after a crash finds its results instead of storing them
   twice.
3. **Tombstones** (:mod:`agent.app.forgetting`): an episode whose words, or an extracted item
   whose quote, value or text, hash to one of the principal's tombstones (what the user
   forgot) is skipped before grounding: nothing is recorded, not even an ``ungrounded``
   candidate, so a forgotten thing is not learned again from a replayed job or the same
   words said again.
4. **Grounding**: an item whose quote is not in the episodes it cites is refused, kept as an
   ``ungrounded`` candidate with the reason, and never stored anywhere a prompt reads.
5. **Confidence** (:data:`~agent.recollection.reader.PLANNER_MAY_USE`, enforced by
   :func:`~agent.recollection.reader.usable_fact` and by what is stored where): inferred → a
   candidate only; stated → a ledger fact the planner uses (cited as stated), or a candidate
   when its authority is unclear; standing instructions become procedures only when
   confirmed (:meth:`Learner.confirm`, or the user's answer at a natural pause).

The layers and where they live: session summaries, candidates and procedures in the journal;
the profile (semantic) in the ledger; notable events (episodic) in the cold store
(:mod:`memory.recall`, kinds ``decision``/``rejection``/``milestone``). Reading them back —
the session context, the planner's profile, the procedures enforced in code — is
:mod:`agent.recollection.reader`, which :class:`Learner` extends; merging old events into themes is
:mod:`agent.learning.consolidation`.

Everything is scoped by the principal the caller established; nothing here takes an id a
model produced.

Every write is audited (:meth:`memory.journal.base.Journal.audit`: ids and a keyed hash, never
content): the journal audits its own writes (episodes, candidates, decisions, summaries,
procedures) in their transaction; the ledger facts and cold-store memories written here are
audited right after they are stored, one entry per operation.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agent.learning.extraction import (
    ExtractedFact,
    Extraction,
    OfflineExtractor,
    PreferenceSignal,
    hot_path_facts,
)
from agent.learning.grounding import ground
from agent.learning.profile import attribute, error_text
from agent.recollection.reader import Recollection
from memory.facts import MemoryDelta
from memory.journal.records import (
    Candidate,
    Episode,
    EpisodeKind,
    ExtractionJob,
    Procedure,
    SessionSummary,
    stable_id,
)

if TYPE_CHECKING:
    from memory.facts import FactRecord

#: Candidate kinds a user can confirm (the others, such as refused items, are for review only).
CONFIRMABLE = ("procedure", "behaviour", "fact", "preference")
#: Candidate kinds the chat asks about at a natural pause.
ASK_AT_PAUSE = ("procedure", "behaviour", "fact")
#: Distinct sessions in which the same preference must recur before a confirmation is asked.
BEHAVIOUR_SESSIONS = 2


def describe_learned(learned: Sequence[Mapping[str, Any]]) -> str:
    """What the hot path did with a message's statements, for the reply."""
    parts = []
    for item in learned:
        name = str(item["attribute"]).replace("_", " ")
        if item.get("memory_id"):
            parts.append(f"your {name} is now {item['value']!r} (fact {item['memory_id']})")
        else:
            parts.append(
                f"your {name} needs your confirmation first (analyst memory review; "
                f"candidate {item['candidate_id']})"
            )
    return "I have recorded that " + "; ".join(parts) + "."


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def remove_statements(request: str, learned: Sequence[Mapping[str, Any]]) -> str:
    """``request`` without the sentences whose statements the hot path applied: what is left
    is the research request, if any ("Actually my horizon is 2 years. Analyse NVDA.")."""
    quotes = [_normal(str(q)) for item in learned for q in item.get("quotes", [])]
    kept = [
        sentence
        for sentence in _SENTENCE.split(request)
        if sentence.strip() and not any(q and q in _normal(sentence) for q in quotes)
    ]
    return " ".join(kept).strip()


@dataclass
class Learner(Recollection):
    """The write path of the memory layers for one principal (and, inherited, the read path).

    ``journal`` and ``facts`` are scoped to ``principal`` by the constructor; ``store`` (the
    cold store) may be ``None``, in which case events are not stored (a job needing it fails
    loudly rather than dropping them). ``extractor`` turns episodes into an
    :class:`~agent.learning.extraction.Extraction` (offline rules or a chat model); a confirmed
    procedure or fact is due for review ``review_days`` after it is confirmed.
    """

    extractor: Any = field(default_factory=OfflineExtractor)
    review_days: int = 180

    # -- episodes -------------------------------------------------------------------------

    async def record(
        self,
        thread_id: str,
        kind: EpisodeKind,
        text: str,
        *,
        turn: str,
        meta: Mapping[str, Any] | None = None,
        at: datetime | None = None,
    ) -> Episode:
        """Store one user turn (idempotent: the same ``turn`` of the thread is one episode)."""
        p = self.principal
        episode = Episode(
            tenant_id=p.tenant_id,
            episode_id=stable_id("ep", p.tenant_id, p.user_id, thread_id, turn),
            user_id=p.user_id,
            thread_id=thread_id,
            at=(at or self.clock()).astimezone(UTC),
            role="user",
            kind=kind,
            text=text,
            meta=dict(meta or {}),
        )
        (stored,) = await self.journal.add_episodes([episode])
        return stored

    # -- the hot path -----------------------------------------------------------------------

    async def learn_now(self, episode: Episode) -> list[dict[str, Any]]:
        """Apply the facts and corrections a message states, now; return what was applied.

        A fact whose authority is unclear becomes a candidate instead (see :meth:`_apply_fact`).
        A standing instruction ("never analyse TSLA from now on") becomes a procedure
        candidate at once too, so the user can be asked to confirm it at the next pause; the
        session-end extraction finds the same candidate (same id) instead of a second one.
        """
        if await self.journal.tombstoned([episode.text]):
            return []
        applied = []
        found = hot_path_facts(episode.text, episode.episode_id)
        dead = await self.journal.tombstoned([u for f in found for u in _units(f)])
        for fact in found:
            if dead.intersection(_units(fact)):
                continue
            outcome = await self._apply_fact(fact, [episode], job_id=None)
            applied.append(outcome)
        signals = OfflineExtractor().extract_now([episode]).preference_signals
        dead = await self.journal.tombstoned([u for s in signals for u in _units(s)])
        standing = [s for s in signals if s.standing and not dead.intersection(_units(s))]
        if standing:
            grounded = ground(
                Extraction(topic="", summary="", preference_signals=standing), [episode]
            )
            await self._apply_preferences(grounded.accepted.preference_signals, None)
        return applied

    # -- durable points ---------------------------------------------------------------------

    async def after_decision(self, thread_id: str, episode_ids: Sequence[str]) -> ExtractionJob:
        """Queue the extraction of a human decision (its episode and the request's)."""
        return await self.journal.enqueue("decision", thread_id, list(episode_ids))

    async def end_session(self, thread_id: str) -> ExtractionJob | None:
        """Queue the session-end extraction of the thread's episodes no earlier session end
        covered; ``None`` when there are none."""
        covered: set[str] = set()
        for job in await self.journal.jobs(kind="session_end", thread_id=thread_id, limit=10_000):
            covered.update(job.episode_ids)
        fresh = [
            e.episode_id
            for e in await self.journal.list_episodes(thread_id=thread_id, limit=100_000)
            if e.episode_id not in covered
        ]
        if not fresh:
            return None
        return await self.journal.enqueue("session_end", thread_id, fresh)

    async def close_idle_sessions(self, idle: timedelta) -> list[ExtractionJob]:
        """End every session of the principal idle for longer than ``idle``."""
        jobs = []
        for thread_id in await self.journal.idle_threads(self.clock() - idle):
            job = await self.end_session(thread_id)
            if job is not None:
                jobs.append(job)
        return jobs

    async def drain(
        self, *, limit: int | None = None, lease: timedelta = timedelta(minutes=5)
    ) -> list[ExtractionJob]:
        """Run due jobs until none is left (or ``limit`` ran); return them as they ended.

        Each job is claimed for ``lease``: if this worker dies holding it, another takes it
        once the lease expires. A job that raises is recorded as a failed attempt (retried
        later with backoff) and the error is raised after the queue is drained, so a failure
        is never silent.
        """
        finished: list[ExtractionJob] = []
        errors: list[BaseException] = []
        while limit is None or len(finished) < limit:
            job = await self.journal.claim(lease=lease)
            if job is None:
                break
            try:
                result = await self.process(job)
            except Exception as e:  # recorded on the job, then raised below
                finished.append(await self.journal.fail(job.job_id, error_text(e)))
                errors.append(e)
                continue
            finished.append(await self.journal.complete(job.job_id, result))
        if errors:
            raise errors[0]
        return finished

    async def process(self, job: ExtractionJob) -> dict[str, Any]:
        """Extract, ground and apply one job; idempotent. Returns what it stored."""
        episodes = await self.journal.episodes(job.episode_ids)
        forgotten = await self.journal.tombstoned([e.text for e in episodes])
        # A request to forget ("forget that I like X") states nothing to learn.
        episodes = [
            e for e in episodes if e.text not in forgotten and e.meta.get("request") != "forget"
        ]
        if not episodes:
            return {"episodes": 0}
        extraction = await self._unforgotten(await _extract(self.extractor, episodes))
        grounded = ground(extraction, episodes)
        result: dict[str, Any] = {"episodes": len(episodes), "facts": [], "candidates": []}
        refused = [
            self._candidate(
                "event" if r.kind == "notable_events" else _candidate_kind(r.kind),
                r.item,
                str(r.item.get("quote", "")),
                [i for i in r.item.get("episode_ids", []) if isinstance(i, str)],
                status="ungrounded",
                reason=r.reason,
                job_id=job.job_id,
            )
            for r in grounded.rejected
        ]
        if refused:
            await self.journal.add_candidates(refused)
        result["ungrounded"] = [c.candidate_id for c in refused]
        accepted = grounded.accepted
        for fact in accepted.new_facts:
            outcome = await self._apply_fact(fact, episodes, job_id=job.job_id)
            key = "facts" if outcome.get("memory_id") else "candidates"
            result[key].append(outcome.get("memory_id") or outcome.get("candidate_id"))
        result["candidates"] += await self._apply_preferences(
            accepted.preference_signals, job.job_id
        )
        result["events"] = await self._apply_events(accepted, episodes)
        if job.kind == "session_end":
            summary = await self._apply_summary(job, accepted, episodes, result["facts"])
            result["session_id"] = summary.session_id
        return result

    async def _unforgotten(self, extraction: Extraction) -> Extraction:
        """``extraction`` without the items whose quote, value or text is tombstoned."""
        sections = ("notable_events", "new_facts", "preference_signals", "open_items")
        units = [u for name in sections for item in getattr(extraction, name) for u in _units(item)]
        dead = await self.journal.tombstoned(units)
        if not dead:
            return extraction
        kept = {
            name: [i for i in getattr(extraction, name) if not dead.intersection(_units(i))]
            for name in sections
        }
        return extraction.model_copy(update=kept)

    # -- applying one grounded extraction ---------------------------------------------------

    async def _apply_fact(
        self, fact: ExtractedFact, episodes: Sequence[Episode], *, job_id: str | None
    ) -> dict[str, Any]:
        """Record a stated fact, or make it a candidate when its authority is unclear.

        Unclear (seed 003: "newest wins" is dangerous for delayed, quoted or hostile input):
        the user reports someone else's words; the statement is older than the value in
        force; or it would replace a confirmed value without saying it corrects it.
        """
        by_id = {e.episode_id: e for e in episodes}
        cited = [by_id[i] for i in fact.episode_ids if i in by_id]
        said = min((e.at for e in cited), default=self.clock())
        held = await self.facts.as_of(self.subject, fact.attribute, said)
        if held is not None and _records(held, fact, said):
            # Recorded from this very statement already (by the hot path, or by an earlier
            # attempt of this job): found, not recorded again nor doubted because a later
            # statement has replaced it since.
            return {
                "memory_id": held.memory_id,
                "attribute": fact.attribute,
                "value": held.value,
                "outcome": "duplicate",
                "episode_ids": list(fact.episode_ids),
                "quotes": [fact.quote],
            }
        current = await self.facts.current(self.subject, fact.attribute)
        value: Any = fact.value
        if attribute(fact.attribute).merge == "union" and current is not None:
            merged = list(current.value or [])
            merged += [v for v in (value or []) if v not in merged]
            value = merged
        reason = None
        if fact.quoted_source:
            reason = "reported from someone else's words; confirm it is yours"
        elif current is not None and current.valid_from > said and current.value != value:
            reason = (
                f"said on {said:%Y-%m-%d}, before the value in force since "
                f"{current.valid_from:%Y-%m-%d} ({current.value!r})"
            )
        elif (
            current is not None
            and current.source == "confirmed"
            and current.value != value
            and not fact.correction
        ):
            reason = f"would replace the confirmed value {current.value!r}"
        if reason is not None:
            (candidate,) = await self.journal.add_candidates(
                [
                    self._candidate(
                        "fact",
                        {"attribute": fact.attribute, "value": value},
                        fact.quote,
                        fact.episode_ids,
                        status="pending",
                        reason=reason,
                        job_id=job_id,
                    )
                ]
            )
            return {
                "candidate_id": candidate.candidate_id,
                "attribute": fact.attribute,
                "quotes": [fact.quote],
            }
        record = await self.facts.record(
            MemoryDelta(
                subject=self.subject,
                attribute=fact.attribute,
                value=value,
                valid_from=said,
                memory_type="profile",
                source="stated",
                source_episode_id=fact.episode_ids[0],
            )
        )
        await self.audit_fact(record, "stated on the hot path" if job_id is None else "extracted")
        return {
            "memory_id": record.memory_id,
            "attribute": fact.attribute,
            "value": record.value,
            "outcome": record.outcome,
            "episode_ids": list(fact.episode_ids),
            "quotes": [fact.quote],
        }

    async def _apply_preferences(
        self, signals: Sequence[PreferenceSignal], job_id: str | None
    ) -> list[str]:
        """Standing instructions and preferences become candidates; a preference that recurs
        across sessions asks for confirmation (a ``behaviour`` candidate), never silently."""
        new = [
            self._candidate(
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
            key = _normal(str(c.payload.get("text", "")))
            threads.setdefault(key, set()).update(
                thread_of[i] for i in c.episode_ids if i in thread_of
            )
        asks = []
        for c in fresh:
            seen = threads.get(_normal(str(c.payload.get("text", ""))), set())
            if len(seen) >= BEHAVIOUR_SESSIONS:
                asks.append(
                    self._candidate(
                        "behaviour",
                        dict(c.payload),
                        c.quote,
                        c.episode_ids,
                        status="pending",
                        reason=f"repeated in {len(seen)} sessions: make it a procedure?",
                        job_id=c.job_id,
                        key=_normal(str(c.payload.get("text", ""))),
                    )
                )
        stored = await self.journal.add_candidates(asks) if asks else []
        return [c.candidate_id for c in stored]

    async def _apply_events(self, accepted: Extraction, episodes: Sequence[Episode]) -> list[str]:
        if not accepted.notable_events:
            return []
        if self.store is None:
            from agent.errors import ConfigurationError

            raise ConfigurationError(
                "Notable events need the long-term store, and none is open; run the job with "
                "the store configured (ANALYST_STORE)."
            )
        from memory.recall import NewMemory, aremember_many

        by_id = {e.episode_id: e for e in episodes}
        memories = []
        for event in accepted.notable_events:
            at = min((by_id[i].at for i in event.episode_ids if i in by_id), default=None)
            memories.append(
                NewMemory(
                    text=event.text,
                    importance=event.importance,
                    kind=event.type,
                    at=at,
                    source="extraction",
                    episode_ids=list(event.episode_ids),
                    tickers=list(event.tickers) or None,
                )
            )
        keys = await aremember_many(self.store, self.principal, memories)
        await self.journal.audit(
            "write",
            "events",
            keys,
            reason="notable events extracted",
            content=[m.text for m in memories],
        )
        return keys

    async def _apply_summary(
        self,
        job: ExtractionJob,
        accepted: Extraction,
        episodes: Sequence[Episode],
        facts_learned: Sequence[str],
    ) -> SessionSummary:
        first = episodes[0]
        summary = SessionSummary(
            tenant_id=self.principal.tenant_id,
            session_id=f"{job.thread_id}/{first.at:%Y%m%dT%H%M%S}",
            user_id=self.principal.user_id,
            thread_id=job.thread_id,
            started=first.at,
            ended=episodes[-1].at,
            topic=accepted.topic,
            summary=accepted.summary,
            facts_learned=tuple(facts_learned),
            open_items=tuple(item.text for item in accepted.open_items),
            episode_ids=tuple(e.episode_id for e in episodes),
        )
        return await self.journal.put_summary(summary)

    def _candidate(
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


async def _extract(extractor: Any, episodes: Sequence[Episode]) -> Extraction:
    """Run an offline (sync) or model (async, with usage) extractor; the result only."""
    result = extractor.extract(list(episodes))
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, tuple):
        result = result[0]
    if not isinstance(result, Extraction):
        raise TypeError(f"The extractor returned {type(result).__name__}, not an Extraction.")
    return result


def _records(record: FactRecord, fact: ExtractedFact, said: datetime) -> bool:
    """Whether the ledger's ``record`` is ``fact`` as applied when it was ``said``: recorded
    from the same episode at that time, with its value (a list: with every item of it)."""
    if record.valid_from != said or not fact.episode_ids:
        return False
    if fact.episode_ids[0] not in (record.source_episode_id, *record.restated_in):
        return False
    if attribute(fact.attribute).merge == "union":
        return isinstance(fact.value, list) and all(i in (record.value or []) for i in fact.value)
    return bool(record.value == fact.value)


def _candidate_kind(section: str) -> str:
    return {
        "new_facts": "fact",
        "preference_signals": "preference",
        "open_items": "open_item",
        "notable_events": "event",
    }.get(section, section)


def _units(item: Any) -> set[str]:
    """The text units of an extracted item a tombstone may match: its quote, its text and its
    value (a list: each string in it, too)."""
    found: set[str] = set()
    for name in ("quote", "text", "value"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, list):
            found.update(v for v in value if isinstance(v, str))
    return {u for u in found if u.strip()}


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
