"""Evaluate cold-memory recall on LoCoMo-format conversations (evidence recall, not answers).

    python scripts/eval_recall.py PATH [--store qdrant://local] [--limit-conversations N]
                                       [--weights R,I,V] [--cold]

PATH is a LoCoMo JSON file (or a folder holding one), e.g. ../shared/data/locomo-dev/. Read in
place: nothing is copied into the repository.

Each conversation gets a store of its own (as a user has one memory), in a temporary data
directory: every dialogue turn is stored as one memory through the project's public memory API
(:func:`memory.recall.aremember_many`: ``text`` is ``"<speaker>: <text>"`` plus the photo
caption if any, ``at`` is the session's date, ``episode_ids`` the turn's ``dia_id``), with the
project's MiniLM embeddings (cached in ``--cache``). Each question of categories 1-4 is then
asked through the planner's recall path (:func:`memory.recall.arecall`, ``now`` = the day after
the conversation's last session) twice, with ``limit=5`` and ``limit=10``, and scored against
its evidence turns:

- R@k: the share of a question's evidence turns among the k recalled by the ``limit=k`` call
  (averaged over questions);
- any-hit@10: whether at least one evidence turn is among the 10.

Printed overall and per category, by the age of the question's oldest evidence turn (days
before the last session), and per conversation (so that a method that holds on one
conversation only shows), next to three baselines computed in the same run on the same vectors
and tokens: plain dense (exact cosine of the MiniLM vectors), plain BM25 (Qdrant's BM25
document weights with IDF over the conversation) and their fusion (reciprocal-rank fusion
with the store's own constant). Costs: the wall time of each conversation's ingest (with how
many texts had to be embedded: ``--cold`` starts from an empty embedding cache, so ingest
includes MiniLM), the median time of one planner recall next to exact cosine on the same
vectors, and the growth of resident memory over ingest and over the questions. Category 5 (adversarial, no evidence) is skipped.
Malformed evidence ids are normalised (``D:11:26`` -> ``D11:26``, ``D30:05`` -> ``D30:5``,
``"D8:6; D9:17"`` split); every evidence id is kept in the denominator, and those that name
no stored turn (or cannot be read) are counted and printed, never dropped. The load average is
printed before and after, since timings on a shared machine mean little without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import MiniLMEmbedder  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.recall import (  # noqa: E402
    DEFAULT_WEIGHTS,
    NewMemory,
    RecallWeights,
    arecall,
    aremember_many,
)
from memory.store.common import RRF_K, RRF_WEIGHTS  # noqa: E402
from memory.store.factory import open_store  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
AGE_BUCKETS = [
    (0, 30, "< 30 d"),
    (30, 120, "30-120 d"),
    (120, 365, "120-365 d"),
    (365, 10**6, ">= 365 d"),
]
#: The age bucket of a question none of whose evidence ids names a stored turn.
NO_AGE = "no stored evidence"
KS = (5, 10)
METHODS = ("recall", "dense", "bm25", "fusion")


@dataclass
class Turn:
    dia_id: str
    text: str
    at: datetime


@dataclass
class Evidence:
    """A question's evidence ids after normalisation, and the raw entries that held none."""

    ids: list[str]
    unreadable: list[str]


def parse_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: Sequence[str]) -> Evidence:
    """Evidence ids as the turns spell them; an entry that is no id at all is kept aside."""
    ids: list[str] = []
    unreadable: list[str] = []
    for entry in raw:
        for part in re.split(r"[;,]\s*", str(entry)):
            if not part.strip():
                continue
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
            else:
                unreadable.append(part.strip())
    return Evidence(list(dict.fromkeys(ids)), unreadable)


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


def fusion_rank(rankings: Sequence[Sequence[int]], k: int) -> list[int]:
    """Reciprocal-rank fusion of full rankings with the store's own constant and weights
    (:data:`memory.store.common.RRF_K`, :data:`~memory.store.common.RRF_WEIGHTS`): the plain
    fusion of exact cosine and BM25 the planner's ranking is measured against."""
    scores: dict[int, float] = defaultdict(float)
    for ranking, weight in zip(rankings, RRF_WEIGHTS, strict=True):
        for place, pos in enumerate(ranking):
            scores[pos] += weight / (RRF_K + place + 1)
    return sorted(scores, key=lambda pos: (-scores[pos], pos))[:k]


