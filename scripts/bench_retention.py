"""Benchmark the retention sweep on the embedded defaults.

    python scripts/bench_retention.py [--n 100000] [--repeat 3] [--repeat-n 20000] [--expired 0.9]

Each run fills a fresh data folder for one principal with ``n`` items across tiers -- episodes
(40%), candidates (20%), cold-store events in Qdrant Edge (25%), session summaries (7.5%) and
extraction jobs (7.5%) -- of which ``--expired`` are older than their retention age, bulk-loaded
through the journal's batch calls (``add_episodes``, ``add_candidates``; ``put_summary`` and
``enqueue`` one by one, their only form) and the store's ``abatch`` (puts of 1,000 with
``index=False``: no embedding, which retention never needs). It then times
``app.memory.sweep()`` at an injected clock (every deletion audited, embedding-cache rows
dropped, deletes batched by :data:`agent.app.retention.BATCH`).

Baseline, measured in the same run: a plain ``DELETE ... WHERE at < ?`` of as many rows as the
sweep deleted, from one indexed table in a fresh SQLite file (WAL, ``synchronous=NORMAL``, the
ledger's settings). Figures: the full-size run once, then the median and spread of
``--repeat`` runs at ``--repeat-n``; cost per item (µs per item deleted and per item read) and
the ratio to the baseline. Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langgraph.store.base import PutOp  # noqa: E402

from agent.app import AnalystApp  # noqa: E402
from agent.nodes.services import Services  # noqa: E402
from agent.settings import Settings  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.journal.records import Candidate, Episode, SessionSummary  # noqa: E402
from memory.recall import NAMESPACE  # noqa: E402
from memory.store.scoped import scoped  # noqa: E402

T = datetime(2027, 6, 1, tzinfo=UTC)
SHARES = {"episodes": 0.40, "candidates": 0.20, "events": 0.25, "summaries": 0.075, "jobs": 0.075}
BATCH = 1000


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


@dataclass
class Run:
    items: int
    deleted: int
    load_s: float
    sweep_s: float
    baseline_s: float

    @property
    def us_deleted(self) -> float:
        return self.sweep_s * 1e6 / max(self.deleted, 1)

    @property
    def us_read(self) -> float:
        return self.sweep_s * 1e6 / self.items

    @property
    def ratio(self) -> float:
        return self.sweep_s / self.baseline_s


def counts(n: int) -> dict[str, int]:
    found = {tier: int(n * share) for tier, share in SHARES.items()}
    found["episodes"] += n - sum(found.values())
    return found


def age(i: int, expired: float) -> datetime:
    """Item ``i``'s time: expired ones 400 days before T, the others 5 days before."""
    old = (i % 100) < expired * 100
    return T - timedelta(days=400 if old else 5, seconds=i)


async def load(app: AnalystApp, clock: Clock, n: int, expired: float) -> None:
    p = app.principal
    learner = await app.memory.learner()
    journal = learner.journal
    sizes = counts(n)
    episodes = [
        Episode(
            p.tenant_id,
            f"ep-{i}",
            p.user_id,
            f"th-{i // 50}",
            age(i, expired),
            "user",
            "message",
            f"turn {i}: the analyst should look at sector {i % 97} again",
        )
        for i in range(sizes["episodes"])
    ]
    for start in range(0, len(episodes), BATCH):
        await journal.add_episodes(episodes[start : start + BATCH])
    candidates = [
        Candidate(
            p.tenant_id,
            f"cand-{i}",
            p.user_id,
            "preference",
            {"text": f"likes {i}"},
            f"likes {i}",
            (f"ep-{i}",),
            "rejected",
            "bench",
            age(i, expired),
        )
        for i in range(sizes["candidates"])
    ]
    for start in range(0, len(candidates), BATCH):
        await journal.add_candidates(candidates[start : start + BATCH])
    for i in range(sizes["summaries"]):
        at = age(i, expired)
        await journal.put_summary(
            SessionSummary(
                p.tenant_id,
                f"sess-{i}",
                p.user_id,
                f"th-{i}",
                at,
                at,
                f"topic {i}",
                f"summary of session {i}",
            )
        )
    for i in range(sizes["jobs"]):
        clock.at = age(i, expired)
        # A job over one episode: an expired episode takes its job with it.
        await journal.enqueue("decision", f"th-{i // 50}", [f"ep-{i}"])
    clock.at = T
    view = scoped(await app.tiers.store(), p)
    events = [
        PutOp(
            NAMESPACE,
            f"ev-{i}",
            {
                "text": f"decision {i} on sector {i % 97}",
                "kind": "decision",
                "importance": 6,
                "at": age(i, expired).isoformat(),
            },
            index=False,
        )
        for i in range(sizes["events"])
    ]
    for start in range(0, len(events), BATCH):
        await view.abatch(events[start : start + BATCH])


