"""Benchmark: checkpoint latency per super-step on every backend, against a raw write.

For each backend the real analyst graph runs "Analyze NVDA" offline to the approval pause and
is approved (durability ``sync``: the graph waits for each super-step's checkpoint). Two views,
both against a raw write of the same data on the saver's own connection, the plainest way the
backend allows -- SQLite ``INSERT`` + commit, Postgres ``INSERT`` of ``bytea`` (one
transaction), dict assignment for memory, each of the bytes the saver's serializer produces;
for Redis the very JSON documents the saver stores (made by its own document builders),
written with plain ``JSON.SET`` to keys no search index covers, all of a call's in one round
trip sent the way the saver sends its own batches (``redis_wire.round_trip``: redis-py's
``Pipeline`` object alone costs about a quarter of a small batch's time in Python, which would
flatter the saver); ``--redis-raw set``: a string ``SET`` / ``MSET`` of the serializer's bytes
instead. One row or key per value.

1. In the run: every ``aput`` is timed as the graph waits for it, next to a raw write of its
   data made right before or right after it (alternately). A super-step's task writes
   (``aput_writes``) run as LangGraph tasks just before the checkpoint, on the same event
   loop (and for Redis on the same single-threaded server): whichever of the two writes goes
   first waits for the tail of those, so each pays it half of the time. This is the figure
   the first target applies to: <= 2x the raw write on every storage backend (the in-process
   ``memory://`` saver is shown, but exempt).
2. Alone: the run's calls are replayed in order on a fresh thread of the same saver, one at
   a time, each next to its raw write (alternately before and after it); ``--passes`` replays
   (3) on fresh threads, and each call counts its fastest pass, the saver's and the raw
   write's alike (on a busy machine a call that loses the CPU mid-write takes milliseconds,
   whichever it is). The checkpoint, the writes, and the super-step (writes + checkpoint)
   against the raw writes of the same data: the saver's own cost, with nothing queued ahead
   of it. The super-step's ratio is the second target (<= 2x on every storage backend): for
   Redis, its checkpoint and writes against plain ``JSON.SET`` of the same documents. For
   Redis it also prints what the server spent per command (``INFO commandstats``) during the
   replay.

Medians and p95 in ms; ratios are of medians; the load average is printed with them. A
script, not a test. Needs the services (``bash scripts/services.sh start``); ``--backends``
picks a subset.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts._targets import Size
from scripts._targets import verdict as target_verdict

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS = "redis://127.0.0.1:6380/0"
BACKENDS = ("sqlite", "postgres", "redis", "redis+shallow", "memory")

#: Writes some values (one row / key each) in one statement or command.
RawWrite = Callable[[list[bytes]], Awaitable[None]]
#: The values a raw write writes for one saver call: (kind, config, arguments) -> values.
RawValues = Callable[[str, Any, tuple[Any, ...]], list[bytes]]
#: A recorded saver call: ("put" | "writes", its arguments).
Call = tuple[str, tuple[Any, ...]]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 2 else samples[0]


@dataclass
class Timed:
    """Seconds spent by the saver and by the raw write of the same bytes, call by call."""

    ours: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)

    def add(self, ours: float, raw: float) -> None:
        self.ours.append(ours)
        self.raw.append(raw)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ours) / statistics.median(self.raw)


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


async def raw_writer(name: str, saver: Any, redis_raw: str = "json.set") -> RawWrite:
    """The plainest write of some values to the same backend, over the saver's own connection.

    ``redis_raw="json.set"`` writes each value (a stored document, see :func:`raw_values`) as
    a RedisJSON document with one ``JSON.SET``, to a key outside every search index's prefix
    (the saver's keys are ``<prefix>:checkpoint:...`` and ``<prefix>:checkpoint_write:...``);
    ``"set"`` writes strings. Redis's commands go out in one round trip the way the saver
    sends its own (:func:`memory.checkpoint.redis_wire.round_trip`).
    """
    if name == "sqlite":
        conn = saver.conn
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id TEXT PRIMARY KEY, data BLOB)")
        await conn.commit()

        async def write(values: list[bytes]) -> None:
            async with saver.lock:
                await conn.executemany(
                    "INSERT INTO bench_raw (id, data) VALUES (?, ?)",
                    [(uuid.uuid4().hex, data) for data in values],
                )
                await conn.commit()

        return write
    if name == "postgres":
        pool = saver.conn
        async with pool.connection() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS bench_raw (id TEXT PRIMARY KEY, data BYTEA)"
            )

        async def write(values: list[bytes]) -> None:
            rows = [(uuid.uuid4().hex, data) for data in values]
            async with pool.connection() as conn:
                if len(rows) == 1:
                    await conn.execute("INSERT INTO bench_raw (id, data) VALUES (%s, %s)", rows[0])
                    return
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany("INSERT INTO bench_raw (id, data) VALUES (%s, %s)", rows)

        return write
    if name.startswith("redis"):
        import memory.checkpoint.redis_wire as wire

        prefix = saver.checkpoints_index.name.rsplit(":", 1)[0] + ":bench_raw"

        async def write_redis(values: list[bytes]) -> None:
            keys = [f"{prefix}:{uuid.uuid4().hex}" for _ in values]
            commands: list[tuple[Any, ...]]
            if redis_raw == "json.set":
                commands = [("JSON.SET", k, "$", v) for k, v in zip(keys, values, strict=True)]
            elif len(values) == 1:
                commands = [("SET", keys[0], values[0])]
            else:
                commands = [("MSET", *[x for kv in zip(keys, values, strict=True) for x in kv])]
            wire.raise_first_error(await wire.round_trip(saver, commands))

        return write_redis
    store: dict[str, bytes] = {}

    async def write(values: list[bytes]) -> None:
        for data in values:
            store[uuid.uuid4().hex] = data

    return write


def raw_values(
    name: str, saver: Any, redis_raw: str, kind: str, config: Any, args: tuple[Any, ...]
) -> list[bytes]:
    """What the raw write of one saver call writes, given the call's config and arguments:
    the serializer's bytes of the checkpoint (``kind="put"``) or of each write value
    (``"writes"``); on Redis with ``redis_raw="json.set"``, the JSON documents the call
    stores, made by the saver's own document builders (the very bytes its JSON.SETs carry;
    ``tests/integration/test_checkpoint_wire.py`` holds them equal to upstream's), so they
    can be written before the call as well as after it."""
    if not (name.startswith("redis") and redis_raw == "json.set"):
        if kind == "put":
            return [saver.serde.dumps_typed(args[0])[1]]
        return [saver.serde.dumps_typed(value)[1] for _, value in args[0]]
    import orjson

    import memory.checkpoint.redis_wire as wire

    if kind == "put":
        checkpoint, metadata = args[0], args[1]
        document, _, _ = saver._checkpoint_doc(config, checkpoint, metadata)
        return [orjson.dumps(document)]
    writes, task_id, task_path = args[0], args[1], args[2] if len(args) > 2 else ""
    commands, _ = wire.write_documents(
        saver, config, writes, task_id, task_path, storage_safe_ids=name == "redis"
    )
    return [command[3] for command in commands]  # ("JSON.SET", key, "$", document)


def _plain(config: Any) -> dict[str, Any]:
    """A recorded call's config without LangGraph's runtime objects."""
    keep = (str, int, float, bool, type(None))
    return {
        "configurable": {k: v for k, v in config["configurable"].items() if isinstance(v, keep)}
    }


async def run_graph(
    saver: Any, name: str, runs: int, workdir: Path, raw: RawWrite, values: RawValues
) -> Any:
    """The real runs, timing every ``aput`` in place; returns (in-run timings, calls, sizes)."""
    from langgraph.types import Command

    from agent.market import SampleDataProvider
    from agent.nodes.services import Services
    from agent.state import Context
    from graphs.builder import compile_graph
    from memory.documents import FileMemory

    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(workdir / name / "memory"),
        artifacts_dir=workdir / name / "artifacts",
    )
    context = Context(tenant_id="bench", user_id="bench")
    in_run, calls, sizes = Timed(), list[Call](), list[int]()
    put, put_writes = saver.aput, saver.aput_writes
    recording = False

    async def timed_put(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        if not recording:
            return await put(config, checkpoint, metadata, versions)
        calls.append(("put", copy.deepcopy((_plain(config), checkpoint, metadata, versions))))
        [data] = values("put", config, (checkpoint, metadata))
        # Whichever write goes first waits behind the super-step's task writes still in
        # flight on the loop and the server: every other call, the raw write goes first.
        raw_first = len(in_run.ours) % 2 == 1
        if raw_first:
            start = time.perf_counter()
            await raw([data])
            raw_elapsed = time.perf_counter() - start
        start = time.perf_counter()
        result = await put(config, checkpoint, metadata, versions)
        elapsed = time.perf_counter() - start
        if not raw_first:
            start = time.perf_counter()
            await raw([data])
            raw_elapsed = time.perf_counter() - start
        in_run.add(elapsed, raw_elapsed)
        sizes.append(len(data))
        return result

    async def recorded_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if recording:
            calls.append(("writes", copy.deepcopy((_plain(config), writes, task_id, task_path))))
        await put_writes(config, writes, task_id, task_path)

    saver.aput, saver.aput_writes = timed_put, recorded_writes
    try:
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
    finally:
        saver.aput, saver.aput_writes = put, put_writes
    return in_run, calls, sizes


async def replay_alone(
    saver: Any, calls: list[Call], raw: RawWrite, values: RawValues, passes: int
) -> dict[str, Timed]:
    """The recorded calls again, one at a time, ``passes`` times on fresh threads, each next to
    its raw write (before it on every other call of its kind); each call keeps its fastest
    pass."""
    ours = [float("inf")] * len(calls)
    raws = [float("inf")] * len(calls)
    for done in range(passes):
        thread = f"bench-thread-alone-{uuid.uuid4().hex[:8]}"
        seen = {"put": done, "writes": done}  # calls of each kind so far (+ the pass)
        for i, (kind, recorded) in enumerate(calls):
            config, *args = copy.deepcopy(recorded)
            config["configurable"]["thread_id"] = thread
            if kind == "writes":
                written = values("writes", config, tuple(args))
                call = saver.aput_writes(config, *args)
            else:
                written = values("put", config, tuple(args))
                call = saver.aput(config, *args)
            # Every other call of its kind, and of the same call every other pass.
            raw_first = seen[kind] % 2 == 1
            seen[kind] += 1
            if raw_first:
                start = time.perf_counter()
                await raw(written)
                raw_elapsed = time.perf_counter() - start
            start = time.perf_counter()
            await call
            elapsed = time.perf_counter() - start
            if not raw_first:
                start = time.perf_counter()
                await raw(written)
                raw_elapsed = time.perf_counter() - start
            ours[i], raws[i] = min(ours[i], elapsed), min(raws[i], raw_elapsed)
    puts, writes, steps = Timed(), Timed(), Timed()
    # Writes saved against a checkpoint id, waiting for the checkpoint that follows it.
    pending: dict[str, list[tuple[float, float]]] = {}
    for (kind, recorded), elapsed, raw_elapsed in zip(calls, ours, raws, strict=True):
        parent = recorded[0]["configurable"].get("checkpoint_id") or ""
        if kind == "writes":
            writes.add(elapsed, raw_elapsed)
            pending.setdefault(parent, []).append((elapsed, raw_elapsed))
            continue
        puts.add(elapsed, raw_elapsed)
        before = pending.pop(parent, [])
        steps.add(elapsed + sum(w for w, _ in before), raw_elapsed + sum(r for _, r in before))
    return {"checkpoint": puts, "writes": writes, "step": steps}


async def redis_command_stats(saver: Any) -> dict[str, tuple[int, float]]:
    """Calls and total microseconds per command, as the server counts them."""
    stats = await saver.client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"]))
        for name, v in stats.items()
    }


async def bench_backend(
    name: str, url: str, runs: int, workdir: Path, redis_raw: str = "json.set", passes: int = 3
) -> dict[str, Any]:
    from agent.state import CHECKPOINT_TYPES_MODULES
    from memory.checkpoint import open_checkpointer

    async with open_checkpointer(url, allowed_modules=CHECKPOINT_TYPES_MODULES) as saver:
        raw = await raw_writer(name, saver, redis_raw)

        def values(kind: str, config: Any, args: tuple[Any, ...]) -> list[bytes]:
            return raw_values(name, saver, redis_raw, kind, config, args)

        in_run, calls, sizes = await run_graph(saver, name, runs, workdir, raw, values)
        server: dict[str, float] = {}
        if name.startswith("redis"):
            before = await redis_command_stats(saver)
        alone = await replay_alone(saver, calls, raw, values, passes)
        if name.startswith("redis"):
            after = await redis_command_stats(saver)
            for command, (count, usec) in after.items():
                done = count - before.get(command, (0, 0.0))[0]
                if done >= passes * len(calls) // 4:
                    server[command] = (usec - before.get(command, (0, 0.0))[1]) / done
    return {
        "backend": name,
        "in_run": in_run,
        "alone": alone,
        "bytes": statistics.median(sizes),
        "server": server,
    }


#: Measured runs a backend's median needs before the 2x target is judged on it.
STATED_RUNS = 5


def verdict(backend: str, ratio: float, runs: int) -> str:
    """The 2x target for one backend: judged on at least :data:`STATED_RUNS` runs."""
    if backend == "memory":
        return "n/a (not storage)"
    return target_verdict(ratio <= 2, Size("runs", runs, STATED_RUNS))


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs per backend")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--pg-admin", default=PG_ADMIN)
    parser.add_argument("--redis", default=REDIS)
    parser.add_argument(
        "--redis-raw",
        choices=("json.set", "set"),
        default="json.set",
        help="Redis's raw write: JSON.SET of the documents the saver stored, to unindexed keys"
        " (default), or a string SET of the serializer's bytes",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=3,
        help="replays of the alone view; each call's fastest counts",
    )
    args = parser.parse_args()
    if args.passes < 1:
        parser.error("--passes must be at least 1")

    rows = []
    with tempfile.TemporaryDirectory(prefix="analyst-bench-") as tmp:
        for name in args.backends.split(","):
            async with backend_url(name, Path(tmp), args.pg_admin, args.redis) as url:
                rows.append(
                    await bench_backend(
                        name, url, args.runs, Path(tmp), args.redis_raw, args.passes
                    )
                )

    print(
        f"checkpoint latency per super-step, durability=sync, {args.runs} runs of 'Analyze NVDA'"
        " + approval per backend; ms; raw = the same data written plainly"
        + (
            " (Redis: JSON.SET of the documents the saver stores, to unindexed keys)"
            if args.redis_raw == "json.set"
            else " (Redis: SET of the serializer's bytes)"
        )
        + "; load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
        + f" on {os.cpu_count()} CPUs"
    )
    print(
        "\n1. in the run: each checkpoint save as the graph waits for it"
        " (its raw write alternately right before and right after it)"
    )
    print(
        f"{'backend':<14} {'n':>3} {'ckpt med':>9} {'ckpt p95':>9} {'raw med':>8} {'raw p95':>8}"
        f" {'ratio':>7} {'bytes':>6}  target <= 2x"
    )
    for row in rows:
        t: Timed = row["in_run"]
        print(
            f"{row['backend']:<14} {len(t.ours):>3} {ms(statistics.median(t.ours)):>9}"
            f" {ms(p95(t.ours)):>9} {ms(statistics.median(t.raw)):>8} {ms(p95(t.raw)):>8}"
            f" {t.ratio:>6.2f}x {row['bytes']:>6.0f}  {verdict(row['backend'], t.ratio, args.runs)}"
        )
    print(
        "\n2. alone: the same calls replayed one at a time (nothing queued ahead of them),"
        f" each call's fastest of {args.passes} passes"
    )
    print(f"{'':<14} {'checkpoint':^21}   {'writes':^21}   {'step = writes + checkpoint':^29}")
    print(
        f"{'backend':<14} {'med':>6} {'raw':>6} {'ratio':>7}   {'med':>6} {'raw':>6} {'ratio':>7}"
        f"   {'med':>6} {'p95':>6} {'raw':>6} {'ratio':>7}  target <= 2x"
    )
    for row in rows:
        a: dict[str, Timed] = row["alone"]
        line = f"{row['backend']:<14}"
        for part in ("checkpoint", "writes", "step"):
            t = a[part]
            line += f" {ms(statistics.median(t.ours)):>6}"
            line += f" {ms(p95(t.ours)):>6}" if part == "step" else ""
            line += f" {ms(statistics.median(t.raw)):>6} {t.ratio:>6.2f}x" + (
                "  " if part != "step" else ""
            )
        print(f"{line}  {verdict(row['backend'], a['step'].ratio, args.runs)}")
    for row in rows:
        if row["server"]:
            spent = ", ".join(
                f"{command} {usec:.1f}" for command, usec in sorted(row["server"].items())
            )
            print(f"{row['backend']} server time per command during the replay (us): {spent}")
    if any(row["backend"] == "memory" for row in rows):
        print(
            "memory:// is LangGraph's in-process InMemorySaver (a dict), not a storage backend:"
            " shown for reference, the 2x target does not apply to it."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