def rss_mb() -> float:
    """This process's resident memory (MB), from /proc (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# -- metrics ----------------------------------------------------------------------------------


@dataclass
class Tally:
    n: int = 0
    recall: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    any_hit: float = 0.0

    def add(self, found: Mapping[int, Sequence[str]], evidence: Sequence[str]) -> None:
        """``found[k]``: what a search for k items returned; ``evidence``: every id asked for."""
        self.n += 1
        for k in KS:
            self.recall[k] += len(set(found[k][:k]) & set(evidence)) / len(evidence)
        self.any_hit += 1.0 if set(found[10][:10]) & set(evidence) else 0.0

    def row(self) -> str:
        if not self.n:
            return "     -      -      -"
        return (
            f"{self.recall[5] / self.n:6.3f} {self.recall[10] / self.n:6.3f} "
            f"{self.any_hit / self.n:6.3f}"
        )


@dataclass
class Ingest:
    """The cost of storing one conversation: wall time, texts the embedder had to compute
    (0: every vector came from the cache) and the growth of the process's resident memory."""

    conversation: str
    turns: int
    seconds: float
    embedded: int
    rss_mb: float


@dataclass
class Report:
    by_cat: dict[str, dict[Any, Tally]] = field(
        default_factory=lambda: {m: defaultdict(Tally) for m in METHODS}
    )
    by_age: dict[str, dict[Any, Tally]] = field(
        default_factory=lambda: {m: defaultdict(Tally) for m in METHODS}
    )
    #: keyed by (conversation, category or "all")
    by_conv: dict[str, dict[Any, Tally]] = field(
        default_factory=lambda: {m: defaultdict(Tally) for m in METHODS}
    )
    evidence_ids: int = 0
    unmatched: list[str] = field(default_factory=list)
    #: questions of categories 1-4 that name no evidence at all (nothing to score them on)
    without_evidence: int = 0
    recall_ms: list[float] = field(default_factory=list)
    #: exact cosine over the conversation's vectors (numpy), the same questions
    exact_ms: list[float] = field(default_factory=list)
    ingests: list[Ingest] = field(default_factory=list)
    #: resident memory growth over all the conversation's questions, per conversation
    query_rss_mb: list[float] = field(default_factory=list)

    def add(
        self,
        method: str,
        where: tuple[str, int, str],
        found: Mapping[int, Sequence[str]],
        evidence: Sequence[str],
    ) -> None:
        conversation, category, bucket = where
        for table, key in (
            (self.by_cat, category),
            (self.by_cat, "all"),
            (self.by_age, bucket),
            (self.by_conv, (conversation, category)),
            (self.by_conv, (conversation, "all")),
        ):
            table[method][key].add(found, evidence)


@dataclass
class Conversation:
    """One stored conversation and what the baselines need of it."""

    name: str
    turns: list[Turn]
    by_id: dict[str, Turn]
    now: datetime
    who: Principal
    key_to_turn: dict[str, str]
    doc_vectors: np.ndarray
    bm25: Bm25Index


async def ingest(
    store: Any, sample: dict[str, Any], embedder: CachedEmbedder, report: Report
) -> Conversation:
    """Store every turn as one memory through the public API, timed, and build the baselines."""
    turns = turns_of(sample)
    who = Principal("locomo", sample["sample_id"])
    misses, rss, t0 = embedder.misses, rss_mb(), time.perf_counter()
    keys = await aremember_many(
        store,
        who,
        [
            NewMemory(t.text, at=t.at, kind="dialogue", source="locomo", episode_ids=[t.dia_id])
            for t in turns
        ],
    )
    report.ingests.append(
        Ingest(
            sample["sample_id"],
            len(turns),
            time.perf_counter() - t0,
            embedder.misses - misses,
            rss_mb() - rss,
        )
    )
    # Baselines on the same vectors (already cached by the store's embedding).
    doc_vectors = np.asarray(embedder.embed_documents([t.text for t in turns]))
    doc_vectors /= np.linalg.norm(doc_vectors, axis=1, keepdims=True)
    return Conversation(
        sample["sample_id"],
        turns,
        {t.dia_id: t for t in turns},
        max(t.at for t in turns) + timedelta(days=1),
        who,
        dict(zip(keys, (t.dia_id for t in turns), strict=True)),
        doc_vectors,
        Bm25Index([t.text for t in turns]),
    )


