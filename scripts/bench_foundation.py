"""Benchmark: offline "Analyze NVDA" in-process, and ``analyst --help`` as a whole process.

Prints median and spread (p10-p90, min, max) for each measurement next to a baseline taken
in the same run, and the ratio. Targets on a 2-core machine: run <= 2 s median, --help <= 0.5 s
median. This is a script, not a test: shared machines are noisy, so read medians and ratios.

Baselines:
- run: the same analytics, report and chart computed by direct calls, without LangGraph or
  checkpoints (the ratio is the cost of orchestration and durable SQLite checkpoints);
- --help: ``python -c pass`` on the same interpreter (the ratio is the cost of the CLI's imports).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts._targets import Size, judge

#: Timed runs a median needs before a target is judged on it.
STATED_RUNS = 5


def summary(samples: list[float]) -> str:
    s = sorted(samples)
    q = statistics.quantiles(s, n=10) if len(s) >= 2 else [s[0]] * 9
    return (
        f"median {statistics.median(s) * 1000:8.1f} ms  p10 {q[0] * 1000:7.1f}  "
        f"p90 {q[-1] * 1000:7.1f}  min {s[0] * 1000:7.1f}  max {s[-1] * 1000:7.1f}  (n={len(s)})"
    )


async def bench_run(repeats: int, workdir: Path) -> tuple[list[float], list[float]]:
    from agent.market import SampleDataProvider
    from agent.nodes.services import Services
    from agent.research.chart import render_price_chart
    from agent.research.planning import deep_plan
    from agent.research.report import compose_report
    from agent.research.routing import route_query
    from agent.research.steps import run_step
    from agent.state import CHECKPOINT_TYPES_MODULES
    from graphs.builder import compile_graph
    from memory.checkpoint import open_checkpointer
    from memory.documents import FileMemory

    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(workdir / "agent-memory"),
        artifacts_dir=workdir / "artifacts",
    )
    market = services.market

    def direct(i: int) -> None:
        route = route_query("Analyze NVDA", market.available_tickers())
        results = {}
        for step in deep_plan(route):
            results[step["id"]] = dict(run_step(step, market))
        draft = compose_report(ticker="NVDA", mode="deep", results=results)
        render_price_chart(market.history("NVDA"), workdir / "direct" / f"{i}.png")
        assert draft["markdown"]

    graph_times: list[float] = []
    direct_times: list[float] = []
    url = f"sqlite:///{workdir / 'checkpoints.sqlite'}"
    async with open_checkpointer(url, allowed_modules=CHECKPOINT_TYPES_MODULES) as saver:
        graph = compile_graph(saver, services=services)
        # Warm-up: imports, CSV parsing, matplotlib font cache — a user's first run pays these.
        await _graph_run(graph)
        direct(-1)
        for i in range(repeats):
            # Interleave so both see the same machine noise.
            t0 = time.perf_counter()
            await _graph_run(graph)
            graph_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            direct(i)
            direct_times.append(time.perf_counter() - t0)
    return graph_times, direct_times


async def bench_app(repeats: int, workdir: Path) -> list[float]:
    """The whole application in-process: every memory tier open (SQLite checkpoints, Qdrant
    local store, fact ledger, document memory), as ``analyst run`` uses them."""
    from agent.app import AnalystApp
    from agent.settings import Settings
    from memory.identity import Principal

    settings = Settings.from_env(
        {"ANALYST_DATA_DIR": str(workdir / "app-data"), "ANALYST_MEMORY_DIR": str(workdir / "mem")}
    )
    times = []
    async with AnalystApp.open(settings, Principal("bench", "bench")) as app:
        await app.start("Analyze NVDA")  # warm-up
        for _ in range(repeats):
            t0 = time.perf_counter()
            view = await app.start("Analyze NVDA")
            times.append(time.perf_counter() - t0)
            assert view.status == "awaiting_approval"
    return times


async def _graph_run(graph) -> None:  # type: ignore[no-untyped-def]
    config = {"configurable": {"thread_id": f"bench-{uuid.uuid4().hex[:8]}"}}
    await graph.ainvoke({"query": "Analyze NVDA"}, config, durability="sync")
    state = await graph.aget_state(config)
    assert state.next == ("approval",), state.next


def bench_process(cmd: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    analyst = str(Path(sys.executable).parent / "analyst")

    print(f"python {sys.version.split()[0]} · repeats {args.repeats}")
    with tempfile.TemporaryDirectory(prefix="analyst-bench-") as tmp:
        cold_times = []
        for _ in range(max(3, args.repeats // 3)):
            t0 = time.perf_counter()
            first = subprocess.run(
                [analyst, "run", "Analyze NVDA", "--json"], cwd=tmp, check=True, capture_output=True
            )
            cold_times.append(time.perf_counter() - t0)
            assert b"awaiting_approval" in first.stdout
        graph_times, direct_times = asyncio.run(bench_run(args.repeats, Path(tmp)))
        app_times = asyncio.run(bench_app(args.repeats, Path(tmp)))

    help_times: list[float] = []
    base_times: list[float] = []
    for _ in range(args.repeats):
        help_times += bench_process([analyst, "--help"], 1)
        base_times += bench_process([sys.executable, "-c", "pass"], 1)

    g, d = statistics.median(graph_times), statistics.median(direct_times)
    h, b = statistics.median(help_times), statistics.median(base_times)
    print("\nOffline 'Analyze NVDA' to the approval point, in-process (warm)")
    print(f"  graph + SQLite checkpoints  {summary(graph_times)}")
    print(f"  baseline: direct calls      {summary(direct_times)}")
    print(f"  ratio graph/direct          {g / d:.2f}x")
    a = statistics.median(app_times)
    print(f"  AnalystApp, all tiers open  {summary(app_times)}")
    print(f"  ratio app/direct            {a / d:.2f}x")
    print(f"  whole CLI process (imports)  {summary(cold_times)}")
    print("\n`analyst --help` as a whole process")
    print(f"  analyst --help              {summary(help_times)}")
    print(f"  baseline: python -c pass    {summary(base_times)}")
    print(f"  ratio help/python           {h / b:.2f}x")
    print("targets:")
    for text in targets(app_times, help_times):
        print(text)


def targets(app_times: list[float], help_times: list[float]) -> list[str]:
    """The two targets' lines, each judged on a median of at least :data:`STATED_RUNS`."""
    return [
        judge(
            "AnalystApp run median <= 2000 ms",
            statistics.median(app_times) <= 2.0,
            Size("runs", len(app_times), STATED_RUNS),
        ),
        judge(
            "analyst --help median <= 500 ms",
            statistics.median(help_times) <= 0.5,
            Size("runs", len(help_times), STATED_RUNS),
        ),
    ]


if __name__ == "__main__":
    main()
