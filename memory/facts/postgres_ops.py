"""The Postgres fact ledger's SQL: statements, row decoding, and the write operations
(:class:`memory.facts.rules.KeyOps`) a group runs inside its transaction, its keys locked.

Every statement names the tenant; row security checks it again (:mod:`memory.facts.postgres`
sets ``app.tenant_id`` and ``app.user_id``). Times are ``timestamptz`` read back in UTC,
values ``jsonb`` (sealed when a cipher is set).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

from memory.facts.records import FactRecord, canonical_json
from memory.facts.rules import Key, Request
from memory.sealing import MemoryCipher
from memory.sql.migrations import PG_SCHEMA

FACTS = f"{PG_SCHEMA}.facts"
COLUMNS = (
    "tenant_id, memory_id, subject, attribute, value, memory_type, schema_version, valid_from, "
    "valid_to, recorded_at, supersedes_memory_id, source_episode_id, source, confidence, "
    "retention_policy, retracted_at, retraction_episode_id, withdrawn_at, restated_in, recorded_by"
)
#: A write transaction acts for one principal: its tenant and its user (the write policy
#: checks the user's authority over each row's subject).
SET_TENANT = "SELECT set_config('app.tenant_id', %s, true), set_config('app.user_id', %s, true)"
GRANTS = f"{PG_SCHEMA}.grants"
GRANTS_OF = f"SELECT role, subject FROM {GRANTS} WHERE tenant_id = %s AND user_id = %s"
GRANT_COLUMNS = "tenant_id, user_id, role, subject, granted_by, granted_at"
#: Reads set the reader for the connection's session (``memory.facts.postgres``): its tenant,
#: its user and whether an admin asked for another user's personal attributes (row security,
#: ``analyst_facts.may_read``, decides what each may see).
SET_SESSION_READER = (
    "SELECT set_config('app.tenant_id', %s, false), set_config('app.user_id', %s, false),"
    " set_config('app.include_personal', %s, false)"
)

_KEY = "tenant_id = %s AND subject = %s AND attribute = %s"
_ACTIVE = "withdrawn_at IS NULL"
OPEN_FACT = f"SELECT {COLUMNS} FROM {FACTS} WHERE {_KEY} AND valid_to IS NULL AND {_ACTIVE}"
LAST_FROM = (
    f"SELECT {COLUMNS} FROM {FACTS} WHERE {_KEY} AND {_ACTIVE} AND valid_from <= %s"
    " ORDER BY valid_from DESC LIMIT 1"
)
LAST_BEFORE = (
    f"SELECT {COLUMNS} FROM {FACTS} WHERE {_KEY} AND {_ACTIVE} AND valid_from < %s"
    " ORDER BY valid_from DESC LIMIT 1"
)
#: The fact starting last at or before a time and the one starting first after it: two seeks
#: on ``facts_one_start``, one round trip. The last column says which is which.
NEIGHBOURS = (
    f"(SELECT {COLUMNS}, true FROM {FACTS} WHERE {_KEY} AND {_ACTIVE} AND valid_from <= %s"
    " ORDER BY valid_from DESC LIMIT 1)"
    f" UNION ALL (SELECT {COLUMNS}, false FROM {FACTS} WHERE {_KEY} AND {_ACTIVE}"
    " AND valid_from > %s ORDER BY valid_from LIMIT 1)"
)
HISTORY = (
    f"SELECT {COLUMNS} FROM {FACTS} WHERE {_KEY}"
    " ORDER BY valid_from, recorded_at, withdrawn_at IS NULL, withdrawn_at"
)
#: A subject's records named by memory id or citing an episode (ids and episodes as lists).
RELATED = (
    f"SELECT {COLUMNS} FROM {FACTS} WHERE tenant_id = %s AND subject = %s AND ("
    "memory_id = ANY(%s) OR source_episode_id = ANY(%s) OR restated_in ?| %s::text[])"
    " ORDER BY attribute, valid_from, recorded_at, memory_id"
)
#: Every attribute of a subject in one statement: a loose index scan over its attribute names
#: (one seek per name), then one ``as_of`` seek per name.
PROFILE = f"""
WITH RECURSIVE names(attribute) AS (
    SELECT (SELECT min(attribute) FROM {FACTS}
            WHERE tenant_id = %(tenant)s AND subject = %(subject)s AND {_ACTIVE})
    UNION ALL
    SELECT (SELECT min(g.attribute) FROM {FACTS} g
            WHERE g.tenant_id = %(tenant)s AND g.subject = %(subject)s
              AND g.withdrawn_at IS NULL AND g.attribute > names.attribute)
    FROM names WHERE names.attribute IS NOT NULL
)
SELECT f.* FROM names CROSS JOIN LATERAL (
    SELECT {COLUMNS} FROM {FACTS} h
    WHERE h.tenant_id = %(tenant)s AND h.subject = %(subject)s AND h.attribute = names.attribute
      AND h.withdrawn_at IS NULL AND h.valid_from <= %(at)s
    ORDER BY h.valid_from DESC LIMIT 1
) f
WHERE names.attribute IS NOT NULL AND (f.valid_to IS NULL OR f.valid_to > %(at)s)
"""


def _with_grants(sql: str, named: bool, order: str = "") -> str:
    """``sql``'s rows, each beside the reader's grants (one row of grants and NULLs when it
    finds nothing): a read's first seek and its authority in one statement and one snapshot."""
    tenant, user = ("%(grants_tenant)s", "%(grants_user)s") if named else ("%s", "%s")
    return (
        "SELECT g.grants, r.* FROM (SELECT coalesce(array_agg(ARRAY[role, subject]), '{}')"
        f" AS grants FROM {GRANTS} WHERE tenant_id = {tenant} AND user_id = {user}) g"
        f" LEFT JOIN LATERAL ({sql}) r ON true{order}"
    )


