"""An import's batch of appends on SQLite, written straight into the ledger (:class:`SqliteImports`).

The usual import batch is a group of appends (:mod:`memory.facts.sqlite_appends`) by writers
who may write every subject it names (authority ``own`` or ``granted``), and it returns no
record. Then the set-wise rules need the stored rows of its keys only, not its writes: the
batch is checked per key and per (writer, subject) -- a few thousand rows staged, not fifty
thousand -- and its rows are inserted as they are, each made in Python by ``map`` and ``zip``
(no Python frame per write) with what the staging table's ``lead`` and ``lag`` gave it: its
end (the next write's start on its key), its predecessor (the write before it on its key, or
the key's stored open fact) and, for the key's last write, that open fact's retraction. A
batch that does not qualify -- a write not after the one before it on its key, a stored fact
not before the batch's first start on its key, a candidate or a refused write -- goes through
:class:`memory.facts.sqlite_appends.SqliteAppends` (or the rules) as before; so does
``record_many``. No staging table of the writes, no window or join per write: the statements
of 50,000 writes on 100,000 facts took 1.0-1.3 s of processor time straight, 2.1-2.5 s staged.

Each start's text is made by SQLite from its microseconds (:func:`memory.sql.clock.
sql_time_text`), the memory ids in Python as :func:`memory.facts.records.new_memory_id` makes
them, a batch at a time and in order; the clock is read once (the instant the batch's
transaction records).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterable, Iterator
from itertools import chain, repeat
from operator import attrgetter, eq, ge, getitem, itemgetter
from typing import Any

from memory.facts.group import PendingWrite
from memory.facts.records import RECORD_SCHEMA_VERSION, canonical_json
from memory.facts.sqlite_appends import (
    CLOSE,
    COLUMNS,
    STORED_NOT_BEFORE,
    SUPERSEDED,
    SqliteAppends,
    authority_sql,
    keys_sql,
    reset_tables,
)
from memory.sealing import MemoryCipher
from memory.sql.clock import encode_time, epoch_micros, sql_time_text

_WRITERS = "INSERT INTO temp.fact_batch_writer VALUES (?, ?, ?)"
_FIRSTS = "INSERT INTO temp.fact_batch_first (tenant_id, subject, attribute, first_us) VALUES (?, ?, ?, ?)"
_AUTHORITY = authority_sql("SELECT tenant_id, user_id, subject FROM temp.fact_batch_writer")
_KEYS = keys_sql("SELECT tenant_id, subject, attribute, first_start FROM temp.fact_batch_first")
_ALL_WRITE = (
    "SELECT NOT EXISTS (SELECT 1 FROM temp.fact_batch_who"
    " WHERE authority IS NULL OR authority NOT IN ('own', 'granted'))"
)
#: The columns each write's row gives, in order; SQLite makes the rest.
_GIVEN = (
    "tenant_id, memory_id, subject, attribute, value, memory_type, from_us, to_us, recorded_at,"
    " supersedes_memory_id, source_episode_id, source, confidence, retention_policy,"
    " retracted_at, retraction_episode_id, recorded_by"
)
#: The columns of :data:`_GIVEN` that often have one value over a batch: tenant, memory type,
#: clock reading, source, confidence, retention and writer.
_BATCH_WIDE = (0, 5, 8, 11, 12, 13, 16)
#: The most writes one statement inserts (up to 17 values each: SQLite takes up to 32,766).
_ROWS = 1024


class SqliteImports(SqliteAppends):
    """:class:`SqliteAppends` with an import's batch written straight into the ledger (see the
    module docstring); inside the group's open write transaction."""

    def __init__(self, conn: sqlite3.Connection, cipher: MemoryCipher) -> None:
        super().__init__(conn, cipher)
        #: The batch the check let through, sorted key by key: its writes and their keys.
        self._direct: tuple[list[PendingWrite], list[tuple[str, str, str]], list[int]] | None
        self._direct = None

    def appendable(self, group: list[PendingWrite]) -> bool:
        self._direct = None
        if any(map(_RETURNS_RECORD, group)) or not all(map(_ready, group)):
            return super().appendable(group)
        writes = _key_by_key(group)
        keys = list(map(_KEY, writes))
        starts = list(epoch_micros(map(_VALID_FROM, map(_DELTA, writes))))
        # Within a key, each write must start after the one before it.
        if any(map(bool.__and__, map(eq, keys, keys[1:]), map(ge, starts, starts[1:]))):
            return super().appendable(group)
        conn = self.conn
        reset_tables(conn)
        conn.executemany(
            _WRITERS,
            set(zip(map(_TENANT, keys), map(_USER, writes), map(_SUBJECT, keys), strict=True)),
        )
        conn.execute(_AUTHORITY)
        if not conn.execute(_ALL_WRITE).fetchone()[0]:
            return super().appendable(group)
        # Each key's first start: the last one a dict keeps of them in reverse.
        firsts = dict(zip(reversed(keys), reversed(starts), strict=True))
        conn.executemany(_FIRSTS, [(*key, start) for key, start in firsts.items()])
        conn.execute(_KEYS)
        if conn.execute(STORED_NOT_BEFORE).fetchone()[0]:
            return super().appendable(group)
        self._direct = writes, keys, starts
        return True

    def append_all(self, group: list[PendingWrite]) -> None:
        if self._direct is None:
            super().append_all(group)
            return
        writes, keys, starts = self._direct
        self._direct = None
        conn = self.conn
        at = group[0].now()  # type: ignore[misc]  # checked by appendable
        cover = {(r[0], r[1], r[2]): (r[3], r[4], r[5]) for r in conn.execute(SUPERSEDED)}
        if conn.execute(CLOSE).rowcount != len(cover):
            raise RuntimeError("a key's open fact vanished inside the write transaction")
        columns = self._columns(writes, keys, starts, encode_time(at), cover)
        # A column with one value over the batch (the tenant, the writer, the clock reading,
        # most often the type, source, confidence and retention) is bound once a statement.
        fixed = tuple(i for i in _BATCH_WIDE if len(set(columns[i])) == 1)
        given = [c[0] for i, c in enumerate(columns) if i in fixed]
        varying = [c for i, c in enumerate(columns) if i not in fixed]
        for rows, parameters in _parameters(given, varying):
            conn.execute(_insert_sql(rows, fixed), parameters)
        for w in group:
            w.result, w.error = "recorded", None

    def _columns(
        self,
        writes: list[PendingWrite],
        keys: list[tuple[str, str, str]],
        starts: list[int],
        recorded_at: str,
        cover: dict[tuple[str, str, str], tuple[str, str | None, str | None]],
    ) -> list[list[Any]]:
        """The batch's rows (:data:`_GIVEN`) column by column, key by key, as the staged
        insert makes them."""
        n = len(writes)
        deltas = list(map(_DELTA, writes))
        values: Iterator[Any] = map(_VALUE, deltas)
        if self.cipher.sealing:
            values = map(self.cipher.seal, values)
        ids = _new_ids(n)
        # Whether the write before (after) is on the same key: then it is the predecessor
        # (the next start is the end); else the key's stored open fact is (the end is open).
        after = [*map(eq, keys, keys[1:]), False]
        before = [False, *after[:-1]]
        stored = list(map(cover.get, keys, repeat(_NO_COVER, n)))
        last = list(map(bool.__xor__, after, repeat(True)))
        columns: list[Iterable[Any]] = [
            map(_TENANT, keys), ids, map(_SUBJECT, keys), map(_ATTRIBUTE, keys),
            map(canonical_json, values), map(_MEMORY_TYPE, deltas), starts,
            map(getitem, zip(repeat(None), chain(starts[1:], (None,))), after),
            repeat(recorded_at, n),
            map(getitem, zip(map(_FIRST, stored), chain((None,), ids[:-1]), strict=True), before),
            map(_EPISODE, deltas), map(_SOURCE, deltas), map(_CONFIDENCE, deltas),
            map(_RETENTION, deltas),
            map(getitem, zip(repeat(None), map(_SECOND, stored)), last),
            map(getitem, zip(repeat(None), map(_THIRD, stored)), last),
            map(_USER, writes),
        ]  # fmt: skip
        return [c if isinstance(c, list) else list(c) for c in columns]


