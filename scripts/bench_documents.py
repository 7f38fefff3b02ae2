"""Benchmark: keyword search over 10k Markdown documents, FTS5 index vs a plain scan.

Generates N documents (default 10 000, seeded, Zipf-distributed vocabulary, front matter,
several paragraphs each) in a temporary folder, builds the index, then runs several
whole-word queries of different selectivity both ways, interleaved so both see the same
machine noise:

- indexed: ``FileMemory.search(query, limit=10)`` within the freshness window (the common
  case: the index is trusted, no file is touched), ranked with the best paragraph;
- indexed, stale: the same search right after the freshness window expired, so it first
  stats every file (no reads: nothing changed) — the worst case a user meets once per window;
- scan: walk the folder, read every file, keep those where every query word occurs as a whole
  word (``memory.doc_index.text_has_words``, the definition the index is held to).

For every query it asserts that the index finds exactly the documents the scan finds, and
prints median, p10-p90, min and max per method and the ratio scan / indexed. Target: indexed
at least 20x faster than the scan at 10k documents. A script, not a test: read medians.

Generated files are back-dated by an hour, like files checked out earlier; a file written
less than two seconds before it is indexed would be re-read by the next scan on purpose
(see ``racy_window`` in ``memory/doc_index.py``).

    python scripts/bench_documents.py [--docs 10000] [--repeats 15] [--scan-repeats 5]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.doc_search import query_words, text_has_words, word_pattern
from memory.documents import FileMemory
from scripts._targets import Size, judge

#: The number of documents the 20x target is stated at.
STATED_DOCS = 10_000

TICKERS = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
FINANCE = ("drawdown", "volatility", "momentum", "guidance", "buyback", "valuation")


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """Made-up words, most frequent first (rank r is drawn with weight 1/(r+1)^1.05)."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


def generate(root: Path, count: int, seed: int = 42) -> tuple[int, list[str]]:
    """Write ``count`` documents; return their total size and the vocabulary by rank."""
    rng = random.Random(seed)
    vocab = vocabulary(rng, 20_000)
    cumulative = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(vocab))))
    total = 0
    old = time.time() - 3600
    for n in range(count):
        ticker = TICKERS[n % len(TICKERS)]
        folder = root / ("research" if n % 3 else "learnings") / f"{n // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        paragraphs = []
        for _ in range(rng.randint(3, 6)):
            words = rng.choices(vocab, cum_weights=cumulative, k=rng.randint(15, 40))
            if rng.random() < 0.05:
                words.append(rng.choice(FINANCE))
            sentence = " ".join(words)
            paragraphs.append(sentence[0].upper() + sentence[1:] + ".")
        text = (
            f"---\nticker: {ticker}\nthread: t-{n}\n---\n# {ticker} note {n}\n\n"
            + "\n\n".join(paragraphs)
            + "\n"
        )
        path = folder / f"{ticker}-{n:05d}.md"
        path.write_text(text, encoding="utf-8")
        os.utime(path, (old, old))
        total += len(text.encode())
    return total, vocab


def plain_scan(root: Path, query: str) -> set[str]:
    """Read every file; a cheap substring test first, the whole-word test only if it passes."""
    words = query_words(query)
    patterns = [word_pattern(w) for w in words]
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith(".md") and not name.startswith("."):
                path = Path(dirpath, name)
                text = path.read_text(encoding="utf-8")
                lower = text.lower()
                if all(w in lower for w in words) and text_has_words(text, patterns):
                    found.add(path.relative_to(root).as_posix())
    return found


def summary(samples: list[float]) -> str:
    s = sorted(samples)
    q = statistics.quantiles(s, n=10) if len(s) >= 2 else [s[0]] * 9
    return (
        f"median {statistics.median(s) * 1000:8.2f} ms  p10 {q[0] * 1000:7.2f}  "
        f"p90 {q[-1] * 1000:7.2f}  min {s[0] * 1000:7.2f}  max {s[-1] * 1000:7.2f}  (n={len(s)})"
    )


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - t0, result


