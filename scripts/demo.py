"""End-to-end demo on the embedded defaults (``make run``).

Each step is a separate ``analyst`` process, as a user's would be: the analysis pauses for
approval in one process, the approval comes from another, and the report is published. No API
key, no servers: SQLite checkpoints in ``.data/``.

The demo leaves the clone as it found it (``git status`` stays clean): unless
``ANALYST_MEMORY_DIR`` is set, it works on a copy of the versioned ``.agent-memory/`` under the
data folder (``.data/demo-memory/``), so the run log and the published report land there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

BIN = Path(sys.executable).parent
ANALYST = str(BIN / "analyst")


def step(title: str) -> None:
    # Bold on a terminal only: a log file or CI output gets no escape codes.
    bold, plain = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("", "")
    print(f"\n{bold}== {title}{plain}", flush=True)


def analyst(*args: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    print("$ analyst " + " ".join(args), flush=True)
    result = subprocess.run([ANALYST, *args], text=True, capture_output=capture, env=os.environ)
    if result.returncode != 0:
        if capture:
            sys.stderr.write(result.stderr)
        sys.exit(f"demo: 'analyst {' '.join(args)}' failed with exit code {result.returncode}")
    return result


def demo_memory() -> Path:
    """The document memory the demo publishes into: ``ANALYST_MEMORY_DIR`` if set, else a
    copy of ``.agent-memory/`` in the data folder (its conventions refreshed each run)."""
    if os.environ.get("ANALYST_MEMORY_DIR"):
        return Path(os.environ["ANALYST_MEMORY_DIR"])
    source = Path(".agent-memory")
    target = Path(os.environ.get("ANALYST_DATA_DIR") or ".data") / "demo-memory"
    if source.is_dir():
        shutil.copytree(
            source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("research")
        )
    target.mkdir(parents=True, exist_ok=True)
    os.environ["ANALYST_MEMORY_DIR"] = str(target)
    return target


def main() -> None:
    memory = demo_memory()
    print(f"Document memory for this demo: {memory}/ (research notes are published there)")
    thread_id = f"demo-{uuid.uuid4().hex[:8]}"
    step("1. Analyse NVDA (process 1): research, draft, critic, then pause for approval")
    analyst("run", "Analyze NVDA", "--thread", thread_id)

    step(f"2. The thread is saved and waiting (process 2): {thread_id}")
    analyst("threads")
    draft = json.loads(analyst("show", thread_id, "--json", capture=True).stdout)["draft_hash"]

    step("3. A reviewer approves the exact draft they read (process 3)")
    result = json.loads(
        analyst(
            "approve",
            thread_id,
            "--as",
            "demo-reviewer",
            "--draft",
            draft,
            "--json",
            capture=True,
        ).stdout
    )
    publication = result["publication"]

    step("4. Published")
    print(f"Report: {publication['path']}")
    print(f"Chart:  {publication['chart_path']}")
    print(f"Approved by {publication['approver']} at {publication['approved_at']}")
    print(f"Inspect the thread with: analyst show {thread_id}  ·  analyst history {thread_id}")


if __name__ == "__main__":
    main()
