"""The registry of memory kinds: one adapter per kind, so forget, retention, backup and export
loop over :data:`KINDS` instead of naming every tier.

A :class:`~agent.app.memory_kind.Kind` says, for the items of one kind of one principal, how to list them (from the
memory a forget reads once, :class:`~agent.recollection.forgettable.Remembered`, or from
storage), which episodes each was derived from (:meth:`Kind.cited_by`) and whether forgetting
those episodes takes it (:meth:`Kind.follows`), the texts whose embedding-cache rows go with it
(:meth:`Kind.texts`) and the units hashed into tombstones (:meth:`Kind.tombstones`), when the
retention policy expires it (:meth:`Kind.expired`), how it is deleted, and how it is written to
and read from a backup. The ``tier`` of a kind is its name in receipts, the audit and backups.

A new memory kind is its storage plus one adapter here, added to :data:`KINDS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from agent.app.memory_kind import ALL, SENTENCE, Cutoff, JournalKind, Kind, strings
from agent.recollection.forgettable import Remembered, all_items, item_key, profile_path
from memory.facts import FactRecord, subject_for
from memory.journal.records import Candidate, Episode, ExtractionJob, Procedure, SessionSummary
from memory.retention import HIGH_IMPORTANCE
from memory.serde import record_from_json
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langgraph.store.base import Item

    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner
    from memory.recall import Recalled

#: Store items are deleted in batches of this size.
_PAGE = 1000


class Episodes(JournalKind):
    tier, record, key = "episodes", Episode, "episode_id"
    export_key = "episodes"
    ages: ClassVar[dict[str, str]] = {"episodes": "episodes"}

    def items(self, mem: Remembered) -> Sequence[Episode]:
        return mem.episodes

    def cited_by(self, item: Episode) -> set[str]:
        return set()

    def texts(self, item: Episode) -> list[str]:
        return [item.text]

    def tombstones(self, item: Episode) -> list[str]:
        return [item.text, *SENTENCE.split(item.text)]

    def expired(self, item: Episode, cutoff: Cutoff) -> str | None:
        return "episodes" if item.at < cutoff("episodes") else None

    async def fetch(self, tiers: Tiers, learner: Learner) -> list[Episode]:
        return await learner.journal.list_episodes(limit=ALL)


class Jobs(JournalKind):
    """Extraction jobs: not in a forget's read (they are listed when a forget is applied)."""

    tier, record, key = "extraction_jobs", ExtractionJob, "job_id"
    export_key = "jobs"
    ages: ClassVar[dict[str, str]] = {"jobs": "done and failed extraction jobs"}

    async def fetch(self, tiers: Tiers, learner: Learner) -> list[ExtractionJob]:
        return await learner.journal.jobs(limit=ALL)


class Candidates(JournalKind):
    tier, record, key = "candidates", Candidate, "candidate_id"
    export_key = "candidates"
    ages: ClassVar[dict[str, str]] = {"candidates": "candidates"}

    def items(self, mem: Remembered) -> Sequence[Candidate]:
        return mem.candidates

    def texts(self, item: Candidate) -> list[str]:
        return [item.quote]

    def tombstones(self, item: Candidate) -> list[str]:
        return [item.quote, *strings(item.payload.values())]

    def expired(self, item: Candidate, cutoff: Cutoff) -> str | None:
        old = (item.decided_at or item.created_at) < cutoff("candidates")
        return "candidates" if old else None

    async def fetch(self, tiers: Tiers, learner: Learner) -> list[Candidate]:
        return await learner.journal.candidates(status=None, limit=ALL)

    async def shown(self, tiers: Tiers, learner: Learner, *, sessions: int) -> dict[str, Any]:
        """The candidates awaiting the principal's word."""
        from agent.learning.learner import CONFIRMABLE

        rows = []
        for c in await learner.journal.candidates(status="pending", limit=ALL):
            row = c.to_json()
            if c.kind in CONFIRMABLE:
                row["confirm"] = f"analyst memory confirm {c.candidate_id}"
            row["reject"] = f"analyst memory reject {c.candidate_id}"
            rows.append(row)
        return {"candidates": rows}


