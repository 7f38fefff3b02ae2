"""The retention sweep: delete what the retention policy says has expired, in every tier of
one principal, and a receipt that says so.

:func:`sweep` is what ``app.memory.sweep`` and ``analyst memory sweep [--dry-run]`` run, and
what the app runs by itself (:func:`sweep_on_start`) when it first opens memory, at most once a
day per principal. The policy is :class:`memory.retention.RetentionPolicy`
(``ANALYST_RETENTION``; its module docstring has the rules and the defaults); the time is the
services clock (``app.services.clock``), so a test injects it.

What goes, by type (each deletion audited as ``delete`` with the reason
``retention: <type> older than <age>``):

- episodes older than ``episodes``, **with what was derived from them**: the forget cascade
  (:func:`agent.app.forgetting._cascade`) picks the session summaries, candidates, retired
  procedures and cold-store memories citing them (reason ``retention: derived from episodes
  older than <age>``), and the extraction jobs whose every episode is gone;
- session summaries, candidates, retired procedures, cold-store events and memories, done or
  failed extraction jobs and fact history rows older than their own ages;
- threads idle for longer than ``threads`` (:func:`memory.retention.prune_threads`: every
  checkpoint, write and blob, the index row, draft charts);
- the embedding-cache rows of every deleted text (hashes and vectors, never text).

Kept, and said so in the receipt: high-importance items (current facts, active procedures,
memories of importance 8+ or that the user asked to keep) are never deleted by age; past their
review date they are listed as *due for review*, each with its owner and the commands that
confirm (a new review date) or delete it. A swept episode does not take the current facts
learned from it (they are reviewed), nor its thread (threads follow their own idle age). A
``session_end`` job is kept while an episode it covers is kept: it is how extraction knows the
session was summarised (deleting it would queue the session again).

Retention stores **no tombstones**: the user did not ask to forget the content, and expired is
not forbidden -- the same words said again are learned again. Nor does it compact (rebuild the
Qdrant Edge shard, VACUUM): freed pages are reused; an erasure that must leave no byte is a
forget (:mod:`agent.app.forgetting`). Decay (:mod:`agent.learning.consolidation`) lowers retrieval
priority and never replaces this deletion.

Deletes are batched (:data:`BATCH` ids per journal transaction and audit entry, per store
batch), so a sweep of 100,000 items holds no lock for long. Each sweep is recorded as one
``sweep`` audit entry (what the start-up sweep reads), except for a principal with no memory
at all, which leaves none (its next sweep reads empty tiers, which is as cheap).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agent.app.forgetting import (
    Receipt,
    Tier,
    _backups,
    _cascade,
    _delete_items,
    _forget_vectors,
    _key,
    _read,
    _strings,
)
from memory.facts import subject_for
from memory.journal.queries import OWNED_TABLES
from memory.recall import happened_at
from memory.retention import HIGH_IMPORTANCE, prune_threads

if TYPE_CHECKING:
    from langgraph.store.base import Item

    from agent.app.service import AnalystApp
    from memory.facts import FactRecord
    from memory.journal.records import ExtractionJob

#: Ids per journal delete (one transaction, one audit entry) and per store batch.
BATCH = 5000
#: How often the start-up sweep runs at most, per principal.
SWEEP_EVERY = timedelta(days=1)
#: The audit tier of the ``sweep`` entry that records a sweep ran.
SWEEP_TIER = "retention"

_DERIVED = "derived from episodes older than {age}"


@dataclass
class _Doomed:
    """What the sweep deletes, by reason: journal ids by tier, fact ids, store items."""

    journal: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    facts: dict[str, set[str]] = field(default_factory=dict)
    items: dict[str, dict[str, Item]] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)

    def add(self, reason: str, tier: str, ids: Iterable[str]) -> None:
        self.journal.setdefault(reason, {}).setdefault(tier, set()).update(ids)

    def settle(self, derived: str) -> None:
        """An item expired by its own age is audited with that reason, not as derived."""
        for tier, ids in self.journal.get(derived, {}).items():
            ids -= {i for why, t in self.journal.items() if why != derived for i in t.get(tier, ())}
        own = {k for why, by_key in self.items.items() if why != derived for k in by_key}
        for key in own.intersection(self.items.get(derived, {})):
            del self.items[derived][key]

    def tier_ids(self, tier: str) -> set[str]:
        return {i for by_tier in self.journal.values() for i in by_tier.get(tier, ())}


async def sweep(app: AnalystApp, *, dry_run: bool = False) -> Receipt:
    """Delete (or, ``dry_run``, list) everything of ``app.principal`` the retention policy
    says has expired at ``app.services.clock()``; see the module docstring."""
    from agent.learning.profile import REGISTRY
    from memory.embeddings import text_hash

    now = app.services.clock()
    policy = app.settings.retention
    review = timedelta(days=app.settings.review_days)
    principal = app.principal
    receipt = Receipt(
        principal.tenant_id,
        principal.user_id,
        not dry_run,
        scope={
            "retention": policy.to_json(),
            "now": now.isoformat(),
            "dry_run": dry_run,
            "review_days": app.settings.review_days,
        },
    )

    def cutoff(kind: str) -> datetime:
        return now - policy.age(kind)

    def reason(kind: str, what: str | None = None) -> str:
        return f"retention: {what or kind} older than {policy.label(kind)}"

    learner = await app.memory.learner()
    journal, facts = learner.journal, learner.facts
    mem = await _read(app)
    subject = subject_for(principal)
    names = set(REGISTRY) | set(await facts.profile(subject, as_of=now))
    mem.facts = [r for name in sorted(names) for r in await facts.history(subject, name)]
    jobs = await journal.jobs(limit=1_000_000)
    doomed = _Doomed()

    # Episodes, and what the forget cascade derives from them (minus what is reviewed).
    old_episodes = [e for e in mem.episodes if e.at < cutoff("episodes")]
    gone_episodes = {e.episode_id for e in old_episodes}
    doomed.add(reason("episodes"), "episodes", gone_episodes)
    doomed.texts += [e.text for e in old_episodes]
    if old_episodes:
        plan = _cascade(app, mem, [("episodes", e) for e in sorted(gone_episodes)])
        derived = f"retention: {_DERIVED.format(age=policy.label('episodes'))}"
        active = {p.procedure_id for p in mem.procedures if p.status == "active"}
        for tier in ("summaries", "candidates", "procedures"):
            doomed.add(derived, tier, plan.deleted[tier] - active)
        doomed.items[derived] = {_key(i): i for i in plan.items if not _high(i)}
        receipt.kept += [k for k in plan.kept if k["tier"] == "summaries"]

    # Each type by its own age.
    summaries = [s for s in mem.summaries if s.ended < cutoff("summaries")]
    doomed.add(reason("summaries"), "summaries", (s.session_id for s in summaries))
    candidates = [
        c for c in mem.candidates if (c.decided_at or c.created_at) < cutoff("candidates")
    ]
    doomed.add(reason("candidates"), "candidates", (c.candidate_id for c in candidates))
    retired = [
        p
        for p in mem.procedures
        if p.status == "retired" and (p.retired_at or p.confirmed_at) < cutoff("procedures")
    ]
    doomed.add(reason("procedures", "retired procedures"), "procedures", _ids(retired))
    for kind in ("events", "memories"):
        doomed.items[reason(kind)] = {
            _key(i): i
            for i in mem.items
            if _store_kind(i) == kind and not _high(i) and happened_at(i) < cutoff(kind)
        }
    history = [r for r in mem.facts if not _current(r) and _ended(r) < cutoff("fact_history")]
    doomed.facts[reason("fact_history", "fact history rows")] = {r.memory_id for r in history}
    kept_episodes = {e.episode_id for e in mem.episodes} - gone_episodes
    old_jobs, covering = _jobs(jobs, gone_episodes, kept_episodes, cutoff("jobs"))
    doomed.add(
        f"retention: {_DERIVED.format(age=policy.label('episodes'))}",
        "extraction_jobs",
        (
            j.job_id
            for j in jobs
            if gone_episodes.intersection(j.episode_ids)
            and not kept_episodes.intersection(j.episode_ids)
        ),
    )
    doomed.add(reason("jobs", "done and failed extraction jobs"), "extraction_jobs", old_jobs)

    doomed.settle(f"retention: {_DERIVED.format(age=policy.label('episodes'))}")

    # Texts of what goes, for the embedding cache.
    picked = {tier: doomed.tier_ids(tier) for tier in OWNED_TABLES}
    doomed.texts += [
        part
        for s in mem.summaries
        if s.session_id in picked["summaries"]
        for part in (s.topic, s.summary, *s.open_items)
    ]
    doomed.texts += [c.quote for c in mem.candidates if c.candidate_id in picked["candidates"]]
    doomed.texts += [p.text for p in mem.procedures if p.procedure_id in picked["procedures"]]
    gone_facts = {i for ids in doomed.facts.values() for i in ids}
    doomed.texts += [t for r in mem.facts if r.memory_id in gone_facts for t in _fact_texts(r)]
    items = {k: i for by_key in doomed.items.values() for k, i in by_key.items()}
    doomed.texts += [v for i in items.values() for v in i.value.values() if isinstance(v, str)]

    receipt.kept += _reviews(app, mem, now, review)
    receipt.kept += _kept_notes(policy.label("threads"), covering, gone_episodes)
    receipt.backups = _backups(app)
    receipt.notes = [
        "Retention stores no tombstones: expired is not forbidden, and the same words said "
        "again are learned again. Use `analyst memory forget` to erase something for good.",
        "Freed pages are reused, not compacted (no VACUUM, no Qdrant Edge rebuild); a forget "
        "compacts.",
    ]

    # Threads idle for too long (their own deletion and audit).
    threads = await _threads(app, now, policy.age("threads"), policy.label("threads"), dry_run)
    receipt.deleted["threads"] = Tier(sorted(threads))
    doomed.texts += list(threads.values())

    for tier in OWNED_TABLES:
        receipt.deleted[tier] = Tier(sorted(picked[tier]))
    receipt.deleted["facts"] = Tier(sorted(gone_facts))
    receipt.deleted["store"] = Tier(sorted(items))
    hashes = sorted({text_hash(t) for t in doomed.texts if t})
    receipt.deleted["embedding_cache"] = Tier(hashes)
    if dry_run:
        return receipt

    for why, by_tier in doomed.journal.items():
        for tier, ids in by_tier.items():
            ordered = sorted(ids)
            for start in range(0, len(ordered), BATCH):
                await journal.erase({tier: ordered[start : start + BATCH]}, reason=why)
    for why, ids in doomed.facts.items():
        ordered = sorted(ids)
        for start in range(0, len(ordered), BATCH):
            chunk = await facts.erase_facts(ordered[start : start + BATCH])
            if chunk:
                await app._audit("delete", "facts", chunk, why)
    for why, by_key in doomed.items.items():
        keys = sorted(by_key)
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]
            await _delete_items(app, [by_key[k] for k in chunk])
            await app._audit("delete", "store", chunk, why)
    for start in range(0, len(hashes), BATCH):
        chunk = hashes[start : start + BATCH]
        _forget_vectors(app, chunk)
        await app._audit("delete", "embedding_cache", chunk, "retention: texts of expired items")
    held = [mem.episodes, mem.summaries, mem.candidates, mem.procedures, mem.facts, mem.items]
    if any(held) or jobs or threads or app.index.list(principal, limit=1):
        # A principal with no memory at all leaves no trace: its next sweep reads empty tiers.
        deleted = sum(
            len(t.ids) for name, t in receipt.deleted.items() if name != "embedding_cache"
        )
        await journal.audit(
            "sweep", SWEEP_TIER, [], reason=f"retention sweep: {deleted} items deleted"
        )
    return receipt


async def sweep_on_start(app: AnalystApp) -> Receipt | None:
    """Sweep unless this principal's memory was swept in the last :data:`SWEEP_EVERY` (one
    indexed read of the audit when not due); ``None`` when it was not due."""
    journal = (await app._wired()).journal
    assert journal is not None
    now = app.services.clock()
    mine = journal.with_principal(app.principal)
    if await mine.latest_audit("sweep", since=now - SWEEP_EVERY) is not None:
        return None
    return await sweep(app)


def _ids(procedures: Iterable[Any]) -> list[str]:
    return [p.procedure_id for p in procedures]


def _store_kind(item: Item) -> str:
    from agent.recollection.reader import memory_layer

    return "events" if memory_layer(str(item.value.get("kind"))) == "event" else "memories"


def _high(item: Item) -> bool:
    """A memory reviewed rather than deleted by age: importance 8+ or kept at the user's word."""
    importance = item.value.get("importance")
    high = isinstance(importance, int | float) and importance >= HIGH_IMPORTANCE
    return high or item.value.get("source") == "confirmed"


