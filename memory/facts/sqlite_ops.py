"""The SQLite fact ledger's SQL: statements, row coding, and the read and write operations
(:class:`memory.facts.rules.ReadOps`, :class:`memory.facts.rules.KeyOps`) the store drives.

Every statement names the tenant (``tenant_id = ?``); read and write authority are checked by
the store's rules (:mod:`memory.facts.rules`), a SQLite file having no roles. Times are
ISO-8601 text in UTC, values canonical JSON (sealed when a cipher is set).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory.facts.records import FactRecord, Grant, canonical_json
from memory.facts.rules import NOT_READ, Key, NotRead, Request
from memory.sealing import MemoryCipher
from memory.sql.clock import encode_optional, encode_time

COLUMNS = (
    "tenant_id, memory_id, subject, attribute, value, memory_type, schema_version, valid_from, "
    "valid_to, recorded_at, supersedes_memory_id, source_episode_id, source, confidence, "
    "retention_policy, retracted_at, retraction_episode_id, withdrawn_at, restated_in, recorded_by"
)

_KEY = "tenant_id = ? AND subject = ? AND attribute = ?"
_ACTIVE = "withdrawn_at IS NULL"

_OPEN_FACT = f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND valid_to IS NULL AND {_ACTIVE}"
_LAST_FROM = (
    f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {_ACTIVE} AND valid_from <= ?"
    " ORDER BY valid_from DESC LIMIT 1"
)
_LAST_BEFORE = (
    f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {_ACTIVE} AND valid_from < ?"
    " ORDER BY valid_from DESC LIMIT 1"
)
_NEXT_START = (
    f"SELECT valid_from FROM facts WHERE {_KEY} AND {_ACTIVE} AND valid_from > ?"
    " ORDER BY valid_from LIMIT 1"
)
_HISTORY = (
    f"SELECT {COLUMNS} FROM facts WHERE {_KEY}"
    " ORDER BY valid_from, recorded_at, withdrawn_at IS NULL, withdrawn_at, rowid"
)
#: A subject's records named by memory id or citing an episode (ids and episodes as JSON).
_RELATED = (
    f"SELECT {COLUMNS} FROM facts WHERE tenant_id = ? AND subject = ? AND ("
    "memory_id IN (SELECT value FROM json_each(?))"
    " OR source_episode_id IN (SELECT value FROM json_each(?))"
    " OR EXISTS (SELECT 1 FROM json_each(restated_in)"
    " WHERE value IN (SELECT value FROM json_each(?))))"
    " ORDER BY attribute, valid_from, recorded_at, rowid"
)
#: Every attribute of a subject in one statement: a loose index scan over its attribute names
#: (one seek per attribute), then one ``as_of`` seek per attribute.
_PROFILE = f"""
WITH RECURSIVE names(attribute) AS (
    SELECT (SELECT min(attribute) FROM facts
            WHERE tenant_id = :tenant AND subject = :subject AND {_ACTIVE})
    UNION ALL
    SELECT (SELECT min(g.attribute) FROM facts g
            WHERE g.tenant_id = :tenant AND g.subject = :subject AND g.withdrawn_at IS NULL
              AND g.attribute > names.attribute)
    FROM names WHERE names.attribute IS NOT NULL
)
SELECT {", ".join("f." + c.strip() for c in COLUMNS.split(","))}
FROM names JOIN facts f ON f.rowid = (
    SELECT h.rowid FROM facts h
    WHERE h.tenant_id = :tenant AND h.subject = :subject AND h.attribute = names.attribute
      AND h.withdrawn_at IS NULL AND h.valid_from <= :at
    ORDER BY h.valid_from DESC LIMIT 1
)
WHERE names.attribute IS NOT NULL AND (f.valid_to IS NULL OR f.valid_to > :at)
"""
_INSERT = f"INSERT INTO facts ({COLUMNS}) VALUES ({', '.join('?' * 20)})"
_UPDATE_WHERE = " WHERE tenant_id = ? AND memory_id = ? AND withdrawn_at IS NULL"
_F_COLUMNS = ", ".join("f." + c.strip() for c in COLUMNS.split(","))
_SEEK = (
    "SELECT h.rowid FROM facts h WHERE h.tenant_id = q.t AND h.subject = q.s"
    " AND h.attribute = q.a AND h.withdrawn_at IS NULL AND h.valid_from {op} q.{end}"
    " ORDER BY h.valid_from {order} LIMIT 1"
)
#: For every (tenant, subject, attribute, first start, last start) of a JSON array, the key's
#: active facts from the one starting last at or before the first start to the one starting
#: first after the last: seeks on ``facts_one_start``, one statement (:mod:`memory.facts.batch`).
_PREFETCH = f"""
WITH q(t, s, a, lo, hi) AS (
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?)
)
SELECT {_F_COLUMNS} FROM q JOIN facts f
    ON f.rowid = ({_SEEK.format(op="<=", end="lo", order="DESC")})
