"""The retention sweep: delete what the retention policy says has expired, in every tier of
one principal, and a receipt that says so.

:func:`sweep` asks every memory kind (:mod:`agent.app.kinds`) which of its items are past their
age (:class:`memory.retention.RetentionPolicy`, ``ANALYST_RETENTION``) at the services clock;
an expired episode takes what the forget cascade derives from it. High-importance items are
never deleted by age: past their review date they are listed as due for review. Retention
stores no tombstones and does not compact. Deletes are batched (:data:`BATCH`), each audited
with its reason, and each sweep is recorded as one ``sweep`` audit entry, which
:func:`sweep_on_start` reads. The rules are in ``docs/memory-lifecycle.md``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agent.app.charts import remove_charts
from agent.app.compaction import forget_vectors
from agent.app.forgetting import cascade, read
from agent.app.kinds import (
    CANDIDATES,
    EPISODES,
    FACTS,
    JOBS,
    JOURNAL_KINDS,
    PROCEDURES,
    STORE,
    SUMMARIES,
    THREADS,
    by_tier,
    high_importance,
)
from agent.app.memory_kind import Kind
from agent.app.receipts import Receipt, Tier, backups_statement
from agent.learning.remembering import fact_command
from memory.retention import prune_threads

if TYPE_CHECKING:
    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner
    from agent.recollection.forgettable import Remembered
    from memory.journal.records import ExtractionJob
    from memory.retention import RetentionPolicy

#: Ids per journal delete (one transaction, one audit entry) and per store batch.
BATCH = 5000
#: How often the start-up sweep runs at most, per principal.
SWEEP_EVERY = timedelta(days=1)
#: The audit tier of the ``sweep`` entry that records a sweep ran.
SWEEP_TIER = "retention"
#: The kinds that expire by their own age, in the order they are swept.
_OWN_AGE: tuple[Kind, ...] = (SUMMARIES, CANDIDATES, PROCEDURES, STORE, FACTS)

_DERIVED = "derived from episodes older than {age}"


@dataclass
class _Doomed:
    """What the sweep deletes, by reason and kind: each item by its id."""

    by_reason: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def add(self, reason: str, kind: Kind, items: Iterable[Any]) -> None:
        found = self.by_reason.setdefault(reason, {}).setdefault(kind.tier, {})
        found.update({kind.id(i): i for i in items})

    def settle(self, derived: str) -> None:
        """An item expired by its own age is audited with that reason, not as derived."""
        for tier, found in self.by_reason.get(derived, {}).items():
            own = {
                i for why, t in self.by_reason.items() if why != derived for i in t.get(tier, ())
            }
            for item_id in own.intersection(found):
                del found[item_id]

    def items(self, tier: str) -> dict[str, Any]:
        return {
            i: x for by_tier in self.by_reason.values() for i, x in by_tier.get(tier, {}).items()
        }


@dataclass(frozen=True)
class _Ages:
    """The retention policy at the sweep's instant: each age's cutoff, and the reason its
    deletes are audited with."""

    policy: RetentionPolicy
    now: datetime

    def cutoff(self, age: str) -> datetime:
        return self.now - self.policy.age(age)

    def reason(self, age: str, what: str | None = None) -> str:
        return f"retention: {what or age} older than {self.policy.label(age)}"

    @property
    def derived(self) -> str:
        """The reason of what goes with expired episodes."""
        return f"retention: {_DERIVED.format(age=self.policy.label('episodes'))}"


#: Said by every sweep's receipt: what retention does not do.
_NOTES = (
    "Retention stores no tombstones: expired is not forbidden, and the same words said "
    "again are learned again. Use `analyst memory forget` to erase something for good.",
    "Freed pages are reused, not compacted (no VACUUM, no Qdrant Edge rebuild); a forget compacts.",
)


async def sweep(tiers: Tiers, learner: Learner, *, dry_run: bool = False) -> Receipt:
    """Delete (or, ``dry_run``, list) everything of ``tiers.principal`` the retention policy
    says has expired at ``tiers.services.clock()``."""
    settings = tiers.settings
    ages = _Ages(settings.retention, tiers.services.clock())
    receipt = _receipt(tiers, ages, dry_run)
    mem = await read(tiers, learner)
    mem.facts = await FACTS.fetch(tiers, learner, as_of=ages.now)
    jobs = await JOBS.fetch(tiers, learner)

    doomed = _Doomed()
    gone_episodes, kept_summaries = _expired_episodes(tiers, mem, ages, doomed)
    receipt.kept += kept_summaries
    _expired_by_own_age(mem, ages, doomed)
    covering = _expired_jobs(jobs, mem, gone_episodes, ages, doomed)
    doomed.settle(ages.derived)

    review = timedelta(days=settings.review_days)
    receipt.kept += _reviews(tiers, mem, ages.now, review)
    receipt.kept += _kept_notes(ages.policy.label("threads"), covering, gone_episodes)
    receipt.backups = backups_statement(tiers)
    receipt.notes = list(_NOTES)

    # Threads idle for too long (their own deletion and audit).
    threads = await _threads(tiers, ages, dry_run)
    hashes = _list_deleted(receipt, doomed, threads)
    if dry_run:
        return receipt

    await _erase(tiers, learner, doomed, hashes)
    held = [mem.episodes, mem.summaries, mem.candidates, mem.procedures, mem.facts, mem.items]
    if any(held) or jobs or threads or tiers.index.list(tiers.principal, limit=1):
        # A principal with no memory at all leaves no trace: its next sweep reads empty tiers.
        deleted = sum(
            len(t.ids) for name, t in receipt.deleted.items() if name != "embedding_cache"
        )
        await learner.journal.audit(
            "sweep", SWEEP_TIER, [], reason=f"retention sweep: {deleted} items deleted"
        )
    return receipt


def _receipt(tiers: Tiers, ages: _Ages, dry_run: bool) -> Receipt:
    """The sweep's receipt, empty, its scope the policy and the instant it is applied at."""
    principal = tiers.principal
    return Receipt(
        principal.tenant_id,
        principal.user_id,
        not dry_run,
        scope={
            "retention": ages.policy.to_json(),
            "now": ages.now.isoformat(),
            "dry_run": dry_run,
            "review_days": tiers.settings.review_days,
        },
    )