class Summaries(JournalKind):
    tier, record, key = "summaries", SessionSummary, "session_id"
    export_key = "sessions"
    ages: ClassVar[dict[str, str]] = {"summaries": "summaries"}

    def items(self, mem: Remembered) -> Sequence[SessionSummary]:
        return mem.summaries

    def follows(self, item: SessionSummary, gone: set[str]) -> tuple[bool, dict[str, Any] | None]:
        cites = self.cited_by(item)
        others = sorted(cites - gone)
        if not gone.intersection(cites):
            return False, None
        if not others:
            return True, None
        return True, {
            "tier": "summaries",
            "what": f"session summary {item.session_id}",
            "why": "deleted too, although it also summarised episodes that are kept "
            f"({', '.join(others)}): a summary cannot be split",
        }

    def texts(self, item: SessionSummary) -> list[str]:
        return [item.topic, item.summary, *item.open_items]

    def expired(self, item: SessionSummary, cutoff: Cutoff) -> str | None:
        return "summaries" if item.ended < cutoff("summaries") else None

    async def fetch(self, tiers: Tiers, learner: Learner) -> list[SessionSummary]:
        return await learner.journal.summaries(limit=ALL)

    async def shown(self, tiers: Tiers, learner: Learner, *, sessions: int) -> dict[str, Any]:
        """The most recent ``sessions`` session summaries, with their open items."""
        return {"sessions": [s.to_json() for s in await learner.journal.summaries(limit=sessions)]}


class Procedures(JournalKind):
    tier, record, key = "procedures", Procedure, "procedure_id"
    export_key = "procedures"
    ages: ClassVar[dict[str, str]] = {"procedures": "retired procedures"}

    def items(self, mem: Remembered) -> Sequence[Procedure]:
        return mem.procedures

    def texts(self, item: Procedure) -> list[str]:
        return [item.text]

    def expired(self, item: Procedure, cutoff: Cutoff) -> str | None:
        # An active procedure is reviewed, never deleted by age.
        if item.status != "retired":
            return None
        return (
            "procedures" if (item.retired_at or item.confirmed_at) < cutoff("procedures") else None
        )

    async def fetch(self, tiers: Tiers, learner: Learner) -> list[Procedure]:
        return await learner.journal.procedures(status=None)

    async def shown(self, tiers: Tiers, learner: Learner, *, sessions: int) -> dict[str, Any]:
        """The procedures in force."""
        return {
            "procedures": [
                {**p.to_json(), "delete": f"analyst memory procedures --retire {p.procedure_id}"}
                for p in await learner.journal.procedures(status="active")
            ]
        }


