"""A group of appends on Postgres, its rules applied set-wise in SQL (:class:`PgAppends`).

The same statements as SQLite's (:mod:`memory.facts.sqlite_appends`, which says why they are
the rules of such a group): each write's authority per writer and subject
(:func:`memory.facts.rules.authority_of`, as ``analyst_facts.may_write`` states it), the check
that the group is a group of appends, the closing of each key's open fact at the group's first
start on it, and the new rows with ``lead`` and ``lag`` over each key in the group's order,
candidates inserted withdrawn.

The group goes into temporary tables of the writing connection (``pg_temp.fact_batch*``,
``ON COMMIT DELETE ROWS``: each transaction starts them empty) by one statement each over
arrays (``unnest``; ``COPY`` cannot travel in a pipeline): first what the check needs, then,
once the check has passed, each write's memory id and clock reading -- so a group that fails
the check runs its rules with the clock read as often as row by row. Everything runs inside
the group's transaction as the principal's application role: row security checks every row
the statements read and write (the second wall: a row the check let through that the
policies forbid fails the statement, and the group runs again row by row).

The backend is async and the plan (:class:`memory.facts.batch.Plan`) is not: the check is
sent before the plan runs (:meth:`PgAppends.check`), the plan then writes the group through
:meth:`PgAppends.append_all` (the clock readings and the results, in Python) and the rows are
sent after it (:meth:`PgAppends.write`). Round trips: after ``BEGIN``, the check's statements
travel in the group's pipeline with its key locks, and the authorities and superseded facts
the results are made from come back with the check's answer; the writes go at the pipeline's
end, whose row counts are checked before ``COMMIT``: four, as many as a group planned in
Python over its prefetched rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from memory.facts.batch import Covers, append_results
from memory.facts.group import PendingWrite
from memory.facts.postgres_ops import COLUMNS, FACTS, GRANTS
from memory.facts.records import RECORD_SCHEMA_VERSION, canonical_json, new_memory_id
from memory.sealing import MemoryCipher

#: The temporary tables, made once per connection (a statement that finds them does nothing).
_TABLES = (
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch (
        tenant_id text, subject text, attribute text, seq integer, value jsonb,
        memory_type text, valid_from timestamptz, source_episode_id text, source text,
        confidence double precision, retention_policy text, user_id text,
        PRIMARY KEY (tenant_id, subject, attribute, seq)
    ) ON COMMIT DELETE ROWS
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_made (
        seq integer PRIMARY KEY, memory_id text, recorded_at timestamptz
    ) ON COMMIT DELETE ROWS
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_who (
        tenant_id text, user_id text, subject text, authority text,
        PRIMARY KEY (tenant_id, user_id, subject)
    ) ON COMMIT DELETE ROWS
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_key (
        tenant_id text, subject text, attribute text, first_start timestamptz,
        memory_id text, valid_from timestamptz, valid_to timestamptz,
        retracted_at timestamptz, retraction_episode_id text, row_at tid,
        PRIMARY KEY (tenant_id, subject, attribute)
    ) ON COMMIT DELETE ROWS
    """,
)
_STAGE = """
INSERT INTO pg_temp.fact_batch SELECT * FROM unnest(
    %s::text[], %s::text[], %s::text[], %s::integer[], %s::jsonb[], %s::text[],
    %s::timestamptz[], %s::text[], %s::text[], %s::double precision[], %s::text[], %s::text[]
)
"""
_MADE = """
INSERT INTO pg_temp.fact_batch_made
SELECT * FROM unnest(%s::integer[], %s::text[], %s::timestamptz[])
"""
#: Each writer's authority over each subject it writes: :func:`memory.facts.rules.authority_of`
#: (``own``, ``granted``, ``candidate`` or NULL), one grants seek per (writer, subject); row
#: security shows the writer only its tenant's grants, as it does to the rules.
_AUTHORITY = f"""
INSERT INTO pg_temp.fact_batch_who
SELECT w.tenant_id, w.user_id, w.subject, CASE
    WHEN w.user_id = '' THEN NULL
    WHEN w.subject = 'user:' || w.user_id THEN 'own'
    WHEN NOT EXISTS (
        SELECT 1 FROM {GRANTS} g
        WHERE g.tenant_id = w.tenant_id AND g.user_id = w.user_id AND (
            g.role = 'admin' OR (g.role = 'writer' AND (
                g.subject = w.subject OR (
                    right(g.subject, 1) = '*'
                    AND starts_with(w.subject, left(g.subject, length(g.subject) - 1))
                )
            ))
        )
    ) THEN NULL
    WHEN starts_with(w.subject, 'user:') THEN 'candidate'
    ELSE 'granted'
END
FROM (SELECT DISTINCT tenant_id, user_id, subject FROM pg_temp.fact_batch) w
"""
#: The group's writes on a timeline (authority ``own`` or ``granted``).
_ON_TIMELINE = """
pg_temp.fact_batch b JOIN pg_temp.fact_batch_who w
    ON w.tenant_id = b.tenant_id AND w.user_id = b.user_id AND w.subject = b.subject
    AND w.authority IN ('own', 'granted')
"""
#: Per key the group writes on a timeline: its first start in the group and the key's stored
#: active fact starting last (one seek on ``facts_one_start``), if any, and its row address.
_KEYS = f"""
INSERT INTO pg_temp.fact_batch_key
SELECT k.tenant_id, k.subject, k.attribute, k.first_start, f.memory_id, f.valid_from,
       f.valid_to, f.retracted_at, f.retraction_episode_id, f.ctid
FROM (
    SELECT b.tenant_id, b.subject, b.attribute, min(b.valid_from) AS first_start
    FROM {_ON_TIMELINE} GROUP BY b.tenant_id, b.subject, b.attribute
) k LEFT JOIN LATERAL (
    SELECT h.memory_id, h.valid_from, h.valid_to, h.retracted_at, h.retraction_episode_id,
        h.ctid
    FROM {FACTS} h
    WHERE h.tenant_id = k.tenant_id AND h.subject = k.subject AND h.attribute = k.attribute
      AND h.withdrawn_at IS NULL
    ORDER BY h.valid_from DESC LIMIT 1
) f ON true
"""
#: Whether some timeline write is not an append: its key's last stored fact is closed or
#: starts at or after the group's first start there, or it starts no later than the write
#: before it on its key in the group.
_NOT_APPENDS = f"""
SELECT EXISTS (
    SELECT 1 FROM pg_temp.fact_batch_key
    WHERE memory_id IS NOT NULL AND (valid_to IS NOT NULL OR valid_from >= first_start)
) OR EXISTS (
    SELECT 1 FROM (
        SELECT b.valid_from, lag(b.valid_from) OVER (
            PARTITION BY b.tenant_id, b.subject, b.attribute ORDER BY b.seq
        ) AS before
        FROM {_ON_TIMELINE}
    ) s WHERE before >= valid_from
)
"""
#: Each key's open fact ends at the group's first start on it (superseded, not retracted):
#: found by the row address the check read it at (``ctid``, in the same transaction, its key
#: locked), so every plan is one fetch per key. (Joined on the key instead, the planner took
#: the tenant's open facts, every one checked by row security, against the group's keys: at
#: 2,000 keys four times the rows of a group of 500.) The memory id guards the address.
_CLOSE = f"""
UPDATE {FACTS} f
SET valid_to = k.first_start, retracted_at = NULL, retraction_episode_id = NULL
FROM pg_temp.fact_batch_key k
WHERE f.ctid = k.row_at AND f.tenant_id = k.tenant_id AND f.memory_id = k.memory_id
  AND f.valid_to IS NULL AND f.withdrawn_at IS NULL
"""
#: The group's rows on a timeline, key by key in the group's order: each ends where the next
#: write on its key starts and supersedes the one before it (or the key's open fact, whose
#: retraction the last of the key inherits).
_INSERT = f"""
INSERT INTO {FACTS} ({COLUMNS})
SELECT b.tenant_id, m.memory_id, b.subject, b.attribute, b.value, b.memory_type, %(version)s,
    b.valid_from, lead(b.valid_from) OVER key, m.recorded_at,
    coalesce(lag(m.memory_id) OVER key, k.memory_id), b.source_episode_id, b.source,
    b.confidence, b.retention_policy,
    CASE WHEN lead(b.seq) OVER key IS NULL THEN k.retracted_at END,
    CASE WHEN lead(b.seq) OVER key IS NULL THEN k.retraction_episode_id END,
    NULL, '[]', b.user_id
FROM {_ON_TIMELINE}
JOIN pg_temp.fact_batch_made m ON m.seq = b.seq
JOIN pg_temp.fact_batch_key k
    ON k.tenant_id = b.tenant_id AND k.subject = b.subject AND k.attribute = b.attribute
WINDOW key AS (PARTITION BY b.tenant_id, b.subject, b.attribute ORDER BY b.seq)
"""
#: The group's candidates: kept withdrawn, with source ``inferred``, outside any timeline.
_INSERT_CANDIDATES = f"""
INSERT INTO {FACTS} ({COLUMNS})
SELECT b.tenant_id, m.memory_id, b.subject, b.attribute, b.value, b.memory_type, %(version)s,
    b.valid_from, NULL, m.recorded_at, NULL, b.source_episode_id, 'inferred', b.confidence,
    b.retention_policy, NULL, NULL, m.recorded_at, '[]', b.user_id
FROM pg_temp.fact_batch_who w
JOIN pg_temp.fact_batch b
    ON b.tenant_id = w.tenant_id AND b.subject = w.subject AND b.user_id = w.user_id
JOIN pg_temp.fact_batch_made m ON m.seq = b.seq
WHERE w.authority = 'candidate'
"""
AUTHORITIES = "SELECT tenant_id, user_id, subject, authority FROM pg_temp.fact_batch_who"
_SUPERSEDED = (
    "SELECT tenant_id, subject, attribute, memory_id, retracted_at, retraction_episode_id"
    " FROM pg_temp.fact_batch_key WHERE memory_id IS NOT NULL"
)