def _current(record: FactRecord) -> bool:
    return record.status == "open"


def _ended(record: FactRecord) -> datetime:
    """When a fact row stopped holding (withdrawn, retracted, or superseded at ``valid_to``)."""
    end = record.withdrawn_at or record.retracted_at or record.valid_to
    return end if end is not None else record.recorded_at


def _fact_texts(record: FactRecord) -> list[str]:
    return [*_strings([record.value]), str(record.value)]


def _jobs(
    jobs: list[ExtractionJob], gone: set[str], kept: set[str], before: datetime
) -> tuple[list[str], int]:
    """Done or failed jobs finished before ``before`` that may go (a ``session_end`` job
    covering a kept episode stays), and how many stayed for that reason."""
    old: list[str] = []
    covering = 0
    for job in jobs:
        if job.status not in ("done", "failed") or (job.finished_at or job.created_at) >= before:
            continue
        if job.kind == "session_end" and kept.intersection(job.episode_ids):
            covering += 1
            continue
        old.append(job.job_id)
    return old, covering


async def _threads(
    app: AnalystApp, now: datetime, age: timedelta, label: str, dry_run: bool
) -> dict[str, str]:
    """Prune the principal's threads idle for longer than ``age``; their ids and requests."""
    records = {t.thread_id: t.query for t in app.index.list(app.principal, limit=1_000_000)}
    if not records:
        return {}
    report = await prune_threads(
        await app.checkpointer(),
        app.index,
        app.principal,
        older_than=age,
        label=label,
        dry_run=dry_run,
        now=now,
        busy=app.locks.busy,
    )
    gone = [c.thread_id for c in report.deleted]
    if gone and not dry_run:
        for thread_id in gone:
            app._remove_charts(thread_id, set())
        await app._audit("delete", "threads", gone, f"retention: threads idle for over {label}")
    return {t: records.get(t, "") for t in gone}


