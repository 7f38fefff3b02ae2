"""Benchmark the embedded cold tier (Qdrant Edge, ``qdrant://local``) in the state the app
leaves it, on real MiniLM vectors of real text.

    python scripts/bench_store.py [--n 100000] [--queries 200] [--runs 5] [--build-only]

Corpus: the sentences of the shared LoCoMo development conversations
(``/work/shared/data/locomo-dev``, read in place, never copied into the repository): every
distinct sentence, then seeded pairs of two sentences as two-sentence memories, up to ``--n``;
queries are LoCoMo's own questions. Vectors are all-MiniLM-L6-v2 (the app's embedder) and are
cached outside the repository in ``~/.cache/analyst/bench`` (``ANALYST_BENCH_CACHE``) in
chunks of 1,000, so the expensive build (about 20 texts/s on a busy 2-core machine) resumes
where it stopped; ``--build-only`` only extends the cache.

Figures (each with the load average when it was taken):

- ingest: items/s through the app's own path (``open_store`` as the CLI opens it, shared
  access, default TTL; puts of 1,000 through the principal's ``ScopedStore``), embedding
  excluded (vectors looked up); no optimisation call is made by the benchmark: the shard is
  searched in whatever state the store leaves it (segments and indexed vectors are printed);
- search: median, p95 and spread of ``search(("memories",), query=..., limit=10)`` through the
  scoped view (so with the tenancy filter), hybrid (the default) and dense-only;
- recall@10 of the dense-only search against exact cosine over the same stored vectors;
- process start to first result: a fresh interpreter (``python -c``) that imports the store,
  opens it and runs one query search, ``--runs`` times, next to ``python -c pass``; medians
  and min–max, with the time split into imports, open and first search; once with the
  query's vector given (the store's cost) and once with the app's MiniLM embedder loaded and
  the question embedded in the process (what a first recall from the CLI pays).

Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langgraph.store.base import PutOp  # noqa: E402

from memory.identity import Principal  # noqa: E402
from memory.store.factory import open_store  # noqa: E402
from memory.store.indexing import indexer_running  # noqa: E402
from memory.store.scoped import scoped  # noqa: E402

DIMS = 384
LOCOMO = Path("/work/shared/data/locomo-dev/locomo-dev.json")
CACHE = Path(os.environ.get("ANALYST_BENCH_CACHE", Path.home() / ".cache" / "analyst" / "bench"))
CHUNK = 1000
PRINCIPAL = Principal("bench", "u1")
SEED = 7


class LookupEmbedder(Embeddings):
    """Vectors looked up by text (precomputed MiniLM): the store's cost without the model's."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dims = DIMS

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


# -- the corpus -------------------------------------------------------------------------------


def locomo_texts(limit: int) -> tuple[list[str], list[str]]:
    """Up to ``limit`` memory texts (distinct sentences, then seeded distinct pairs of them)
    and the questions, from the LoCoMo development file."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    sentences: dict[str, None] = {}
    questions: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        for name in sorted(conversation):
            turns = conversation[name]
            if name.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    for sentence in re.split(r"(?<=[.!?])\s+", turn["text"].strip()):
                        if sentence:
                            sentences[sentence] = None
        questions.extend(str(qa["question"]) for qa in sample["qa"] if qa.get("category") != 5)
    pool = list(sentences)
    texts = dict.fromkeys(pool[:limit])
    rng = random.Random(SEED)
    while len(texts) < limit:
        texts[f"{rng.choice(pool)} {rng.choice(pool)}"] = None
    return list(texts), questions


def cached_vectors(texts: Sequence[str], name: str) -> np.ndarray:
    """MiniLM vectors of ``texts``, embedded once into ``CACHE`` in chunks (resumable)."""
    from memory.embeddings import MiniLMEmbedder

    digest = hashlib.sha256("\n".join(texts[:CHUNK]).encode()).hexdigest()[:12]
    folder = CACHE / f"locomo-minilm-{name}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    embedder = MiniLMEmbedder(batch_size=64)
    chunks = []
    for start in range(0, len(texts), CHUNK):
        part = texts[start : start + CHUNK]
        path = folder / f"{start:08d}-{len(part)}.npy"
        if not path.exists():
            started = time.perf_counter()
            array = np.asarray(embedder.embed_documents(list(part)), dtype=np.float32)
            np.save(path.with_suffix(".tmp.npy"), array)
            path.with_suffix(".tmp.npy").rename(path)
            rate = len(part) / (time.perf_counter() - started)
            print(f"  embedded {name} {start + len(part):,} ({rate:.0f} texts/s)", flush=True)
        chunks.append(np.load(path))
    return np.concatenate(chunks) if chunks else np.zeros((0, DIMS), np.float32)


# -- measuring ----------------------------------------------------------------------------------


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def ms(values: Sequence[float]) -> str:
    v = sorted(x * 1000 for x in values)
    p95 = v[min(len(v) - 1, int(0.95 * len(v)))]
    return (
        f"median {statistics.median(v):7.2f} ms  p95 {p95:7.2f} ms  "
        f"min {v[0]:.2f} max {v[-1]:.2f}  (n={len(v)})"
    )


def seconds(values: Sequence[float]) -> str:
    return (
        f"median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"
    )


FIRST = """
import time
t0 = time.perf_counter()
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from memory.identity import Principal
from memory.store.factory import open_store
from memory.store.scoped import scoped
from scripts.bench_store import LookupEmbedder
imported = time.perf_counter() - t0
vector = json.loads(Path(sys.argv[2]).read_text())
question = sys.argv[4]

