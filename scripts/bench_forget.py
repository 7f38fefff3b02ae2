"""Benchmark forgetting: forget of one item and account deletion, 10,000 memories.

    python scripts/bench_forget.py [--items 10000] [--forgets 5] [--runs 3] [--quick]

The embedded defaults as a user has them: a temporary data and memory dir (``ANALYST_DATA_DIR``
/ ``ANALYST_MEMORY_DIR`` set before ``Settings.from_env()``), ``AnalystApp.open(settings,
Principal("default", user), services)``, the offline model. Seeding is timed and printed, not
part of the figures: for ``bench``, ``--items`` memories -- real threads (2%: ``app.start``, a
request run to the approval point or a chat message), episodes on those threads (40% with
theirs; ``add_episodes``), session summaries (10%; ``put_summary``), candidates (10%;
``add_candidates``), fact history rows (10%; ``record_many``: 5 profile attributes, rising
``valid_from``) and cold-store memories and events (30%; ``aremember_many``: MiniLM embeds
each). A second user, ``other``, gets 5% of that; it must be untouched (checked, printed).

1. Forget of one item: ``app.memory.forget([id], confirm=True)`` of ``--forgets`` episodes,
   each on its own thread (the thread and what cites the episode go too), then of as many
   memories (a derived item); each after the previous one's detached Qdrant Edge erasure
   ended (timed and printed apart: the forget does not wait for it). Median and min-max,
   one receipt's per-tier counts, the time per step of the cascade; the baseline in the
   same run: ``compact`` alone (Qdrant Edge rebuild, the WAL emptied and truncated in every
   embedded SQLite file), split by file.
2. Account deletion: ``app.memory.forget_account(confirm=True)`` of the seeded user, ``--runs``
   times, each freshly seeded in a fresh folder: median, min-max, ms per item, steps.
   Baselines in the same run: seeding the same items (deletion as a fraction of writing), and
   a raw ``DELETE`` of the same journal rows, one transaction, on a copy of the SQLite file.

Targets, judged only when the user held ``STATED_ITEMS`` (10,000) memories, else printed as
"not measured at 10,000 memories": one item forgotten in 200 ms median, an account deleted
in 1 s median.

``--quick``: 1,000 items, 2 forgets, 1 account deletion (a smoke run, not the issue's
figures). A script, not a test: nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import agent.app.compaction as compacting  # noqa: E402
import agent.app.erasure as erasure  # noqa: E402
import agent.app.forgetting as forgetting  # noqa: E402
import agent.app.kinds as kinds  # noqa: E402
import memory.store.erasing as erasing  # noqa: E402
import memory.store.indexing as indexing  # noqa: E402
from agent.app import AnalystApp  # noqa: E402
from agent.app.tiers import Tiers  # noqa: E402
from agent.nodes.services import Services  # noqa: E402
from agent.recollection.forgettable import all_items  # noqa: E402
from agent.settings import Settings  # noqa: E402
from memory.facts import MemoryDelta, subject_for  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.journal import SessionSummary, stable_id  # noqa: E402
from memory.journal.queries import OWNED_TABLES  # noqa: E402
from memory.journal.records import Candidate, Episode  # noqa: E402
from memory.recall import NewMemory, aremember_many  # noqa: E402
from scripts._targets import Size, judge  # noqa: E402

USER, OTHER = "bench", "other"
TICKERS = "NVDA AAPL MSFT AMZN GOOGL META AMD INTC TSM ASML ORCL CRM ADBE NFLX AVGO".split()
ATTRIBUTES = ("horizon_years", "risk_tolerance", "report_style", "base_currency", "watchlist")
KINDS = ("decision", "rejection", "milestone", "note")
CHAT = (
    "My investment horizon is {n} years.",
    "I prefer brief reports, {t} first.",
    "Remind me to revisit {t} after the next earnings.",
)


def spread(values: Sequence[float]) -> str:
    """Median and min-max of ``values`` (seconds), in milliseconds."""
    v = [x * 1000 for x in values]
    return f"median {statistics.median(v):9.1f} ms  min-max {min(v):.1f}-{max(v):.1f}  (n={len(v)})"


def line(name: str, values: Sequence[float], baseline: Sequence[float] | None = None) -> str:
    text = f"  {name:<42} {spread(values)}"
    if baseline:
        text += f"   x{statistics.median(values) / statistics.median(baseline):.3g} baseline"
    return text


def load() -> str:
    """The machine's load average now (the figures are read against it)."""
    return (
        "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    )


def since(began: float) -> float:
    return time.perf_counter() - began


#: Seconds spent in each step of the cascade since :func:`breakdown` last took them.
SPENT: dict[str, float] = {}


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        result = fn(*args, **kwargs)
        if not inspect.isawaitable(result):
            SPENT[name] = SPENT.get(name, 0.0) + since(began)
            return result

        async def done() -> Any:
            try:
                return await result
            finally:
                SPENT[name] = SPENT.get(name, 0.0) + since(began)

        return done()

    return call


#: The cascade's steps: (label, where each is looked up by the code that calls it, name).
STEPS = {
    "read": ("read everything (read)", [forgetting], "read"),
    "cascade": ("plan (cascade)", [forgetting], "cascade"),
    "delete": ("store deletes (Store.delete)", [kinds.Store], "delete"),
    "remove_all": ("store listed and deleted (Store.remove_all)", [kinds.Store], "remove_all"),
    "forget_vectors": (
        "embedding cache (forget_vectors)",
        [forgetting, erasure],
        "forget_vectors",
    ),
    "compact": ("compaction (compact)", [forgetting, erasure], "compact"),
    "delete_threads": ("threads (delete_held_threads)", [Tiers], "delete_held_threads"),
}
for _step, (_label, _owners, _attr) in STEPS.items():
    for _owner in _owners:
        setattr(_owner, _attr, timed(_step, getattr(_owner, _attr)))


def breakdown(into: dict[str, list[float]], total: float) -> None:
    """Add one call's steps to ``into``; what no step holds is "the rest"."""
    seconds = dict(SPENT)
    SPENT.clear()
    for name, (label, _, _) in STEPS.items():
        if name in seconds:
            into.setdefault(label, []).append(seconds[name])
    rest = "the rest (reads, journal, ledger, audit)"
    into.setdefault(rest, []).append(total - sum(seconds.values()))


# -- the embedded defaults -------------------------------------------------------------------


@contextmanager
def embedded(folder: Path) -> Iterator[Path]:
    """Point the analyst at ``folder`` (nothing inherited from the shell), offline model."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(("ANALYST_", "QDRANT_")):
            del os.environ[name]
    os.environ |= {
        "ANALYST_DATA_DIR": str(folder / "data"),
        "ANALYST_MEMORY_DIR": str(folder / "memory"),
        "ANALYST_MODEL": "offline",
    }
    try:
        yield folder / "data"
    finally:
        os.environ.clear()
        os.environ.update(saved)


@asynccontextmanager
async def session(user: str) -> AsyncIterator[AnalystApp]:
    settings = Settings.from_env()
    services = Services.from_settings(settings)
    async with AnalystApp.open(settings, Principal("default", user), services) as app:
        yield app


# -- seeding ---------------------------------------------------------------------------------


@dataclass
class Seeded:
    items: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: Seeded episodes, one per real thread (distinct threads), and the memories' keys.
    episodes: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)


def share(items: int, fraction: float) -> int:
    return max(1, round(items * fraction))


@contextmanager
def clock(into: dict[str, float], label: str) -> Iterator[None]:
    began = time.perf_counter()
    yield
    into[label] = since(began)


async def batched(write: Callable[[list[Any]], Awaitable[Any]], rows: list[Any], n: int) -> None:
    for first in range(0, len(rows), n):
        await write(rows[first : first + n])


async def seed(user: str, items: int) -> Seeded:
    """``items`` memories of ``user`` across tiers (see the module docstring)."""
    out = Seeded()
    took = out.seconds
    start = datetime.now(UTC) - timedelta(days=30)  # recent: no retention policy applies
    async with session(user) as app:
        p = app.principal
        mine: dict[str, Any] = {"tenant_id": p.tenant_id, "user_id": p.user_id}
        learner = await app.memory.learner()
        journal, facts = learner.journal, learner.facts
        threads = [f"{user}-{i:04d}" for i in range(share(items, 0.02))]
        with clock(took, "threads (app.start)"):
            for i, thread in enumerate(threads):
                t = TICKERS[i % 6]  # the bundled sample market data has the first six
                if i % 4 == 0:
                    await app.start(f"Analyze {t} for me.", thread_id=thread)
                else:
                    text = CHAT[i % len(CHAT)].format(n=2 + i % 20, t=t)
                    await app.start(text, thread_id=thread, keep_session=True)
        said = len(await journal.list_episodes(limit=1_000_000))
        ids = [stable_id("ep", user, n) for n in range(share(items, 0.4) - said)]
        out.episodes = ids[: len(threads)]  # episode n is on thread n % threads

        def cited(n: int, k: int = 1) -> tuple[str, ...]:
            return tuple(ids[(n * 13 + j) % len(ids)] for j in range(k))

        def tick(n: int) -> str:
            return TICKERS[n % len(TICKERS)]

        with clock(took, "episodes (add_episodes)"):
            episodes = [
                Episode(**mine, episode_id=e, thread_id=threads[n % len(threads)],
                        at=start + timedelta(minutes=n), role="user", kind="message",
                        text=f"Note {n}: compare {tick(n)} with {tick(n * 7)} on margins.")
                for n, e in enumerate(ids)
            ]  # fmt: skip
            await batched(journal.add_episodes, episodes, 500)
        with clock(took, "summaries (put_summary)"):
            for n in range(share(items, 0.1)):
                at, thread = start + timedelta(hours=n), threads[n % len(threads)]
                await journal.put_summary(
                    SessionSummary(**mine, session_id=f"{thread}/{n}", thread_id=thread,
                                   started=at, ended=at + timedelta(minutes=20), topic=tick(n),
                                   summary=f"Session {n}: analysed {tick(n)}; approved it.",
                                   open_items=(f"Revisit {tick(n * 3)} after earnings ({n}).",),
                                   episode_ids=cited(n, 4))
                )  # fmt: skip
        with clock(took, "candidates (add_candidates)"):
            candidates = [
                Candidate(**mine, candidate_id=stable_id("cand", user, n), kind="preference",
                          payload={"text": f"Prefers {tick(n)} coverage ({n})"},
                          quote=f"I like {tick(n)} reports, number {n}.", episode_ids=cited(n),
                          status="pending", reason="inferred",
                          created_at=start + timedelta(minutes=n))
                for n in range(share(items, 0.1))
            ]  # fmt: skip
            await batched(journal.add_candidates, candidates, 500)
        with clock(took, "fact history (record_many)"):
            deltas = [
                MemoryDelta(subject=subject_for(p), attribute=ATTRIBUTES[n % 5],
                            value=f"{ATTRIBUTES[n % 5]} value {n}", memory_type="profile",
                            valid_from=start + timedelta(minutes=n), source="stated",
                            source_episode_id=cited(n)[0])
                for n in range(share(items, 0.1))
            ]  # fmt: skip
            await batched(facts.record_many, deltas, 100)
        with clock(took, "memories (aremember_many, MiniLM)"):
            memories = [
                NewMemory(f"{('Approved', 'Rejected', 'Published', 'Noted')[n % 4]} {tick(n)} "
                          f"item {n} for {user}", kind=KINDS[n % 4], source="extraction",
                          at=start + timedelta(minutes=n), episode_ids=cited(n),
                          tickers=[tick(n)])
                for n in range(share(items, 0.3))
            ]  # fmt: skip
            store = await app.tiers.store()
            for first in range(0, len(memories), 500):
                out.memories += await aremember_many(store, p, memories[first : first + 500])
        out.items = sum((await counts(app)).values()) - len(threads)
    return out


async def counts(app: AnalystApp) -> dict[str, int]:
    learner = await app.memory.learner()
    journal, facts = learner.journal, learner.facts
    subject = subject_for(app.principal)
    rows = [r for a in await facts.profile(subject) for r in await facts.history(subject, a)]
    return {
        "threads": len(app.index.list(app.principal, limit=1_000_000)),
        "episodes": len(await journal.list_episodes(limit=1_000_000)),
        "summaries": len(await journal.summaries(limit=1_000_000)),
        "candidates": len(await journal.candidates(status=None, limit=1_000_000)),
        "fact rows": len(rows),
        "store items": len(await all_items(await app.tiers.store(), app.principal)),
    }


async def other_counts() -> dict[str, int]:
    async with session(OTHER) as app:
        return await counts(app)


def untouched(before: dict[str, int], after: dict[str, int]) -> str:
    verdict = "untouched" if before == after else f"CHANGED (now {after})"
    return f"  user '{OTHER}': {sum(before.values())} items {before} -> {verdict}"


async def seed_both(items: int, label: str) -> tuple[Seeded, dict[str, int]]:
    await seed(OTHER, max(100, items // 20))
    seeded = await seed(USER, items)
    total = sum(seeded.seconds.values())
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in seeded.seconds.items())
    print(f"  seeded {label}: {seeded.items:,} items of '{USER}' in {total:.1f} s ({parts})")
    return seeded, await other_counts()


def compaction_files(app: AnalystApp) -> list[tuple[str, Path]]:
    return [
        (e.name, e.path)
        for e in app.tiers.embedded_files()
        if e.kind == "sqlite" and e.path.exists()
    ]


def size(path: Path) -> str:
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    # On disk (Qdrant Edge preallocates sparse 32 MB WAL and page files).
    return f"{sum(f.stat().st_blocks for f in files) * 512 / 1e6:.1f} MB"


async def opened(app: AnalystApp) -> None:
    """Open memory first: its daily start-up sweep (a principal's first, as the seeding left
    no trace of one) reads everything through the same steps, and is not a forget."""
    await app.memory.learner()
    SPENT.clear()


def show(title: str, steps: dict[str, list[float]]) -> None:
    if title:
        print(f" {title}")
    for name, values in steps.items():
        print(line(f"  {name}", values))


# -- 1. forget of one item -------------------------------------------------------------------


async def compaction(app: AnalystApp, n: int) -> tuple[list[float], dict[str, list[float]]]:
    """``compact`` alone, ``n`` times, then each of its parts alone (sizes after)."""
    store, files = await app.tiers.store(), compaction_files(app)
    whole: list[float] = []
    parts: dict[str, list[float]] = {}
    jobs: dict[str, Callable[[], Any]] = {"Qdrant Edge rebuild": store.rebuild}  # type: ignore[attr-defined]
    jobs |= {f"WAL truncate {name}": partial(compacting.vacuum, str(path)) for name, path in files}
    for _ in range(n):
        began = time.perf_counter()
        await compacting.compact(app.tiers)
        whole.append(since(began))
        for name, job in jobs.items():
            began = time.perf_counter()
            await asyncio.to_thread(job)
            parts.setdefault(name, []).append(since(began))
    sizes = [size(Path(store.path)), *(size(path) for _, path in files)]  # type: ignore[attr-defined]
    return whole, {f"{k} ({mb})": v for (k, v), mb in zip(parts.items(), sizes, strict=True)}


async def bench_one(folder: Path, args: argparse.Namespace) -> None:
    print(f"\n1. forget of one item ({args.items:,} memories of '{USER}')")
    with embedded(folder) as data:
        seeded, other = await seed_both(args.items, "for the forgets")
        async with session(USER) as app:
            began = time.perf_counter()
            await opened(app)
            print(f"  start-up retention sweep (daily, not in the figures): {since(began):.1f} s")
            forgets: dict[str, list[float]] = {"episode": [], "memory": []}
            steps: dict[str, dict[str, list[float]]] = {"episode": {}, "memory": {}}
            receipt: dict[str, Any] = {}
            erasures: list[float] = []
            chosen = {"episode": seeded.episodes, "memory": seeded.memories}
            for what in forgets:
                if what == "memory":  # some memories went with the episodes they cite
                    live = {i.key for i in await all_items(await app.tiers.store(), app.principal)}
                    chosen[what] = [k for k in seeded.memories if k in live]
                for n in range(args.forgets):
                    SPENT.clear()
                    started = time.perf_counter()
                    result = await app.memory.forget([chosen[what][n]], confirm=True)
                    forgets[what].append(since(started))
                    breakdown(steps[what], forgets[what][-1])
                    receipt = receipt or result
                    # The shard's rewrite runs detached after the forget returned; the next
                    # forget starts once it is done, as a user's next one would after a while.
                    began = time.perf_counter()
                    settle(data)
                    erasures.append(since(began))
            compact, parts = await compaction(app, args.forgets)
            left = await counts(app)
        after = await other_counts()
    counted = {tier: found["count"] for tier, found in receipt["deleted"].items()}
    print(
        f"  receipt of one episode forget (per tier): {counted}; tombstones {receipt['tombstones']}"
    )
    print(f"  left of '{USER}' after {2 * args.forgets} forgets: {left}")
    for what, values in forgets.items():
        print(line(f"forget one {what} (confirm=True)", values, compact))
    for what, found in steps.items():
        show(f"where the time goes, forget one {what}:", found)
    print(line("after it: the detached shard eraser (not waited for)", erasures))
    print(line("baseline: compact alone", compact))
    show("", parts)
    for what, values in forgets.items():
        ratio = statistics.median(values) / statistics.median(compact)
        print(f"  ratio: forget one {what} / compact   x{ratio:.2f}")
    print(untouched(other, after))
    print(f"  {load()}")
    for what, values in forgets.items():
        print(forget_target(what, statistics.median(values), seeded.items))


#: The user's number of memories the targets are stated at.
STATED_ITEMS = 10_000


def forget_target(what: str, median_s: float, items: int) -> str:
    """Forgetting one item: 200 ms median, judged only at :data:`STATED_ITEMS` memories."""
    return judge(
        f"forget one {what} <= 200 ms", median_s <= 0.2, Size("memories", items, STATED_ITEMS)
    )


def account_target(median_s: float, items: int) -> str:
    """Deleting an account: 1 s median, judged only at :data:`STATED_ITEMS` memories."""
    return judge("forget_account <= 1 s", median_s <= 1.0, Size("memories", items, STATED_ITEMS))


# -- 2. account deletion ---------------------------------------------------------------------


def raw_delete(facts_file: Path, folder: Path) -> tuple[float, int]:
    """A raw DELETE of the user's journal rows, one transaction, on a copy of the file."""
    copy, mine = folder / "raw-delete.sqlite", "WHERE tenant_id = 'default' AND user_id = ?"
    target = sqlite3.connect(copy, isolation_level=None)
    sqlite3.connect(facts_file).backup(target)
    target.execute("PRAGMA journal_mode=WAL")
    began = time.perf_counter()
    target.execute("BEGIN IMMEDIATE")
    deletes = [
        target.execute(f"DELETE FROM {t.name} {mine}", (USER,)) for t in OWNED_TABLES.values()
    ]
    target.execute("COMMIT")
    seconds = since(began)
    target.close()
    copy.unlink()
    return seconds, sum(d.rowcount for d in deletes)


def settle(data: Path) -> None:
    """Wait until the detached Qdrant Edge eraser and indexer (:mod:`memory.store.erasing`,
    :mod:`memory.store.indexing`) are done with the shard in ``data`` (what a forget or the
    seeding leaves running, not part of the figures): removing the folder under them would
    break them."""
    shard = data / "qdrant-edge"
    if not shard.exists():
        return
    erasing.wait_erased(shard, timeout=600)
    # The indexer too: writes (the seeding) start it, and it swaps the shard when done.
    while erasing.eraser_running(shard) or indexing.indexer_running(shard):
        time.sleep(0.05)


async def bench_account(folder: Path, args: argparse.Namespace) -> None:
    items = args.items
    print(f"\n2. account deletion ({items:,} memories of '{USER}', {args.runs} run(s))")
    deletes, seeds, raws, per_item, sizes = [], [], [], [], []
    steps: dict[str, list[float]] = {}
    receipt: dict[str, Any] = {}
    raw_rows = 0
    for run in range(args.runs):
        with embedded(folder / f"account-{run}") as data:
            seeded, other = await seed_both(items, f"run {run + 1}")
            seeds.append(sum(seeded.seconds.values()))
            seconds, raw_rows = raw_delete(data / "facts.sqlite", folder)
            raws.append(seconds)
            async with session(USER) as app:
                await opened(app)
                SPENT.clear()
                started = time.perf_counter()
                result = await app.memory.forget_account(confirm=True)
                deletes.append(since(started))
                breakdown(steps, deletes[-1])
                left = await counts(app)
            after = await other_counts()
        settle(data)
        shutil.rmtree(folder / f"account-{run}")  # a seeded folder is ~0.3 GB
        receipt = receipt or result
        per_item.append(deletes[-1] / seeded.items)
        sizes.append(seeded.items)
        print(f"  left of '{USER}': {left}")
        print(untouched(other, after))
    counted = {tier: found["count"] for tier, found in receipt["deleted"].items()}
    print(f"  receipt of run 1 (per tier): {counted}")
    print(line("forget_account(confirm=True)", deletes))
    print(f"  {'per item':<42} median {statistics.median(per_item) * 1000:9.3f} ms/item")
    show("where the time goes:", steps)
    print(line("baseline: seeding the same items", seeds))
    print(line(f"baseline: raw DELETE of {raw_rows:,} journal rows", raws))
    print(
        f"  ratio: deletion / seeding   x{statistics.median(deletes) / statistics.median(seeds):.3f}"
        f"   deletion / raw DELETE   x{statistics.median(deletes) / statistics.median(raws):,.0f}"
    )
    print(f"  {load()}")
    print(account_target(statistics.median(deletes), min(sizes)))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000, help="memories of the user")
    parser.add_argument("--forgets", type=int, default=5, help="single forgets of each kind")
    parser.add_argument("--runs", type=int, default=3, help="account deletions (fresh seeds)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--part", choices=("all", "one", "account"), default="all", help="which part to run"
    )
    args = parser.parse_args()
    if args.quick:
        args.items, args.forgets, args.runs = 1000, 2, 1
    print("forgetting benchmark: embedded defaults, offline model (module docstring); ms")
    print(f"  {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-forget-") as tmp:
        if args.part in ("all", "one"):
            await bench_one(Path(tmp) / "one", args)
            settle(Path(tmp) / "one" / "data")
        if args.part in ("all", "account"):
            await bench_account(Path(tmp), args)


if __name__ == "__main__":
    asyncio.run(main())