#: Per read seek (a :class:`memory.facts.rules.ReadOps` name): its statement beside the
#: reader's grants, its parameters from the request's arguments, and whether it answers one
#: record (else a list). Row security limits each to what ``may_read`` allows.
WITH_GRANTS: dict[str, tuple[str, Callable[..., Any], bool]] = {
    "open_fact": (_with_grants(OPEN_FACT, False), lambda key: key, True),
    "last_from": (_with_grants(LAST_FROM, False), lambda key, at: (*key, at), True),
    "history": (
        _with_grants(
            HISTORY,
            False,
            " ORDER BY r.valid_from, r.recorded_at, r.withdrawn_at IS NULL, r.withdrawn_at",
        ),
        lambda key: key,
        False,
    ),
    "profile": (
        _with_grants(PROFILE, True),
        lambda tenant, subject, at: {"tenant": tenant, "subject": subject, "at": at},
        False,
    ),
}


def grants_and_query(
    tenant_id: str, user_id: str, request: Request
) -> tuple[str, Any, bool] | None:
    """The statement answering :meth:`memory.facts.rules.ReadOps.grants_and` for ``request``,
    its parameters and whether it answers one record; None for a seek it does not cover."""
    found = WITH_GRANTS.get(request[0])
    if found is None:
        return None
    sql, params_of, one = found
    params = params_of(*request[1])
    if isinstance(params, dict):
        return sql, {"grants_tenant": tenant_id, "grants_user": user_id, **params}, one
    return sql, (tenant_id, user_id, *params), one


def grants_and_answer(
    rows: list[tuple[Any, ...]], one: bool, cipher: MemoryCipher
) -> tuple[list[tuple[str, str]], Any]:
    """The grants and the seek's answer from :func:`grants_and_query`'s rows."""
    grants = [(g[0], g[1]) for g in rows[0][0]]
    found = [record_of(row[1:], cipher) for row in rows if row[1] is not None]
    if one:
        return grants, found[0] if found else None
    return grants, found


