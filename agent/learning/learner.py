"""The write path: from what a user said to what the agent knows next session.

:class:`Learner` stores every user turn as an immutable episode
(:class:`~memory.journal.records.Episode`); everything else is derived from episodes and cites
them. :meth:`Learner.learn_now` applies a stated fact or correction at once (the hot path);
:meth:`Learner.after_decision` and :meth:`Learner.end_session` queue extraction jobs, which
:meth:`Learner.drain` runs (extract, drop what is tombstoned, ground, apply), idempotently.
Candidates and their confirmation are :mod:`agent.learning.candidates`, the read path
:mod:`agent.recollection.reader`; both are inherited. Everything is scoped by the principal the
caller established, and every write is audited. The design in full: ``docs/memory-lifecycle.md``
(the write path).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from agent.learning.candidates import CONFIRMABLE, CandidateDesk, normal
from agent.learning.extraction import (
    ExtractedFact,
    Extraction,
    Extractor,
    OfflineExtractor,
    hot_path_facts,
)
from agent.learning.grounding import ground
from agent.learning.profile import attribute, error_text
from agent.learning.quotes import locate
from agent.learning.summaries import session_summary
from memory.facts import MemoryDelta
from memory.journal.records import (
    Episode,
    EpisodeKind,
    ExtractionJob,
    SessionSummary,
    stable_id,
)

__all__ = [
    "CONFIRMABLE",
    "Learner",
    "LearnerServices",
    "build_learner",
    "describe_learned",
    "remove_statements",
]

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from memory.facts import FactRecord, FactStore
    from memory.identity import Principal
    from memory.journal.base import Journal


def describe_learned(learned: Sequence[Mapping[str, Any]]) -> str:
    """What the hot path did with a message's statements, for the reply."""
    parts = []
    for item in learned:
        name = str(item["attribute"]).replace("_", " ")
        if item.get("outcome") == "withdrawn":
            parts.append(f"your {name} is no longer recorded (fact {item['memory_id']} closed)")
        elif item.get("memory_id"):
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
    quotes = [normal(str(q)) for item in learned for q in item.get("quotes", [])]
    kept = [
        sentence
        for sentence in _SENTENCE.split(request)
        if sentence.strip() and not any(q and q in normal(sentence) for q in quotes)
    ]
    return " ".join(kept).strip()