class Clock:
    """The freshness window's clock, advanced by hand to force a stale search."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pick_queries(vocab: list[str]) -> list[str]:
    """Whole-word queries from common to rare, plus a ticker and multi-word ones."""
    return [
        vocab[0],  # in most documents
        vocab[30],
        vocab[1000],
        vocab[15000],  # in a handful
        "NVDA",  # front matter and title
        "drawdown",  # a finance word sprinkled into 5% of paragraphs
        f"{vocab[5]} {vocab[200]}",
        f"{vocab[2]} {vocab[40]} {vocab[3000]}",
    ]


def docs_target(ratio: float, docs: int) -> str:
    """The 20x target's line, judged only at :data:`STATED_DOCS` documents."""
    return judge(
        "indexed search >= 20x faster than the scan",
        ratio >= 20,
        Size("documents", docs, STATED_DOCS),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15, help="indexed searches per query")
    parser.add_argument("--scan-repeats", type=int, default=5, help="plain scans per query")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-documents-") as tmp:
        root, data = Path(tmp) / "mem", Path(tmp) / "data"
        t_gen, (size, vocab) = timed(generate, root, args.docs)
        print(f"generated {args.docs} documents, {size / 1e6:.1f} MB, in {t_gen:.1f} s")
        clock = Clock()
        memory = FileMemory(
            root, index_path=data / "documents.sqlite", refresh_interval=2.0, clock=clock
        )
        t_build, stats = timed(memory.reindex)
        print(
            f"index build: {t_build:.2f} s ({stats.indexed} indexed, "
            f"{(data / 'documents.sqlite').stat().st_size / 1e6:.1f} MB)"
        )
        rescans = []
        for _ in range(5):
            t, again = timed(memory.reindex)
            assert again.read == 0, "an unchanged file was re-read"
            rescans.append(t)
        print(f"rescan, nothing changed (stat only, 0 reads):  {summary(rescans)}")

        queries = pick_queries(vocab)
        all_indexed: list[float] = []
        all_scan: list[float] = []
        print()
        for query in queries:
            scan_set = plain_scan(root, query)  # warm the page cache for both sides
            index_set = memory.index.matching_paths(query)
            assert index_set == scan_set, (
                f"{query!r}: index {len(index_set)} vs scan {len(scan_set)} documents; "
                f"only index: {sorted(index_set - scan_set)[:3]}, "
                f"only scan: {sorted(scan_set - index_set)[:3]}"
            )
            indexed, stale, full_set, scans = [], [], [], []
            for i in range(max(args.repeats, args.scan_repeats)):
                if i < args.repeats:
                    t, hits = timed(memory.search, query, limit=10)
                    indexed.append(t)
                    assert {h.path for h in hits} <= scan_set
                    clock.now += 10  # the window expired: the next search stats every file
                    t, _ = timed(memory.search, query, limit=10)
                    stale.append(t)
                    t, _ = timed(memory.index.matching_paths, query)
                    full_set.append(t)
                if i < args.scan_repeats:
                    t, found = timed(plain_scan, root, query)
                    scans.append(t)
                    assert found == scan_set
            all_indexed += indexed
            all_scan += scans
            ratio = statistics.median(scans) / statistics.median(indexed)
            ratio_stale = statistics.median(scans) / statistics.median(stale)
            print(f"query {query!r}: {len(scan_set)} documents match (index == scan)")
            print(f"  indexed top-10        {summary(indexed)}")
            print(f"  indexed, all matches  {summary(full_set)}")
            print(f"  indexed, stale window {summary(stale)}")
            print(f"  plain scan            {summary(scans)}")
            print(f"  ratio scan/indexed {ratio:7.1f}x   scan/stale {ratio_stale:6.1f}x")
        overall = statistics.median(all_scan) / statistics.median(all_indexed)
        print()
        print(f"all queries: indexed {summary(all_indexed)}")
        print(f"all queries: scan    {summary(all_scan)}")
        print(f"overall ratio scan/indexed (medians): {overall:.1f}x")
        print(docs_target(overall, args.docs))
        memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
