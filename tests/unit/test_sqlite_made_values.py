"""What SQLite makes for a bulk write equals what Python makes for one write.

An import's batch is staged without a Python call per write for its start's text or its new
fact's memory id: SQLite writes the text of each start from its microseconds since the epoch
(:func:`memory.sql.clock.sql_time_text`), as :func:`memory.sql.clock.encode_time` writes it,
and makes each memory id as :func:`memory.facts.records.new_memory_id` does.
"""

from __future__ import annotations

import random
import re
import sqlite3
import time
from datetime import UTC, datetime, timedelta, timezone

from memory.facts.records import new_memory_id
from memory.facts.sqlite_appends import NEW_MEMORY_ID_SQL
from memory.sql.clock import encode_time, epoch_micros, sql_time_text

EDGES = [
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1900, 2, 28, 12, 0, 0, 1, tzinfo=UTC),
    datetime(2000, 2, 29, tzinfo=UTC),
    datetime(200, 3, 1, 0, 0, 0, 500_000, tzinfo=UTC),
    datetime(2026, 6, 3, 10, 0, tzinfo=timezone(timedelta(hours=-7, minutes=-30))),
    datetime(2026, 6, 3, 1, 0, 0, 7, tzinfo=timezone(timedelta(hours=14))),
]


def test_sqlite_writes_each_instants_text_as_encode_time_does() -> None:
    rng = random.Random(11)
    span = (datetime(9999, 1, 1, tzinfo=UTC) - datetime(2, 1, 1, tzinfo=UTC)) // timedelta(
        microseconds=1
    )
    instants = EDGES + [
        datetime(2, 1, 1, tzinfo=UTC) + timedelta(microseconds=rng.randrange(span))
        for _ in range(3000)
    ]
    conn = sqlite3.connect(":memory:")
    expression = sql_time_text("?")
    written = [
        conn.execute(f"SELECT {expression.replace('?', '?1')}", (micros,)).fetchone()[0]
        for micros in epoch_micros(instants)
    ]
    assert written == [encode_time(at) for at in instants]


def test_sqlite_makes_memory_ids_as_new_memory_id_does() -> None:
    conn = sqlite3.connect(":memory:")
    before = time.time_ns() // 1_000_000
    made = [
        r[0]
        for r in conn.execute(
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)"
            f" SELECT {NEW_MEMORY_ID_SQL} FROM n"
        )
    ]
    after = time.time_ns() // 1_000_000
    shape = re.compile(r"[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}")
    for memory_id in [*made, new_memory_id()]:
        assert shape.fullmatch(memory_id), memory_id
        assert before - 1 <= int(memory_id[:12], 16) <= after + 1
    assert len(set(made)) == len(made)
    # The random bits are spread: every hex digit turns up in each random place.
    for place in [13, 14, 15, *range(17, 32)]:
        assert len({m[place] for m in made}) == 16, place
