"""A group of appends on SQLite, its rules applied set-wise in SQL (:class:`SqliteAppends`).

The usual import and ``record_many`` group writes every fact after everything on its key
(:meth:`memory.facts.batch.Plan._appends`). Its rules then reduce to statements over the whole
group: each write's authority (:func:`memory.facts.rules.authority_of`, per writer and
subject), whether the group is such a group at all, the closing of each key's open fact at
the group's first start on it, and each new row's end, predecessor and inherited retraction
(``lead`` and ``lag`` over the key in the group's order). Python only makes each write's tuple
-- and, for ``record_many``, the record it returns.

The group goes into temporary tables of the writing connection (``temp.fact_batch*``, emptied
by each group), staged by a few statements of up to 2,048 writes each (a statement per write
hands the GIL to the loop reading the next batch and waits to get it back, write after write).
Python makes each write's row column by column (``map``, ``zip``: no Python frame per write);
SQLite makes what Python made per write before: each new fact's memory id, and each start's
stored text (from its microseconds, :func:`memory.sql.clock.sql_time_text`). The clock is read
once the check has passed -- so a group that fails it runs its rules with the clock read as
often as row by row: per write for ``record_many``, whose writes read it as their rules do,
and once for an import's batch, one transaction whose facts are recorded at one instant. The
statements run inside the group's write transaction. Rows go in key by key, each key's in the
group's order: the order row by row gives every key's rows (reads break ties by insertion only
within a key), and the start index is walked in order (a third less than in the group's order,
at 2,000 keys); sorted in Python, since the staging b-tree takes rows in random order at
twice the cost. The overlap guards still check every row inserted: they are the second wall,
SQLite has no constraint to replace them (skipping them would take another trigger: a schema
change), and they cost about as much as the rest of the insert (100,000 rows copied in key
order: 0.65 s of processor time without them, 1.1 s with them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from functools import cache
from itertools import chain, islice
from operator import attrgetter, itemgetter
from typing import Any

from memory.facts.batch import Covers, append_results
from memory.facts.group import PendingWrite
from memory.facts.records import RECORD_SCHEMA_VERSION, canonical_json
from memory.sealing import MemoryCipher
from memory.sql.clock import encode_time, epoch_micros, sql_time_text

#: Set on the writing connection when it opens (not allowed inside a transaction): the
#: temporary tables in memory, not in a temporary file.
TEMP_IN_MEMORY = "PRAGMA temp_store = MEMORY"
#: The temporary tables, made once per connection.
#: A new fact's memory id, made by SQLite as :func:`memory.facts.records.new_memory_id` makes
#: it in Python (a version-7 UUID as 32 hex digits: 48 bits of Unix milliseconds, then 74
#: random bits) as each write is staged: Python makes no id, and no call per write.
NEW_MEMORY_ID_SQL = """printf(
    '%012x7%03x%x%015x', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
    random() & 4095, 8 | (random() & 3), random() & 1152921504606846975
)"""
_TABLES = (
    f"""
    CREATE TEMP TABLE IF NOT EXISTS fact_batch (
        tenant_id TEXT, subject TEXT, attribute TEXT, seq INTEGER, value TEXT,
        memory_type TEXT, valid_from_us INTEGER, source_episode_id TEXT, source TEXT,
        confidence REAL, retention_policy TEXT, user_id TEXT,
        memory_id TEXT NOT NULL DEFAULT ({NEW_MEMORY_ID_SQL}),
        valid_from TEXT GENERATED ALWAYS AS ({sql_time_text("valid_from_us")}) STORED,
        PRIMARY KEY (tenant_id, subject, attribute, seq)
    ) WITHOUT ROWID
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_made (seq INTEGER PRIMARY KEY, recorded_at TEXT)
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_who (
        tenant_id TEXT, user_id TEXT, subject TEXT, authority TEXT,
        PRIMARY KEY (tenant_id, user_id, subject)
    )
    """,
    """
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_writer (
        tenant_id TEXT, user_id TEXT, subject TEXT, PRIMARY KEY (tenant_id, user_id, subject)
    ) WITHOUT ROWID
    """,
    f"""
    CREATE TEMP TABLE IF NOT EXISTS fact_batch_first (
        tenant_id TEXT, subject TEXT, attribute TEXT, first_us INTEGER,
        first_start TEXT GENERATED ALWAYS AS ({sql_time_text("first_us")}) STORED,
        PRIMARY KEY (tenant_id, subject, attribute)
    ) WITHOUT ROWID
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
    for t in (
        "fact_batch", "fact_batch_made", "fact_batch_who", "fact_batch_writer", "fact_batch_first",
        "fact_batch_key",
    )
)  # fmt: skip
#: The staged columns (``memory_id`` is its default), and the most rows one statement stages:
#: a statement per up to 2,048 writes rather than a step per write (each step hands the GIL
#: over and back, and the loop reading the next batch holds it meanwhile).
_STAGED = (
    "tenant_id, subject, attribute, seq, value, memory_type, valid_from_us, source_episode_id,"
    " source, confidence, retention_policy, user_id"
)
_STAGED_WIDTH = _STAGED.count(",") + 1
_STAGE_ROWS = 2048
_MADE = "INSERT INTO temp.fact_batch_made VALUES (?, ?)"