def _reviews(app: AnalystApp, mem: Any, now: datetime, review: timedelta) -> list[dict[str, Any]]:
    """High-importance items past their review date: kept, each with its owner, review date
    and the commands that confirm or delete it."""
    from agent.app.memory import fact_command

    owner = app.principal.user_id
    due: list[dict[str, Any]] = []
    why = "{what} is not deleted by age; it is due for review: confirm it or delete it"
    for r in mem.facts:
        if _current(r) and r.recorded_at + review <= now:
            due.append(
                _due(
                    "facts",
                    r.memory_id,
                    f"fact {r.attribute}",
                    owner,
                    r.recorded_at + review,
                    why.format(what="a current fact"),
                    fact_command("record", r.attribute, r.value),
                    f"analyst memory forget {r.memory_id}",
                )
            )
    for p in mem.procedures:
        if p.status == "active" and p.review_at <= now:
            due.append(
                _due(
                    "procedures",
                    p.procedure_id,
                    f"procedure {p.procedure_id}",
                    owner,
                    p.review_at,
                    why.format(what="an active procedure"),
                    f"analyst memory remember {shlex.quote(p.text)} --as procedure",
                    f"analyst memory procedures --retire {p.procedure_id}",
                )
            )
    for i in mem.items:
        if _high(i) and i.updated_at + review <= now:
            value = i.value
            again = (
                f"analyst memories add {shlex.quote(str(value.get('text', '')))}"
                f" --importance {value.get('importance', 5)} --kind {value.get('kind', 'note')}"
            )
            if value.get("about"):
                again += f" --about {shlex.quote(str(value['about']))}"
            due.append(
                _due(
                    "store",
                    _key(i),
                    f"memory {i.key}",
                    owner,
                    i.updated_at + review,
                    why.format(what="a high-importance memory"),
                    again,
                    f"analyst memories forget {i.key}",
                )
            )
    return due