class Facts(Kind):
    """Fact rows of the ledger, each with its whole history."""

    tier, export_key = "facts", "facts"
    ages: ClassVar[dict[str, str]] = {"fact_history": "fact history rows"}

    def items(self, mem: Remembered) -> Sequence[FactRecord]:
        return mem.facts

    def id(self, item: FactRecord) -> str:
        return item.memory_id

    def cited_by(self, item: FactRecord) -> set[str]:
        return {s for s in (item.source_episode_id, *item.restated_in) if s}

    def follows(self, item: FactRecord, gone: set[str]) -> tuple[bool, dict[str, Any] | None]:
        # A fact goes when every episode it was stated in goes; one also stated in an
        # episode that is kept stays, and the receipt says why.
        sources = self.cited_by(item)
        if sources and sources <= gone:
            return True, None
        if not gone.intersection(sources):
            return False, None
        return False, {
            "tier": "facts",
            "what": f"fact {item.memory_id} ({item.attribute})",
            "why": "also stated in episodes that are kept: " + ", ".join(sorted(sources - gone)),
        }

    def texts(self, item: FactRecord) -> list[str]:
        return [*strings([item.value]), str(item.value)]

    def tombstones(self, item: FactRecord) -> list[str]:
        return strings([item.value])

    def expired(self, item: FactRecord, cutoff: Cutoff) -> str | None:
        # A current fact is reviewed, never deleted by age; history rows go by their end.
        if item.status == "open":
            return None
        end = item.withdrawn_at or item.retracted_at or item.valid_to
        ended = end if end is not None else item.recorded_at
        return "fact_history" if ended < cutoff("fact_history") else None

    async def fetch(
        self,
        tiers: Tiers,
        learner: Learner,
        *,
        registry: bool = True,
        as_of: datetime | None = None,
    ) -> list[FactRecord]:
        """Every row of every attribute the user has a current fact of (``as_of``), and,
        with ``registry``, of every attribute of the profile registry."""
        from agent.learning.profile import REGISTRY

        facts, subject = learner.facts, subject_for(tiers.principal)
        current = await (
            facts.profile(subject) if as_of is None else facts.profile(subject, as_of=as_of)
        )
        names = sorted({*current, *REGISTRY}) if registry else list(current)
        return [r for a in names for r in await facts.history(subject, a)]

    async def exported(self, tiers: Tiers, learner: Learner) -> dict[str, list[dict[str, Any]]]:
        """Each attribute's history, by attribute."""
        by_name: dict[str, list[dict[str, Any]]] = {}
        for r in await self.fetch(tiers, learner):
            by_name.setdefault(r.attribute, []).append(r.to_json())
        return by_name

    async def shown(self, tiers: Tiers, learner: Learner, *, sessions: int) -> dict[str, Any]:
        """The profile facts the planner uses."""
        from agent.learning.remembering import fact_command

        return {
            "profile": [
                {
                    "attribute": name,
                    **fact,
                    "edit": fact_command("record", name, fact["value"]),
                    "delete": fact_command("retract", name),
                }
                for name, fact in (await learner.profile()).items()
            ]
        }

    def from_json(self, row: dict[str, Any]) -> FactRecord:
        return record_from_json(FactRecord, row)

    async def erase(
        self, tiers: Tiers, learner: Learner, found: dict[str, Any], reason: str
    ) -> list[str]:
        """Delete the rows ``found`` (those the principal has), audited; answer those gone."""
        done = await learner.facts.erase_facts(sorted(found))
        if done:
            await tiers.audit("delete", "facts", done, reason)
        return done