def age_bucket(conv: Conversation, evidence: Sequence[str]) -> str:
    """The age bucket of a question's oldest stored evidence turn."""
    stored = [conv.by_id[e].at for e in evidence if e in conv.by_id]
    if not stored:
        return NO_AGE
    age = (conv.now - min(stored)) / timedelta(days=1)
    return next(label for lo, hi, label in AGE_BUCKETS if lo <= age < hi)


async def ask(
    store: Any,
    conv: Conversation,
    question: str,
    embedder: CachedEmbedder,
    weights: RecallWeights,
    report: Report,
) -> dict[str, dict[int, list[str]]]:
    """What each method finds for one question, for every k in :data:`KS`."""
    found: dict[str, dict[int, list[str]]] = {m: {} for m in METHODS}
    query_vector = np.asarray(embedder.embed_query(question))
    depth = len(conv.turns)
    for k in KS:
        t0 = time.perf_counter()
        recalled = await arecall(store, conv.who, question, limit=k, now=conv.now, weights=weights)
        report.recall_ms.append((time.perf_counter() - t0) * 1000)
        found["recall"][k] = [conv.key_to_turn[m.key] for m in recalled]
        t0 = time.perf_counter()
        dense = dense_rank(conv.doc_vectors, query_vector, depth)
        report.exact_ms.append((time.perf_counter() - t0) * 1000)
        lexical = conv.bm25.rank(question, depth)
        found["dense"][k] = [conv.turns[i].dia_id for i in dense[:k]]
        found["bm25"][k] = [conv.turns[i].dia_id for i in lexical[:k]]
        found["fusion"][k] = [conv.turns[i].dia_id for i in fusion_rank([dense, lexical], k)]
    return found


async def evaluate_conversation(
    sample: dict[str, Any],
    embedder: CachedEmbedder,
    args: argparse.Namespace,
    weights: RecallWeights,
    report: Report,
) -> None:
    """Store one conversation in a store of its own and ask its questions."""
    with tempfile.TemporaryDirectory(prefix="eval-recall-") as tmp:
        async with open_store(
            args.store, embedder=embedder, qdrant_path=Path(tmp) / "qdrant"
        ) as store:
            conv = await ingest(store, sample, embedder, report)
            rss = rss_mb()
            for qa in sample["qa"]:
                category = int(qa.get("category", 0))
                if category not in CATEGORIES:
                    continue
                read = normalise_evidence(qa.get("evidence") or [])
                evidence = read.ids + read.unreadable
                report.evidence_ids += len(evidence)
                report.unmatched += [f"{conv.name} {e!r}" for e in evidence if e not in conv.by_id]
                if not evidence:
                    report.without_evidence += 1
                    continue
                found = await ask(store, conv, str(qa["question"]), embedder, weights, report)
                where = (conv.name, category, age_bucket(conv, evidence))
                for method in METHODS:
                    report.add(method, where, found[method], evidence)
            report.query_rss_mb.append(rss_mb() - rss)


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def print_costs(report: Report, elapsed: float) -> None:
    """Ingest and query cost: time, embedding work and resident memory growth."""
    for i in report.ingests:
        print(
            f"ingest {i.conversation}: {i.turns} turns in {i.seconds:.1f} s "
            f"({i.embedded} texts embedded, the rest from the cache), RSS +{i.rss_mb:.0f} MB"
        )
    print(
        f"one query: planner recall median {median(report.recall_ms):.1f} ms per call (query "
        f"embedding cached or not), exact cosine + sort {median(report.exact_ms):.2f} ms on the "
        f"same vectors; RSS growth over a conversation's questions at most "
        f"{max(report.query_rss_mb, default=0):.0f} MB; whole run {elapsed:.0f} s; "
        f"after: {load_text()}"
    )