class PgAppends:
    """:class:`memory.facts.batch.AsyncSetAppends` on a group's connection, inside its open
    transaction and pipeline, tenant and user set (see the module docstring)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], cipher: MemoryCipher) -> None:
        self.conn = conn
        self.cipher = cipher
        self._checked = False
        self._authority: dict[tuple[str, str, str], str | None] = {}
        self._cover: Covers = {}
        #: What :meth:`append_all` made: each write's memory id and clock reading.
        self._made: tuple[list[str], list[datetime]] | None = None
        #: The closing update, once sent: its cursor and the rows it must change.
        self._closing: tuple[psycopg.AsyncCursor[Any], int] | None = None

    async def check(self, group: list[PendingWrite]) -> bool:
        """The check in SQL; its answer, the authorities and the superseded facts fetched
        together (in a pipeline, one round trip with whatever was queued before)."""
        conn = self.conn
        if not all(w.delta is not None and w.now is not None for w in group):
            return False
        for sql in _TABLES:
            await conn.execute(sql)
        await conn.execute(_STAGE, self._staged(group))
        await conn.execute(_AUTHORITY)
        await conn.execute(_KEYS)
        check = await conn.execute(_NOT_APPENDS)
        who = await conn.execute(AUTHORITIES)
        superseded = await conn.execute(_SUPERSEDED)
        found = await check.fetchone()
        self._authority = {(r[0], r[1], r[2]): r[3] for r in await who.fetchall()}
        self._cover = {
            (r[0], r[1], r[2]): (r[3], None if r[4] is None else r[4].astimezone(UTC), r[5])
            for r in await superseded.fetchall()
        }
        self._checked = found is not None and not found[0]
        return self._checked

    def _staged(self, group: list[PendingWrite]) -> list[list[Any]]:
        """The group as columns, key by key (rows land in key order, each key's in the
        group's), the values sealed."""
        seal = self.cipher.seal
        columns: list[list[Any]] = [[] for _ in range(12)]
        for seq in sorted(range(len(group)), key=lambda i: group[i].key):
            w = group[seq]
            d = w.delta
            assert d is not None  # checked by check
            row = (
                w.key[0], d.subject, d.attribute, seq, canonical_json(seal(d.value)),
                d.memory_type, d.valid_from, d.source_episode_id, d.source, d.confidence,
                d.retention_policy, w.user_id,
            )  # fmt: skip
            for column, item in zip(columns, row, strict=True):
                column.append(item)
        return columns

    def appendable(self, group: list[PendingWrite]) -> bool:
        """What :meth:`check` found."""
        return self._checked

    def append_all(self, group: list[PendingWrite]) -> None:
        """Each write's memory id, clock reading and result; :meth:`write` sends the rows."""
        ids, times = [], []
        for w in group:
            times.append(w.now())  # type: ignore[misc]  # checked by check
            ids.append(new_memory_id())
        self._made = ids, times
        append_results(group, ids, times, self._authority, dict(self._cover))

    async def write(self) -> None:
        """The writes, queued (in a pipeline they travel at its next flush); the caller runs
        :meth:`check_closed` once their row counts are in, before it commits."""
        assert self._made is not None  # made by append_all
        conn = self.conn
        ids, times = self._made
        await conn.execute(_MADE, (list(range(len(ids))), ids, times))
        close = conn.cursor()
        await close.execute(_CLOSE)
        self._closing = (close, len(self._cover))
        params = {"version": RECORD_SCHEMA_VERSION}
        await conn.execute(_INSERT, params)
        await conn.execute(_INSERT_CANDIDATES, params)

    def check_closed(self) -> None:
        """Every key's open fact the check found was closed (the key locks keep them)."""
        if self._closing is not None and self._closing[0].rowcount != self._closing[1]:
            raise RuntimeError("a key's open fact vanished inside its write lock")
