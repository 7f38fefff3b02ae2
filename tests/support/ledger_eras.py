"""Ledgers of every earlier schema version, holding real data written in that version's SQL.

A ledger of version N is what the released migrations 1..N make (the list is append-only, so
running it up to N rebuilds the old layout exactly). :func:`insert_era_data` then writes one
scenario with the columns and encodings that version had: superseded facts, a retraction,
withdrawn facts (a lost conflict, a candidate about another user), journal candidates (one
rejected), a forgotten fact's tombstone and its audit rows, grants. What exists depends on
the version (no withdrawal before 2, no grants before 4, no journal before 5, no audit before
6, no tombstones before 8, no reader role before 10).

:func:`check_answers` opens the migrated ledger through the public API and compares every
answer (as_of, current, history, profile, provenance, candidates, tombstones, audit, grants)
with what the old rows meant, written out here by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memory.facts import RECORD_SCHEMA_VERSION, FactRecord, open_fact_store
from memory.facts.records import Grant
from memory.identity import Principal
from memory.journal import open_journal
from memory.journal.audit import keyed_hash
from memory.journal.base import tombstone_text
from memory.journal.records import AuditEntry, Candidate

TENANT = "acme"
MIRA, RUI, ADA = (Principal(TENANT, user) for user in ("mira", "rui", "ada"))
#: A later reader of a shared subject (the reader role exists from version 10).
READER_SINCE = 10


def day(n: int, hour: int = 0) -> datetime:
    return datetime(2026, 6, n, hour, tzinfo=UTC)


@dataclass(frozen=True)
class Fact:
    """One fact row as its writer meant it; ``since``: the first version that could hold it."""

    memory_id: str
    subject: str
    attribute: str
    value: Any
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    since: int = 1
    supersedes: str | None = None
    episode: str | None = None
    memory_type: str = "semantic"
    source: str = "stated"
    confidence: float = 1.0
    retracted_at: datetime | None = None
    retraction_episode: str | None = None
    withdrawn_at: datetime | None = None
    restated_in: tuple[str, ...] = ()
    recorded_by: str | None = None

    def at(self, version: int) -> Fact:
        """The row as version ``version`` could store it (later columns at their defaults)."""
        row = self
        if version < 2:
            row = replace(
                row,
                memory_type="semantic",
                source="stated",
                confidence=1.0,
                retracted_at=None,
                retraction_episode=None,
                withdrawn_at=None,
            )
        if version < 3:
            row = replace(row, restated_in=())
        if version < 4:
            row = replace(row, recorded_by=None)
        return row

    def record(self, version: int) -> FactRecord:
        """What a read returns after the migration: the row's meaning, schema 4's shape."""
        row = self.at(version)
        return FactRecord(
            tenant_id=TENANT,
            memory_id=row.memory_id,
            subject=row.subject,
            attribute=row.attribute,
            value=row.value,
            memory_type=row.memory_type,  # type: ignore[arg-type]
            schema_version=RECORD_SCHEMA_VERSION,
            valid_from=row.valid_from,
            valid_to=row.valid_to,
            recorded_at=row.recorded_at,
            supersedes_memory_id=row.supersedes,
            source_episode_id=row.episode,
            source=row.source,  # type: ignore[arg-type]
            confidence=row.confidence,
            retention_policy="default",
            retracted_at=row.retracted_at,
            retraction_episode_id=row.retraction_episode,
            withdrawn_at=row.withdrawn_at,
            restated_in=row.restated_in,
            recorded_by=row.recorded_by,
        )


H = "horizon"
FACTS: tuple[Fact, ...] = (
    # Superseded: short-term until day 3, then long-term (restated later, with provenance).
    Fact("a1", "user:mira", H, "short-term", day(1), day(3), day(1), episode="e1",
         recorded_by="mira"),
    Fact("a2", "user:mira", H, "long-term", day(3), None, day(3), supersedes="a1",
         episode="e2", source="confirmed", confidence=0.9, restated_in=("e3",),
         recorded_by="mira"),
    # Withdrawn: a weaker inference at the same start lost the conflict (kept for history).
    Fact("a3", "user:mira", H, "medium", day(3), None, day(3, 1), since=2, episode="e3",
         source="inferred", confidence=0.4, withdrawn_at=day(3, 1), recorded_by="mira"),
    # Retracted on day 5 (before version 2 a retraction only closed the interval).
    Fact("b1", "user:mira", "risk", "low", day(1), day(5), day(1), episode="e1",
         retracted_at=day(5), retraction_episode="e4", recorded_by="mira"),
    # A version-1 value was a plain string, whatever it looked like: it stays that string.
    Fact("j1", "user:mira", "note", '{"not": "json"}', day(1), None, day(1), episode="e1",
         recorded_by="mira"),
    Fact("n1", "user:mira", "shares", 42, day(2), None, day(2), since=2, episode="e2",
         recorded_by="mira"),
    Fact("p1", "user:mira", "full_name", "Mira Q", day(1), None, day(1), episode="e1",
         memory_type="profile", recorded_by="mira"),
    # A candidate: an inference about another user, stored withdrawn.
    Fact("r1", "user:rui", H, "long", day(3), None, day(3), since=2, episode="e2",
         source="inferred", confidence=0.6, withdrawn_at=day(3), recorded_by="mira"),
    # A shared subject, written by its admin once grants exist.
    Fact("c1", "fund:x", "rating", "buy", day(2), None, day(2), since=4, episode="e2",
         recorded_by="ada"),
)  # fmt: skip

#: The fact forgotten before the old layout was left: deleted, its text tombstoned.
FORGOTTEN_ID = "f-forgotten"
FORGOTTEN_TEXT = "My address is 1 Main St."


def grants(version: int) -> list[Grant]:
    found = []
    if version >= 4:
        found += [
            Grant(TENANT, "ada", "admin", "*", "ledger-owner", day(1)),
            Grant(TENANT, "mira", "writer", "fund:*", "ada", day(1)),
        ]
    if version >= READER_SINCE:
        found.append(Grant(TENANT, "rui", "reader", "fund:x", "ada", day(2)))
    return sorted(found, key=lambda g: (g.user_id, g.role, g.subject))


def candidates(version: int) -> list[Candidate]:
    if version < 5:
        return []
    common: dict[str, Any] = {"tenant_id": TENANT, "user_id": "mira", "kind": "fact"}
    return [
        Candidate(
            candidate_id="cand-1",
            payload={"attribute": "sector", "value": "energy"},
            quote="I like energy",
            episode_ids=("e3",),
            status="pending",
            reason="",
            created_at=day(3),
            **common,
        ),
        Candidate(
            candidate_id="cand-2",
            payload={"attribute": "horizon", "value": "medium"},
            quote="maybe medium",
            episode_ids=("e3",),
            status="rejected",
            reason="user said no",
            created_at=day(3, 2),
            decided_at=day(4),
            **common,
        ),
    ]


def audit(version: int, key: bytes | None) -> list[AuditEntry]:
    if version < 6 or key is None:
        return []
    return [
        AuditEntry(TENANT, "aud-1", "mira", "mira", day(3), "write", "facts", ("a2",),
                   keyed_hash(key, "long-term"), "stated"),
        AuditEntry(TENANT, "aud-2", "mira", "mira", day(4), "delete", "facts",
                   (FORGOTTEN_ID,), None, "forgotten"),
    ]  # fmt: skip


# -- writing the era's rows ----------------------------------------------------------------------

Execute = Callable[[str, Sequence[Any]], Any]


def _time(when: datetime | None) -> str | None:
    """A time as both backends' columns take it (SQLite: fixed width, ``+00:00``)."""
    return None if when is None else when.isoformat(timespec="microseconds")