INSERT = f"INSERT INTO {FACTS} ({COLUMNS}) VALUES ({', '.join(['%s'] * 20)})"
_Q_KEY = "tenant_id = q.t AND subject = q.s AND attribute = q.a AND withdrawn_at IS NULL"
#: Per (tenant, subject, attribute, first start, last start), the key's active facts from the
#: one starting last at or before the first start to the one starting first after the last:
#: seeks on ``facts_one_start``, one statement (:mod:`memory.facts.batch`).
PREFETCH = f"""
SELECT c.* FROM unnest(%s::text[], %s::text[], %s::text[], %s::timestamptz[], %s::timestamptz[])
    AS q(t, s, a, lo, hi)
CROSS JOIN LATERAL (
    (SELECT {COLUMNS} FROM {FACTS} WHERE {_Q_KEY} AND valid_from <= q.lo
     ORDER BY valid_from DESC LIMIT 1)
    UNION ALL
    (SELECT {COLUMNS} FROM {FACTS} WHERE {_Q_KEY} AND valid_from > q.lo AND valid_from <= q.hi
     ORDER BY valid_from)
    UNION ALL
    (SELECT {COLUMNS} FROM {FACTS} WHERE {_Q_KEY} AND valid_from > q.hi
     ORDER BY valid_from LIMIT 1)
) AS c
"""
#: Set for a planned group's transaction: the seeks above must walk ``facts_one_start`` in
#: ``valid_from`` order. On statistics a bulk load has outgrown, the planner may take the
#: exclusion constraint's gist index instead, which cannot seek on ``valid_from``: every
#: row of each key is then read, checked by row security and sorted (2 ms a key at 1M facts).
ORDERED_SEEKS = "SET LOCAL enable_sort = off"
#: A stored row to update, named by its key as well as its id: whatever index the planner
#: takes, it reads at most that key's rows. (By id alone, on statistics a bulk load had
#: outgrown, the planner took the exclusion constraint's index on the tenant alone and read
#: every fact of the tenant through row security: 15 ms a row at 20,000 facts.)
UPDATE_WHERE = (
    " WHERE tenant_id = %s AND subject = %s AND attribute = %s AND memory_id = %s"
    " AND withdrawn_at IS NULL"
)


def _where(row: FactRecord) -> tuple[str, str, str, str]:
    """The parameters of :data:`UPDATE_WHERE` for a stored row."""
    return (row.tenant_id, row.subject, row.attribute, row.memory_id)


#: A changed stored row of a planned group, in its end state (one statement per row).
CHANGE_ONE = (
    f"UPDATE {FACTS} SET valid_to = %s, retracted_at = %s, retraction_episode_id = %s,"
    " withdrawn_at = %s, restated_in = %s" + UPDATE_WHERE
)
#: The same for a row whose only change is its end.
END_ONE = (
    f"UPDATE {FACTS} SET valid_to = %s, retracted_at = %s, retraction_episode_id = %s"
    + UPDATE_WHERE
)
_TYPES = (
    "text", "text", "text", "text", "jsonb", "text", "integer", "timestamptz", "timestamptz",
    "timestamptz", "text", "text", "text", "double precision", "text", "timestamptz", "text",
    "timestamptz", "jsonb", "text",
)  # fmt: skip
#: A planned group's new rows, in the order the rules made them, in one statement.
INSERT_MANY = (
    f"INSERT INTO {FACTS} ({COLUMNS}) SELECT * FROM unnest("
    + ", ".join(f"%s::{t}[]" for t in _TYPES)
    + ")"
)
#: Every key of a group, locked in one statement in a global order (no deadlock between
#: groups); a writer stuck behind another gives up after the lock timeout (its first
#: parameter) and the group retries.
LOCK_KEYS = (
    "SELECT set_config('lock_timeout', %s, true),"
    " (SELECT count(pg_advisory_xact_lock(h)) FROM ("
    "   SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(%s::text[]) AS k ORDER BY 1"
    " ) AS keys)"
)

#: A group locking more keys than this takes the whole table instead (one lock, where as many
#: advisory locks would exhaust the server's lock table: 64 per connection by default).
MAX_KEY_LOCKS = 1000
#: Every group first takes the table in a mode writers share, so that a group locking the
#: whole table (:data:`LOCK_TABLE`) waits for those under way and they wait for it.
LOCK_SHARED = f"LOCK TABLE {FACTS} IN ROW EXCLUSIVE MODE"
LOCK_TABLE = f"LOCK TABLE {FACTS} IN SHARE ROW EXCLUSIVE MODE"
SET_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', %s, true)"