def authority_sql(writers: str) -> str:
    """Each writer's authority over each subject it writes, into ``temp.fact_batch_who``:
    :func:`memory.facts.rules.authority_of` (``own``, ``granted``, ``candidate`` or NULL), one
    grants seek per (writer, subject) of ``writers`` (rows of tenant, user and subject)."""
    return f"""
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
FROM ({writers}) w
"""


_AUTHORITY = authority_sql("SELECT DISTINCT tenant_id, user_id, subject FROM temp.fact_batch")
#: The group's writes on a timeline (authority ``own`` or ``granted``).
_ON_TIMELINE = """
temp.fact_batch b JOIN temp.fact_batch_who w
    ON w.tenant_id = b.tenant_id AND w.user_id = b.user_id AND w.subject = b.subject
    AND w.authority IN ('own', 'granted')
"""


def keys_sql(firsts: str) -> str:
    """Per key of ``firsts`` (rows of tenant, subject, attribute and the group's first start
    there), that start and the key's stored active fact starting last (one seek on
    ``facts_one_start``), if any, into ``temp.fact_batch_key``."""
    return f"""
INSERT INTO temp.fact_batch_key
SELECT k.tenant_id, k.subject, k.attribute, k.first_start, f.memory_id, f.valid_from,
       f.valid_to, f.retracted_at, f.retraction_episode_id
FROM ({firsts}) k LEFT JOIN main.facts f ON f.rowid = (
    SELECT h.rowid FROM main.facts h
    WHERE h.tenant_id = k.tenant_id AND h.subject = k.subject AND h.attribute = k.attribute
      AND h.withdrawn_at IS NULL
    ORDER BY h.valid_from DESC LIMIT 1
)
"""


#: Per key the group writes on a timeline: its first start in the group.
_KEYS = keys_sql(
    f"""SELECT b.tenant_id, b.subject, b.attribute, min(b.valid_from) AS first_start
    FROM {_ON_TIMELINE} GROUP BY b.tenant_id, b.subject, b.attribute"""
)
#: Whether some key's stored active fact starting last is closed or starts at or after the
#: group's first start there: then the group is not a group of appends.
STORED_NOT_BEFORE = """
SELECT EXISTS (
    SELECT 1 FROM temp.fact_batch_key
    WHERE memory_id IS NOT NULL AND (valid_to IS NOT NULL OR valid_from >= first_start)
)
"""
#: Whether some timeline write is not an append: its key's last stored fact is closed or
#: starts at or after the group's first start there, or it starts no later than the write
#: before it on its key in the group.
_NOT_APPENDS = f"""
SELECT ({STORED_NOT_BEFORE}) OR EXISTS (
    SELECT 1 FROM (
        SELECT b.valid_from, lag(b.valid_from) OVER (
            PARTITION BY b.tenant_id, b.subject, b.attribute ORDER BY b.seq
        ) AS before
        FROM {_ON_TIMELINE}
    ) WHERE before >= valid_from
)
"""
#: Each key's open fact ends at the group's first start on it (superseded, not retracted).
CLOSE = """
UPDATE main.facts SET valid_to = k.first_start, retracted_at = NULL, retraction_episode_id = NULL
FROM temp.fact_batch_key k
WHERE k.memory_id IS NOT NULL AND facts.tenant_id = k.tenant_id
  AND facts.memory_id = k.memory_id AND facts.withdrawn_at IS NULL
"""
COLUMNS = """
    tenant_id, memory_id, subject, attribute, value, memory_type, schema_version, valid_from,
    valid_to, recorded_at, supersedes_memory_id, source_episode_id, source, confidence,
    retention_policy, retracted_at, retraction_episode_id, withdrawn_at, restated_in,
    recorded_by
"""
#: Where each write's clock reading comes from: per write, staged (``record_many``, whose
#: writes read the clock as their rules do), or one reading for the whole group (an import's
#: batch, one transaction: its facts are recorded at one instant).
_PER_WRITE = ("m.recorded_at", "JOIN temp.fact_batch_made m ON m.seq = b.seq")
_PER_GROUP = (":recorded_at", "")


