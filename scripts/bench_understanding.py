"""Benchmark offline understanding: how long one long message takes to be read for facts.

    python scripts/bench_understanding.py [--runs 200] [--chars 2000]

A message of about ``--chars`` characters (a rambling introduction: several facts said
directly and indirectly, a reaction to losses, a conflict that rules a ticker out, a name
and an address in passing, a hedge, someone else's view, a question) is read by
``agent.learning.extraction.hot_path_facts`` -- what the chat's hot path runs on every
message -- ``--runs`` times. Printed, in milliseconds: the first read in a fresh process
(module import and pattern compilation included, measured in a subprocess), and the warm
reads' median, p95, IQR, min and max (wall clock, and CPU time: a busy machine stretches
the first, hardly the second); beside them, in the same run, a plain regex pass over
the same text (sentence split and one search per sentence) as a floor, and the same reader on
a one-sentence message, and with ``--compare CHECKOUT`` the same reads by another checkout's
rules (its median wall and CPU time). The load average is printed before and after.

Target: a 2,000-character message understood in under 200 ms (median, warm process), offline,
with no hosted model; judged on the reads of a new message (the meaning reader's clause cache
dropped before each, so its MiniLM embeddings are paid every time), not on a repeated one. Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._targets import Size, judge  # noqa: E402

_PARTS = (
    "Hi there, long message incoming, sorry. I'm Dana Whitfield by the way, 47, and I work "
    "at the FTC so I can't own Meta or anything close to it. ",
    "We're at 14 Elm Street, Leeds LS6 2AB if you ever need to send paperwork. ",
    "Background: back in 2020 I panicked and sold everything, and I still regret it, so "
    "these days a 25% fall and I'd bail, that's my line. ",
    "My money is all in pounds, obviously, and I think in pounds too. ",
    "My brother keeps telling me I should be aggressive, but he's not the one losing sleep. ",
    "I might look at semiconductors at some point, not sure yet. ",
    "The plan is to retire in about fifteen years, so the horizon is roughly that. ",
    "I prefer dividend payers over growth stocks, and short reports please, bullet points. ",
    "can't stand Musk, keep Tesla out. ",
    "Is NVDA expensive right now? ",
    "I already hold Apple and Microsoft, and I'd like you to keep an eye on Amazon for me. ",
    "No tobacco or weapons, ever. ",
    "Anyway, the market could drop 30% this year for all I know; investors panicked in 2022 "
    "and sold everything too. ",
)


def message(chars: int) -> str:
    """A rambling message of at least ``chars`` characters built from :data:`_PARTS`."""
    text = ""
    while len(text) < chars:
        for part in _PARTS:
            text += part
            if len(text) >= chars:
                break
    return text.strip()


def timed(fn: Callable[[], object], runs: int, cpu: list[float] | None = None) -> list[float]:
    """Wall-clock milliseconds of ``runs`` calls; the CPU milliseconds of each go to ``cpu``
    (a busy machine stretches the first, hardly the second)."""
    out = []
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - cpu_started) * 1000)
    return out


def summary(name: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    q1, _, q3 = statistics.quantiles(ordered, n=4)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (
        f"  {name:<34} median {statistics.median(ordered):8.2f}  p95 {p95:8.2f}  "
        f"IQR {q3 - q1:6.2f}  min {ordered[0]:8.2f}  max {ordered[-1]:8.2f}  (n={len(ms)})"
    )


_FIRST = """
import sys, time
sys.path.insert(0, {root!r})
started = time.perf_counter()
from agent.learning.extraction import hot_path_facts
imported = time.perf_counter()
hot_path_facts({text!r}, "bench")
print((imported - started) * 1000, (time.perf_counter() - imported) * 1000)
"""


def first_read(text: str) -> tuple[float, float]:
    """Milliseconds of the import and of the first read, in a fresh interpreter."""
    code = _FIRST.format(root=str(ROOT), text=text)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    imported, first = out.stdout.strip().splitlines()[-1].split()
    return float(imported), float(first)


_OTHER = """
import statistics, sys, time
from agent.learning.extraction import hot_path_facts
text, runs = {text!r}, {runs}
hot_path_facts(text, "bench")
wall, cpu = [], []
for _ in range(runs):
    started, cpu_started = time.perf_counter(), time.process_time()
    hot_path_facts(text, "bench")
    wall.append((time.perf_counter() - started) * 1000)
    cpu.append((time.process_time() - cpu_started) * 1000)