def _insert(execute: Execute, backend: str, table: str, row: dict[str, Any]) -> None:
    mark = "?" if backend == "sqlite" else "%s"
    prefix = "" if backend == "sqlite" else "analyst_facts."
    grants_table = "fact_grants" if backend == "sqlite" else "grants"
    name = grants_table if table == "grants" else table
    execute(
        f"INSERT INTO {prefix}{name} ({', '.join(row)}) VALUES ({', '.join([mark] * len(row))})",
        list(row.values()),
    )


def fact_row(fact: Fact, version: int) -> dict[str, Any]:
    """The columns of version ``version``'s facts table, as its code wrote them."""
    row = fact.at(version)
    columns: dict[str, Any] = {
        "tenant_id": TENANT,
        "memory_id": row.memory_id,
        "subject": row.subject,
        "attribute": row.attribute,
        # Version 1 stored the string itself; from 2 on the value is JSON.
        "value": row.value if version < 2 else json.dumps(row.value),
        "valid_from": _time(row.valid_from),
        "valid_to": _time(row.valid_to),
        "recorded_at": _time(row.recorded_at),
        "supersedes_memory_id": row.supersedes,
        "source_episode_id": row.episode,
        "schema_version": min(version, RECORD_SCHEMA_VERSION),
    }
    if version >= 2:
        columns |= {
            "memory_type": row.memory_type,
            "source": row.source,
            "confidence": row.confidence,
            "retention_policy": "default",
            "retracted_at": _time(row.retracted_at),
            "retraction_episode_id": row.retraction_episode,
            "withdrawn_at": _time(row.withdrawn_at),
        }
    if version >= 3:
        columns["restated_in"] = json.dumps(list(row.restated_in))
    if version >= 4:
        columns["recorded_by"] = row.recorded_by
    return columns