@dataclass
class Learner(CandidateDesk):
    """The write path of the memory layers for one principal (and, inherited, candidates and
    the read path).

    ``journal`` and ``facts`` are scoped to ``principal`` by the constructor; ``store`` (the
    cold store) may be ``None``, in which case events are not stored (a job needing it fails
    loudly rather than dropping them). ``extractor`` turns episodes into an
    :class:`~agent.learning.extraction.Extraction` (offline rules or a chat model).
    """

    extractor: Extractor = field(default_factory=OfflineExtractor)

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
        before = await self._said_before(episode)
        held: dict[str, Any] = {
            k: r.value for k, r in (await self.facts.profile(self.subject)).items()
        }
        # An exclusion awaiting the user's confirmation is one they asked for: "take Amazon
        # off the exclusion list" takes it back as it would a stored one.
        pending = list(await self._pending_exclusions())
        if pending:
            held["excluded_tickers"] = [*(held.get("excluded_tickers") or []), *pending]
        found = hot_path_facts(
            episode.text,
            episode.episode_id,
            recent=[e.text for e in before],
            recent_ids=[e.episode_id for e in before],
            held=held,
        )
        dead = await self.journal.tombstoned([u for f in found for u in _units(f)])
        for fact in found:
            if dead.intersection(_units(fact)):
                continue
            await self._let_back(fact)
            outcome = await self._apply_fact(fact, [episode, *before], job_id=None)
            if outcome:
                applied.append(outcome)
        signals = OfflineExtractor().extract_now([episode]).preference_signals
        dead = await self.journal.tombstoned([u for s in signals for u in _units(s)])
        standing = [s for s in signals if s.standing and not dead.intersection(_units(s))]
        if standing:
            grounded = ground(
                Extraction(topic="", summary="", preference_signals=standing), [episode]
            )
            await self.apply_preferences(grounded.accepted.preference_signals, None)
        return applied

    async def _pending_exclusions(self) -> dict[str, list[str]]:
        """The tickers of pending exclusions (a preference or procedure candidate whose rule
        excludes a ticker), each with the ids of its candidates."""
        out: dict[str, list[str]] = {}
        for c in await self.journal.candidates(status="pending"):
            rule = c.payload.get("rule")
            ticker = rule.get("exclude_ticker") if isinstance(rule, dict) else None
            if isinstance(ticker, str) and ticker:
                out.setdefault(ticker.upper(), []).append(c.candidate_id)
        return out

    async def _let_back(self, fact: ExtractedFact) -> None:
        """Reject the pending exclusions of the tickers ``fact`` takes off the exclusion list
        (its quote names each with the cue, :func:`agent.learning.discourse.removal_stated`):
        the user is not asked to confirm what they took back."""
        if fact.attribute != "excluded_tickers" or not fact.removed:
            return
        pending = await self._pending_exclusions()
        for ticker in fact.removed:
            for candidate_id in pending.get(str(ticker).upper(), []):
                await self.journal.decide(
                    candidate_id, "rejected", f"taken back by the user: {fact.quote}"
                )

    async def _said_before(self, episode: Episode, turns: int = 3) -> list[Episode]:
        """The user's last ``turns`` messages in the thread before ``episode`` (oldest first):
        what a bare correction in it ("no sorry, 14") or an adoption ("she's right") refers
        to."""
        earlier = await self.journal.list_episodes(
            thread_id=episode.thread_id, since=episode.at - timedelta(hours=12), until=episode.at
        )
        said = [
            e
            for e in earlier
            if e.role == "user" and e.kind == "message" and e.episode_id != episode.episode_id
        ]
        return said[-turns:]

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
        extraction = await self._unforgotten(await extract(self.extractor, episodes))
        grounded = ground(extraction, episodes)
        result: dict[str, Any] = {"episodes": len(episodes), "facts": [], "candidates": []}
        refused = [
            self.new_candidate(
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
        learned: list[dict[str, Any]] = []
        for fact in accepted.new_facts:
            outcome = await self._apply_fact(fact, episodes, job_id=job.job_id)
            if not outcome:
                continue
            if outcome.get("memory_id"):
                learned.append(outcome)
            key = "facts" if outcome.get("memory_id") else "candidates"
            result[key].append(outcome.get("memory_id") or outcome.get("candidate_id"))
        result["candidates"] += await self.apply_preferences(
            accepted.preference_signals, job.job_id
        )
        result["events"] = await self._apply_events(accepted, episodes)
        if job.kind == "session_end":
            summary = await self._apply_summary(job, accepted, episodes, learned)
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

        Unclear ("newest wins" is dangerous for delayed, quoted or hostile input):
        the user reports someone else's words; the statement is older than the value in
        force; or it would replace a confirmed value without saying it corrects it.
        """
        said = self._said(fact, episodes)
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
        if fact.withdrawn:
            return await self._withdraw(fact, said)
        current = await self.facts.current(self.subject, fact.attribute)
        value: Any = fact.value
        if attribute(fact.attribute).merge == "union":
            value = _merged(fact, current)
            if value is None:
                return {}  # takes out only what the list does not hold: nothing changes
            if not value:
                # "forget the Tesla part" of the only ticker held: the list ends, and the
                # ledger keeps its history (the value closed, as a withdrawal closes one).
                return await self._withdraw(fact, said)
        reason = _doubt(fact, current, value, said)
        if reason is not None:
            (candidate,) = await self.journal.add_candidates(
                [
                    self.new_candidate(
                        "fact",
                        {
                            "attribute": fact.attribute,
                            "value": value,
                            **({"source": fact.source} if fact.quoted_source else {}),
                        },
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
        await self._settle_reported(fact.attribute, record.value, fact.episode_ids)
        return {
            "memory_id": record.memory_id,
            "attribute": fact.attribute,
            "value": record.value,
            "outcome": record.outcome,
            "episode_ids": list(fact.episode_ids),
            "quotes": [fact.quote],
        }

    def _said(self, fact: ExtractedFact, episodes: Sequence[Episode]) -> datetime:
        """When ``fact`` was said: in the episode its quote comes from ("replace it with
        GOOGL" cites the earlier message naming what it replaces too), else the first one
        it cites."""
        by_id = {e.episode_id: e for e in episodes}
        cited = [by_id[i] for i in fact.episode_ids if i in by_id]
        quoted = [e for e in cited if locate(fact.quote, e.text) is not None]
        return min((e.at for e in quoted or cited), default=self.clock())

    async def _withdraw(self, fact: ExtractedFact, said: datetime) -> dict[str, Any]:
        """Close the value ``fact`` withdraws, as of when it was said; nothing when no value
        holds then (never stated, or withdrawn already) or a later one stands."""
        held = await self.facts.as_of(self.subject, fact.attribute, said)
        current = await self.facts.current(self.subject, fact.attribute)
        if held is None or current is None or current.memory_id != held.memory_id:
            return {}
        record = await self.facts.retract(
            self.subject, fact.attribute, at=said, source_episode_id=fact.episode_ids[0]
        )
        await self.audit_fact(record, "withdrawn by the user")
        return {
            "memory_id": record.memory_id,
            "attribute": fact.attribute,
            "value": None,
            "outcome": "withdrawn",
            "episode_ids": list(fact.episode_ids),
            "quotes": [fact.quote],
        }

    async def _settle_reported(self, name: str, value: Any, episode_ids: Sequence[str]) -> None:
        """Confirm the pending candidates holding someone else's claim of ``value`` for
        ``name``: the user has now stated it (or adopted it) themselves."""
        for candidate in await self.journal.candidates(status="pending", limit=1000):
            payload = candidate.payload
            if (
                candidate.kind == "fact"
                and payload.get("attribute") == name
                and payload.get("value") == value
                and "source" in payload
            ):
                await self.journal.decide(
                    candidate.candidate_id,
                    "confirmed",
                    f"stated by the user in episode {', '.join(episode_ids[:1]) or 'unknown'}",
                )

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
        learned: Sequence[Mapping[str, Any]],
    ) -> SessionSummary:
        """Store the session's summary, written from grounded material only."""
        first = episodes[0]
        facts_learned = list(dict.fromkeys(str(f["memory_id"]) for f in learned))
        summary = SessionSummary(
            tenant_id=self.principal.tenant_id,
            session_id=f"{job.thread_id}/{first.at:%Y%m%dT%H%M%S}",
            user_id=self.principal.user_id,
            thread_id=job.thread_id,
            started=first.at,
            ended=episodes[-1].at,
            topic=accepted.topic,
            summary=session_summary(accepted, learned, episodes),
            facts_learned=tuple(facts_learned),
            open_items=tuple(item.text for item in accepted.open_items),
            episode_ids=tuple(e.episode_id for e in episodes),
        )
        return await self.journal.put_summary(summary)


class LearnerServices(Protocol):
    """What :func:`build_learner` reads from the analyst's services (``Services`` of
    :mod:`agent.nodes.services` has all of it)."""

    @property
    def journal(self) -> Journal | None: ...
    @property
    def facts(self) -> FactStore | None: ...
    @property
    def extractor(self) -> Extractor | None: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def review_days(self) -> int: ...


def build_learner(
    services: LearnerServices,
    principal: Principal,
    store: BaseStore | None,
    *,
    review_days: int | None = None,
) -> Learner | None:
    """The :class:`Learner` of ``principal`` over the services' journal, ledger, extractor
    (the offline rules when there is none) and clock, with ``store`` as its cold store;
    ``review_days`` overrides the services' value. ``None`` when the journal or the ledger is
    not open (nothing is learned then)."""
    if services.journal is None or services.facts is None:
        return None
    return Learner(
        journal=services.journal,
        facts=services.facts,
        store=store,
        principal=principal,
        extractor=services.extractor or OfflineExtractor(),
        clock=services.clock,
        review_days=services.review_days if review_days is None else review_days,
    )


async def extract(extractor: Any, episodes: Sequence[Episode]) -> Extraction:
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
        held = record.value if isinstance(record.value, list) else []
        return (
            isinstance(fact.value, list)
            and all(i in held for i in fact.value)
            and not any(i in held for i in fact.removed)
            and (not fact.whole or len(held) == len(fact.value))
        )
    return bool(record.value == fact.value)


def _doubt(
    fact: ExtractedFact, current: FactRecord | None, value: Any, said: datetime
) -> str | None:
    """Why ``fact`` (leaving ``value``) is a candidate rather than a fact, if it is: someone
    else's words (named), said before the value in force, or replacing a confirmed value
    without saying it corrects it."""
    if fact.quoted_source:
        who = f"your {fact.source}" if fact.source else "someone else"
        return f"reported from {who}'s words, not yours; confirm it is yours"
    if current is not None and current.valid_from > said and current.value != value:
        return (
            f"said on {said:%Y-%m-%d}, before the value in force since "
            f"{current.valid_from:%Y-%m-%d} ({current.value!r})"
        )
    if (
        current is not None
        and current.source == "confirmed"
        and current.value != value
        and not fact.correction
    ):
        return f"would replace the confirmed value {current.value!r}"
    return None


def _merged(fact: ExtractedFact, current: FactRecord | None) -> list[Any] | None:
    """The list ``fact`` leaves when applied to ``current``: the whole list it names, or the
    stored one without what it takes out (and, for a correction, without what the correction
    names and does not keep), with what it adds. ``None`` when it only takes out tickers the
    list does not hold."""
    value = list(fact.value) if isinstance(fact.value, list) else []
    held = [] if current is None or fact.whole else list(current.value or [])
    if not value and not any(v in held for v in fact.removed):
        return None
    merged = [v for v in held if v not in fact.removed]
    if fact.correction:
        # "Not TSLA, I meant META": what the correction names and does not keep goes.
        spec = attribute(fact.attribute)
        merged = [v for v in merged if v in value or not spec.supports([v], fact.quote)]
    return merged + [v for v in value if v not in merged]


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