class Store(Kind):
    """Items of the long-term store under the principal's namespace root (memories, events,
    themes), named ``<namespace>/<key>``."""

    tier, export_key = "store", "memories"
    ages: ClassVar[dict[str, str]] = {"events": "events", "memories": "memories"}

    def items(self, mem: Remembered) -> Sequence[Item]:
        return mem.items

    def id(self, item: Item) -> str:
        return item_key(item)

    def named(self, item: Item, ids: set[str]) -> bool:
        return item.key in ids or item_key(item) in ids

    def cited_by(self, item: Item) -> set[str]:
        return set(item.value.get("episode_ids") or ())

    def texts(self, item: Item) -> list[str]:
        return [v for v in item.value.values() if isinstance(v, str)]

    def tombstones(self, item: Item) -> list[str]:
        return [str(item.value.get("text", ""))]

    def expired(self, item: Item, cutoff: Cutoff) -> str | None:
        from memory.recall import happened_at

        if high_importance(item):
            return None
        age = store_age(item)
        return age if happened_at(item) < cutoff(age) else None

    async def fetch(self, tiers: Tiers, learner: Learner | None = None) -> list[Item]:
        """Every item under the principal's namespace root (none when the store was never
        made: reading it does not create it)."""
        if tiers.store_missing():
            return []
        return await all_items(await tiers.store(), tiers.principal)

    async def remove_all(self, tiers: Tiers) -> list[Item]:
        """Delete every item under the principal's namespace root (their vectors with them)
        and return them, not audited (account deletion): read and deleted in one step where
        the store can (:meth:`~memory.store.scoped.ScopedStore.aremove_all`), else listed
        (:meth:`fetch`) then deleted."""
        if tiers.store_missing():
            return []
        removed = await scoped(await tiers.store(), tiers.principal).aremove_all()
        if removed is not None:
            return list(removed)
        taken = await self.fetch(tiers)
        await self.delete(tiers, taken, None)
        return taken

    async def related(self, tiers: Tiers, ids: Sequence[str], episodes: set[str]) -> list[Item]:
        """The items a forget of ``ids`` can touch: those ``ids`` name (a key, or
        ``<namespace>/<key>``) and those citing one of ``episodes``; through the store's own
        lookup when it has one, else out of every item (:meth:`fetch`)."""
        from memory.store.scoped import scoped

        if tiers.store_missing():
            return []
        keys = sorted({*ids, *(i.rsplit("/", 1)[-1] for i in ids)})
        view = scoped(await tiers.store(), tiers.principal)
        found = await view.arelated(keys=keys, episodes=sorted(episodes))
        return await self.fetch(tiers) if found is None else found

    def to_json(self, item: Item) -> dict[str, Any]:
        return {"namespace": list(item.namespace), "key": item.key, "value": item.value}

    async def exported(self, tiers: Tiers, learner: Learner) -> list[dict[str, Any]]:
        """The long-term memories, newest first, without their listing score."""
        from memory.recall import alist_memories

        if tiers.store_missing():
            return []
        found = await alist_memories(await tiers.store(), tiers.principal, limit=ALL)
        return [memory_json(m) for m in found]

    async def shown(self, tiers: Tiers, learner: Learner, *, sessions: int) -> dict[str, Any]:
        """Preferences, events and other long-term memories (the layer rule of
        :func:`agent.recollection.reader.memory_layer`)."""
        from agent.recollection.reader import memory_layer
        from memory.recall import alist_memories

        shown: dict[str, list[dict[str, Any]]] = {"preferences": [], "events": [], "memories": []}
        if tiers.store_missing():
            return shown
        for m in await alist_memories(await tiers.store(), tiers.principal, limit=ALL):
            layer = {"preference": "preferences", "event": "events"}.get(
                memory_layer(m.kind), "memories"
            )
            shown[layer].append(
                {**memory_json(m), "delete": f"analyst memory forget --key {m.key}"}
            )
        return shown

    def from_json(self, row: dict[str, Any]) -> Item:
        from datetime import UTC

        from langgraph.store.base import Item

        now = datetime.now(UTC)
        return Item(
            value=row["value"],
            key=row["key"],
            namespace=tuple(row["namespace"]),
            created_at=now,
            updated_at=now,
        )

    async def erase(
        self, tiers: Tiers, learner: Learner | None, found: dict[str, Any], reason: str
    ) -> list[str]:
        """Delete the items ``found`` (their vectors with them), audited."""
        await self.delete(tiers, list(found.values()), reason)
        return sorted(found)

    async def delete(self, tiers: Tiers, items: list[Item], reason: str | None) -> None:
        """Delete ``items`` (their vectors with them), audited with ``reason`` unless ``None``."""
        from langgraph.store.base import PutOp

        if not items:
            return
        view = scoped(await tiers.store(), tiers.principal)
        for start in range(0, len(items), _PAGE):
            chunk = items[start : start + _PAGE]
            await view.abatch([PutOp(tuple(i.namespace), i.key, None) for i in chunk])
        if reason is not None:
            await tiers.audit("delete", "store", sorted(item_key(i) for i in items), reason)


def memory_json(m: Recalled) -> dict[str, Any]:
    """A long-term memory without its listing score (not stable: recency moves with time)."""
    row = m.to_json()
    row.pop("score", None)
    return row


def high_importance(item: Item) -> bool:
    """A memory reviewed rather than deleted by age: importance 8+ or kept at the user's word."""
    importance = item.value.get("importance")
    high = isinstance(importance, int | float) and importance >= HIGH_IMPORTANCE
    return high or item.value.get("source") == "confirmed"


def store_age(item: Item) -> str:
    """The retention age of a store item: ``events`` or ``memories`` (the layer rule of
    :func:`agent.recollection.reader.memory_layer`)."""
    from agent.recollection.reader import memory_layer

    return "events" if memory_layer(str(item.value.get("kind"))) == "event" else "memories"