def _expired_episodes(
    tiers: Tiers, mem: Remembered, ages: _Ages, doomed: _Doomed
) -> tuple[set[str], list[dict[str, Any]]]:
    """Episodes past their age, and what the forget cascade derives from them (minus what is
    reviewed: an active procedure, a high-importance memory); the ids of the episodes that
    go, and the summaries the cascade keeps."""
    old_episodes = [e for e in mem.episodes if EPISODES.expired(e, ages.cutoff)]
    gone_episodes = {e.episode_id for e in old_episodes}
    doomed.add(ages.reason("episodes"), EPISODES, old_episodes)
    if not old_episodes:
        return gone_episodes, []
    plan = cascade(tiers, mem, [("episodes", e) for e in sorted(gone_episodes)])
    # An active procedure is reviewed, never deleted with its episodes.
    active = {p.procedure_id for p in mem.procedures if p.status == "active"}
    derived_kinds: tuple[Kind, ...] = (SUMMARIES, CANDIDATES, PROCEDURES)
    for kind in derived_kinds:
        ids = plan.deleted[kind.tier] - active
        doomed.add(ages.derived, kind, (i for i in kind.items(mem) if kind.id(i) in ids))
    doomed.add(ages.derived, STORE, (i for i in plan.items if not high_importance(i)))
    return gone_episodes, [k for k in plan.kept if k["tier"] == "summaries"]


def _expired_by_own_age(mem: Remembered, ages: _Ages, doomed: _Doomed) -> None:
    """Each kind's items past their own age (:data:`_OWN_AGE`)."""
    for kind in _OWN_AGE:
        for age, what in kind.ages.items():
            doomed.add(
                ages.reason(age, what),
                kind,
                (i for i in kind.items(mem) if kind.expired(i, ages.cutoff) == age),
            )


def _expired_jobs(
    jobs: list[ExtractionJob], mem: Remembered, gone: set[str], ages: _Ages, doomed: _Doomed
) -> int:
    """Extraction jobs of swept episodes only, and finished jobs past their age; how many
    of those stay because they cover a kept episode."""
    kept = {e.episode_id for e in mem.episodes} - gone
    old_jobs, covering = _jobs(jobs, gone, kept, ages.cutoff("jobs"))
    doomed.add(
        ages.derived,
        JOBS,
        (
            j
            for j in jobs
            if gone.intersection(j.episode_ids) and not kept.intersection(j.episode_ids)
        ),
    )
    doomed.add(ages.reason("jobs", JOBS.ages["jobs"]), JOBS, old_jobs)
    return covering