def print_table(title: str, table: dict[str, dict[Any, Tally]], order: Sequence[Any]) -> None:
    header = f"{'':30}" + "".join(f"| {m:^20} " for m in METHODS)
    sub = f"{'':30}" + "| R@5    R@10   any@10 " * len(METHODS)
    print()
    print(f"by {title}")
    print(header)
    print(sub)
    for key in order:
        n = table["recall"][key].n if key in table["recall"] else 0
        if not n and (key == NO_AGE or isinstance(key, tuple)):
            continue
        conversation, part = key if isinstance(key, tuple) else ("", key)
        name = f"{conversation} " if conversation else ""
        name += CATEGORIES[part] if isinstance(part, int) else str(part)
        label = f"{name} (n={n})"
        print(f"{label:30}" + "".join(f"| {table[m][key].row()} " for m in METHODS))


async def evaluate(args: argparse.Namespace) -> None:
    data = load(Path(args.path))
    if args.limit_conversations:
        data = data[: args.limit_conversations]
    weights = RecallWeights.parse(args.weights) if args.weights else DEFAULT_WEIGHTS
    cache_path = (
        Path(tempfile.mkdtemp(prefix="eval-cache-")) / "e.sqlite" if args.cold else Path(args.cache)
    )
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    cache = SqliteEmbeddingCache(cache_path)
    cache.setup()
    embedder = CachedEmbedder(MiniLMEmbedder(), store=cache, lru_size=50_000)
    report = Report()
    print(f"before: {load_text()}", flush=True)
    started = time.perf_counter()
    for sample in data:
        await evaluate_conversation(sample, embedder, args, weights, report)
    elapsed = time.perf_counter() - started
    total = report.by_cat["recall"]["all"].n
    w = weights
    print(f"LoCoMo evidence recall: {len(data)} conversations, {total} questions (categories 1-4)")
    print(
        f"store {args.store}, one per conversation, MiniLM embeddings; recall weights "
        f"recency {w.recency:g}, importance {w.importance:g}, relevance {w.relevance:g}; "
        f"fusion: RRF (k={RRF_K}) of the dense and BM25 rankings"
    )
    print(
        f"evidence ids: {report.evidence_ids}, all kept in the denominator; "
        f"{len(report.unmatched)} name no stored turn"
        + (f": {', '.join(report.unmatched)}" if report.unmatched else "")
        + f"; {report.without_evidence} questions name no evidence (not scored)"
    )
    print_costs(report, elapsed)
    print_table("category", report.by_cat, ["all", *CATEGORIES])
    print_table("evidence age", report.by_age, [label for _, _, label in AGE_BUCKETS] + [NO_AGE])
    names = [str(s["sample_id"]) for s in data]
    print_table(
        "conversation", report.by_conv, [(n, c) for n in names for c in ["all", *CATEGORIES]]
    )


def locomo_arguments(doc: str | None) -> argparse.ArgumentParser:
    """The arguments every LoCoMo evaluation takes (this one, ``eval_views_weight.py``,
    ``eval_pool_parts.py``): the conversations, the store URL and the embedding cache;
    described by the first paragraph of the script's ``doc``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("path", help="LoCoMo JSON file or a folder holding them")
    parser.add_argument("--store", default="qdrant://local", help="store URL to evaluate")
    parser.add_argument(
        "--cache",
        default=str(ROOT / ".data" / "eval-embeddings.sqlite"),
        help="embedding cache (SQLite), reused across runs",
    )
    return parser


def main() -> None:
    parser = locomo_arguments(__doc__)
    parser.add_argument(
        "--cold", action="store_true", help="an empty embedding cache: ingest embeds every turn"
    )
    parser.add_argument("--limit-conversations", type=int, default=0)
    parser.add_argument(
        "--weights",
        default="",
        help="recall weights recency,importance,relevance (default: the planner's own), "
        "e.g. 0,0.2,0.5 to measure without the recency boost",
    )
    asyncio.run(evaluate(parser.parse_args()))


if __name__ == "__main__":
    main()