def insert_era_data(execute: Execute, version: int, backend: str) -> None:
    """Write the scenario into a ledger of schema ``version`` with that version's SQL.

    ``execute(sql, params)`` runs one statement on a connection that sees every row (SQLite,
    or Postgres as a superuser), inside the caller's transaction.
    """
    for fact in FACTS:
        if fact.since <= version:
            _insert(execute, backend, "facts", fact_row(fact, version))
    for grant in grants(version):
        row = {
            "tenant_id": grant.tenant_id,
            "user_id": grant.user_id,
            "role": grant.role,
            "subject": grant.subject,
            "granted_by": grant.granted_by,
            "granted_at": _time(grant.granted_at),
        }
        _insert(execute, backend, "grants", row)
    if version < 5:
        return
    for n in range(1, 5):
        episode = {
            "tenant_id": TENANT,
            "episode_id": f"e{n}",
            "user_id": "mira",
            "thread_id": "t1",
            "at": _time(day(n)),
            "role": "user",
            "kind": "message",
            "text": f"turn {n}",
            "meta": "{}",
        }
        _insert(execute, backend, "episodes", episode)
    for candidate in candidates(version):
        row = {
            "tenant_id": candidate.tenant_id,
            "candidate_id": candidate.candidate_id,
            "user_id": candidate.user_id,
            "kind": candidate.kind,
            "payload": json.dumps(dict(candidate.payload)),
            "quote": candidate.quote,
            "episode_ids": json.dumps(list(candidate.episode_ids)),
            "status": candidate.status,
            "reason": candidate.reason,
            "created_at": _time(candidate.created_at),
            "decided_at": _time(candidate.decided_at),
            "job_id": None,
        }
        _insert(execute, backend, "memory_candidates", row)


def insert_keyed_rows(execute: Execute, version: int, backend: str, key: bytes) -> None:
    """The audit (version 6 on) and the forgotten text's tombstone (8 on), hashed with the
    database's audit key ``key`` (read from ``memory_secrets`` by the caller)."""
    for entry in audit(version, key):
        row = {
            "tenant_id": entry.tenant_id,
            "audit_id": entry.audit_id,
            "user_id": entry.user_id,
            "subject_user": entry.subject_user,
            "at": _time(entry.at),
            "action": entry.action,
            "tier": entry.tier,
            "item_ids": json.dumps(list(entry.item_ids)),
            "content_hash": entry.content_hash,
            "reason": entry.reason,
        }
        _insert(execute, backend, "memory_audit", row)
    if version >= 8:
        tombstone = {
            "tenant_id": TENANT,
            "user_id": "mira",
            "hash": keyed_hash(key, tombstone_text(FORGOTTEN_TEXT)),
            "created_at": _time(day(4)),
        }
        _insert(execute, backend, "memory_tombstones", tombstone)


# -- the answers ---------------------------------------------------------------------------------


def _records(version: int, *ids: str) -> list[FactRecord]:
    by_id = {f.memory_id: f for f in FACTS if f.since <= version}
    return [by_id[i].record(version) for i in ids if i in by_id]


async def check_answers(url: str, version: int, key: bytes | None, *, clock_day: int = 7) -> None:
    """Every answer of the migrated ledger at ``url`` is what the rows of ``version`` meant.

    ``url``: a SQLite URL, or a Postgres URL of the application role; ``key``: the audit key
    the builder hashed with (``None`` before version 6).
    """
    now = day(clock_day)

    def clock() -> datetime:
        return now

    async with open_fact_store(url, MIRA, clock=clock) as mira:
        subject = "user:mira"
        a1, a2 = _records(version, "a1", "a2")
        assert await mira.as_of(subject, H, day(2)) == a1
        assert await mira.as_of(subject, H, day(3)) == a2
        assert await mira.as_of(subject, H, day(1) - timedelta(seconds=1)) is None
        assert await mira.current(subject, H) == a2
        assert await mira.history(subject, H) == _records(version, "a1", "a2", "a3")
        (b1,) = _records(version, "b1")
        assert await mira.history(subject, "risk") == [b1]
        assert await mira.as_of(subject, "risk", day(4)) == b1
        assert await mira.current(subject, "risk") is None
        profile = {r.attribute: r for r in _records(version, "a2", "j1", "n1", "p1")}
        assert await mira.profile(subject) == profile
        assert await mira.profile(subject, as_of=day(2)) == {
            r.attribute: r for r in _records(version, "a1", "b1", "j1", "n1", "p1")
        }
        # Nothing of the forgotten fact is left in the ledger.
        assert await mira.related(subject, [FORGOTTEN_ID]) == []
    async with open_fact_store(url, RUI, clock=clock) as rui:
        assert await rui.history("user:rui", H) == _records(version, "r1")
        assert await rui.current("user:rui", H) is None
        if version >= READER_SINCE:
            assert await rui.current("fund:x", "rating") == _records(version, "c1")[0]
    if version >= 4:
        async with open_fact_store(url, ADA, clock=clock) as ada:
            assert await ada.grants() == grants(version)
            assert await ada.current("fund:x", "rating") == _records(version, "c1")[0]
    if version < 5:
        return
    async with open_journal(url, MIRA, clock=clock) as journal:
        assert await journal.candidates() == candidates(version)
        assert await journal.candidates(status="rejected") == candidates(version)[1:]
        assert [e.text for e in await journal.episodes(["e1", "e4"])] == ["turn 1", "turn 4"]
        if version >= 6:
            assert await journal.audit_log() == audit(version, key)
        if version >= 8:
            forgotten = "my address is 1 main st"
            assert await journal.tombstoned([forgotten, "my address is elsewhere"]) == {forgotten}


