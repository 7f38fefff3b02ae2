"""A group of appends on SQLite, its rules applied set-wise in SQL (:class:`SqliteAppends`).

The usual import and ``record_many`` group writes every fact after everything on its key
(:meth:`memory.facts.batch.Plan._appends`). Its rules then reduce to statements over the whole
group: each write's authority (:func:`memory.facts.rules.authority_of`, per writer and
subject), whether the group is such a group at all, the closing of each key's open fact at
the group's first start on it, and each new row's end, predecessor and inherited retraction
(``lead`` and ``lag`` over the key in the group's order). Python only makes each write's tuple
-- and, for ``record_many``, the record it returns.

The group goes into temporary tables of the writing connection (``temp.fact_batch*``, emptied
by each group) by two ``executemany``: first what the check needs, then, once the check has
passed, each write's memory id and clock reading -- so a group that fails the check runs its
rules with the clock read as often as row by row. The statements run inside the group's
write transaction. Rows go in key by key, each key's in the group's order: the order row by
row gives every key's rows (reads break ties by insertion only within a key), and the start
index is walked in order (a third less than in the group's order, at 2,000 keys). The
overlap guards still check every row inserted: they are the second wall, SQLite has no
constraint to replace them (skipping them would take another trigger: a schema change), and
they cost about as much as the rest of the insert (100,000 rows copied in key order: 0.65 s
of processor time without them, 1.1 s with them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from memory.facts.batch import Covers, append_results
from memory.facts.group import PendingWrite
from memory.facts.records import RECORD_SCHEMA_VERSION, canonical_json, new_memory_id
from memory.sealing import MemoryCipher
from memory.sql.clock import encode_time

#: Set on the writing connection when it opens (not allowed inside a transaction): the
#: temporary tables in memory, not in a temporary file.
TEMP_IN_MEMORY = "PRAGMA temp_store = MEMORY"
#: The temporary tables, made once per connection.
_TABLES = (
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch (
        tenant_id TEXT, subject TEXT, attribute TEXT, seq INTEGER, value TEXT,
        memory_type TEXT, valid_from TEXT, source_episode_id TEXT, source TEXT,
        confidence REAL, retention_policy TEXT, user_id TEXT,
        PRIMARY KEY (tenant_id, subject, attribute, seq)
    ) WITHOUT ROWID
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_made (
        seq INTEGER PRIMARY KEY, memory_id TEXT, recorded_at TEXT
    )
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_who (
        tenant_id TEXT, user_id TEXT, subject TEXT, authority TEXT,
        PRIMARY KEY (tenant_id, user_id, subject)
    )
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_key (
        tenant_id TEXT, subject TEXT, attribute TEXT, first_start TEXT, memory_id TEXT,
        valid_from TEXT, valid_to TEXT, retracted_at TEXT, retraction_episode_id TEXT,
        PRIMARY KEY (tenant_id, subject, attribute)
    )
    """,
)
_EMPTY = tuple(
    f"DELETE FROM temp.{t}"
    for t in ("fact_batch", "fact_batch_made", "fact_batch_who", "fact_batch_key")
)
_STAGE = "INSERT INTO temp.fact_batch VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_MADE = "INSERT INTO temp.fact_batch_made VALUES (?, ?, ?)"

