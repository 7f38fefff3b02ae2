"""Benchmark the embedded cold tier at scale: Qdrant Edge (``qdrant://local``, the default)
against qdrant-client's local mode (``qdrant+local://local``, the former default), in the same
run.

    python scripts/bench_store.py [--n 100000] [--local-n 10000] [--queries 200]

Vectors are synthetic and cached in memory, so no figure includes embedding: 384-d unit
vectors drawn around 1,000 random centres (clustered like sentence embeddings, not uniform
noise), each item with a short synthetic text of 8 words from a 5,000-word vocabulary (for
BM25). Queries are held-out draws from the same clusters (not copies of stored vectors).
One principal's namespace holds every item and every search carries the tenancy filter, as
:class:`memory.store.scoped.ScopedStore` issues it. Figures:

- ingest: items/s through ``BaseStore.abatch`` (puts of 1,000; BM25 document weights
  included), then the HNSW build (``optimize``) on its own line;
- search: median and p95 ms of ``search(ns, query=..., limit=10)``, hybrid (the default: dense
  + BM25, RRF) and dense-only;
- recall@10 of the dense-only search against exact cosine over the same vectors (hybrid ranks
  by fused rank, not by cosine, so it is not compared with exact cosine);
- a new process's first search: a fresh interpreter opens the store (``open_store``, shared
  access) and runs one query search; the time from before ``open_store`` to the result, and
  the interpreter's import time on its own.

Local mode scans every point in Python, so it runs at ``--local-n`` (default 10,000) and says
so. Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from memory.store.factory import open_store  # noqa: E402

DIMS = 384
NAMESPACE = ("tenants", "bench", "users", "u1", "memories")


class LookupEmbedder(Embeddings):
    """Vectors looked up by text (precomputed): the store's cost without a model's."""

    model_id = "bench-synthetic-384"
    dims = DIMS

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def synthetic(n: int, queries: int, seed: int = 7) -> tuple[np.ndarray, list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((1000, DIMS)).astype(np.float32)
    assign = rng.integers(0, len(centres), n)
    docs = centres[assign] + 0.6 * rng.standard_normal((n, DIMS)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(5000)]
    words = rng.integers(0, len(vocab), (n, 8))
    texts = [f"item {i}: " + " ".join(vocab[w] for w in row) for i, row in enumerate(words)]
    # Held-out queries drawn like the items (a centre plus the same spread), not copies of
    # stored vectors: their true neighbours are spread over a cluster, as for a new question.
    q = centres[rng.integers(0, len(centres), queries)] + 0.6 * rng.standard_normal(
        (queries, DIMS)
    ).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return docs, texts, q


def ms(values: Sequence[float]) -> str:
    v = sorted(x * 1000 for x in values)
    p95 = v[min(len(v) - 1, int(0.95 * len(v)))]
    return f"median {statistics.median(v):7.2f} ms  p95 {p95:7.2f} ms  (n={len(v)})"


FIRST = """
import json, sys, time
t0 = time.perf_counter()
import asyncio
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from scripts.bench_store import LookupEmbedder, NAMESPACE
from memory.store.factory import open_store
imported = time.perf_counter() - t0
vector = json.loads(Path(sys.argv[3]).read_text())

async def main():
    t = time.perf_counter()
    async with open_store(sys.argv[1], embedder=LookupEmbedder({"q": vector}),
                          qdrant_path=Path(sys.argv[2])) as store:
        hits = await store.asearch(NAMESPACE, query="q", limit=10)
        first = time.perf_counter() - t
    print(json.dumps({"imports": imported, "first": first, "hits": len(hits)}))

asyncio.run(main())
"""


def first_search(url: str, folder: Path, vector: list[float]) -> dict[str, Any]:
    qfile = folder.parent / "first-query.json"
    qfile.write_text(json.dumps(vector))
    out = subprocess.run(
        [sys.executable, "-c", FIRST, url, str(folder), str(qfile), str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=3600,
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


async def bench(url: str, n: int, args: argparse.Namespace, tmp: Path) -> None:
    docs, texts, queries = synthetic(n, args.queries)
    qtexts = [f"query {i}" for i in range(len(queries))]
    vectors = {t: docs[i].tolist() for i, t in enumerate(texts)}
    vectors.update({t: queries[i].tolist() for i, t in enumerate(qtexts)})
    embedder = LookupEmbedder(vectors)
    folder = tmp / f"{url.split(':')[0].replace('+', '-')}-{n}" / "qdrant"
    name = "qdrant-client local mode" if url == "qdrant+local://local" else "Qdrant Edge"
    print(f"\n{name} ({url}), {n:,} items, {DIMS}-d synthetic clustered vectors")
    exact = np.argsort(-(queries @ docs.T), axis=1)[:, :10]
    async with open_store(
        url, embedder=embedder, qdrant_path=folder, local_access="exclusive", ttl=None
    ) as store:
        started = time.perf_counter()
        for lo in range(0, n, 1000):
            await store.abatch(
                [
                    PutOp(NAMESPACE, f"k{i}", {"text": texts[i], "i": i})
                    for i in range(lo, min(n, lo + 1000))
                ]
            )
        ingest = time.perf_counter() - started
        print(
            f"  ingest            {n / ingest:10,.0f} items/s  ({ingest:.1f} s, embedding excluded)"
        )
        optimize = getattr(store, "optimize", None)
        if optimize is not None:
            t = time.perf_counter()
            await asyncio.to_thread(optimize)
            built = time.perf_counter() - t
            print(
                f"  HNSW build        {built:10.1f} s      (ingest incl. build: "
                f"{n / (ingest + built):,.0f} items/s)"
            )
        modes: list[tuple[str, bool]] = [("hybrid", True), ("dense", False)]
        if not hasattr(store, "hybrid"):
            modes = [("dense", False)]
        for label, hybrid in modes:
            if hasattr(store, "hybrid"):
                store.hybrid = hybrid
            times: list[float] = []
            hits_at_10 = 0
            for qi, qt in enumerate(qtexts):
                t = time.perf_counter()
                found = await store.asearch(NAMESPACE, query=qt, limit=10)
                times.append(time.perf_counter() - t)
                if not hybrid:
                    got = {int(item.value["i"]) for item in found}
                    hits_at_10 += len(got & set(exact[qi].tolist()))
            line = f"  search {label:8}   {ms(times)}"
            if not hybrid:
                line += f"   recall@10 vs exact cosine {hits_at_10 / (10 * len(qtexts)):.3f}"
            print(line)
    result = first_search(url, folder, queries[0].tolist())
    print(
        f"  new process       first search {result['first']:.3f} s (open + search; "
        f"imports {result['imports']:.2f} s more)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="items in the Edge run")
    parser.add_argument(
        "--local-n", type=int, default=10_000, help="items in the local-mode run (it scans)"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-edge", action="store_true")
    args = parser.parse_args()
    print(
        "Embedded store benchmark (synthetic vectors, embedding excluded; one namespace, "
        "tenancy filter on every search)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        if not args.skip_edge:
            await bench("qdrant://local", args.n, args, Path(tmp))
        if not args.skip_local:
            await bench("qdrant+local://local", args.local_n, args, Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
