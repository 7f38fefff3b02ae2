"""Measure a candidate ranking part offline, leave-one-conversation-out, on the planner's pools.

    python scripts/eval_pool_parts.py PATH [--pools FILE] [--store qdrant://local]

The ranking re-orders a pool of candidates (:mod:`memory.store.ranked`); a new part of the
score can only help where the pool holds the evidence. This script stores each LoCoMo
conversation as ``scripts/eval_recall.py`` does, asks every question of categories 1-4 through
the planner's recall (:func:`memory.recall.arecall`, limit 10) and keeps the whole ranked
pool of each question (ids and totals only, in a JSON file outside the repository:
``--pools``, reused when it exists). A part is then added to each candidate's total,
``total' = (1 − w)·total + w·part``, and R@10 is printed per conversation and category at
each weight of a grid, with the weight chosen on the other conversations for each one held
out. At weight 0 the figures are ``eval_recall.py``'s, so nothing is lost in the copy.

The part measured here is the *topic*: the best cosine of the question stripped of its frame
and its names ("What activities does Melanie partake in?" -> "activities partake") to the
candidate's text or one of its sentence views (:mod:`memory.store.views`), for list
questions whose evidence is spread over sessions. Its control is the same part computed with
the whole question: the same weight given to what the ranking already sees.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_recall import (  # noqa: E402
    CATEGORIES,
    load,
    locomo_arguments,
    normalise_evidence,
    turns_of,
)

import memory.store.ranked as ranked_module  # noqa: E402
from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import MiniLMEmbedder  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.ranking import RankedItem  # noqa: E402
from memory.recall import NewMemory, arecall, aremember_many  # noqa: E402
from memory.store.factory import open_store  # noqa: E402
from memory.store.views import views_of  # noqa: E402

GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4)
#: Words of a question's frame, not of what it asks about.
FRAME = frozenset(
    "what which who whom whose where when why how many much does did do has have had is are "
    "was were will would can could the a an of in on to for at by with from and or both some "
    "any kind kinds type types sort her his their its them they she he it s ever been being "
    "be that this those these there about".split()
)
#: One question as asked: conversation, category, text, evidence, and its ranked pool
#: (each candidate's turn id and total, best first).
Question = dict[str, Any]
Part = Callable[[Question], list[float]]


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def topic_of(question: str) -> str:
    """``question`` without its frame words and its capitalised names (its first word aside)."""
    words = re.findall(r"[A-Za-z][A-Za-z'+-]*", question)
    kept = [
        re.sub(r"'s$", "", w).lower()
        for i, w in enumerate(words)
        if not (i > 0 and w[:1].isupper()) and re.sub(r"'s$", "", w).lower() not in FRAME
    ]
    return " ".join(kept) or question


async def ask_all(sample: dict[str, Any], embedder: CachedEmbedder, url: str) -> list[Question]:
    """Each question of ``sample`` asked through the planner's recall, with its ranked pool."""
    pools: list[list[RankedItem]] = []
    original = ranked_module.ranked

    def keep(items: Any, planned: Any) -> list[RankedItem]:
        out = original(items, planned)
        pools.append(out)
        return out

    ranked_module.ranked = keep
    turns = turns_of(sample)
    who = Principal("locomo", sample["sample_id"])
    now = max(t.at for t in turns) + timedelta(days=1)  # as eval_recall asks
    asked: list[Question] = []
    try:
        with tempfile.TemporaryDirectory(prefix="eval-pool-") as tmp:
            async with open_store(url, embedder=embedder, qdrant_path=Path(tmp) / "q") as store:
                memories = [
                    NewMemory(
                        t.text, at=t.at, kind="dialogue", source="locomo", episode_ids=[t.dia_id]
                    )
                    for t in turns
                ]
                keys = await aremember_many(store, who, memories)
                turn_of = dict(zip(keys, (t.dia_id for t in turns), strict=True))
                for qa in sample["qa"]:
                    category = int(qa.get("category", 0))
                    read = normalise_evidence(qa.get("evidence") or [])
                    if category not in CATEGORIES or not read.ids + read.unreadable:
                        continue
                    pools.clear()
                    await arecall(store, who, str(qa["question"]), limit=10, now=now)
                    asked.append(
                        {
                            "conversation": sample["sample_id"],
                            "category": category,
                            "question": str(qa["question"]),
                            "evidence": read.ids + read.unreadable,
                            "pool": [[turn_of[i.key], i.parts.total] for i in pools[-1]],
                        }
                    )
    finally:
        ranked_module.ranked = original
    return asked