print(statistics.median(wall), statistics.median(cpu), len(hot_path_facts(text, "bench")))
"""


def other_checkout(path: str, text: str, runs: int) -> tuple[float, float, int]:
    """Median wall and CPU milliseconds of the same reads by another checkout's code (its
    ``agent`` first on the path), and how many facts it reads."""
    env = {**os.environ, "PYTHONPATH": path}
    code = _OTHER.format(text=text, runs=runs)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=path, env=env
    )
    wall, cpu, found = out.stdout.split()
    return float(wall), float(cpu), int(found)


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_FLOOR = re.compile(
    r"\b(?:i'?m|my|i)\b[^.]*?\b(?:risk|horizon|currency|retire|hold|own|work|name|address)\b",
    re.IGNORECASE,
)


def _fresh(text: str, read: Callable[[str, str], object]) -> object:
    """One read as of a message never seen: the clause vectors the last read kept are
    dropped first, so every clause the meaning reader looks at is embedded again."""
    from agent.learning import meaning

    meaning.forget_clauses()
    return read(text, "bench")


def plain_regex(text: str) -> int:
    """The floor: split into sentences, one search per sentence."""
    return sum(1 for s in _SENTENCE.split(text) if _FLOOR.search(s))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument(
        "--compare",
        metavar="CHECKOUT",
        help="also time the same reads by another checkout's rules (e.g. the main branch)",
    )
    args = parser.parse_args()
    text = message(args.chars)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    firsts = [first_read(text) for _ in range(3)]

    from agent.learning.extraction import hot_path_facts

    found = hot_path_facts(text, "bench")
    print(f"message: {len(text)} characters; facts read: {len(found)}")
    for fact in found:
        print(f"  {fact.attribute} = {fact.value!r}{'  (reported)' if fact.quoted_source else ''}")
    long_cpu: list[float] = []
    long_ms = timed(lambda: hot_path_facts(text, "bench"), args.runs, long_cpu)
    fresh_cpu: list[float] = []
    fresh_ms = timed(lambda: _fresh(text, hot_path_facts), args.runs, fresh_cpu)
    short = "I'm a pretty cautious investor."
    short_ms = timed(lambda: hot_path_facts(short, "bench"), args.runs)
    floor_ms = timed(lambda: plain_regex(text), args.runs)
    print("milliseconds per message:")
    print(
        f"  {'first read, fresh process':<34} median {statistics.median(f for _, f in firsts):8.2f}"
        f"  (3 processes: {', '.join(f'{f:.1f}' for _, f in firsts)}; the import before it: "
        f"{', '.join(f'{i:.0f}' for i, _ in firsts)})"
    )
    print(summary(f"hot_path_facts, {len(text)} chars", long_ms))
    print(summary("  the same, CPU time", long_cpu))
    print(summary("  a new message (clauses embedded)", fresh_ms))
    print(summary("  the same, CPU time", fresh_cpu))
    print(summary(f"hot_path_facts, {len(short)} chars", short_ms))
    print(summary("baseline: plain regex pass", floor_ms))
    if args.compare:
        wall, cpu, count = other_checkout(args.compare, text, args.runs)
        print(
            f"  {'baseline: ' + args.compare:<34} median {wall:8.2f}  CPU median {cpu:8.2f}  "
            f"(facts read: {count})"
        )
    print("target:")
    print(
        judge(
            "2,000 characters under 200 ms (median, a new message each time)",
            statistics.median(fresh_ms) < 200,
            Size("characters", len(text), 2000),
            Size("runs", args.runs, 20),
        )
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