TRANSIENT = (
    pg_errors.SerializationFailure,
    pg_errors.DeadlockDetected,
    pg_errors.LockNotAvailable,
    pg_errors.UniqueViolation,
    pg_errors.ExclusionViolation,
)


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def record_of(row: Sequence[Any], cipher: MemoryCipher) -> FactRecord:
    """A row of ``COLUMNS`` as a record, its value opened (positional: this runs once per
    read)."""
    return FactRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        cipher.open(row[4]),
        row[5],
        row[6],
        row[7].astimezone(UTC),
        _utc(row[8]),
        row[9].astimezone(UTC),
        row[10],
        row[11],
        row[12],
        row[13],
        row[14],
        _utc(row[15]),
        row[16],
        _utc(row[17]),
        tuple(row[18]),
        row[19],
    )


def key_text(key: Key) -> str:
    """The text a key's advisory lock is hashed from."""
    return "\x1f".join(key)


async def lock_keys(conn: psycopg.AsyncConnection[Any], keys: list[Key], timeout: str) -> None:
    """Lock a group's keys for its transaction: each key (advisory locks, one global order),
    or past :data:`MAX_KEY_LOCKS` keys the table against other writers; a writer stuck
    behind another gives up after ``timeout`` and the group retries."""
    texts = sorted({key_text(k) for k in keys})
    if len(texts) > MAX_KEY_LOCKS:
        await conn.execute(SET_LOCK_TIMEOUT, (timeout,))
        await conn.execute(LOCK_TABLE)
        return
    await conn.execute(SET_LOCK_TIMEOUT, (timeout,))
    await conn.execute(LOCK_SHARED)
    await conn.execute(LOCK_KEYS, (timeout, texts))


