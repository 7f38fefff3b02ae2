"""Importing any module has no side effects: no files, no connections, no env requirements."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import agent
import graphs
import memory

MODULES = sorted(
    m.name
    for pkg in (agent, graphs, memory)
    for m in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + ".")
)


def test_every_module_imports_cleanly_in_an_empty_folder(tmp_path: Path) -> None:
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code, *MODULES],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "imports wrote files"
    assert "graphs.studio" in MODULES and "agent.cli" in MODULES


def test_cli_help_does_not_import_langgraph() -> None:
    code = "import sys, agent.cli; print('langgraph' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