UNION ALL
SELECT {_F_COLUMNS} FROM q JOIN facts f
    ON f.tenant_id = q.t AND f.subject = q.s AND f.attribute = q.a AND f.withdrawn_at IS NULL
    AND f.valid_from > q.lo AND f.valid_from <= q.hi
UNION ALL
SELECT {_F_COLUMNS} FROM q JOIN facts f
    ON f.rowid = ({_SEEK.format(op=">", end="hi", order="ASC")})
"""
#: For every (tenant, subject, attribute) of a JSON array, the key's open fact: one seek each
#: on ``facts_one_open``. Where it starts at or before the group's first start on the key, it
#: is all the prefetch needs (:meth:`Writes.prefetch`).
_PREFETCH_OPEN = f"""
WITH q(t, s, a) AS (SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?))
SELECT {_F_COLUMNS} FROM q JOIN facts f
    ON f.tenant_id = q.t AND f.subject = q.s AND f.attribute = q.a
    AND f.valid_to IS NULL AND f.withdrawn_at IS NULL
"""
#: A stored row's end state after a planned group: everything a write may change.
_CHANGE = (
    "UPDATE facts SET valid_to = ?, retracted_at = ?, retraction_episode_id = ?,"
    " withdrawn_at = ?, restated_in = ?" + _UPDATE_WHERE
)
#: The same for a row whose only change is its end: the columns of neither partial index's
#: condition but ``valid_to``, so ``facts_one_start`` is left alone.
_END = "UPDATE facts SET valid_to = ?, retracted_at = ?, retraction_episode_id = ?" + _UPDATE_WHERE
GRANTS_OF = "SELECT role, subject FROM fact_grants WHERE tenant_id = ? AND user_id = ?"
GRANT_COLUMNS = "tenant_id, user_id, role, subject, granted_by, granted_at"


fromiso = datetime.fromisoformat


def value_of(text: str) -> Any:
    """A stored value's JSON text, decoded: what ``json.loads`` gives for every text the
    ledger writes, cheaper for a string.

    The ledger's JSON escapes every quote, backslash, control and non-ASCII character inside
    a string, so a quoted text with neither a quote nor a backslash inside is its own value
    -- most values, at a quarter of ``json.loads``' cost. (A raw control character between
    quotes, which no writer of the ledger makes, is taken as it is here.)
    """
    inner = text[1:-1]
    if text[:1] == '"' == text[-1:] and len(text) > 1 and '"' not in inner and "\\" not in inner:
        return inner
    return json.loads(text)


def record_of(row: tuple[Any, ...], cipher: MemoryCipher) -> FactRecord:
    """A row of ``COLUMNS`` as a record, its value opened (positional: this runs once per
    read)."""
    return FactRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        cipher.open(value_of(row[4])),
        row[5],
        row[6],
        fromiso(row[7]),
        None if row[8] is None else fromiso(row[8]),
        fromiso(row[9]),
        row[10],
        row[11],
        row[12],
        row[13],
        row[14],
        None if row[15] is None else fromiso(row[15]),
        row[16],
        None if row[17] is None else fromiso(row[17]),
        tuple(json.loads(row[18])) if row[18] != "[]" else (),
        row[19],
    )


def record_row(record: FactRecord, cipher: MemoryCipher) -> tuple[Any, ...]:
    return (
        record.tenant_id,
        record.memory_id,
        record.subject,
        record.attribute,
        canonical_json(cipher.seal(record.value)),
        record.memory_type,
        record.schema_version,
        encode_time(record.valid_from),
        encode_optional(record.valid_to),
        encode_time(record.recorded_at),
        record.supersedes_memory_id,
        record.source_episode_id,
        record.source,
        record.confidence,
        record.retention_policy,
        encode_optional(record.retracted_at),
        record.retraction_episode_id,
        encode_optional(record.withdrawn_at),
        json.dumps(list(record.restated_in)) if record.restated_in else "[]",
        record.recorded_by,
    )


def grant_row(grant: Grant) -> tuple[Any, ...]:
    return (
        grant.tenant_id,
        grant.user_id,
        grant.role,
        grant.subject,
        grant.granted_by,
        encode_optional(grant.granted_at),
    )


class Reads:
    """:class:`memory.facts.base.ReadOps` over the reading connection (plain methods)."""

    def __init__(
        self, conn: sqlite3.Connection, lock: threading.Lock, cipher: MemoryCipher
    ) -> None:
        self.conn = conn
        self.lock = lock
        self.cipher = cipher

    def open_fact(self, key: Key) -> FactRecord | None:
        with self.lock:
            row = self.conn.execute(_OPEN_FACT, key).fetchone()
        return None if row is None else record_of(row, self.cipher)

    def last_from(self, key: Key, at: datetime) -> FactRecord | None:
        with self.lock:
            row = self.conn.execute(_LAST_FROM, (*key, encode_time(at))).fetchone()
        return None if row is None else record_of(row, self.cipher)

    def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]:
        params = {"tenant": tenant_id, "subject": subject, "at": encode_time(at)}
        with self.lock:
            rows = self.conn.execute(_PROFILE, params).fetchall()
        return [record_of(row, self.cipher) for row in rows]

    def history(self, key: Key) -> list[FactRecord]:
        with self.lock:
            rows = self.conn.execute(_HISTORY, key).fetchall()
        return [record_of(row, self.cipher) for row in rows]

    def related(
        self, tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> list[FactRecord]:
        named, cited = json.dumps(list(ids)), json.dumps(list(episodes))
        with self.lock:
            rows = self.conn.execute(_RELATED, (tenant_id, subject, named, cited, cited))
            found = rows.fetchall()
        return [record_of(row, self.cipher) for row in found]

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        with self.lock:
            return self.conn.execute(GRANTS_OF, (tenant_id, user_id)).fetchall()

    def grants_and(self, tenant_id: str, user_id: str, request: Request) -> tuple[Any, NotRead]:
        """The grants alone: SQLite has no row security, so no fact is read before the
        rules have seen the grants (:func:`memory.facts.rules.read_authority_rules`)."""
        return self.grants(tenant_id, user_id), NOT_READ


class AsyncReads:
    """The same reads with ``async`` methods, run inline (see the module docstring)."""

    def __init__(self, reads: Reads) -> None:
        self._reads = reads

    async def open_fact(self, key: Key) -> FactRecord | None:
        return self._reads.open_fact(key)

    async def last_from(self, key: Key, at: datetime) -> FactRecord | None:
        return self._reads.last_from(key, at)

    async def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]:
        return self._reads.profile(tenant_id, subject, at)

    async def history(self, key: Key) -> list[FactRecord]:
        return self._reads.history(key)

    async def related(
        self, tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> list[FactRecord]:
        return self._reads.related(tenant_id, subject, ids, episodes)

    async def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        return self._reads.grants(tenant_id, user_id)

    async def grants_and(
        self, tenant_id: str, user_id: str, request: Request
    ) -> tuple[Any, NotRead]:
        return self._reads.grants_and(tenant_id, user_id, request)


class ThreadedReads(AsyncReads):
    """The same reads on a worker thread: for a server's event loop, which must never block
    (``langgraph dev`` refuses blocking calls there). Costs a thread hop per read."""

    async def open_fact(self, key: Key) -> FactRecord | None:
        return await asyncio.to_thread(self._reads.open_fact, key)

    async def last_from(self, key: Key, at: datetime) -> FactRecord | None:
        return await asyncio.to_thread(self._reads.last_from, key, at)

    async def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]:
        return await asyncio.to_thread(self._reads.profile, tenant_id, subject, at)

    async def history(self, key: Key) -> list[FactRecord]:
        return await asyncio.to_thread(self._reads.history, key)

    async def related(
        self, tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> list[FactRecord]:
        return await asyncio.to_thread(self._reads.related, tenant_id, subject, ids, episodes)

    async def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        return await asyncio.to_thread(self._reads.grants, tenant_id, user_id)

    async def grants_and(
        self, tenant_id: str, user_id: str, request: Request
    ) -> tuple[Any, NotRead]:
        return await asyncio.to_thread(self._reads.grants_and, tenant_id, user_id, request)


class Writes:
    """:class:`memory.facts.base.KeyOps` inside the writer's open transaction."""

    def __init__(self, conn: sqlite3.Connection, cipher: MemoryCipher) -> None:
        self.conn = conn
        self.cipher = cipher
        #: Grants read in this transaction, by (tenant, user): its writes see one state.
        self._grants: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def neighbours(self, key: Key, at: datetime) -> tuple[FactRecord | None, datetime | None]:
        t = encode_time(at)
        row = self.conn.execute(_LAST_FROM, (*key, t)).fetchone()
        before = None if row is None else record_of(row, self.cipher)
        if before is not None and (before.valid_to is None or before.valid_to > at):
            return before, None  # it covers ``at``; the rules need no next start
        start = self.conn.execute(_NEXT_START, (*key, t)).fetchone()
        return before, None if start is None else fromiso(start[0])

    def prefetch(self, spans: dict[Key, tuple[datetime, datetime]]) -> list[FactRecord]:
        """Each key's active facts around its span (:mod:`memory.facts.batch`).

        First each key's open fact, one seek each. An open fact starting at or before the
        span is the whole answer for its key: no active fact starts after it (its interval has
        no end), so it is the last one starting at or before the span and nothing follows.
        That is every key of a group writing after what is stored, the usual case. The other
        keys (none open, or a span starting before the open fact) get the three seeks of the
        general statement.
        """
        cipher = self.cipher
        found: list[FactRecord] = []
        rest: dict[Key, tuple[datetime, datetime]] = dict(spans)
        for row in self.conn.execute(_PREFETCH_OPEN, (json.dumps(list(spans)),)):
            key = (row[0], row[2], row[3])
            span = rest.get(key)
            if span is not None and row[7] <= encode_time(span[0]):  # same-length UTC text
                found.append(record_of(row, cipher))
                del rest[key]
        if rest:
            asked = json.dumps(
                [[*key, encode_time(lo), encode_time(hi)] for key, (lo, hi) in rest.items()]
            )
            found += [record_of(row, cipher) for row in self.conn.execute(_PREFETCH, (asked,))]
        return found

    def apply(
        self, ended: list[FactRecord], changed: list[FactRecord], inserted: list[FactRecord]
    ) -> None:
        """A planned group's end state (:class:`memory.facts.batch.Plan`): the stored rows
        only ``ended`` updated by ``valid_to`` and its cause alone, the other ``changed``
        ones whole, then each new row inserted, by one ``executemany`` each."""
        updated = self.conn.executemany(
            _END,
            [
                (
                    encode_optional(r.valid_to),
                    encode_optional(r.retracted_at),
                    r.retraction_episode_id,
                    r.tenant_id,
                    r.memory_id,
                )
                for r in ended
            ],
        ).rowcount
        updated += self.conn.executemany(
            _CHANGE,
            [
                (
                    encode_optional(r.valid_to),
                    encode_optional(r.retracted_at),
                    r.retraction_episode_id,
                    encode_optional(r.withdrawn_at),
                    json.dumps(list(r.restated_in), separators=(",", ":")),
                    r.tenant_id,
                    r.memory_id,
                )
                for r in changed
            ],
        ).rowcount
        if updated != len(ended) + len(changed):
            raise RuntimeError("a planned fact vanished inside the write transaction")
        self.conn.executemany(_INSERT, [record_row(r, self.cipher) for r in inserted])

    def before(self, key: Key, at: datetime) -> FactRecord | None:
        row = self.conn.execute(_LAST_BEFORE, (*key, encode_time(at))).fetchone()
        return None if row is None else record_of(row, self.cipher)

    def insert(self, record: FactRecord) -> None:
        self.conn.execute(_INSERT, record_row(record, self.cipher))

    def _update(self, sql: str, params: tuple[Any, ...], tenant_id: str, memory_id: str) -> None:
        cursor = self.conn.execute(sql + _UPDATE_WHERE, (*params, tenant_id, memory_id))
        if cursor.rowcount != 1:
            raise RuntimeError(f"fact {memory_id} vanished inside its key's write lock")

    def set_end(
        self,
        key: Key,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        self._update(
            "UPDATE facts SET valid_to = ?, retracted_at = ?, retraction_episode_id = ?",
            (encode_time(valid_to), encode_optional(retracted_at), retraction_episode_id),
            key[0],
            memory_id,
        )

    def withdraw(
        self,
        key: Key,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        self._update(
            "UPDATE facts SET withdrawn_at = ?, retracted_at = ?, retraction_episode_id = ?",
            (encode_time(withdrawn_at), encode_optional(retracted_at), retraction_episode_id),
            key[0],
            memory_id,
        )

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        found = self._grants.get((tenant_id, user_id))
        if found is None:
            found = self.conn.execute(GRANTS_OF, (tenant_id, user_id)).fetchall()
            self._grants[(tenant_id, user_id)] = found
        return found

    def restate(self, key: Key, memory_id: str, episode_id: str) -> None:
        self._update(
            "UPDATE facts SET restated_in = json_insert(restated_in, '$[#]', ?)",
            (episode_id,),
            key[0],
            memory_id,
        )