class Writes:
    """:class:`memory.facts.base.KeyOps` inside a group's transaction (keys locked)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], cipher: MemoryCipher) -> None:
        self.conn = conn
        self.cipher = cipher
        #: Updates whose row counts are checked once the pipeline has delivered them.
        self.updates: list[tuple[psycopg.AsyncCursor[Any], str]] = []
        #: :meth:`apply`'s update cursors and the rows they must have changed.
        self.applied: list[tuple[psycopg.AsyncCursor[Any], int]] = []

    def check_updates(self) -> None:
        for cursor, memory_id in self.updates:
            if cursor.rowcount != 1:
                raise RuntimeError(f"fact {memory_id} vanished inside its key's write lock")
        self.updates.clear()
        if sum(max(c.rowcount, 0) for c, _ in self.applied) != sum(n for _, n in self.applied):
            raise RuntimeError("a planned fact vanished inside its key's write lock")
        self.applied.clear()

    async def neighbours(self, key: Key, at: datetime) -> tuple[FactRecord | None, datetime | None]:
        cursor = await self.conn.execute(NEIGHBOURS, (*key, at, *key, at))
        before: FactRecord | None = None
        next_start: datetime | None = None
        for row in await cursor.fetchall():
            if row[-1]:
                before = record_of(row, self.cipher)
            else:
                next_start = row[7].astimezone(UTC)
        return before, next_start

    async def grants_and_prefetch(
        self, acting: tuple[str, str], spans: dict[Key, tuple[datetime, datetime]]
    ) -> tuple[list[tuple[str, str]], list[FactRecord]]:
        """The acting user's grants and each key's active facts around its span, in one
        statement each (:mod:`memory.facts.batch`), both sent before either is read: in a
        pipeline, one round trip."""
        columns: list[list[Any]] = [[], [], [], [], []]
        for key, (lo, hi) in spans.items():
            for column, item in zip(columns, (*key, lo, hi), strict=True):
                column.append(item)
        grants = await self.conn.execute(GRANTS_OF, acting)
        stored = await self.conn.execute(PREFETCH, columns)
        return [(row[0], row[1]) for row in await grants.fetchall()], [
            record_of(row, self.cipher) for row in await stored.fetchall()
        ]

    async def apply(
        self, ended: list[FactRecord], changed: list[FactRecord], inserted: list[FactRecord]
    ) -> None:
        """A planned group's end state (:class:`memory.facts.batch.Plan`): the stored rows
        only ``ended`` updated by ``valid_to`` and its cause alone, the other ``changed`` ones
        whole, then the new rows inserted in one statement (every row of one tenant).

        The updates are one statement per row, each bounded to its key's rows
        (:data:`UPDATE_WHERE`) whatever the table's statistics say: one joined update was
        planned, on statistics a bulk load had outgrown, as a scan of every fact of the
        tenant, each checked by row security (2 s for 500 rows at 20,000 facts). In a
        pipeline the statements are only queued: the caller runs :meth:`check_updates` once
        the pipeline has delivered their row counts, before it commits."""
        ends, changes = self.conn.cursor(), self.conn.cursor()
        self.applied += [(ends, len(ended)), (changes, len(changed))]
        if ended:
            await ends.executemany(
                END_ONE,
                [(r.valid_to, r.retracted_at, r.retraction_episode_id, *_where(r)) for r in ended],
            )
        if changed:
            await changes.executemany(
                CHANGE_ONE,
                [
                    (
                        r.valid_to,
                        r.retracted_at,
                        r.retraction_episode_id,
                        r.withdrawn_at,
                        Jsonb(list(r.restated_in)),
                        *_where(r),
                    )
                    for r in changed
                ],
            )
        if inserted:
            seal = self.cipher.seal
            rows = [
                (
                    r.tenant_id,
                    r.memory_id,
                    r.subject,
                    r.attribute,
                    canonical_json(seal(r.value)),
                    r.memory_type,
                    r.schema_version,
                    r.valid_from,
                    r.valid_to,
                    r.recorded_at,
                    r.supersedes_memory_id,
                    r.source_episode_id,
                    r.source,
                    r.confidence,
                    r.retention_policy,
                    r.retracted_at,
                    r.retraction_episode_id,
                    r.withdrawn_at,
                    canonical_json(list(r.restated_in)),
                    r.recorded_by,
                )
                for r in inserted
            ]
            await self.conn.execute(INSERT_MANY, [list(c) for c in zip(*rows, strict=True)])

    async def before(self, key: Key, at: datetime) -> FactRecord | None:
        cursor = await self.conn.execute(LAST_BEFORE, (*key, at))
        row = await cursor.fetchone()
        return None if row is None else record_of(row, self.cipher)

    async def insert(self, record: FactRecord) -> None:
        await self.conn.execute(
            INSERT,
            (
                record.tenant_id,
                record.memory_id,
                record.subject,
                record.attribute,
                Jsonb(self.cipher.seal(record.value)),
                record.memory_type,
                record.schema_version,
                record.valid_from,
                record.valid_to,
                record.recorded_at,
                record.supersedes_memory_id,
                record.source_episode_id,
                record.source,
                record.confidence,
                record.retention_policy,
                record.retracted_at,
                record.retraction_episode_id,
                record.withdrawn_at,
                Jsonb(list(record.restated_in)),
                record.recorded_by,
            ),
        )

    async def _update(self, sql: str, params: tuple[Any, ...], key: Key, memory_id: str) -> None:
        cursor = self.conn.cursor()
        await cursor.execute(sql + UPDATE_WHERE, (*params, *key, memory_id))
        self.updates.append((cursor, memory_id))

    async def set_end(
        self,
        key: Key,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        await self._update(
            f"UPDATE {FACTS} SET valid_to = %s, retracted_at = %s, retraction_episode_id = %s",
            (valid_to, retracted_at, retraction_episode_id),
            key,
            memory_id,
        )

    async def withdraw(
        self,
        key: Key,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        await self._update(
            f"UPDATE {FACTS} SET withdrawn_at = %s, retracted_at = %s, retraction_episode_id = %s",
            (withdrawn_at, retracted_at, retraction_episode_id),
            key,
            memory_id,
        )

    async def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        cursor = await self.conn.execute(GRANTS_OF, (tenant_id, user_id))
        return [(row[0], row[1]) for row in await cursor.fetchall()]

    async def restate(self, key: Key, memory_id: str, episode_id: str) -> None:
        await self._update(
            f"UPDATE {FACTS} SET restated_in = restated_in || jsonb_build_array(%s::text)",
            (episode_id,),
            key,
            memory_id,
        )
