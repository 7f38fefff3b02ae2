"""Chat start: how long ``analyst chat`` takes to show its first prompt.

    python scripts/bench_chat_start.py [--runs 9]

Each run starts ``analyst chat`` (offline, a temporary data folder) on a pseudo-terminal
(pexpect, from the dev extra), as a user would, and stops the clock when ``you> `` appears; ``python -c pass``
processes are timed in the same loop, interleaved, so a busy machine slows both alike. Prints
the median and interquartile range of each and their difference. Target: the prompt within
1 s median on a warm machine, judged on at least 5 runs (fewer print "not measured at 5
runs"). Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts._targets import Size, judge

BIN = Path(sys.executable).parent
PROMPT = b"you> "
#: Timed runs the median needs before the target is judged on it.
STATED_RUNS = 5


def until_prompt(env: dict[str, str]) -> float:
    """Seconds from launching ``analyst chat`` to its first prompt (then it is stopped)."""
    import pexpect  # the dev extra, as the chat's terminal tests use it

    start = time.perf_counter()
    child = pexpect.spawn(str(BIN / "analyst"), ["chat"], env=env, timeout=120)
    try:
        child.expect_exact(PROMPT)
        return time.perf_counter() - start
    finally:
        child.close(force=True)


def bare_python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def describe(name: str, times: list[float]) -> str:
    q1, _, q3 = statistics.quantiles(times, n=4)
    return f"{name}: median {statistics.median(times):.3f} s (IQR {q1:.3f}-{q3:.3f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    chat: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
            "ANALYST_DATA_DIR": f"{folder}/data",
            "ANALYST_MEMORY_DIR": f"{folder}/memory",
            "TERM": "dumb",
        }
        until_prompt(env)  # warm the file cache; not counted
        for _ in range(args.runs):
            bare.append(bare_python())
            chat.append(until_prompt(env))
    print(describe("python -c pass", bare))
    print(describe("analyst chat, first prompt", chat))
    gap = statistics.median(chat) - statistics.median(bare)
    print(f"difference of medians: {gap:.3f} s")
    print(prompt_target(chat))


def prompt_target(chat: list[float]) -> str:
    """The first prompt within 1 s median, judged on at least :data:`STATED_RUNS` runs."""
    return judge(
        "analyst chat prompt median <= 1 s",
        statistics.median(chat) <= 1.0,
        Size("runs", len(chat), STATED_RUNS),
    )


if __name__ == "__main__":
    main()
