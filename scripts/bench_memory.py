"""Benchmark cold memory: MiniLM load and embedding cost, the embedding cache, store search.

Prints median and spread (min–max) of each figure and its ratio to a baseline measured in the
same run on the same machine. Not a test: nothing here asserts a speed.

    python scripts/bench_memory.py [--runs 3]

Figures:
- model load: a fresh process that imports memory.embeddings and loads MiniLM, against one
  that only imports memory.embeddings (baseline);
- per-sentence embedding: MiniLM one sentence per call and in batches of 64, against the
  hashing test embedder (baseline);
- cache: a CachedEmbedder hit (in-process LRU, and SQLite from a fresh instance) against a
  MiniLM embed of the same sentence;
- store: a query search over 300 memories on Qdrant local against InMemoryStore (baseline),
  both with MiniLM vectors already cached.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import HashingEmbedder, MiniLMEmbedder  # noqa: E402

LOAD = "import time; t=time.perf_counter(); from memory.embeddings import MiniLMEmbedder; e=MiniLMEmbedder(); e.load(); e.embed_query('warm up'); print(time.perf_counter()-t)"
IMPORT_ONLY = "import time; t=time.perf_counter(); from memory.embeddings import MiniLMEmbedder; MiniLMEmbedder(); print(time.perf_counter()-t)"


def summary(values: list[float], unit: str, scale: float = 1.0) -> str:
    v = [x * scale for x in values]
    return f"median {statistics.median(v):8.2f} {unit}  (min {min(v):.2f}, max {max(v):.2f}, n={len(v)})"


def subprocess_seconds(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return float(out.stdout.strip().splitlines()[-1])


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def report(name: str, values: list[float], baseline: list[float], unit: str, scale: float) -> None:
    ratio = statistics.median(values) / statistics.median(baseline)
    print(f"  {name:<38} {summary(values, unit, scale)}   x{ratio:.3g} baseline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per load figure")
    args = parser.parse_args()

    print("model load (fresh process, seconds)")
    base = [subprocess_seconds(IMPORT_ONLY) for _ in range(args.runs)]
    load = [subprocess_seconds(LOAD) for _ in range(args.runs)]
    print(f"  {'baseline: import memory.embeddings':<38} {summary(base, 's')}")
    report("import + load MiniLM + first embed", load, base, "s", 1.0)

    minilm = MiniLMEmbedder()
    minilm.load()
    hashing = HashingEmbedder(dims=384)
    sentences = [
        f"Question {i}: how much risk am I comfortable with in sector {i % 7}?" for i in range(64)
    ]
    print("per-sentence embedding (milliseconds)")
    hash_one = timed(lambda: hashing.embed_query(sentences[0]), 50)
    print(f"  {'baseline: hashing embedder, 1 sentence':<38} {summary(hash_one, 'ms', 1e3)}")
    one = timed(lambda: minilm.embed_query(sentences[1]), 30)
    report("MiniLM, 1 sentence per call", one, hash_one, "ms", 1e3)
    batch = [t / 64 for t in timed(lambda: minilm.embed_documents(sentences), 5)]
    report("MiniLM, batch of 64 (per sentence)", batch, hash_one, "ms", 1e3)

    print("embedding cache (milliseconds per sentence)")
    with tempfile.TemporaryDirectory() as folder:
        cache = SqliteEmbeddingCache(Path(folder) / "embeddings.sqlite")
        cache.setup()
        cached = CachedEmbedder(minilm, store=cache)
        cached.embed_query(sentences[2])
        lru = timed(lambda: cached.embed_query(sentences[2]), 200)
        sqlite = timed(lambda: CachedEmbedder(minilm, store=cache).embed_query(sentences[2]), 50)
    report("LRU hit", lru, one, "ms", 1e3)
    report("SQLite hit (fresh instance)", sqlite, one, "ms", 1e3)

    print("query search over 300 memories (milliseconds)")
    asyncio.run(bench_search(CachedEmbedder(minilm)))


async def bench_search(embedder: CachedEmbedder) -> None:
    from memory.identity import Principal
    from memory.recall import arecall, aremember
    from memory.store.factory import open_store

    who = Principal("bench", "user")
    texts = [
        f"Memory {i}: I like sector {i % 11} and holding for {i % 9} years" for i in range(300)
    ]
    embedder.embed_documents(texts)
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for url in ("memory://", "qdrant://local"):
            async with open_store(url, embedder=embedder, qdrant_path=Path(folder) / "q") as store:
                for text in texts:
                    await aremember(store, who, text)
                await arecall(store, who, "which sectors do I like", limit=5)
                times = []
                for _ in range(20):
                    start = time.perf_counter()
                    await arecall(store, who, "which sectors do I like", limit=5)
                    times.append(time.perf_counter() - start)
                results[url] = times
    print(f"  {'baseline: InMemoryStore recall':<38} {summary(results['memory://'], 'ms', 1e3)}")
    report("Qdrant local recall", results["qdrant://local"], results["memory://"], "ms", 1e3)


if __name__ == "__main__":
    main()
