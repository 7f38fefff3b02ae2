"""Benchmark: a SQLite fact ledger of an earlier layout migrates to the newest, against a
plain load of its rows measured in the same run.

Data: ``--facts`` facts (default 1,000,000) on ``--facts / 4`` keys, each key a chain of four
superseded facts (the last one open), written in the SQL of the layout they start from.

For each source version in ``--from`` (default 1 4 12), each round copies a ledger file of
that version (built once, before the rounds, by the released migrations up to it) and times
what opening the ledger does to it: the WAL switch and the pending migrations in one
transaction (``memory.sql.connect.prepare`` with ``migrate_sqlite_sync``, the store's own
connection settings). Which versions do work on SQLite: 2, 3 and 4 rewrite every facts row
(values as JSON, then a new column and ``schema_version`` each), 2 also rebuilds both unique
indexes; 5, 6, 8 and 10 create or rebuild small tables; 11 replaces a trigger; 7, 9, 12 and 13
record a no-op. So only a ledger from before version 4 has its rows rewritten; from 4 on the
migration does not touch the facts.

Baseline (every round, interleaved with the migrations): the same rows, in the newest layout,
loaded into a fresh file's facts table of the newest schema -- the same columns, CHECK
constraints and indexes (primary key, one open fact per key, one fact per key and start),
without the overlap triggers (a plain load) -- with ``executemany`` in one transaction and
the same connection settings.

Prints each figure's median and range over ``--rounds`` rounds, the ratio of each migration
to the baseline of its own round (median and range), and the load average (``os.getloadavg``)
before and after. Target (issue 42): a 1M-fact ledger of the previous layout migrates in at
most 2x the plain load. A script, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.facts.migrations import LATEST_VERSION, MIGRATIONS, migrate_sqlite_sync
from memory.sql.connect import connect, enable_wal, prepare
from scripts._targets import Size, verdict

STATED_FACTS = 1_000_000
TARGET_RATIO = 2.0
CHAIN = 4
TENANT = "acme"

_V1_COLUMNS = (
    "tenant_id",
    "memory_id",
    "subject",
    "attribute",
    "value",
    "valid_from",
    "valid_to",
    "recorded_at",
    "supersedes_memory_id",
    "source_episode_id",
    "schema_version",
)
#: The columns migrations 2-4 added, with the values the newest code writes by default.
_LATER_COLUMNS: dict[int, dict[str, Any]] = {
    2: {
        "memory_type": "semantic",
        "source": "stated",
        "confidence": 1.0,
        "retention_policy": "default",
        "retracted_at": None,
        "retraction_episode_id": None,
        "withdrawn_at": None,
    },
    3: {"restated_in": "[]"},
    4: {"recorded_by": "bench"},
}


def columns_of(version: int) -> list[str]:
    names = list(_V1_COLUMNS)
    for added, extra in _LATER_COLUMNS.items():
        if version >= added:
            names += list(extra)
    return names


def rows_of(version: int, count: int) -> list[tuple[Any, ...]]:
    """``count`` facts as schema ``version`` stored them (version 1: the value as a plain
    string; later: JSON)."""
    base = datetime(2025, 1, 1, tzinfo=UTC)
    days = [(base + timedelta(days=n)).isoformat(timespec="microseconds") for n in range(CHAIN)]
    extra: list[Any] = []
    for added, values in _LATER_COLUMNS.items():
        if version >= added:
            extra += list(values.values())
    shape = min(version, 4)
    rows = []
    for n in range(count):
        key, step = divmod(n, CHAIN)
        value = f"{n / 100:.2f}"
        rows.append(
            (
                TENANT,
                f"m-{n}",
                f"ticker:{key}",
                "price",
                value if version < 2 else json.dumps(value),
                days[step],
                days[step + 1] if step < CHAIN - 1 else None,
                days[step],
                f"m-{n - 1}" if step else None,
                f"e-{key}",
                shape,
                *extra,
            )
        )
    return rows


def insert_sql(version: int) -> str:
    names = columns_of(version)
    return f"INSERT INTO facts ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"


def build_ledger(path: Path, version: int, count: int) -> None:
    """A ledger file of schema ``version`` holding ``count`` facts, its WAL checkpointed."""
    conn = connect(str(path))
    try:
        enable_wal(conn)
        migrate_sqlite_sync(conn, where=str(path), target=version)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(insert_sql(version), rows_of(version, count))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def time_migration(template: Path, work: Path) -> float:
    remove(work)
    shutil.copyfile(template, work)
    conn = connect(str(work))
    try:
        started = time.perf_counter()
        applied = prepare(conn, str(work), migrate_sqlite_sync)
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    assert applied and applied[-1] == LATEST_VERSION, applied
    check = sqlite3.connect(work)
    try:
        (count,) = check.execute("SELECT count(*) FROM facts").fetchone()
    finally:
        check.close()
    remove(work)
    assert count > 0
    return elapsed


def time_plain_load(work: Path, rows: list[tuple[Any, ...]]) -> float:
    remove(work)
    conn = connect(str(work))
    try:
        enable_wal(conn)
        migrate_sqlite_sync(conn, where=str(work))
        conn.execute("DROP TRIGGER facts_no_overlap_insert")
        conn.execute("DROP TRIGGER facts_no_overlap_update")
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(insert_sql(LATEST_VERSION), rows)
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    remove(work)
    return elapsed


def spread(values: list[float], unit: Callable[[float], str]) -> str:
    return (
        f"median {unit(statistics.median(values))}"
        f" (range {unit(min(values))}-{unit(max(values))}, {len(values)} rounds)"
    )


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=STATED_FACTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--from", dest="sources", type=int, nargs="+", default=[1, 4, 12])
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (a tmp dir)")
    args = parser.parse_args()
    for version in args.sources:
        if not 1 <= version < LATEST_VERSION:
            parser.error(f"--from {version}: choose versions in 1..{LATEST_VERSION - 1}")

    noop = [m.version for m in MIGRATIONS if m.sqlite == ("SELECT 1",)]
    rewrites = [m.version for m in MIGRATIONS if any("UPDATE facts" in s for s in m.sqlite)]
    print(
        f"bench_migration: {args.facts:,} facts, SQLite {sqlite3.sqlite_version}, newest "
        f"version {LATEST_VERSION}, {args.rounds} rounds; load average before: {load()}"
    )
    print(f"  versions that rewrite every facts row on SQLite: {rewrites}; no-ops: {noop}")
    folder = Path(tempfile.mkdtemp(prefix="bench-migration-", dir=args.dir))
    try:
        started = time.perf_counter()
        templates = {}
        for version in args.sources:
            templates[version] = folder / f"v{version}.sqlite"
            build_ledger(templates[version], version, args.facts)
        rows = rows_of(LATEST_VERSION, args.facts)
        size = templates[args.sources[0]].stat().st_size / 1e6
        print(f"  built the source ledgers in {time.perf_counter() - started:.0f} s "
              f"({size:,.0f} MB each)")  # fmt: skip

        work = folder / "work.sqlite"
        plain: list[float] = []
        migrated: dict[int, list[float]] = {v: [] for v in args.sources}
        for _ in range(args.rounds):
            plain.append(time_plain_load(work, rows))
            for version in args.sources:
                migrated[version].append(time_migration(templates[version], work))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    def seconds(x: float) -> str:
        return f"{x:.2f} s"

    def times(x: float) -> str:
        return f"{x:.2f}x"

    print(f"  plain load of the rows (baseline, one transaction): {spread(plain, seconds)}")
    for version in args.sources:
        ratios = [m / p for m, p in zip(migrated[version], plain, strict=True)]
        print(f"  migrate {version} -> {LATEST_VERSION}: {spread(migrated[version], seconds)};")
        print(f"      against the plain load of the same round: {spread(ratios, times)}")
    oldest = min(args.sources)
    ratio = statistics.median(m / p for m, p in zip(migrated[oldest], plain, strict=True))
    sizes = (Size("facts", args.facts, STATED_FACTS),)
    print(
        f"  target: a ledger of version {oldest} migrates in <= {TARGET_RATIO:.0f}x the plain "
        f"load: {ratio:.2f}x, {verdict(ratio <= TARGET_RATIO, *sizes)}"
    )
    print(f"  load average after: {load()}")


if __name__ == "__main__":
    main()