def baseline(rows: int, folder: Path) -> float:
    """A plain indexed DELETE of ``rows`` rows (of twice as many) in a fresh SQLite file."""
    conn = sqlite3.connect(folder / "baseline.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE t (tenant_id TEXT, user_id TEXT, id TEXT, at TEXT, text TEXT,"
        " PRIMARY KEY (tenant_id, id))"
    )
    conn.execute("CREATE INDEX t_at ON t (tenant_id, user_id, at)")
    old, new = "2026-01-01T00:00:00", "2027-05-27T00:00:00"
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO t VALUES ('bench', 'u1', ?, ?, ?)",
        ((f"r-{i}", old if i < rows else new, f"turn {i} text") for i in range(2 * rows)),
    )
    conn.execute("COMMIT")
    start = time.perf_counter()
    conn.execute("BEGIN")
    gone = conn.execute(
        "DELETE FROM t WHERE tenant_id = 'bench' AND user_id = 'u1' AND at < '2027-01-01'"
    ).rowcount
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    assert gone == rows, (gone, rows)
    return elapsed


async def one_run(n: int, expired: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-retention-") as tmp:
        folder = Path(tmp)
        env = {"ANALYST_DATA_DIR": str(folder / "data"), "ANALYST_MEMORY_DIR": str(folder / "m")}
        settings = replace(Settings.from_env(env), sweep_on_start=False)
        clock = Clock(T)
        services = replace(Services.from_settings(settings), clock=clock)
        async with AnalystApp.open(settings, Principal("bench", "u1"), services) as app:
            started = time.perf_counter()
            await load(app, clock, n, expired)
            loaded = time.perf_counter() - started
            clock.at = T
            started = time.perf_counter()
            receipt = await app.memory.sweep()
            swept = time.perf_counter() - started
        deleted = sum(
            t["count"] for tier, t in receipt["deleted"].items() if tier != "embedding_cache"
        )
        return Run(n, deleted, loaded, swept, baseline(deleted, folder))


def line(label: str, run: Run) -> str:
    return (
        f"{label:<16} {run.items:>7,} items  {run.deleted:>7,} deleted  load {run.load_s:6.1f} s"
        f"  sweep {run.sweep_s:7.2f} s  {run.us_deleted:7.1f} µs/item deleted"
        f"  {run.us_read:6.1f} µs/item read  baseline DELETE {run.baseline_s * 1e3:7.1f} ms"
        f"  x{run.ratio:,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="items in the full-size run")
    parser.add_argument("--repeat", type=int, default=3, help="runs for the median")
    parser.add_argument("--repeat-n", type=int, default=20_000, help="items in each of those")
    parser.add_argument("--expired", type=float, default=0.9, help="share of expired items")
    args = parser.parse_args()
    print(f"retention sweep, embedded defaults (SQLite ledger + Qdrant Edge); tiers {SHARES}")
    full = asyncio.run(one_run(args.n, args.expired))
    print(line("full run", full))
    runs = [asyncio.run(one_run(args.repeat_n, args.expired)) for _ in range(args.repeat)]
    for k, run in enumerate(runs, 1):
        print(line(f"repeat {k}", run))
    sweeps = [r.sweep_s for r in runs]
    per_item = [r.us_deleted for r in runs]
    ratios = [r.ratio for r in runs]
    print(
        f"median of {len(runs)} at {args.repeat_n:,}: sweep {statistics.median(sweeps):.2f} s "
        f"(range {min(sweeps):.2f}-{max(sweeps):.2f}), {statistics.median(per_item):.1f} µs/item "
        f"deleted (range {min(per_item):.1f}-{max(per_item):.1f}), "
        f"x{statistics.median(ratios):,.0f} a plain DELETE (range {min(ratios):,.0f}-"
        f"{max(ratios):,.0f})"
    )


if __name__ == "__main__":
    main()
