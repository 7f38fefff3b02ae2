"""The typed fact ledger: what is true now, what was true on a date, who said it, what it replaced.

Public API (the contract is in :mod:`memory.facts.base`)::

    async with open_fact_store(settings.facts, principal) as facts:
        await facts.record(MemoryDelta(subject=subject_for(principal), attribute="horizon",
                                       value="long-term", valid_from=when, source_episode_id=ep))
        await facts.current(subject, "horizon")          # FactRecord | None
        await facts.as_of(subject, "horizon", when)      # FactRecord | None
        await facts.profile(subject)                     # {attribute: FactRecord}
        await facts.history(subject, "horizon")          # [FactRecord], supersession chain
        await facts.retract(subject, "horizon")          # closes without a successor
        await facts.record_many(deltas)                  # one durable transaction
        await facts.import_facts(many_deltas)            # ImportReport: bulk, same rules
        facts.sync.current(subject, "horizon")           # the reads, without an event loop
        await facts.grant("bob", "team:*")               # tenant admin: bob writes team:*

A principal writes its own subject freely; others need a grant, and a fact about another user
is kept only as a candidate (see :mod:`memory.facts.base`, "Authority"). It reads its own
subject, the shared subjects its grants cover, and, as the tenant's admin, every subject --
another user's personal attributes (:data:`PERSONAL_ATTRIBUTES`) only with
``include_personal=True`` on a store given an auditor (``facts.with_auditor``), which writes
the read to that user's memory audit. ``docs/security.md`` (Facts) says what is enforced where.

``record()`` returns the record holding the delta's place; its ``outcome`` is ``recorded``,
``replaced`` or ``duplicate`` (the same value and ``valid_from`` were stored already; the
delta's episode is kept in ``restated_in``). Concurrent writes share one durable commit.

Backends: SQLite (``memory.facts.sqlite``, the default) and Postgres with row-level security
(``memory.facts.postgres``, imported only when a ``postgresql://`` URL is opened).
"""

from memory.facts.base import (
    MEMORY_TYPES,
    PERSONAL_ATTRIBUTES,
    RECORD_SCHEMA_VERSION,
    SOURCES,
    ConflictPolicy,
    FactRecord,
    FactStatus,
    FactStore,
    Grant,
    ImportReport,
    MemoryDelta,
    MemoryType,
    Source,
    SyncFacts,
    WriteOutcome,
    subject_for,
)
from memory.facts.factory import SCHEMES, open_fact_store, setup_fact_store

__all__ = [
    "MEMORY_TYPES",
    "PERSONAL_ATTRIBUTES",
    "RECORD_SCHEMA_VERSION",
    "SCHEMES",
    "SOURCES",
    "ConflictPolicy",
    "FactRecord",
    "FactStatus",
    "FactStore",
    "Grant",
    "ImportReport",
    "MemoryDelta",
    "MemoryType",
    "Source",
    "SyncFacts",
    "WriteOutcome",
    "open_fact_store",
    "setup_fact_store",
    "subject_for",
]
