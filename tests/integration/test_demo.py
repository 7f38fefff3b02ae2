"""``make run`` (scripts/demo.py) leaves the clone as it found it.

The demo runs in a scratch git repository holding the versioned files it reads
(``.agent-memory/``, ``.gitignore``), with no ``ANALYST_*`` folders set, as on a fresh clone:
afterwards ``git status`` is clean and the published report is in the data folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def test_the_demo_publishes_into_the_data_folder_and_leaves_git_status_clean(
    tmp_path: Path,
) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copytree(ROOT / ".agent-memory", clone / ".agent-memory")
    shutil.copy(ROOT / ".gitignore", clone / ".gitignore")
    git(clone, "init", "-q")
    git(clone, "add", "-A")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "seed")

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANALYST_", "OPENAI_"))}
    env["ANALYST_USER"] = "demo"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py")],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\033[" not in done.stdout  # no escape codes when not on a terminal

    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""
    notes = list((clone / ".data" / "demo-memory" / "research").glob("NVDA-*.md"))
    assert len(notes) == 1, done.stdout
    assert str(Path(".data") / "demo-memory" / "research" / "NVDA-") in done.stdout