#: Each writer's authority over each subject it writes: :func:`memory.facts.rules.authority_of`
#: (``own``, ``granted``, ``candidate`` or NULL), one grants seek per (writer, subject).
_AUTHORITY = """
INSERT INTO temp.fact_batch_who
SELECT w.tenant_id, w.user_id, w.subject, CASE
    WHEN w.user_id = '' THEN NULL
    WHEN w.subject = 'user:' || w.user_id THEN 'own'
    WHEN NOT EXISTS (
        SELECT 1 FROM main.fact_grants g
        WHERE g.tenant_id = w.tenant_id AND g.user_id = w.user_id AND (
            g.role = 'admin' OR (g.role = 'writer' AND (
                g.subject = w.subject OR (
                    substr(g.subject, -1) = '*'
                    AND substr(w.subject, 1, length(g.subject) - 1)
                        = substr(g.subject, 1, length(g.subject) - 1)
                )
            ))
        )
    ) THEN NULL
    WHEN substr(w.subject, 1, 5) = 'user:' THEN 'candidate'
    ELSE 'granted'
END
FROM (SELECT DISTINCT tenant_id, user_id, subject FROM temp.fact_batch) w
"""
#: The group's writes on a timeline (authority ``own`` or ``granted``).
_ON_TIMELINE = """
temp.fact_batch b JOIN temp.fact_batch_who w
    ON w.tenant_id = b.tenant_id AND w.user_id = b.user_id AND w.subject = b.subject
    AND w.authority IN ('own', 'granted')
"""
#: Per key the group writes on a timeline: its first start in the group and the key's stored
#: active fact starting last (one seek on ``facts_one_start``), if any.
_KEYS = f"""
INSERT INTO temp.fact_batch_key
SELECT k.tenant_id, k.subject, k.attribute, k.first_start, f.memory_id, f.valid_from,
       f.valid_to, f.retracted_at, f.retraction_episode_id
FROM (
    SELECT b.tenant_id, b.subject, b.attribute, min(b.valid_from) AS first_start
    FROM {_ON_TIMELINE} GROUP BY b.tenant_id, b.subject, b.attribute
) k LEFT JOIN main.facts f ON f.rowid = (
    SELECT h.rowid FROM main.facts h
    WHERE h.tenant_id = k.tenant_id AND h.subject = k.subject AND h.attribute = k.attribute
      AND h.withdrawn_at IS NULL
    ORDER BY h.valid_from DESC LIMIT 1
)
"""
#: Whether some timeline write is not an append: its key's last stored fact is closed or
#: starts at or after the group's first start there, or it starts no later than the write
#: before it on its key in the group.
_NOT_APPENDS = f"""
SELECT EXISTS (
    SELECT 1 FROM temp.fact_batch_key
    WHERE memory_id IS NOT NULL AND (valid_to IS NOT NULL OR valid_from >= first_start)
) OR EXISTS (
    SELECT 1 FROM (
        SELECT b.valid_from, lag(b.valid_from) OVER (
            PARTITION BY b.tenant_id, b.subject, b.attribute ORDER BY b.seq
        ) AS before
        FROM {_ON_TIMELINE}
    ) WHERE before >= valid_from
)
"""
#: Each key's open fact ends at the group's first start on it (superseded, not retracted).
_CLOSE = """
UPDATE main.facts SET valid_to = k.first_start, retracted_at = NULL, retraction_episode_id = NULL
FROM temp.fact_batch_key k
WHERE k.memory_id IS NOT NULL AND facts.tenant_id = k.tenant_id
  AND facts.memory_id = k.memory_id AND facts.withdrawn_at IS NULL
"""
_COLUMNS = """
    tenant_id, memory_id, subject, attribute, value, memory_type, schema_version, valid_from,
    valid_to, recorded_at, supersedes_memory_id, source_episode_id, source, confidence,
    retention_policy, retracted_at, retraction_episode_id, withdrawn_at, restated_in,
    recorded_by
"""
#: The group's rows on a timeline, key by key in the group's order (the staging table's):
#: each ends where the next write on its key starts and supersedes the one before it (or the
#: key's open fact, whose retraction the last of the key inherits).
_INSERT = f"""
INSERT INTO main.facts ({_COLUMNS})
SELECT b.tenant_id, m.memory_id, b.subject, b.attribute, b.value, b.memory_type, :version,
    b.valid_from, lead(b.valid_from) OVER key, m.recorded_at,
    coalesce(lag(m.memory_id) OVER key, k.memory_id), b.source_episode_id, b.source,
    b.confidence, b.retention_policy,
    CASE WHEN lead(b.seq) OVER key IS NULL THEN k.retracted_at END,
    CASE WHEN lead(b.seq) OVER key IS NULL THEN k.retraction_episode_id END,
    NULL, '[]', b.user_id
FROM {_ON_TIMELINE}
JOIN temp.fact_batch_made m ON m.seq = b.seq
JOIN temp.fact_batch_key k
    ON k.tenant_id = b.tenant_id AND k.subject = b.subject AND k.attribute = b.attribute
WINDOW key AS (PARTITION BY b.tenant_id, b.subject, b.attribute ORDER BY b.seq)
"""
#: The group's candidates: kept withdrawn, with source ``inferred``, outside any timeline
#: (run only when some writer's authority is ``candidate``: it scans the staged rows).
_INSERT_CANDIDATES = f"""
INSERT INTO main.facts ({_COLUMNS})
SELECT b.tenant_id, m.memory_id, b.subject, b.attribute, b.value, b.memory_type, :version,
    b.valid_from, NULL, m.recorded_at, NULL, b.source_episode_id, 'inferred', b.confidence,
    b.retention_policy, NULL, NULL, m.recorded_at, '[]', b.user_id
FROM temp.fact_batch_who w
JOIN temp.fact_batch b
    ON b.tenant_id = w.tenant_id AND b.subject = w.subject AND b.user_id = w.user_id
JOIN temp.fact_batch_made m ON m.seq = b.seq
WHERE w.authority = 'candidate'
"""
#: Whether the group has candidates at all (most have none: then their insert, which scans
#: the staged rows, is not run).
_HAS_CANDIDATES = "SELECT EXISTS (SELECT 1 FROM temp.fact_batch_who WHERE authority = 'candidate')"
_AUTHORITIES = "SELECT tenant_id, user_id, subject, authority FROM temp.fact_batch_who"
_SUPERSEDED = (
    "SELECT tenant_id, subject, attribute, memory_id, retracted_at, retraction_episode_id"
    " FROM temp.fact_batch_key WHERE memory_id IS NOT NULL"
)