def _due(
    tier: str,
    item_id: str,
    what: str,
    owner: str,
    at: datetime,
    why: str,
    confirm: str,
    delete: str,
) -> dict[str, Any]:
    return {
        "tier": tier,
        "id": item_id,
        "what": what,
        "status": "due for review",
        "owner": owner,
        "review_at": at.isoformat(),
        "why": why,
        "confirm": confirm,
        "delete": delete,
    }


def _kept_notes(threads: str, covering: int, gone: set[str]) -> list[dict[str, Any]]:
    kept = [
        {
            "tier": "facts",
            "what": "current facts, active procedures and high-importance memories",
            "why": "never deleted by age: each is reviewed by its owner from its review date "
            "(listed here as due for review when past it)",
        }
    ]
    if gone:
        kept.append(
            {
                "tier": "threads",
                "what": "the threads that hold swept episodes",
                "why": f"threads follow their own age (idle for over {threads}); a thread "
                "still in use keeps its checkpoints",
            }
        )
    if covering:
        kept.append(
            {
                "tier": "extraction_jobs",
                "what": f"{covering} finished session-end jobs past their age",
                "why": "each covers an episode that is kept: it records that the session was "
                "summarised (deleting it would queue the session again); it goes with its "
                "episodes",
            }
        )
    return kept
