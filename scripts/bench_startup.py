"""Install and start-up weight: venv size, every everyday command's whole process, ``make run``.

Prints, in one run on this machine:

- the size of the virtual environment (``sys.prefix``);
- the wall time, from process start to exit, of each everyday command on one data folder the
  CLI itself seeded once (two threads, memories, facts, a note): ``threads``, ``show``,
  ``history``, ``memory show``, ``memory list``, ``facts current``, ``facts profile``,
  ``notes list``, ``notes show``, a whole offline ``run "Analyze NVDA"`` and ``chat`` until
  its first prompt (on a pseudo-terminal, :mod:`scripts.bench_chat_start`); next to
  ``python -c pass`` and ``python -c "import langgraph.graph"`` (the floor LangGraph itself
  sets), all measured in the same loop, interleaved, so a busy machine slows them alike:
  median, spread (min-max), the ratio of medians to each floor, and the load average;
- with ``--fresh-clone``: ``make run`` timed on a fresh ``git clone`` of this repository
  (bootstrap, install, the demo), and whether ``git status`` is clean afterwards.

Processes write and reuse their bytecode (in a scratch ``PYTHONPYCACHEPREFIX``, warmed by one
untimed round) as an installed analyst does, even where the environment says
``PYTHONDONTWRITEBYTECODE``: compiling the project's sources on every start is not what a
user waits for.

Targets: each read command under 1 s median, the whole run at most 1.5 s, the chat's prompt
within 1 s, on this machine offline, judged on at least 5 rounds (fewer print "not measured at
5 rounds"). Not a test: figures vary with the machine and its load, so they are printed, not
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._targets import Size, judge  # noqa: E402
from scripts.bench_chat_start import until_prompt  # noqa: E402

#: Timed rounds a median needs before its target is judged.
STATED_ROUNDS = 5
#: The second baseline: what importing LangGraph's graph API alone costs a process.
LANGGRAPH = "import langgraph.graph"
BIN = Path(sys.executable).parent
#: The whole run's target and each read command's (seconds, median).
RUN_LIMIT = 1.5
READ_LIMIT = 1.0
CHAT_LIMIT = 1.0
RUN = 'run "Analyze NVDA"'
CHAT = "chat (first prompt)"
PASS = "python -c pass"
FLOOR = f'python -c "{LANGGRAPH}"'


def folder_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            file = Path(root) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def bytecode_env(pycache: Path) -> dict[str, str]:
    """This environment, with bytecode written to and read from ``pycache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def offline_env(data: Path, memory: Path, pycache: Path) -> dict[str, str]:
    env = {
        k: v for k, v in bytecode_env(pycache).items() if not k.startswith(("ANALYST_", "OPENAI_"))
    }
    env.update(
        ANALYST_DATA_DIR=str(data),
        ANALYST_MEMORY_DIR=str(memory),
        ANALYST_MODEL="offline",
        ANALYST_USER="bench",
    )
    return env