def _inserts(recorded_at: str, made: str) -> tuple[str, str]:
    """The group's two inserts, each write's clock reading taken from ``recorded_at`` (after
    the join ``made``): its rows on a timeline, key by key in the group's order (the staging
    table's: each ends where the next write on its key starts and supersedes the one before
    it, or the key's open fact, whose retraction the last of the key inherits); then its
    candidates, kept withdrawn, with source ``inferred``, outside any timeline (run only when
    some writer's authority is ``candidate``: it scans the staged rows)."""
    timeline = f"""
INSERT INTO main.facts ({COLUMNS})
SELECT b.tenant_id, b.memory_id, b.subject, b.attribute, b.value, b.memory_type, :version,
    b.valid_from, lead(b.valid_from) OVER key, {recorded_at},
    coalesce(lag(b.memory_id) OVER key, k.memory_id), b.source_episode_id, b.source,
    b.confidence, b.retention_policy,
    CASE WHEN lead(b.seq) OVER key IS NULL THEN k.retracted_at END,
    CASE WHEN lead(b.seq) OVER key IS NULL THEN k.retraction_episode_id END,
    NULL, '[]', b.user_id
FROM {_ON_TIMELINE}
{made}
JOIN temp.fact_batch_key k
    ON k.tenant_id = b.tenant_id AND k.subject = b.subject AND k.attribute = b.attribute
WINDOW key AS (PARTITION BY b.tenant_id, b.subject, b.attribute ORDER BY b.seq)
"""
    candidates = f"""
INSERT INTO main.facts ({COLUMNS})
SELECT b.tenant_id, b.memory_id, b.subject, b.attribute, b.value, b.memory_type, :version,
    b.valid_from, NULL, {recorded_at}, NULL, b.source_episode_id, 'inferred', b.confidence,
    b.retention_policy, NULL, NULL, {recorded_at}, '[]', b.user_id
FROM temp.fact_batch_who w
JOIN temp.fact_batch b
    ON b.tenant_id = w.tenant_id AND b.subject = w.subject AND b.user_id = w.user_id
{made}
WHERE w.authority = 'candidate'
"""
    return timeline, candidates


