"""End-to-end demo on the embedded defaults (``make run``).

Each step is a separate ``analyst`` process, as a user's would be: the analysis pauses for
approval in one process, the approval comes from another, and the report is published into
``.agent-memory/research/``. No API key, no servers: SQLite checkpoints in ``.data/``.
"""

from __future__ import annotations

import json
import os
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


def main() -> None:
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