def recall_at_10(order: Sequence[str], evidence: Sequence[str]) -> float:
    return len(set(order[:10]) & set(evidence)) / len(evidence)


def reranked(question: Question, part: list[float], weight: float) -> list[str]:
    """The pool's ids ordered by ``(1 − weight)·total + weight·part`` (stable on ties)."""
    totals = [
        (1 - weight) * total + weight * p
        for (_, total), p in zip(question["pool"], part, strict=True)
    ]
    order = sorted(range(len(totals)), key=lambda i: -totals[i])
    return [question["pool"][i][0] for i in order]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def by_weight(questions: list[Question], part: Part) -> dict[float, list[float]]:
    """Each question's R@10 at each weight of :data:`GRID`."""
    parts = [part(q) for q in questions]
    return {
        w: [
            recall_at_10(reranked(q, p, w), q["evidence"])
            for q, p in zip(questions, parts, strict=True)
        ]
        for w in GRID
    }


def report(title: str, questions: list[Question], scores: dict[float, list[float]]) -> None:
    """R@10 by weight (all, multi-hop, temporal, per conversation), then leave-one-out."""
    names = sorted({q["conversation"] for q in questions})

    def r10(w: float, conv: str | None = None, cat: int | None = None) -> float:
        return mean(
            [
                s
                for q, s in zip(questions, scores[w], strict=True)
                if (conv is None or q["conversation"] == conv)
                and (cat is None or q["category"] == cat)
            ]
        )

    print(f"\n{title}")
    print("weight    all  multi-hop temporal  " + "  ".join(f"{n:>8}" for n in names))
    for w in GRID:
        cells = "  ".join(f"{r10(w, n):8.3f}" for n in names)
        print(f"{w:6.2f}  {r10(w):.3f}  {r10(w, cat=1):9.3f} {r10(w, cat=2):8.3f}  {cells}")
    for held in names:
        rest = [n for n in names if n != held]
        chosen = max(GRID, key=lambda w: (mean([r10(w, n) for n in rest]), -w))
        cells = ", ".join(
            f"{label} {r10(0.0, held, cat):.3f} -> {r10(chosen, held, cat):.3f}"
            for label, cat in (("all", None), ("multi-hop", 1), ("temporal", 2))
        )
        print(f"  held out {held}: the others choose {chosen:g}; {cells}")


def cosine_part(
    embedder: CachedEmbedder, by_id: dict[str, str], asked: Callable[[str], str]
) -> Part:
    """The best cosine of ``asked(question)`` to each candidate's text or sentence views."""

    def part(question: Question) -> list[float]:
        query = np.asarray(embedder.embed_query(asked(question["question"])))
        out = []
        for dia_id, _ in question["pool"]:
            texts = [by_id[dia_id], *views_of([by_id[dia_id]])]
            vectors = np.asarray(embedder.embed_documents(texts))
            out.append(float(np.clip((vectors @ query).max(), 0.0, 1.0)))
        return out

    return part


async def evaluate(args: argparse.Namespace) -> None:
    print(f"before: {load_text()}", flush=True)
    data = load(Path(args.path))
    cache = SqliteEmbeddingCache(Path(args.cache))
    cache.setup()
    embedder = CachedEmbedder(MiniLMEmbedder(), store=cache, lru_size=50_000)
    pools = Path(args.pools)
    if pools.exists():
        questions: list[Question] = json.loads(pools.read_text(encoding="utf-8"))
    else:
        questions = [q for s in data for q in await ask_all(s, embedder, args.store)]
        pools.write_text(json.dumps(questions), encoding="utf-8")
    by_id = {t.dia_id + "@" + s["sample_id"]: t.text for s in data for t in turns_of(s)}
    for q in questions:  # ids are unique within a conversation only
        q["pool"] = [[f"{i}@{q['conversation']}", total] for i, total in q["pool"]]
        q["evidence"] = [f"{e}@{q['conversation']}" for e in q["evidence"]]
    topic = cosine_part(embedder, by_id, topic_of)
    control = cosine_part(embedder, by_id, lambda text: text)
    report(
        "topic part (the question without its frame and names)",
        questions,
        by_weight(questions, topic),
    )
    report(
        "control: the same part with the whole question", questions, by_weight(questions, control)
    )
    print(f"after: {load_text()}")


def main() -> None:
    parser = locomo_arguments(__doc__)
    parser.add_argument(
        "--pools",
        default=str(Path(tempfile.gettempdir()) / "analyst-eval-pools.json"),
        help="where the asked pools are kept between runs (outside the repository)",
    )
    asyncio.run(evaluate(parser.parse_args()))


if __name__ == "__main__":
    main()