_INSERTS = {True: _inserts(*_PER_WRITE), False: _inserts(*_PER_GROUP)}
#: Whether the group has candidates at all (most have none: then their insert, which scans
#: the staged rows, is not run).
_HAS_CANDIDATES = "SELECT EXISTS (SELECT 1 FROM temp.fact_batch_who WHERE authority = 'candidate')"
_AUTHORITIES = "SELECT tenant_id, user_id, subject, authority FROM temp.fact_batch_who"
#: The ids SQLite made, in the group's order (for the records ``record_many`` returns).
_IDS = "SELECT memory_id FROM temp.fact_batch ORDER BY seq"
SUPERSEDED = (
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
        reset_tables(conn)
        _stage(conn, self._staged(group))
        conn.execute(_AUTHORITY)
        conn.execute(_KEYS)
        return not conn.execute(_NOT_APPENDS).fetchone()[0]

    def _staged(self, group: list[PendingWrite]) -> Iterator[tuple[Any, ...]]:
        """Each write's row, key by key (the staging table's order: each row lands at its
        b-tree's right edge), made column by column by ``map`` and ``zip``: no Python
        frame per write (a tuple made by a generator's frame cost 5 us a write)."""
        order = sorted(range(len(group)), key=list(map(_KEY, group)).__getitem__)
        writes = list(map(group.__getitem__, order))
        keys = list(map(_KEY, writes))
        deltas = list(map(_DELTA, writes))
        values: Iterator[Any] = map(_VALUE, deltas)
        if self.cipher.sealing:
            values = map(self.cipher.seal, values)
        return zip(
            map(_TENANT, keys), map(_SUBJECT, keys), map(_ATTRIBUTE, keys), order,
            map(canonical_json, values), map(_MEMORY_TYPE, deltas),
            epoch_micros(map(_VALID_FROM, deltas)), map(_EPISODE, deltas),
            map(_SOURCE, deltas), map(_CONFIDENCE, deltas), map(_RETENTION, deltas),
            map(_USER, writes), strict=True,
        )  # fmt: skip

    def append_all(self, group: list[PendingWrite]) -> None:
        conn = self.conn
        per_write = any(map(_RETURNS_RECORD, group))
        if per_write:  # record_many: each write reads the clock, as its rules do
            times = [w.now() for w in group]  # type: ignore[misc]  # checked by appendable
            texts = [encode_time(t) for t in times]
            conn.executemany(_MADE, zip(range(len(group)), texts, strict=True))
            params: dict[str, Any] = {"version": RECORD_SCHEMA_VERSION}
        else:  # an import's batch: one reading, the instant its transaction records
            at = group[0].now()  # type: ignore[misc]  # checked by appendable
            times = [at] * len(group)
            params = {"version": RECORD_SCHEMA_VERSION, "recorded_at": encode_time(at)}
        timeline, candidates = _INSERTS[per_write]
        closed = len(conn.execute(SUPERSEDED).fetchall())
        if conn.execute(CLOSE).rowcount != closed:
            raise RuntimeError("a key's open fact vanished inside the write transaction")
        conn.execute(timeline, params)
        if conn.execute(_HAS_CANDIDATES).fetchone()[0]:
            conn.execute(candidates, params)
        ids = [r[0] for r in conn.execute(_IDS)] if per_write else [""] * len(group)
        self._results(group, ids, times)

    def _results(self, group: list[PendingWrite], ids: list[str], times: list[datetime]) -> None:
        """What each write returns (:func:`memory.facts.batch.append_results`)."""
        conn = self.conn
        authority = {(r[0], r[1], r[2]): r[3] for r in conn.execute(_AUTHORITIES)}
        cover: Covers = {
            (r[0], r[1], r[2]): (r[3], None if r[4] is None else _time(r[4]), r[5])
            for r in conn.execute(SUPERSEDED)
        }
        append_results(group, ids, times, authority, cover)


_KEY = attrgetter("key")
_DELTA = attrgetter("delta")
_USER = attrgetter("user_id")
_RETURNS_RECORD = attrgetter("returns_record")
_TENANT, _SUBJECT, _ATTRIBUTE = itemgetter(0), itemgetter(1), itemgetter(2)
_VALUE, _VALID_FROM = attrgetter("value"), attrgetter("valid_from")
_MEMORY_TYPE, _EPISODE = attrgetter("memory_type"), attrgetter("source_episode_id")
_SOURCE, _CONFIDENCE = attrgetter("source"), attrgetter("confidence")
_RETENTION = attrgetter("retention_policy")


def _stage(conn: sqlite3.Connection, rows: Iterator[tuple[Any, ...]]) -> None:
    """Insert ``rows`` into the staging table, up to :data:`_STAGE_ROWS` a statement; each
    statement's size a power of two, so that every group reuses the same few statements."""
    size = _STAGE_ROWS
    while True:
        chunk = list(islice(rows, size))
        if len(chunk) == size:
            conn.execute(_stage_sql(size), list(chain.from_iterable(chunk)))
            continue
        rest = chunk
        while rest:
            size = 1 << (len(rest).bit_length() - 1)
            conn.execute(_stage_sql(size), list(chain.from_iterable(rest[:size])))
            rest = rest[size:]
        return


@cache
def _stage_sql(rows: int) -> str:
    """The staging statement for ``rows`` writes."""
    row = "(" + ", ".join("?" * _STAGED_WIDTH) + ")"
    return f"INSERT INTO temp.fact_batch ({_STAGED}) VALUES " + ", ".join([row] * rows)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def reset_tables(conn: sqlite3.Connection) -> None:
    """The connection's temporary tables, made if missing, emptied."""
    for sql in _TABLES if not _has_tables(conn) else ():
        conn.execute(sql)
    for sql in _EMPTY:
        conn.execute(sql)


def _has_tables(conn: sqlite3.Connection) -> bool:
    """Whether this connection made its temporary tables already (they live as long as it)."""
    found = conn.execute(
        "SELECT 1 FROM temp.sqlite_master WHERE type = 'table' AND name = 'fact_batch_key'"
    ).fetchone()
    return found is not None