async def main():
    t = time.perf_counter()
    if question:  # the app's own embedder: the model loaded and the question embedded here
        from memory.embeddings import MiniLMEmbedder
        embedder, query = MiniLMEmbedder(), question
    else:
        embedder, query = LookupEmbedder({"q": vector}), "q"
    async with open_store("qdrant://local", embedder=embedder,
                          qdrant_path=Path(sys.argv[1])) as store:
        opened = time.perf_counter() - t
        hits = await scoped(store, Principal("bench", "u1")).asearch(("memories",), query=query, limit=10)
        first = time.perf_counter() - t
    print(json.dumps({"imports": imported, "open": opened, "first": first, "hits": len(hits)}))

asyncio.run(main())
"""


def process_start(folder: Path, vector: list[float], question: str, runs: int) -> None:
    """Process start to first result (a fresh interpreter each run), next to ``python -c pass``:
    with the query's vector given (the store's own cost), and with the app's MiniLM embedder
    loaded and the question embedded in the process (what a CLI's first recall pays)."""
    qfile = folder.parent / "first-query.json"
    qfile.write_text(json.dumps(vector))
    bare: list[float] = []
    total: dict[str, list[float]] = {"vector given": [], "MiniLM in process": []}
    parts: dict[str, list[dict[str, Any]]] = {label: [] for label in total}
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t)
        for label, asked in (("vector given", ""), ("MiniLM in process", question)):
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", FIRST, str(folder), str(qfile), str(ROOT), asked],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=3600,
            )
            total[label].append(time.perf_counter() - t)
            if out.returncode != 0:
                raise SystemExit(out.stderr)
            parts[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"  python -c pass         {seconds(bare)}   [{load()}]")
    for label, times in total.items():
        print(f"  start to first result, {label}: {seconds(times)}")
        for key in ("imports", "open", "first"):
            name = {"imports": "imports", "open": "open_store", "first": "open + search"}[key]
            print(f"    of which {name:13} {seconds([p[key] for p in parts[label]])}")


async def searches(
    folder: Path,
    vectors: dict[str, list[float]],
    qtexts: list[str],
    exact: np.ndarray,
    state: str,
) -> None:
    """Search figures on the store as it is now (reopened as the CLI opens it)."""
    async with open_store(
        "qdrant://local", embedder=LookupEmbedder(vectors), qdrant_path=folder
    ) as store:
        info = getattr(store, "shard_info", None)
        print(f"  state: {state}: {info() if info is not None else ''}")
        view = scoped(store, PRINCIPAL)
        for label, hybrid in (("hybrid", True), ("dense", False)):
            store.hybrid = hybrid  # type: ignore[attr-defined]
            times: list[float] = []
            hits_at_10 = 0
            for qi, qt in enumerate(qtexts):
                t = time.perf_counter()
                found = await view.asearch(("memories",), query=qt, limit=10)
                times.append(time.perf_counter() - t)
                got = {int(item.value["i"]) for item in found}
                hits_at_10 += len(got & set(exact[qi].tolist()))
            recall = hits_at_10 / (10 * len(qtexts))
            print(f"  search {label:8}        {ms(times)}   recall@10 vs exact cosine {recall:.3f}")
        print(f"  [{load()}]")


async def bench(args: argparse.Namespace, tmp: Path) -> None:
    texts, questions = locomo_texts(args.n)
    questions = questions[: args.queries]
    docs = cached_vectors(texts, "memories")
    queries = cached_vectors(questions, "questions")
    if args.build_only:
        return
    qtexts = [f"question {i}" for i in range(len(questions))]
    vectors = {t: docs[i].tolist() for i, t in enumerate(texts)}
    vectors.update({t: queries[i].tolist() for i, t in enumerate(qtexts)})
    folder = tmp / "qdrant"
    n = len(texts)
    print(f"\nQdrant Edge (qdrant://local), {n:,} LoCoMo memories, MiniLM vectors   [{load()}]")
    exact = np.argsort(-(queries @ docs.T), axis=1)[:, :10]
    async with open_store(
        "qdrant://local", embedder=LookupEmbedder(vectors), qdrant_path=folder
    ) as store:
        view = scoped(store, PRINCIPAL)
        started = time.perf_counter()
        for lo in range(0, n, 1000):
            await view.abatch(
                [
                    PutOp(("memories",), f"k{i}", {"text": texts[i], "i": i})
                    for i in range(lo, min(n, lo + 1000))
                ]
            )
        ingest = time.perf_counter() - started
        print(f"  ingest                 {n / ingest:,.0f} items/s ({ingest:.1f} s)   [{load()}]")
    await searches(folder, vectors, qtexts, exact, "right after the puts")
    edge = folder.with_name(folder.name + "-edge")
    started = time.perf_counter()
    while indexer_running(edge):  # the app's own background build, if the puts started it
        time.sleep(1)
    print(f"  background index build finished {time.perf_counter() - started:.0f} s later")
    await searches(folder, vectors, qtexts, exact, "after the app's index build")
    process_start(folder, queries[0].tolist(), questions[0], args.runs)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes timed")
    parser.add_argument("--build-only", action="store_true", help="only extend the vector cache")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        await bench(args, Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
