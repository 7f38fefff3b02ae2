"""Choose :attr:`memory.ranking.Knobs.view_weight` leave-one-conversation-out on LoCoMo.

Each conversation is stored once (as ``scripts/eval_recall.py`` stores it: every turn one
memory with its session's date, MiniLM embeddings, the shared embedding cache) and its
questions are asked through the planner's recall (:func:`memory.recall.arecall`, limit 10) at
every weight of the grid. For each conversation held out, the weight with the best recall@10
over the other conversations' questions is chosen, and the held-out conversation's recall@10
at that weight is printed next to its recall@10 without views (weight 0) and at the default.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

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

import memory.ranking as ranking  # noqa: E402
from memory.embedding_cache import CachedEmbedder, SqliteEmbeddingCache  # noqa: E402
from memory.embeddings import MiniLMEmbedder  # noqa: E402
from memory.identity import Principal  # noqa: E402
from memory.recall import NewMemory, arecall, aremember_many  # noqa: E402
from memory.store.factory import open_store  # noqa: E402

GRID = (0.0, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3)
DEFAULT = ranking.KNOBS.view_weight


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


async def conversation_recall(
    sample: dict, embedder: CachedEmbedder, store_url: str, grid: tuple[float, ...]
) -> dict[float, list[float]]:
    """Weight → each question's recall@10 in one conversation."""
    turns = turns_of(sample)
    who = Principal("locomo", sample["sample_id"])
    now = max(t.at for t in turns) + timedelta(days=1)  # as eval_recall asks
    scores: dict[float, list[float]] = {w: [] for w in grid}
    with tempfile.TemporaryDirectory(prefix="eval-views-") as tmp:
        async with open_store(store_url, embedder=embedder, qdrant_path=Path(tmp) / "q") as store:
            keys = await aremember_many(
                store,
                who,
                [
                    NewMemory(
                        t.text, at=t.at, kind="dialogue", source="locomo", episode_ids=[t.dia_id]
                    )
                    for t in turns
                ],
            )
            turn_of = dict(zip(keys, (t.dia_id for t in turns), strict=True))
            for qa in sample["qa"]:
                if int(qa.get("category", 0)) not in CATEGORIES:
                    continue
                read = normalise_evidence(qa.get("evidence") or [])
                evidence = set(read.ids + read.unreadable)
                if not evidence:
                    continue
                for w in grid:
                    ranking.KNOBS = dataclasses.replace(ranking.KNOBS, view_weight=w)
                    found = await arecall(store, who, str(qa["question"]), limit=10, now=now)
                    hit = {turn_of[m.key] for m in found[:10]}
                    scores[w].append(len(hit & evidence) / len(evidence))
    return scores


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _text_cosine(item: Any) -> float | None:
    """The control's view: the memory's own text cosine (the store's dense part)."""
    found = item.found if isinstance(item, ranking.RankedItem) else item
    dense = getattr(found, "dense", None)
    return None if dense is None else float(dense)


async def evaluate(args: argparse.Namespace) -> None:
    print(f"before: {load_text()}", flush=True)
    if args.control:
        ranking.view_of = _text_cosine  # type: ignore[assignment]
        print("control: each memory's view is its own text's cosine (no sentence views)")
    data = load(Path(args.path))
    cache = SqliteEmbeddingCache(Path(args.cache))
    cache.setup()
    embedder = CachedEmbedder(MiniLMEmbedder(), store=cache, lru_size=50_000)
    grid = tuple(sorted({*GRID, DEFAULT}))
    per: dict[str, dict[float, list[float]]] = {}
    for sample in data:
        per[str(sample["sample_id"])] = await conversation_recall(
            sample, embedder, args.store, grid
        )
    print("recall@10 by weight (planner recall, limit 10):")
    print("weight  " + "  ".join(f"{name:>8}" for name in per) + "       all")
    for w in grid:
        every = [s for scores in per.values() for s in scores[w]]
        cells = "  ".join(f"{mean(scores[w]):8.3f}" for scores in per.values())
        print(f"{w:6.2f}  {cells}  {mean(every):8.3f}")
    print("leave one conversation out:")
    for held in per:
        rest = [name for name in per if name != held]
        chosen = max(grid, key=lambda w: (mean([s for n in rest for s in per[n][w]]), -w))
        base, got = mean(per[held][0.0]), mean(per[held][chosen])
        print(
            f"  held out {held}: {'+'.join(rest)} choose {chosen:g}; {held} R@10 "
            f"{base:.3f} -> {got:.3f} ({got - base:+.3f}); at the default {DEFAULT:g}: "
            f"{mean(per[held][DEFAULT]):.3f}"
        )
    print(f"after: {load_text()}")


def main() -> None:
    parser = locomo_arguments(__doc__)
    parser.add_argument(
        "--control",
        action="store_true",
        help="rank with each memory's own text cosine as its view (no sentence views): how "
        "much of the gain is the views' and how much the weight's",
    )
    asyncio.run(evaluate(parser.parse_args()))


if __name__ == "__main__":
    main()
