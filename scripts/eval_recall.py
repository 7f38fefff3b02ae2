"""Evaluate cold-memory recall on LoCoMo-format conversations (evidence recall, not answers).

    python scripts/eval_recall.py PATH [--store qdrant://local] [--limit-conversations N]

PATH is a LoCoMo JSON file (or a folder holding one), e.g. ../shared/data/locomo-dev/. Read in
place: nothing is copied into the repository.

For every conversation, each dialogue turn is stored as one memory of its own principal
through the project's public memory API (:func:`memory.recall.aremember_many`: ``text`` is
``"<speaker>: <text>"`` plus the photo caption if any, ``at`` is the session's date,
``episode_ids`` the turn's ``dia_id``), in a fresh store in a temporary data directory, with
the project's MiniLM embeddings (cached in ``--cache``). Each question of categories 1–4 is
then asked through the planner's recall path (:func:`memory.recall.arecall`, ``now`` = the
conversation's last session date) and scored against its evidence turns:

- R@k: the share of a question's evidence turns among the first k recalled (averaged);
- any-hit@10: whether at least one evidence turn is among the first 10.

Printed per category, and by the age of the question's oldest evidence turn (days before the
last session), next to two baselines computed in the same run on the same vectors and
tokens: plain dense (exact cosine of the MiniLM vectors, best of the item's fields) and
plain BM25 (Qdrant's BM25 document weights with IDF over the conversation). Category 5
(adversarial, no evidence) is skipped. Malformed evidence ids are normalised (``D:11:26`` →
``D11:26``, ``D30:05`` → ``D30:5``, ``"D8:6; D9:17"`` split); ids that name no turn are
dropped and counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import MiniLMEmbedder  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.recall import NewMemory, arecall, aremember_many  # noqa: E402
from memory.store.factory import open_store  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
AGE_BUCKETS = [
    (0, 30, "< 30 d"),
    (30, 120, "30-120 d"),
    (120, 365, "120-365 d"),
    (365, 10**6, ">= 365 d"),
]
KS = (5, 10)


@dataclass
class Turn:
    dia_id: str
    text: str
    at: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]
    age_days: float


def parse_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: Sequence[str]) -> list[str]:
    ids: list[str] = []
    for entry in raw:
        for part in re.split(r"[;,]\s*", str(entry)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(ids))


def load(path: Path) -> list[dict[str, Any]]:
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise SystemExit(f"No .json file in {path}")
        path = files[0]
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of LoCoMo conversations")
    return data


def turns_of(sample: dict[str, Any]) -> list[Turn]:
    conv = sample["conversation"]
    turns: list[Turn] = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        when = conv.get(f"session_{n}_date_time")
        for turn in conv.get(f"session_{n}") or []:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], text, parse_date(when)))
        n += 1
    return turns


# -- baselines --------------------------------------------------------------------------------


def dense_rank(doc_vectors: np.ndarray, query_vector: np.ndarray, k: int) -> list[int]:
    scores = doc_vectors @ query_vector
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


class Bm25Index:
    """Plain BM25 over the conversation with Qdrant Edge's tokenizer and document weights."""

    def __init__(self, texts: Sequence[str]) -> None:
        import qdrant_edge as qe

        from memory.store.edge import BM25_AVG_LEN

        self.model = qe.Bm25(qe.Bm25Config(avg_len=BM25_AVG_LEN))
        self.docs = [self.model.embed_document(t) for t in texts]
        df: dict[int, int] = defaultdict(int)
        for d in self.docs:
            for i in d.indices:
                df[i] += 1
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def rank(self, query: str, k: int) -> list[int]:
        terms = set(self.model.embed_query(query).indices)
        scores = []
        for pos, d in enumerate(self.docs):
            s = sum(self.idf[i] * v for i, v in zip(d.indices, d.values, strict=True) if i in terms)
            if s > 0:
                scores.append((-s, pos))
        scores.sort()
        return [pos for _, pos in scores[:k]]


# -- metrics ----------------------------------------------------------------------------------


@dataclass
class Tally:
    n: int = 0
    recall: dict[int, float] | None = None
    any_hit: float = 0.0

    def add(self, found: Sequence[str], evidence: Sequence[str]) -> None:
        if self.recall is None:
            self.recall = dict.fromkeys(KS, 0.0)
        self.n += 1
        for k in KS:
            self.recall[k] += len(set(found[:k]) & set(evidence)) / len(evidence)
        self.any_hit += 1.0 if set(found[:10]) & set(evidence) else 0.0

    def row(self) -> str:
        if not self.n or self.recall is None:
            return "      -      -      -"
        return (
            f"{self.recall[5] / self.n:6.3f} {self.recall[10] / self.n:6.3f} "
            f"{self.any_hit / self.n:6.3f}"
        )


