"""Benchmark one planner recall (:func:`memory.recall.arecall`) at 100k memories, against
exact cosine over the same vectors in the same run.

    python scripts/bench_recall.py [--n 100000] [--queries 100] [--cache PATH] [--locomo DIR]

Corpus: the turns of the LoCoMo development conversations (``--locomo``, by default
``shared/data/locomo-dev`` beside the repository, read in place, never copied), as ``scripts/eval_recall.py`` stores them, repeated up to
``--n`` memories: copy ``c`` of a turn carries `` (c)`` after its text and the turn's MiniLM
vector plus seeded noise (sigma 0.02, renormalised), so no two memories share a vector or a
text. Vectors come from the evaluation's embedding cache (``.data/eval-embeddings.sqlite``,
filled by ``eval_recall.py``; MiniLM embeds only what is missing), so the figures are the
store's and the ranking's cost, not the model's. Queries are the conversations' questions,
their vectors looked up the same way.

What is measured is a store in its steady state, as a deployment's is between writes: the
shard (Qdrant Edge, shared access, as ``open_store`` opens it) after the detached indexer
(:mod:`memory.store.indexing`), which the ingest's writes start, has built the HNSW index of
what they wrote and swapped it in. Queried during that build, a recall searched 100k
unindexed vectors exactly, on a machine whose cores the build took, and waited for the folder
lock while the build copied the shard: that measured the build, not the recall. The recalls
run back to back on the shard's lease, which the first one takes (opening the shard);
shared access gives the lease up after ``MAX_LEASE`` of continuous use only when another
process waits for the folder (``memory.store.edge``, ``memory.store.lock.others_waiting``).
Before that was so, about one recall a second paid for closing and reopening the shard (half
a second each at 100k items) and for reading the views' pages back from disk: those made the
p95 and the maximum; now only another process's turn on the folder (the machine's other
benchmarks use folders of their own) does.

Printed, each with the load average: ingest (memories/s through :func:`aremember_many` in
batches of 1,000, and resident memory growth), the wait for the index and the shard it left
(points, indexed vectors: the BM25 ones count too, segments), then one recall with
``limit=10``: median, p95 and min-max over the queries, next to exact cosine (numpy matrix
product and top-10 of the same vectors, in the same process). Not a test: nothing here
asserts a speed.

The exact cosine runs with BLAS on one thread, as the embedder runs a question
(:mod:`memory.minilm`): with two, OpenBLAS's worker thread spins after each product (half a
core per second of idle time after it, measured), so the recall that followed it shared the
machine's two cores with that spin (100k, at load 2.5-4: recall median 24-79 ms against 22-27
ms with one thread; at load 6-8, where other work takes the cores anyway, 30-38 against 17-35
ms). One thread is about as fast for a matrix-vector product (5.5-11.4 ms
against 4.1-12.5 ms over four runs of each, load 2.5-8).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_store import LookupEmbedder  # noqa: E402
from eval_recall import CATEGORIES, load, rss_mb, turns_of  # noqa: E402

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import MiniLMEmbedder  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.recall import NewMemory, arecall, aremember_many  # noqa: E402
from memory.store.factory import open_store  # noqa: E402
from memory.store.indexing import indexer_running, start_indexer, unindexed  # noqa: E402
from memory.store.views import sentence_views  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev"
WHO = Principal("bench", "recall")
BATCH = 1_000


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def corpus(
    n: int, cache: Path, locomo: Path = LOCOMO
) -> tuple[list[NewMemory], np.ndarray, list[str], np.ndarray, dict[str, list[float]]]:
    """``n`` memories with their vectors, the questions with theirs, and the vectors of the
    memories' sentence views (:mod:`memory.store.views`; a copy's view is the turn's view
    vector with the copy's noise, as its text vector is the turn's)."""
    turns = [t for sample in load(locomo) for t in turns_of(sample)]
    questions = [
        str(qa["question"])
        for sample in load(locomo)
        for qa in sample["qa"]
        if int(qa.get("category", 0)) in CATEGORIES
    ]
    store = SqliteEmbeddingCache(cache)
    store.setup()
    embedder = CachedEmbedder(MiniLMEmbedder(), store=store, lru_size=50_000)
    base = np.asarray(embedder.embed_documents([t.text for t in turns]), dtype=np.float32)
    turn_views = [sentence_views(t.text.strip()) for t in turns]
    distinct = list(dict.fromkeys(v for views in turn_views for v in views))
    view_base = dict(zip(distinct, embedder.embed_documents(distinct), strict=True))
    view_vectors: dict[str, list[float]] = {}
    qvecs = np.asarray([embedder.embed_query(q) for q in questions], dtype=np.float32)
    rng = np.random.default_rng(7)
    picks = np.arange(n) % len(turns)
    vectors = base[picks] + rng.normal(0, 0.02, size=(n, base.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = []
    for i, p in enumerate(picks.tolist()):
        turn = turns[p]
        copy = i // len(turns)
        text = f"{turn.text.strip()} ({copy})" if copy else turn.text.strip()
        views = sentence_views(text)
        if len(views) == len(turn_views[p]):
            noise = vectors[i] - base[p] / np.linalg.norm(base[p])
            for view, seen in zip(views, turn_views[p], strict=True):
                vector = np.asarray(view_base[seen], dtype=np.float32)
                vector = vector / np.linalg.norm(vector) + noise
                view_vectors[view] = (vector / np.linalg.norm(vector)).tolist()
        else:  # the copy's mark split differently: its text's vector stands for each view
            view_vectors.update({view: vectors[i].tolist() for view in views})
        memories.append(
            NewMemory(
                text,
                at=turn.at - timedelta(days=400 * copy),
                kind="dialogue",
                source="bench",
                episode_ids=[f"{turn.dia_id}#{copy}"],
            )
        )
    return memories, vectors, questions, qvecs, view_vectors


def spread(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"median {ordered[len(ordered) // 2]:.1f} ms, p95 {p95:.1f} ms, "
        f"min-max {ordered[0]:.1f}-{ordered[-1]:.1f} ms"
    )


async def bench(args: argparse.Namespace) -> None:
    print(f"before: {load_text()}", flush=True)
    memories, vectors, questions, qvecs, views = corpus(args.n, Path(args.cache), Path(args.locomo))
    questions, qvecs = questions[: args.queries], qvecs[: args.queries]
    lookup: dict[str, list[float]] = {
        m.text: v.tolist() for m, v in zip(memories, vectors, strict=True)
    }
    lookup.update({q: v.tolist() for q, v in zip(questions, qvecs, strict=True)})
    lookup.update(views)
    now = max(m.at for m in memories if m.at is not None) + timedelta(days=1)
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        async with open_store(
            "qdrant://local", embedder=LookupEmbedder(lookup), qdrant_path=Path(tmp) / "q"
        ) as store:
            await ingest(store, memories)
            await settle(store)
            await queries(store, questions, qvecs, vectors, now)
    print(f"after: {load_text()}")


async def ingest(store: Any, memories: list[NewMemory]) -> None:
    rss, t0 = rss_mb(), time.perf_counter()
    for start in range(0, len(memories), BATCH):
        await aremember_many(store, WHO, memories[start : start + BATCH])
    seconds = time.perf_counter() - t0
    print(
        f"ingest: {len(memories)} memories in {seconds:.0f} s ({len(memories) / seconds:.0f}/s, "
        f"embedding excluded), RSS +{rss_mb() - rss:.0f} MB [{load_text()}]",
        flush=True,
    )


async def settle(store: Any) -> None:
    """Wait until no indexer runs on the shard and fewer vectors than start one are unindexed
    (those few are searched exactly, as in a deployment); start the indexer if a build given
    up during the ingest left more than that."""
    t0 = time.perf_counter()
    while True:
        pending = unindexed(store.path) or 0
        if not indexer_running(store.path):
            if store.index_after is None or pending < store.index_after:
                break
            start_indexer(store.path)
        await asyncio.sleep(2)
    info = await asyncio.to_thread(store.shard_info)
    print(
        f"index: built in {time.perf_counter() - t0:.0f} s after the ingest, {pending} vectors "
        f"unindexed; shard {info} [{load_text()}]",
        flush=True,
    )


async def queries(
    store: Any, questions: list[str], qvecs: np.ndarray, vectors: np.ndarray, now: Any
) -> None:
    recall_ms, exact_ms = [], []
    await arecall(store, WHO, questions[0], limit=10, now=now)  # first search opens the shard
    with threadpool_limits(limits=1, user_api="blas"):
        for question, qv in zip(questions, qvecs, strict=True):
            t0 = time.perf_counter()
            await arecall(store, WHO, question, limit=10, now=now)
            recall_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            scores = vectors @ qv
            top = np.argpartition(-scores, 10)[:10]
            top[np.argsort(-scores[top])]
            exact_ms.append((time.perf_counter() - t0) * 1000)
    print(f"one recall (limit 10, {len(questions)} questions): {spread(recall_ms)}")
    print(f"exact cosine + top 10, same vectors:       {spread(exact_ms)} [{load_text()}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--cache",
        default=str(ROOT / ".data" / "eval-embeddings.sqlite"),
        help="the evaluation's embedding cache (SQLite)",
    )
    parser.add_argument(
        "--locomo", default=str(LOCOMO), help="the LoCoMo development conversations (folder)"
    )
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
