"""Start-up weight: a whole offline ``analyst run`` imports only what it uses.

The CLI process runs with ``PYTHONPROFILEIMPORTTIME`` (the ``-X importtime`` report on stderr),
so the test sees every module the real process imported: no Qdrant client for the embedded
store, no OpenAI client without a model, no torch or sentence-transformers ever. The figures
themselves (a whole run against ``python -c pass``) are ``scripts/bench_startup.py``'s.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

HEAVY_AND_UNUSED = (
    "qdrant_client",  # only the Qdrant server and local-mode backends use it
    "langchain_openai",  # only when a model is configured
    "openai",
    "torch",
    "sentence_transformers",
    "pandas",
)


def imported(stderr: str) -> set[str]:
    found = set()
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", line)
        if match:
            found.add(match[1].split(".")[0])
    return found


def test_an_offline_run_imports_no_unused_heavy_package(analyst: Any) -> None:
    env = {**analyst.environ(), "PYTHONPROFILEIMPORTTIME": "1", "ANALYST_MODEL": "offline"}
    done = subprocess.run(
        [str(analyst.exe), "run", "Analyze NVDA"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = imported(done.stderr)
    assert "langgraph" in modules and "matplotlib" in modules  # the report is real
    assert not modules & set(HEAVY_AND_UNUSED), sorted(modules & set(HEAVY_AND_UNUSED))


def test_importing_the_store_package_imports_no_backend() -> None:
    code = (
        "import sys, memory.store, memory.store.factory\n"
        "assert 'qdrant_client' not in sys.modules, 'qdrant_client'\n"
        "assert memory.store.open_store is memory.store.factory.open_store\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
