"""Benchmark: a fact ledger of an earlier layout (SQLite file, Postgres database) migrates to
the newest, against a plain load of its rows measured in the same run.

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

Postgres (``--backends``, the server at ``--pg-admin``, a superuser; ``--pg-facts`` facts,
default 100,000: from version 1 its migration of 1M takes about 25 min): the source ledgers are
databases built the same way, their facts loaded with ``COPY`` and vacuumed; each round copies
one (``CREATE DATABASE ... TEMPLATE``, not timed) and times ``migrate_postgres`` on it. Every
Postgres migration but 11 does work there (2 retypes the values as jsonb, rewriting the table
and every index, and rebuilds the indexes and the GiST exclusion constraint; 3 and 4 update
every row, and on full pages each new row version goes into every index, the GiST one
included; the others change policies, functions or small tables). Its baseline: a copy of an empty newest
ledger, loaded with one ``COPY`` of the same rows (formatted beforehand: only the server's
work is timed) in one transaction, into the facts table with its indexes and exclusion
constraint.

Prints each figure's median and range over ``--rounds`` rounds, the ratio of each migration
to the baseline of its own round (median and range), and the load average (``os.getloadavg``)
before and after. Target (issue 42): a 1M-fact ledger of the previous layout migrates in at
most 2x the plain load. A script, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.facts.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    migrate_postgres,
    migrate_sqlite_sync,
)
from memory.sql.connect import connect, enable_wal, prepare
from scripts._targets import Size, verdict

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
STATED_FACTS = 1_000_000
#: Postgres's default size: from version 1, its migration of 1M facts takes about 25 min.
PG_FACTS = 100_000
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


# -- Postgres -------------------------------------------------------------------------------------


def _database(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _copy_text(rows: list[tuple[Any, ...]]) -> bytes:
    """``rows`` in COPY's text format (no value here needs escaping)."""

    def field(value: Any) -> str:
        return "\\N" if value is None else str(value)

    return "".join("\t".join(field(v) for v in row) + "\n" for row in rows).encode()


def _copy(conn: Any, version: int, data: bytes) -> None:
    names = ", ".join(columns_of(version))
    with conn.cursor().copy(f"COPY analyst_facts.facts ({names}) FROM STDIN") as copy:
        for start in range(0, len(data), 1 << 20):
            copy.write(data[start : start + (1 << 20)])


class Postgres:
    """Scratch databases on the server at ``admin_url``, dropped on exit."""

    def __init__(self, admin_url: str) -> None:
        import psycopg

        self.admin_url = admin_url
        self.admin = psycopg.connect(admin_url, autocommit=True)
        self.tag = uuid.uuid4().hex[:8]
        self.made: list[str] = []

    def create(self, name: str, template: str | None = None) -> str:
        full = f"bench_mig_{self.tag}_{name}"
        self.admin.execute(f"DROP DATABASE IF EXISTS {full}")
        self.admin.execute(
            f"CREATE DATABASE {full}" + (f" TEMPLATE {template}" if template else "")
        )
        self.made.append(full)
        return full

    def drop(self, name: str) -> None:
        self.admin.execute(f"DROP DATABASE IF EXISTS {name}")

    def close(self) -> None:
        for name in self.made:
            self.drop(name)
        self.admin.close()

    def migrated(self, name: str, version: int, rows: bytes | None) -> str:
        """A database migrated to ``version`` holding ``rows`` (COPY text of that version)."""
        import psycopg

        full = self.create(name)
        url = _database(self.admin_url, full)

        async def setup() -> None:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            async with conn:
                await migrate_postgres(conn, where=full, target=version)

        asyncio.run(setup())
        if rows is not None:
            with psycopg.connect(url) as conn:
                with conn.transaction():
                    _copy(conn, version, rows)
                conn.autocommit = True
                conn.execute("VACUUM (ANALYZE) analyst_facts.facts")
        return full

    def time_migration(self, template: str) -> float:
        import psycopg

        work = self.create("work", template)
        url = _database(self.admin_url, work)

        async def run() -> tuple[float, list[int]]:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            async with conn:
                started = time.perf_counter()
                applied = await migrate_postgres(conn, where=work)
                return time.perf_counter() - started, applied

        elapsed, applied = asyncio.run(run())
        self.drop(work)
        assert applied and applied[-1] == LATEST_VERSION, applied
        return elapsed

    def time_plain_load(self, empty: str, rows: bytes) -> float:
        import psycopg

        work = self.create("work", empty)
        with psycopg.connect(_database(self.admin_url, work)) as conn:
            started = time.perf_counter()
            with conn.transaction():
                _copy(conn, LATEST_VERSION, rows)
            elapsed = time.perf_counter() - started
        self.drop(work)
        return elapsed