def timed(args: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def analyst(env: dict[str, str], *args: str) -> str:
    """Run one ``analyst`` command for the seed; its stdout."""
    done = subprocess.run(
        [str(BIN / "analyst"), *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"bench_startup: seeding with analyst {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def seed(env: dict[str, str]) -> str:
    """Fill the data folder through the CLI as a user would: two threads (one published),
    long-term memories, facts and a note. Returns the published thread's id."""
    first = json.loads(analyst(env, "run", "Analyze NVDA", "--json"))["thread_id"]
    analyst(env, "approve", first)
    analyst(env, "run", "Analyze AAPL")
    analyst(env, "memory", "add", "I prefer concise reports with the risks first.")
    analyst(env, "memory", "add", "I hold no energy stocks.")
    analyst(env, "facts", "record", "me", "risk_tolerance", "low")
    analyst(env, "facts", "record", "me", "horizon", "5y")
    analyst(env, "notes", "edit", "learnings/bench.md", "--text", "# Bench\n\nA seeded note.\n")
    return first


def commands(thread: str) -> dict[str, list[str]]:
    """Each timed command, by the name it is printed under (the read commands first)."""
    reads = {
        "threads": ["threads"],
        "show THREAD": ["show", thread],
        "history THREAD": ["history", thread],
        "memory show": ["memory", "show"],
        "memory list": ["memory", "list"],
        "facts current me risk_tolerance": ["facts", "current", "me", "risk_tolerance"],
        "facts profile me": ["facts", "profile", "me"],
        "notes list": ["notes", "list"],
        "notes show learnings/bench.md": ["notes", "show", "learnings/bench.md"],
    }
    return {name: [str(BIN / "analyst"), *args] for name, args in reads.items()} | {
        RUN: [str(BIN / "analyst"), "run", "Analyze NVDA"]
    }


def describe(name: str, values: list[float], floors: dict[str, list[float]]) -> str:
    median = statistics.median(values)
    ratios = "  ".join(
        f"{median / statistics.median(floor):5.1f}x {label}" for label, floor in floors.items()
    )
    return (
        f"  {name:<32} median {median:6.3f} s  spread {min(values):.3f}-{max(values):.3f} s  "
        f"{ratios}"
    )


def bench_commands(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        pycache = Path(scratch) / "pycache"
        memory = Path(scratch) / "memory"
        if (ROOT / ".agent-memory").is_dir():
            shutil.copytree(
                ROOT / ".agent-memory", memory, ignore=shutil.ignore_patterns("research")
            )
        data = Path(scratch) / "data"
        env = offline_env(data, memory, pycache)
        plain = bytecode_env(pycache)
        # The first run creates every file (checkpoints, ledger, the store's shard): timed
        # apart. Then the seed, an untimed round (bytecode, the file cache), the timed ones.
        first = timed([str(BIN / "analyst"), "run", "Analyze NVDA"], env)
        timed_commands = commands(seed(env))
        samples: dict[str, Callable[[], float]] = {
            PASS: lambda: timed([sys.executable, "-c", "pass"], plain),
            FLOOR: lambda: timed([sys.executable, "-c", LANGGRAPH], plain),
            **{name: _timer(args, env) for name, args in timed_commands.items()},
            CHAT: lambda: until_prompt({**env, "TERM": "dumb"}),
        }
        times: dict[str, list[float]] = {name: [] for name in samples}
        for round_ in range(rounds + 1):
            for name, sample in samples.items():
                took = sample()
                if round_:
                    times[name].append(took)
    floors = {"pass": times.pop(PASS), "langgraph": times.pop(FLOOR)}
    print(f"whole processes, offline, {rounds} rounds interleaved on one seeded data folder:")
    print(describe(PASS, floors["pass"], floors))
    print(describe(FLOOR, floors["langgraph"], floors))
    for name, values in times.items():
        print(describe(name, values, floors))
    print(f"  load average now: {_load()} on {os.cpu_count()} CPUs")
    for name, values in times.items():
        print(command_target(name, values))
    print(f"  first run (creates every file in a new data folder): {first:.3f} s")


def _timer(args: list[str], env: dict[str, str]) -> Callable[[], float]:
    return lambda: timed(args, env)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def command_target(name: str, values: list[float]) -> str:
    """A command's target (the run's, the chat prompt's, or a read's), judged on a median of
    at least :data:`STATED_ROUNDS`."""
    if name == RUN:
        return run_target(values)
    limit = CHAT_LIMIT if name == CHAT else READ_LIMIT
    return judge(
        f"{name} median < {limit:g} s",
        statistics.median(values) < limit,
        Size("rounds", len(values), STATED_ROUNDS),
    )


def run_target(runs: list[float]) -> str:
    """The whole run's target, judged on a median of at least :data:`STATED_ROUNDS`."""
    return judge(
        f"{RUN} median <= {RUN_LIMIT:g} s",
        statistics.median(runs) <= RUN_LIMIT,
        Size("rounds", len(runs), STATED_ROUNDS),
    )


def bench_fresh_clone() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-clone-") as scratch:
        clone = Path(scratch) / "analyst"
        subprocess.run(
            ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANALYST_", "VIRTUAL_"))}
        started = time.perf_counter()
        done = subprocess.run(["make", "run"], cwd=clone, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=clone,
            capture_output=True,
            text=True,
        ).stdout
        venv = folder_size(clone / ".venv") / 1e6 if (clone / ".venv").is_dir() else 0.0
        print("make run on a fresh clone (a new venv; pip's download cache as it is):")
        print(f"  exit {done.returncode} after {elapsed:.1f} s; its venv {venv:.0f} MB")
        print(f"  git status afterwards: {'clean' if not status else 'DIRTY:'}")
        for line in status.splitlines()[:10]:
            print(f"    {line}")
        if done.returncode != 0:
            print(done.stdout[-2000:] + done.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument(
        "--fresh-clone", action="store_true", help="also time `make run` on a fresh clone"
    )
    options = parser.parse_args()
    size = folder_size(Path(sys.prefix)) / 1e6
    print(f"this venv {sys.prefix}: {size:.0f} MB (with the dev extras when made by make test)")
    bench_commands(options.rounds)
    if options.fresh_clone:
        bench_fresh_clone()


if __name__ == "__main__":
    main()