def _list_deleted(receipt: Receipt, doomed: _Doomed, threads: dict[str, str]) -> list[str]:
    """Lists what goes in ``receipt``, tier by tier; the embedding-cache rows of every text
    that goes (their hashes), also listed."""
    from memory.embeddings import text_hash

    receipt.deleted["threads"] = Tier(sorted(threads))
    texts: list[str] = []
    for kind in (*JOURNAL_KINDS, FACTS, STORE):
        gone = doomed.items(kind.tier)
        receipt.deleted[kind.tier] = Tier(sorted(gone))
        texts += [t for item in gone.values() for t in kind.texts(item)]
    texts += list(threads.values())
    hashes = sorted({text_hash(t) for t in texts if t})
    receipt.deleted["embedding_cache"] = Tier(hashes)
    return hashes


async def _erase(tiers: Tiers, learner: Learner, doomed: _Doomed, hashes: list[str]) -> None:
    """Delete what is ``doomed`` and the cache rows ``hashes``, in batches of :data:`BATCH`,
    each audited with its reason."""
    for why, by_kind in doomed.by_reason.items():
        for tier, found in by_kind.items():
            ordered = sorted(found)
            for start in range(0, len(ordered), BATCH):
                chunk = {i: found[i] for i in ordered[start : start + BATCH]}
                await by_tier(tier).erase(tiers, learner, chunk, why)
    for start in range(0, len(hashes), BATCH):
        chunk_hashes = hashes[start : start + BATCH]
        forget_vectors(tiers, chunk_hashes)
        await tiers.audit(
            "delete", "embedding_cache", chunk_hashes, "retention: texts of expired items"
        )


async def due_for_sweep(tiers: Tiers) -> bool:
    """Whether this principal's memory was not swept in the last :data:`SWEEP_EVERY` (one
    indexed read of the audit)."""
    now = tiers.services.clock()
    journal = await tiers.journal()
    return await journal.latest_audit("sweep", since=now - SWEEP_EVERY) is None


def _jobs(
    jobs: list[ExtractionJob], gone: set[str], kept: set[str], before: datetime
) -> tuple[list[ExtractionJob], int]:
    """Done or failed jobs finished before ``before`` that may go (a ``session_end`` job
    covering a kept episode stays), and how many stayed for that reason."""
    old: list[ExtractionJob] = []
    covering = 0
    for job in jobs:
        if job.status not in ("done", "failed") or (job.finished_at or job.created_at) >= before:
            continue
        if job.kind == "session_end" and kept.intersection(job.episode_ids):
            covering += 1
            continue
        old.append(job)
    return old, covering


async def _threads(tiers: Tiers, ages: _Ages, dry_run: bool) -> dict[str, str]:
    """Prune the principal's threads idle for longer than their age; their ids and requests."""
    label = ages.policy.label("threads")
    records = {t.thread_id: t.query for t in THREADS.records(tiers)}
    if not records:
        return {}
    report = await prune_threads(
        await tiers.checkpointer(),
        tiers.index,
        tiers.principal,
        older_than=ages.policy.age("threads"),
        label=label,
        dry_run=dry_run,
        now=ages.now,
        busy=tiers.locks.busy,
    )
    gone = [c.thread_id for c in report.deleted]
    if gone and not dry_run:
        for candidate in report.deleted:
            remove_charts(tiers.settings, candidate.storage_id, set())
        await tiers.audit("delete", "threads", gone, f"retention: threads idle for over {label}")
    return {t: records.get(t, "") for t in gone}


def _reviews(
    tiers: Tiers, mem: Remembered, now: datetime, review: timedelta
) -> list[dict[str, Any]]:
    """High-importance items past their review date: kept, each with its owner, review date
    and the commands that confirm or delete it."""
    owner = tiers.principal.user_id
    due: list[dict[str, Any]] = []
    why = "{what} is not deleted by age; it is due for review: confirm it or delete it"
    for r in mem.facts:
        if r.status == "open" and r.recorded_at + review <= now:
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
        if high_importance(i) and i.updated_at + review <= now:
            value = i.value
            again = (
                f"analyst memory add {shlex.quote(str(value.get('text', '')))}"
                f" --importance {value.get('importance', 5)} --kind {value.get('kind', 'note')}"
            )
            if value.get("about"):
                again += f" --about {shlex.quote(str(value['about']))}"
            due.append(
                _due(
                    "store",
                    STORE.id(i),
                    f"memory {i.key}",
                    owner,
                    i.updated_at + review,
                    why.format(what="a high-importance memory"),
                    again,
                    f"analyst memory forget --key {i.key}",
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