def bench_postgres(
    admin_url: str, sources: list[int], count: int, rounds: int
) -> tuple[list[float], dict[int, list[float]]]:
    pg = Postgres(admin_url)
    try:
        templates = {v: pg.migrated(f"v{v}", v, _copy_text(rows_of(v, count))) for v in sources}
        empty = pg.migrated("empty", LATEST_VERSION, None)
        rows = _copy_text(rows_of(LATEST_VERSION, count))
        plain: list[float] = []
        migrated: dict[int, list[float]] = {v: [] for v in sources}
        for _ in range(rounds):
            plain.append(pg.time_plain_load(empty, rows))
            for version in sources:
                migrated[version].append(pg.time_migration(templates[version]))
        return plain, migrated
    finally:
        pg.close()


def bench_sqlite(
    folder: Path, sources: list[int], count: int, rounds: int
) -> tuple[list[float], dict[int, list[float]]]:
    templates = {}
    for version in sources:
        templates[version] = folder / f"v{version}.sqlite"
        build_ledger(templates[version], version, count)
    rows = rows_of(LATEST_VERSION, count)
    work = folder / "work.sqlite"
    plain: list[float] = []
    migrated: dict[int, list[float]] = {v: [] for v in sources}
    for _ in range(rounds):
        plain.append(time_plain_load(work, rows))
        for version in sources:
            migrated[version].append(time_migration(templates[version], work))
    return plain, migrated


def spread(values: list[float], unit: Callable[[float], str]) -> str:
    return (
        f"median {unit(statistics.median(values))}"
        f" (range {unit(min(values))}-{unit(max(values))}, {len(values)} rounds)"
    )


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(
    backend: str,
    sources: list[int],
    facts: int,
    plain: list[float],
    migrated: dict[int, list[float]],
) -> None:
    def seconds(x: float) -> str:
        return f"{x:.2f} s"

    def times(x: float) -> str:
        return f"{x:.2f}x"

    print(f"{backend}:")
    print(f"  plain load of the rows (baseline, one transaction): {spread(plain, seconds)}")
    for version in sources:
        ratios = [m / p for m, p in zip(migrated[version], plain, strict=True)]
        print(f"  migrate {version} -> {LATEST_VERSION}: {spread(migrated[version], seconds)};")
        print(f"      against the plain load of the same round: {spread(ratios, times)}")
    oldest = min(sources)
    ratio = statistics.median(m / p for m, p in zip(migrated[oldest], plain, strict=True))
    sizes = (Size("facts", facts, STATED_FACTS),)
    print(
        f"  target: a ledger of version {oldest} migrates in <= {TARGET_RATIO:.0f}x the plain "
        f"load: {ratio:.2f}x, {verdict(ratio <= TARGET_RATIO, *sizes)}"
    )
    print(f"  load average now: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=STATED_FACTS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--from", dest="sources", type=int, nargs="+", default=[1, 4, 12])
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--pg-admin", default=PG_ADMIN, help="a Postgres superuser's URL")
    parser.add_argument(
        "--pg-facts",
        type=int,
        default=PG_FACTS,
        help="facts for Postgres (a migration from version 1 takes about 25 min at 1M)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where SQLite files go (tmp)")
    args = parser.parse_args()
    for version in args.sources:
        if not 1 <= version < LATEST_VERSION:
            parser.error(f"--from {version}: choose versions in 1..{LATEST_VERSION - 1}")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgres"}:
        parser.error("--backends: sqlite, postgres or both")

    print(
        f"bench_migration: newest version {LATEST_VERSION}, from {args.sources}, "
        f"{args.rounds} rounds; load average before: {load()}"
    )
    for backend in backends:
        noop = [m.version for m in MIGRATIONS if m.statements(backend) == ("SELECT 1",)]
        print(f"  {backend}: versions that record a no-op: {noop}")
    rewrites = [m.version for m in MIGRATIONS if any("UPDATE facts" in s for s in m.sqlite)]
    print(f"  sqlite: versions that rewrite every facts row: {rewrites}")
    for backend in backends:
        started = time.perf_counter()
        facts = args.facts
        if backend == "sqlite":
            folder = Path(tempfile.mkdtemp(prefix="bench-migration-", dir=args.dir))
            try:
                plain, migrated = bench_sqlite(folder, args.sources, args.facts, args.rounds)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            name = f"SQLite {sqlite3.sqlite_version} ({facts:,} facts)"
        else:
            facts = args.pg_facts
            plain, migrated = bench_postgres(args.pg_admin, args.sources, facts, args.rounds)
            name = f"Postgres ({facts:,} facts)"
        report(name, args.sources, facts, plain, migrated)
        print(f"  ({time.perf_counter() - started:.0f} s with building the sources)")


if __name__ == "__main__":
    main()
