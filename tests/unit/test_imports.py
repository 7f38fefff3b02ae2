"""Importing any module has no side effects: no files, no connections, no env requirements.

One module is the documented exception: ``graphs.auth``, the API server's auth handler, loads
its bearer tokens at import so that a server with none configured refuses to start with its
message (docs/security.md, Server). It imports cleanly once a token is configured.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import agent
import graphs
import memory

#: The server's auth handler: it needs a token configured to import (see above).
SERVER_AUTH = "graphs.auth"
MODULES = sorted(
    m.name
    for pkg in (agent, graphs, memory)
    for m in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + ".")
)
IMPORT = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"


def _import(folder: Path, modules: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", IMPORT, *modules],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "HOME": str(folder), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_module_imports_cleanly_in_an_empty_folder(tmp_path: Path) -> None:
    result = _import(tmp_path, [m for m in MODULES if m != SERVER_AUTH])
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "imports wrote files"
    assert "graphs.studio" in MODULES and "agent.cli" in MODULES and SERVER_AUTH in MODULES


def test_the_server_auth_imports_with_a_token_and_refuses_without(tmp_path: Path) -> None:
    configured = _import(tmp_path, [SERVER_AUTH], ANALYST_SERVER_TOKEN="t0ken-for-the-test")
    assert configured.returncode == 0, configured.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "imports wrote files"
    missing = _import(tmp_path, [SERVER_AUTH])
    assert missing.returncode != 0
    assert "ANALYST_SERVER_TOKENS" in missing.stderr and "ANALYST_SERVER_TOKEN" in missing.stderr


def test_cli_help_does_not_import_langgraph() -> None:
    code = "import sys, agent.cli; print('langgraph' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_studio_module_imports_whatever_the_settings_say(tmp_path: Path) -> None:
    """langgraph dev imports graphs/studio.py at start; settings it cannot use are a run's
    error, never an import error that stops the server."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ANALYST_DURABILITY": "sometimes",
        "ANALYST_MODEL_TIMEOUT": "soon",
        "ANALYST_CHECKPOINTER": "mongodb://nowhere",
        "ANALYST_MODEL": "openai:gpt-4o-mini",  # no key, no endpoint
    }
    result = subprocess.run(
        [sys.executable, "-c", "import graphs.studio as s; print(callable(s.graph))"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"]