_NO_COVER: tuple[None, None, None] = (None, None, None)
_KEY, _DELTA, _USER = attrgetter("key"), attrgetter("delta"), attrgetter("user_id")
_RETURNS_RECORD = attrgetter("returns_record")
_TENANT, _SUBJECT, _ATTRIBUTE = itemgetter(0), itemgetter(1), itemgetter(2)
_FIRST, _SECOND, _THIRD = itemgetter(0), itemgetter(1), itemgetter(2)
_VALUE, _VALID_FROM = attrgetter("value"), attrgetter("valid_from")
_MEMORY_TYPE, _EPISODE = attrgetter("memory_type"), attrgetter("source_episode_id")
_SOURCE, _CONFIDENCE = attrgetter("source"), attrgetter("confidence")
_RETENTION = attrgetter("retention_policy")


def _ready(w: PendingWrite) -> bool:
    return w.delta is not None and w.now is not None


def _key_by_key(group: list[PendingWrite]) -> list[PendingWrite]:
    """``group``'s writes key by key, the keys sorted and each key's writes in the group's
    order: what a stable sort by key gives, with one sort of the distinct keys instead of
    one of every write's (tuple comparisons were about 2 us a write of a 50,000-write batch,
    this is half that)."""
    runs: dict[tuple[str, str, str], list[PendingWrite]] = {}
    for w in group:
        run = runs.get(w.key)
        if run is None:
            runs[w.key] = [w]
        else:
            run.append(w)
    return list(chain.from_iterable(map(runs.__getitem__, sorted(runs))))


