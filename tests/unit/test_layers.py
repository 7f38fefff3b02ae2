"""The layer contract: imports only go down.

    scripts/  ->  app layer (agent.app, agent.cli)  ->  graphs/  ->  agent domain  ->  memory/

Every ``import`` and ``from ... import`` in the project's source is read with :mod:`ast`
(function-level and ``TYPE_CHECKING`` imports included: a lazy import is still a dependency),
and each one must name a module in the same layer or a lower one. ``memory/`` knows nothing of
the analyst; the domain does not know how it is assembled or driven.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Highest layer first. A module belongs to the first entry whose prefix it matches.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scripts", ("scripts",)),
    ("app", ("agent.app", "agent.cli")),
    ("graphs", ("graphs",)),
    ("domain", ("agent",)),
    ("memory", ("memory",)),
)
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}


def layer_of(module: str) -> str | None:
    for name, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    return None  # third-party or standard library


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, relative imports resolved."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, filename=str(path))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base))
            # ``from agent import cli`` imports agent.cli, not just the agent package.
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def sources() -> list[Path]:
    files = [p for pkg in ("agent", "graphs", "memory") for p in (ROOT / pkg).rglob("*.py")]
    return sorted([*files, *(ROOT / "scripts").glob("*.py")])


def violations(paths: list[Path], text: str | None = None) -> list[str]:
    found: dict[tuple[Path, int], str] = {}  # one finding per import statement
    for path in paths:
        own = layer_of(module_name(path))
        assert own is not None, path
        for line, target in imported_modules(path, text):
            theirs = layer_of(target)
            if theirs is None or theirs == own:
                continue
            # ``from agent import render`` names agent.render; the package itself is not a layer
            # above anything, so only modules that exist are judged.
            if target in ("agent", "graphs", "memory"):
                continue
            if RANK[theirs] < RANK[own] and (path, line) not in found:
                found[path, line] = (
                    f"{path.relative_to(ROOT)}:{line}: {own} imports {target} ({theirs})"
                )
    return list(found.values())


def test_imports_only_go_down() -> None:
    assert violations(sources()) == []


def test_memory_imports_nothing_from_the_analyst() -> None:
    memory_files = sorted((ROOT / "memory").rglob("*.py"))
    assert memory_files
    offending = [
        f"{p.relative_to(ROOT)}:{line}: {target}"
        for p in memory_files
        for line, target in imported_modules(p)
        if layer_of(target) not in (None, "memory")
    ]
    assert offending == []


@pytest.mark.parametrize(
    ("code", "where"),
    [
        ("from agent.errors import ConfigurationError\n", "memory/probe.py"),
        ("def f():\n    from graphs.builder import build_graph\n", "memory/probe.py"),
        ("from agent.cli import main\n", "agent/probe.py"),
        ("import agent.app\n", "graphs/probe.py"),
        ("from .app import AnalystApp\n", "agent/probe.py"),
    ],
)
def test_the_contract_catches_an_upward_import(code: str, where: str) -> None:
    """The checker itself can fail: a probe module (never written to disk) in each layer."""
    assert len(violations([ROOT / where], text=code)) == 1