class SqliteAppends:
    """:class:`memory.facts.batch.SetAppends` on the writing connection, inside the group's
    open write transaction (see the module docstring)."""

    def __init__(self, conn: sqlite3.Connection, cipher: MemoryCipher) -> None:
        self.conn = conn
        self.cipher = cipher

    def appendable(self, group: list[PendingWrite]) -> bool:
        conn = self.conn
        if not all(w.delta is not None and w.now is not None for w in group):
            return False
        for sql in _TABLES if not _has_tables(conn) else ():
            conn.execute(sql)
        for sql in _EMPTY:
            conn.execute(sql)
        conn.executemany(_STAGE, self._staged(group))
        conn.execute(_AUTHORITY)
        conn.execute(_KEYS)
        return not conn.execute(_NOT_APPENDS).fetchone()[0]

    def _staged(self, group: list[PendingWrite]) -> Iterator[tuple[Any, ...]]:
        """Each write's tuple, key by key (the staging table's order: each row lands at its
        b-tree's right edge), made one at a time: the one pass of Python per fact before
        the check. (A list of them all would be 50,000 tuples for the garbage collector to
        walk while it lives.)"""
        seal = self.cipher.seal
        for seq in sorted(range(len(group)), key=lambda i: group[i].key):
            w = group[seq]
            d = w.delta
            assert d is not None  # checked by appendable
            yield (
                w.key[0], d.subject, d.attribute, seq, canonical_json(seal(d.value)),
                d.memory_type, encode_time(d.valid_from), d.source_episode_id, d.source,
                d.confidence, d.retention_policy, w.user_id,
            )  # fmt: skip

    def append_all(self, group: list[PendingWrite]) -> None:
        conn = self.conn
        ids, times, texts = self._made(group)
        conn.executemany(_MADE, zip(range(len(group)), ids, texts, strict=True))
        closed = len(conn.execute(_SUPERSEDED).fetchall())
        if conn.execute(_CLOSE).rowcount != closed:
            raise RuntimeError("a key's open fact vanished inside the write transaction")
        conn.execute(_INSERT, {"version": RECORD_SCHEMA_VERSION})
        if conn.execute(_HAS_CANDIDATES).fetchone()[0]:
            conn.execute(_INSERT_CANDIDATES, {"version": RECORD_SCHEMA_VERSION})
        self._results(group, ids, times)

    @staticmethod
    def _made(group: list[PendingWrite]) -> tuple[list[str], list[datetime], list[str]]:
        """Each write's memory id and clock reading (one per write, as the rules take), the
        reading also as stored; lists of plain values, which the collector does not walk."""
        ids, times, texts = [], [], []
        last: datetime | None = None
        text = ""
        for w in group:
            at = w.now()  # type: ignore[misc]  # checked by appendable
            if at != last:
                last, text = at, encode_time(at)
            ids.append(new_memory_id())
            times.append(at)
            texts.append(text)
        return ids, times, texts

    def _results(self, group: list[PendingWrite], ids: list[str], times: list[datetime]) -> None:
        """What each write returns (:func:`memory.facts.batch.append_results`)."""
        conn = self.conn
        authority = {(r[0], r[1], r[2]): r[3] for r in conn.execute(_AUTHORITIES)}
        cover: Covers = {
            (r[0], r[1], r[2]): (r[3], None if r[4] is None else _time(r[4]), r[5])
            for r in conn.execute(_SUPERSEDED)
        }
        append_results(group, ids, times, authority, cover)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _has_tables(conn: sqlite3.Connection) -> bool:
    """Whether this connection made its temporary tables already (they live as long as it)."""
    found = conn.execute(
        "SELECT 1 FROM temp.sqlite_master WHERE type = 'table' AND name = 'fact_batch_key'"
    ).fetchone()
    return found is not None