def _new_ids(n: int) -> list[str]:
    """``n`` memory ids as :func:`memory.facts.records.new_memory_id` makes them (48 bits of
    Unix milliseconds, read once, then 74 random bits), made without a Python call each; in
    order, so that the batch's rows, inserted in this order, land at the right edge of the
    ``(tenant_id, memory_id)`` index instead of anywhere in the batch's part of it."""
    bits = random.getrandbits
    return sorted(
        map(
            "{:012x}7{:03x}{:x}{:015x}".format,
            repeat(time.time_ns() // 1_000_000, n),
            map(bits, repeat(12, n)),
            map(int.__or__, repeat(8, n), map(bits, repeat(2, n))),
            map(bits, repeat(60, n)),
        )
    )


def _parameters(given: list[Any], columns: list[list[Any]]) -> Iterator[tuple[int, list[Any]]]:
    """Each statement's rows and parameters: ``given``, then the rows of ``columns`` row by
    row, laid in by one slice assignment a column (no tuple a row); up to :data:`_ROWS` rows
    a statement, each statement's size a power of two, so that every batch reuses the same few
    statements."""
    width, total, done = len(columns), len(columns[0]), 0
    while done < total:
        size = min(_ROWS, 1 << ((total - done).bit_length() - 1))
        flat = given + [None] * (size * width)
        for i, column in enumerate(columns):
            flat[len(given) + i :: width] = column[done : done + size]
        yield size, flat
        done += size


_CACHE: dict[tuple[int, tuple[int, ...]], str] = {}


def _insert_sql(rows: int, fixed: tuple[int, ...]) -> str:
    """The insert of ``rows`` writes' rows (:data:`_GIVEN`): the columns numbered in ``fixed``
    bound once, as its first parameters, the others per write."""
    found = _CACHE.get((rows, fixed))
    if found is None:
        names = [name.strip() for name in _GIVEN.split(",")]
        varying = [name for i, name in enumerate(names) if i not in fixed]
        row = "(" + ", ".join("?" * len(varying)) + ")"
        # The fixed columns' numbered parameters come first in the text: each ``?`` after
        # them takes the next number.
        given = [f"?{n + 1} AS {names[i]}" for n, i in enumerate(fixed)]
        given += [f"column{n + 1} AS {name}" for n, name in enumerate(varying)]
        found = _CACHE[(rows, fixed)] = f"""
INSERT INTO main.facts ({COLUMNS})
SELECT tenant_id, memory_id, subject, attribute, value, memory_type, {RECORD_SCHEMA_VERSION},
    {sql_time_text("from_us")}, {sql_time_text("to_us")}, recorded_at, supersedes_memory_id,
    source_episode_id, source, confidence, retention_policy, retracted_at,
    retraction_episode_id, NULL, '[]', recorded_by
FROM (SELECT {", ".join(given)} FROM (VALUES {", ".join([row] * rows)}))
"""
    return found