# -- building a ledger of an earlier version -----------------------------------------------------

#: Versions whose migration changed a backend's tables, or the rules over them (the others
#: record a no-op there, ``SELECT 1``); the newest is not an earlier layout.
LAYOUTS = {
    "sqlite": (1, 2, 3, 4, 5, 6, 8, 10, 11),
    "postgres": (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13),
}


def build_sqlite_era(path: str, version: int) -> bytes | None:
    """A SQLite ledger file of schema ``version`` holding the scenario; returns its audit key."""
    import sqlite3

    from memory.facts.migrations import migrate_sqlite_sync

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        migrate_sqlite_sync(conn, where=path, target=version)
        conn.execute("BEGIN IMMEDIATE")
        insert_era_data(conn.execute, version, "sqlite")
        key = None
        if version >= 6:
            (secret,) = conn.execute(
                "SELECT secret FROM memory_secrets WHERE name = 'audit'"
            ).fetchone()
            key = bytes.fromhex(secret)
            insert_keyed_rows(conn.execute, version, "sqlite", key)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return key


async def build_postgres_era(
    owner_url: str, admin_url: str, app_role: str, version: int
) -> bytes | None:
    """A Postgres ledger of schema ``version`` set up by ``owner_url`` for ``app_role`` (as
    that version's setup did), holding the scenario written as a superuser; returns its key."""
    import psycopg

    from memory.facts import setup_fact_store

    await setup_fact_store(owner_url, app_roles=[app_role], target=version)
    with psycopg.connect(admin_url) as conn, conn.transaction():
        insert_era_data(conn.execute, version, "postgres")
        key = None
        if version >= 6:
            row = conn.execute(
                "SELECT secret FROM analyst_facts.memory_secrets WHERE name = 'audit'"
            ).fetchone()
            assert row is not None
            key = bytes.fromhex(row[0])
            insert_keyed_rows(conn.execute, version, "postgres", key)
    return key


# -- many facts ----------------------------------------------------------------------------------


def bulk_rows(
    version: int, count: int, *, chain: int = 4
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """``count`` facts of schema ``version`` on ``count / chain`` keys (``bulk:<n>``, attribute
    ``price``): each key a chain of ``chain`` superseded facts, the last one open. Returns the
    facts table's columns and the rows, as :func:`fact_row` writes them."""
    columns = list(fact_row(FACTS[0], version))
    base = datetime(2025, 1, 1, tzinfo=UTC)
    days = [_time(base + timedelta(days=step)) for step in range(chain + 1)]
    sample = fact_row(replace(FACTS[0], episode=None, recorded_by=None), version)
    rows = []
    for n in range(count):
        key, step = divmod(n, chain)
        value = str(n) if version < 2 else json.dumps(str(n))
        row = sample | {
            "memory_id": f"bulk-{n}",
            "subject": f"bulk:{key}",
            "attribute": "price",
            "value": value,
            "valid_from": days[step],
            "valid_to": days[step + 1] if step < chain - 1 else None,
            "recorded_at": days[step],
            "supersedes_memory_id": f"bulk-{n - 1}" if step else None,
        }
        rows.append(tuple(row.values()))
    return columns, rows


def insert_bulk_sqlite(path: str, version: int, count: int) -> None:
    """Add :func:`bulk_rows` to the SQLite ledger at ``path`` (of schema ``version``)."""
    import sqlite3

    columns, rows = bulk_rows(version, count)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            f"INSERT INTO facts ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            rows,
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def insert_bulk_postgres(admin_url: str, version: int, count: int) -> None:
    """Add :func:`bulk_rows` to the Postgres ledger at ``admin_url`` (a superuser's URL)."""
    import psycopg

    columns, rows = bulk_rows(version, count)
    with psycopg.connect(admin_url) as conn, conn.transaction():
        with conn.cursor().copy(
            f"COPY analyst_facts.facts ({', '.join(columns)}) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)
        conn.execute("ANALYZE analyst_facts.facts")