async def evaluate(args: argparse.Namespace) -> None:
    data = load(Path(args.path))
    if args.limit_conversations:
        data = data[: args.limit_conversations]
    cache_path = Path(args.cache)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    cache = SqliteEmbeddingCache(cache_path)
    cache.setup()
    embedder = CachedEmbedder(MiniLMEmbedder(), store=cache, lru_size=50_000)
    methods = ("recall", "dense", "bm25")
    by_cat: dict[str, dict[Any, Tally]] = {m: defaultdict(Tally) for m in methods}
    by_age: dict[str, dict[Any, Tally]] = {m: defaultdict(Tally) for m in methods}
    dropped = 0
    recall_ms: list[float] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="eval-recall-") as tmp:
        async with open_store(
            args.store, embedder=embedder, qdrant_path=Path(tmp) / "qdrant"
        ) as store:
            for sample in data:
                turns = turns_of(sample)
                by_id = {t.dia_id: t for t in turns}
                now = max(t.at for t in turns) + timedelta(days=1)
                who = Principal("locomo", sample["sample_id"])
                keys = await aremember_many(
                    store,
                    who,
                    [
                        NewMemory(
                            t.text,
                            at=t.at,
                            kind="dialogue",
                            source="locomo",
                            episode_ids=[t.dia_id],
                        )
                        for t in turns
                    ],
                )
                key_to_turn = dict(zip(keys, (t.dia_id for t in turns), strict=True))
                # Baselines on the same vectors (already cached by the store's embedding).
                doc_vectors = np.asarray(embedder.embed_documents([t.text for t in turns]))
                doc_vectors /= np.linalg.norm(doc_vectors, axis=1, keepdims=True)
                bm25 = Bm25Index([t.text for t in turns])
                for qa in sample["qa"]:
                    category = int(qa.get("category", 0))
                    if category not in CATEGORIES:
                        continue
                    wanted = normalise_evidence(qa.get("evidence") or [])
                    evidence = [e for e in wanted if e in by_id]
                    dropped += len(wanted) - len(evidence)
                    if not evidence:
                        continue
                    oldest = min(by_id[e].at for e in evidence)
                    age = (now - oldest) / timedelta(days=1)
                    bucket = next(label for lo, hi, label in AGE_BUCKETS if lo <= age < hi)
                    question = str(qa["question"])
                    t0 = time.perf_counter()
                    found = await arecall(store, who, question, limit=10, now=now)
                    recall_ms.append((time.perf_counter() - t0) * 1000)
                    ranked = {
                        "recall": [key_to_turn[m.key] for m in found],
                        "dense": [
                            turns[i].dia_id
                            for i in dense_rank(
                                doc_vectors, np.asarray(embedder.embed_query(question)), 10
                            )
                        ],
                        "bm25": [turns[i].dia_id for i in bm25.rank(question, 10)],
                    }
                    for method, ids in ranked.items():
                        by_cat[method][category].add(ids, evidence)
                        by_cat[method]["all"].add(ids, evidence)
                        by_age[method][bucket].add(ids, evidence)
    elapsed = time.perf_counter() - started
    total = by_cat["recall"]["all"].n
    print(f"LoCoMo evidence recall: {len(data)} conversations, {total} questions (categories 1-4)")
    print(f"store {args.store}, MiniLM embeddings; {dropped} evidence ids named no turn (dropped)")
    print(
        f"planner recall: median {sorted(recall_ms)[len(recall_ms) // 2]:.1f} ms per question "
        f"(query embedding cached or not); whole run {elapsed:.0f} s"
    )
    header = f"{'':22}" + "".join(f"| {m:^20} " for m in methods)
    sub = f"{'':22}" + "| R@5    R@10   any@10 " * len(methods)
    for title, table, order in (
        ("category", by_cat, ["all", *CATEGORIES]),
        ("evidence age", by_age, [label for _, _, label in AGE_BUCKETS]),
    ):
        print()
        print(f"by {title}")
        print(header)
        print(sub)
        for key in order:
            tally = table["recall"].get(key)
            n = tally.n if tally else 0
            name = CATEGORIES.get(key, key) if isinstance(key, int) else key
            label = f"{name} (n={n})"
            print(f"{label:22}" + "".join(f"| {table[m][key].row()} " for m in methods))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="LoCoMo JSON file or a folder holding one")
    parser.add_argument("--store", default="qdrant://local", help="store URL to evaluate")
    parser.add_argument(
        "--cache",
        default=str(ROOT / ".data" / "eval-embeddings.sqlite"),
        help="embedding cache (SQLite), reused across runs",
    )
    parser.add_argument("--limit-conversations", type=int, default=0)
    asyncio.run(evaluate(parser.parse_args()))


if __name__ == "__main__":
    main()
