"""Benchmark a cold ingest of one conversation, against embedding the same texts alone.

    python scripts/bench_ingest.py [--locomo DIR] [--runs 3]

The conversation is the largest of the LoCoMo development split (``--locomo``, by default
``shared/data/locomo-dev`` beside the repository, read in place): 663 turns, stored as
``scripts/eval_recall.py`` stores them (:func:`memory.recall.aremember_many`, one memory per
turn) in a new Qdrant Edge store (``open_store("qdrant://local")``, as the application opens
it), with MiniLM behind an empty embedding cache: a cold ingest. Each run measures, in the
same process and on the same texts, three things in turn:

- ``embed``: MiniLM embedding the turn texts alone, in one call (the floor: what an ingest
  cannot do without);
- ``ingest``: the cold ingest (a fresh store and a fresh, empty cache);
- ``write``: the same ingest into another fresh store with the embeddings already cached
  (the store's own cost: planning, PII redaction, payloads, BM25 vectors, the shard's writes).

Printed: the median and min-max of each over the runs, in wall seconds and in CPU seconds of
the process (all its threads: on a shared machine the wall time is mostly the wait for a
core, the CPU time what the work costs), the ingest's ratio to the floor, the load average
with each run, and the target (700 turns in 30 s) judged on the medians. Not a test: nothing
asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_recall import Turn, load, turns_of  # noqa: E402

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import MiniLMEmbedder  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.recall import NewMemory, aremember_many  # noqa: E402
from memory.store.factory import open_store  # noqa: E402

#: The target: a conversation of this many turns ingested cold within this many seconds.
TARGET_TURNS, TARGET_SECONDS = 700, 30.0
WHO = Principal("bench", "ingest")


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def memories(turns: Sequence[Turn]) -> list[NewMemory]:
    return [
        NewMemory(t.text, at=t.at, kind="dialogue", source="locomo", episode_ids=[t.dia_id])
        for t in turns
    ]


class Clock:
    """Wall and CPU seconds (every thread of the process) since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


async def timed_ingest(
    model: MiniLMEmbedder, turns: Sequence[Turn], cache_path: Path
) -> tuple[float, float]:
    """Wall and CPU seconds to store ``turns`` in a fresh store, with the embedding cache at
    ``cache_path``."""
    cache = SqliteEmbeddingCache(cache_path)
    cache.setup()
    embedder = CachedEmbedder(model, store=cache, lru_size=50_000)
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        async with open_store(
            "qdrant://local", embedder=embedder, qdrant_path=Path(tmp) / "qdrant"
        ) as store:
            clock = Clock()
            await aremember_many(store, WHO, memories(turns))
            return clock.read()


async def one_run(model: MiniLMEmbedder, turns: Sequence[Turn]) -> dict[str, tuple[float, float]]:
    clock = Clock()
    model.embed_documents([t.text for t in turns])
    embed = clock.read()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-cache-") as tmp:
        cache = Path(tmp) / "e.sqlite"
        ingest = await timed_ingest(model, turns, cache)
        write = await timed_ingest(model, turns, cache)  # every text cached now
    return {"embed": embed, "ingest": ingest, "write": write}


def summary(name: str, values: Sequence[tuple[float, float]]) -> str:
    wall, cpu = [v[0] for v in values], [v[1] for v in values]
    return (
        f"{name:>7}: wall median {statistics.median(wall):6.1f} s "
        f"(min {min(wall):.1f}, max {max(wall):.1f}); CPU median {statistics.median(cpu):6.1f} s "
        f"(min {min(cpu):.1f}, max {max(cpu):.1f})"
    )


async def main(args: argparse.Namespace) -> None:
    data = load(Path(args.locomo))
    turns = max((turns_of(s) for s in data), key=len)
    model = MiniLMEmbedder()
    model.embed_query("load the model before anything is timed")
    print(f"{len(turns)} turns; before: {load_text()}", flush=True)
    runs = []
    for i in range(args.runs):
        runs.append(await one_run(model, turns))
        print(
            f"run {i + 1}: "
            + ", ".join(f"{k} {w:.1f} s ({c:.1f} s CPU)" for k, (w, c) in runs[-1].items())
            + f"; {load_text()}",
            flush=True,
        )
    for name in ("embed", "ingest", "write"):
        print(summary(name, [r[name] for r in runs]))
    for which, at in (("wall", 0), ("CPU", 1)):
        ingest = statistics.median(r["ingest"][at] for r in runs)
        floor = statistics.median(r["embed"][at] for r in runs)
        scaled = ingest * TARGET_TURNS / len(turns)
        print(
            f"{which}: ingest / embedding alone {ingest / floor:.2f}; "
            f"{len(turns) / ingest:.0f} turns/s; {TARGET_TURNS} turns at this rate {scaled:.1f} s "
            f"(target {TARGET_SECONDS:.0f} s: {'met' if scaled <= TARGET_SECONDS else 'MISSED'})"
        )
    print(f"after: {load_text()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--locomo", default=str(ROOT.parent / "shared" / "data" / "locomo-dev"), help="LoCoMo dir"
    )
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
