"""Shared fixtures for every test tier.

Every test runs with its own data and memory folders (``ANALYST_DATA_DIR`` and
``ANALYST_MEMORY_DIR`` under ``tmp_path``), so nothing can read or write the repository's
``.data`` or ``.agent-memory``; shared helpers live in ``tests/support/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Settings a developer's shell may carry that would point a test at shared storage or servers.
_INHERITED_PREFIXES = ("ANALYST_", "QDRANT_")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the analyst at fresh folders under ``tmp_path``; the folders are not created."""
    for name in list(os.environ):
        if name.startswith(_INHERITED_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANALYST_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANALYST_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("ANALYST_USER", "tester")
    return tmp_path


#: Test files whose tests share a server that answers one request at a time. ``make test`` runs
#: two pytest-xdist workers with ``--dist loadfile`` (a file's tests run in order on one worker)
#: and ``--no-loadscope-reorder`` (files are handed out in collection order, not largest
#: first): these go first, so the longest tier is not left to run alone at the end.
_SERIAL_FIRST = ("tests/realmodel/",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    first = [item for item in items if item.nodeid.startswith(_SERIAL_FIRST)]
    if first:
        items[:] = first + [item for item in items if not item.nodeid.startswith(_SERIAL_FIRST)]