class ProfileLines(Kind):
    """The lines of the user's profile document that say something, named ``path#L<n>``; a
    forget takes those holding a forgotten value."""

    tier = "documents"

    def items(self, mem: Remembered) -> Sequence[tuple[str, str]]:
        return mem.profile_lines()

    def id(self, item: tuple[str, str]) -> str:
        return item[0]

    def texts(self, item: tuple[str, str]) -> list[str]:
        return [item[1]]

    def tombstones(self, item: tuple[str, str]) -> list[str]:
        return [item[1]]

    def holds(self, item: tuple[str, str], values: Sequence[str]) -> bool:
        """Whether the line holds one of the (lower-cased) forgotten ``values``."""
        return any(v in item[1].lower() for v in values)

    async def erase(
        self, tiers: Tiers, learner: Learner | None, found: dict[str, Any], reason: str
    ) -> list[str]:
        await self.delete(tiers, set(found), reason)
        return sorted(found)

    async def delete(self, tiers: Tiers, line_ids: set[str], reason: str) -> None:
        """Rewrite the profile document without the lines ``path#L<n>`` (under the document's
        lock; a document left with nothing but headings is deleted), then bring the document
        index up to date so its rows of the old text go too; audited."""
        if not line_ids:
            return
        documents = await tiers.owned_documents()  # each rewrite audited with its hash
        path = profile_path(tiers.principal)
        gone = {int(i.rsplit("#L", 1)[1]) for i in line_ids if i.startswith(f"{path}#L")}

        def without(text: str | None) -> str:
            lines = (text or "").splitlines(keepends=True)
            return "".join(line for n, line in enumerate(lines, 1) if n not in gone)

        await documents.update(path, without, reason=reason)
        left = documents.read_text(path)
        if not any(ln.strip() and not ln.lstrip().startswith("#") for ln in left.splitlines()):
            await documents.delete(path, reason=reason)
        documents.files.reindex()
        await tiers.audit("delete", "documents", sorted(line_ids), reason)


class Threads(Kind):
    """The principal's threads: every checkpoint, write and blob, the index row, draft charts
    (a thread holds its episodes' words, so it goes with them)."""

    tier = "threads"
    ages: ClassVar[dict[str, str]] = {"threads": "threads"}

    def id(self, item: Any) -> str:
        return str(item.thread_id)

    def texts(self, item: Any) -> list[str]:
        return [item.query]

    def records(self, tiers: Tiers) -> list[Any]:
        """The principal's threads in the thread index."""
        return tiers.index.list(tiers.principal, limit=ALL)

    async def fetch(self, tiers: Tiers, learner: Learner | None = None) -> list[Any]:
        return self.records(tiers)

    async def erase(
        self, tiers: Tiers, learner: Learner | None, found: dict[str, Any], reason: str
    ) -> list[str]:
        """Delete the threads ``found`` (each audited as a thread deletion)."""
        await self.delete(tiers, found)
        return sorted(found)

    async def delete(self, tiers: Tiers, thread_ids: Iterable[str]) -> None:
        """Delete ``thread_ids`` as one batch (:meth:`Tiers.delete_threads`; one deleted
        meanwhile is skipped)."""
        await tiers.delete_threads(thread_ids)


EPISODES, JOBS, CANDIDATES = Episodes(), Jobs(), Candidates()
SUMMARIES, PROCEDURES = Summaries(), Procedures()
FACTS, STORE, DOCUMENTS, THREADS = Facts(), Store(), ProfileLines(), Threads()

#: Every kind, in the order receipts list them.
KINDS: tuple[Kind, ...] = (
    THREADS,
    EPISODES,
    JOBS,
    CANDIDATES,
    SUMMARIES,
    PROCEDURES,
    FACTS,
    STORE,
    DOCUMENTS,
)
#: The journal's kinds, in the order of its tables.
JOURNAL_KINDS: tuple[JournalKind, ...] = (EPISODES, JOBS, CANDIDATES, SUMMARIES, PROCEDURES)
#: The kinds derived from episodes, in the order a forget's cascade considers them.
DERIVED: tuple[Kind, ...] = (SUMMARIES, CANDIDATES, PROCEDURES, FACTS, STORE)
#: The kinds ``analyst memory export`` holds, in its order.
EXPORTED: tuple[Kind, ...] = (EPISODES, FACTS, CANDIDATES, PROCEDURES, SUMMARIES, JOBS, STORE)
#: The kinds ``analyst memory show`` holds, in its order.
SHOWN: tuple[Kind, ...] = (FACTS, PROCEDURES, SUMMARIES, STORE, CANDIDATES)
#: The kinds of a forget's read whose text can be tombstoned, by tier.
TOMBSTONED: tuple[Kind, ...] = (EPISODES, CANDIDATES, FACTS, STORE)


def by_tier(tier: str) -> Kind:
    """The kind named ``tier``."""
    return next(k for k in KINDS if k.tier == tier)
