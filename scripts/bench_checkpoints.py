"""Benchmark: checkpoint latency per super-step on every backend, against a raw write.

For each backend the real analyst graph runs "Analyze NVDA" offline to the approval pause and
is approved (durability ``sync``: one checkpoint per super-step). Every ``aput`` the graph
makes is timed; right after it, in the same run and on the same connection, the bytes of that
checkpoint (as the saver's serializer produces them) are written once more the plainest way the
backend allows: SQLite ``INSERT`` + commit, Postgres ``INSERT`` of a ``bytea`` (autocommit),
Redis ``SET``, a dict assignment for memory. Printed: median and p95 of both, and the
overhead ratio of the medians. Target: <= 2x the raw write on every storage backend; the
in-process ``memory://`` saver is reported but exempt. A script, not a test.

Needs the services (``bash scripts/services.sh start``); ``--backends`` picks a subset.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS = "redis://127.0.0.1:6380/0"
BACKENDS = ("sqlite", "postgres", "redis", "redis+shallow", "memory")

RawWrite = Callable[[bytes], Awaitable[None]]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f}"


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 2 else samples[0]


@asynccontextmanager
async def backend_url(name: str, workdir: Path, pg_admin: str, redis: str) -> AsyncIterator[str]:
    """A fresh database / key prefix / file for one backend, removed afterwards."""
    if name == "sqlite":
        yield f"sqlite:///{workdir / 'bench.sqlite'}"
    elif name == "memory":
        yield "memory://"
    elif name == "postgres":
        import psycopg

        db = f"analyst_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(pg_admin, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{db}"')
        try:
            yield pg_admin.rsplit("/", 1)[0] + f"/{db}"
        finally:
            with psycopg.connect(pg_admin, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    else:
        import redis as redis_lib

        prefix = f"analyst_bench_{uuid.uuid4().hex[:8]}"
        base = (
            redis.replace("redis://", "redis+shallow://", 1) if name == "redis+shallow" else redis
        )
        try:
            yield f"{base}?prefix={prefix}"
        finally:
            client = redis_lib.Redis.from_url(redis)
            for index in client.execute_command("FT._LIST"):
                if index.decode().startswith(prefix):
                    client.execute_command("FT.DROPINDEX", index)
            keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))
            keys += list(client.scan_iter(match="*bench-thread-*", count=1000))
            if keys:
                client.delete(*keys)


async def raw_writer(name: str, saver: Any) -> RawWrite:
    """The plainest write of some bytes to the same backend, over the saver's own connection."""
    if name == "sqlite":
        conn = saver.conn
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id TEXT PRIMARY KEY, data BLOB)")
        await conn.commit()

        async def write(data: bytes) -> None:
            async with saver.lock:
                await conn.execute(
                    "INSERT INTO bench_raw (id, data) VALUES (?, ?)", (uuid.uuid4().hex, data)
                )
                await conn.commit()

        return write
    if name == "postgres":
        pool = saver.conn
        async with pool.connection() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS bench_raw (id TEXT PRIMARY KEY, data BYTEA)"
            )

        async def write(data: bytes) -> None:
            async with pool.connection() as conn:
                await conn.execute(
                    "INSERT INTO bench_raw (id, data) VALUES (%s, %s)", (uuid.uuid4().hex, data)
                )

        return write
    if name.startswith("redis"):
        client = saver._redis

        async def write(data: bytes) -> None:
            await client.set(f"{saver._checkpoint_prefix}:bench_raw:{uuid.uuid4().hex}", data)

        return write
    store: dict[str, bytes] = {}

    async def write(data: bytes) -> None:
        store[uuid.uuid4().hex] = data

    return write


async def bench_backend(name: str, url: str, runs: int, workdir: Path) -> dict[str, Any]:
    from langgraph.types import Command

    from agent.market import SampleDataProvider
    from agent.services import Services
    from agent.state import Context
    from graphs.builder import compile_graph
    from memory.checkpoint import open_checkpointer
    from memory.documents import FileMemory

    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(workdir / name / "memory"),
        artifacts_dir=workdir / name / "artifacts",
    )
    context = Context(tenant_id="bench", user_id="bench")
    checkpoint_times: list[float] = []
    raw_times: list[float] = []
    sizes: list[int] = []
    async with open_checkpointer(url) as saver:
        raw = await raw_writer(name, saver)
        original = saver.aput
        recording = False

        async def timed_aput(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
            start = time.perf_counter()
            result = await original(config, checkpoint, metadata, versions)
            elapsed = time.perf_counter() - start
            if recording:
                _, data = saver.serde.dumps_typed(checkpoint)
                start = time.perf_counter()
                await raw(data)
                raw_times.append(time.perf_counter() - start)
                checkpoint_times.append(elapsed)
                sizes.append(len(data))
            return result

        saver.aput = timed_aput  # type: ignore[method-assign]
        graph = compile_graph(saver, services=services)
        for run in range(runs + 1):
            recording = run > 0  # the first run warms caches and connections
            config = {"configurable": {"thread_id": f"bench-thread-{name}-{run}"}}
            await graph.ainvoke(
                {"query": "Analyze NVDA"}, config, context=context, durability="sync"
            )
            snap = await graph.aget_state(config)
            decision = {
                "action": "approve",
                "draft_hash": snap.values["draft"]["hash"],
                "approver": "bench",
            }
            await graph.ainvoke(
                Command(resume=decision), config, context=context, durability="sync"
            )
    return {
        "backend": name,
        "n": len(checkpoint_times),
        "checkpoint": checkpoint_times,
        "raw": raw_times,
        "bytes": statistics.median(sizes),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs per backend")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--pg-admin", default=PG_ADMIN)
    parser.add_argument("--redis", default=REDIS)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="analyst-bench-") as tmp:
        for name in args.backends.split(","):
            async with backend_url(name, Path(tmp), args.pg_admin, args.redis) as url:
                rows.append(await bench_backend(name, url, args.runs, Path(tmp)))

    print(
        f"checkpoint latency per super-step, durability=sync, {args.runs} runs of 'Analyze NVDA'"
        " + approval per backend (times in ms)"
    )
    print(
        f"{'backend':<14} {'n':>3} {'ckpt med':>9} {'ckpt p95':>9} {'raw med':>9} {'raw p95':>9}"
        f" {'ratio':>6} {'bytes':>7}  target <= 2x"
    )
    for row in rows:
        ck, rw = row["checkpoint"], row["raw"]
        ratio = statistics.median(ck) / statistics.median(rw)
        if row["backend"] == "memory":
            verdict = "n/a (not storage)"
        else:
            verdict = "ok" if ratio <= 2 else "over"
        print(
            f"{row['backend']:<14} {row['n']:>3} {ms(statistics.median(ck)):>9} {ms(p95(ck)):>9}"
            f" {ms(statistics.median(rw)):>9} {ms(p95(rw)):>9} {ratio:>5.2f}x {row['bytes']:>7.0f}"
            f"  {verdict}"
        )
    if any(row["backend"] == "memory" for row in rows):
        print(
            "memory:// is LangGraph's in-process InMemorySaver (a dict), not a storage backend:"
            " shown for reference, the 2x target does not apply to it."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
