"""The module contract: imports only go down, no import cycles, no private names across modules.

    scripts/ -> app (agent.app, agent.cli, agent.web) -> graphs/ -> agent.nodes
             -> the domain (agent.research, .reasoning, .learning, .recollection, .market)
             -> the core (agent.errors, .settings, .records, .state, .thread_ids,
                          .pregel_names) -> memory/

Every ``import`` and ``from ... import`` of the project's source is read with :mod:`ast`.
Every import counts, for the layers and for cycles alike: a function-level import (a lazy
import is still a dependency) and one under ``if TYPE_CHECKING:`` (it never runs, but a reader
who follows the types walks it, and a circle of types is a circle of meaning). Inside the
domain, ``agent.research`` (the analyst's craft) reads no user memory: it imports nothing from
``agent.learning`` or ``agent.recollection``. Each check is probed with a module that breaks it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "graphs", "memory")

#: Highest layer first. A module belongs to the first entry whose prefix it matches.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scripts", ("scripts",)),
    ("app", ("agent.app", "agent.cli", "agent.web")),
    ("graphs", ("graphs",)),
    ("nodes", ("agent.nodes",)),
    (
        "domain",
        (
            "agent.research",
            "agent.reasoning",
            "agent.learning",
            "agent.recollection",
            "agent.market",
        ),
    ),
    ("core", ("agent",)),
    ("memory", ("memory",)),
)
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}

#: Packages of one layer that must not import each other: (importer, forbidden prefixes).
SIBLING_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("agent.research", ("agent.learning", "agent.recollection")),
)


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


def imports(path: Path, text: str | None = None) -> list[tuple[int, str, list[str]]]:
    """(line, module, imported names) of every import in ``path``, relative imports resolved."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, filename=str(path))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((node.lineno, base, [alias.name for alias in node.names]))
    return found


def imported_modules(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """(line, module) of every import; ``from a import b`` also names ``a.b``."""
    found: list[tuple[int, str]] = []
    for line, base, names in imports(path, text):
        found.append((line, base))
        found += [(line, f"{base}.{name}") for name in names]
    return found


def sources() -> list[Path]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    return sorted([*files, *(ROOT / "scripts").glob("*.py")])


def _is_project(module: str) -> bool:
    return module.split(".")[0] in (*PACKAGES, "scripts")


def violations(paths: Iterable[Path], text: str | None = None) -> list[str]:
    found: dict[tuple[Path, int], str] = {}  # one finding per import statement
    for path in paths:
        own_module = module_name(path)
        own = layer_of(own_module)
        assert own is not None, path
        for line, target in imported_modules(path, text):
            theirs = layer_of(target)
            if theirs is None or target in PACKAGES or (path, line) in found:
                continue
            where = f"{path.relative_to(ROOT)}:{line}"
            if RANK[theirs] < RANK[own]:
                found[path, line] = f"{where}: {own} imports {target} ({theirs})"
                continue
            for importer, forbidden in SIBLING_RULES:
                inside = own_module == importer or own_module.startswith(importer + ".")
                if inside and any(target == f or target.startswith(f + ".") for f in forbidden):
                    found[path, line] = f"{where}: {importer} imports {target}"
    return list(found.values())


def dependency_graph(
    paths: Iterable[Path], texts: dict[Path, str] | None = None
) -> dict[str, set[str]]:
    """Module -> the project modules it imports, wherever the import stands (module level,
    a function, ``if TYPE_CHECKING:``). ``from package import module`` depends on that module
    only, as ``import package.module`` does: the package is named, not read."""
    paths = list(paths)
    texts = texts or {}
    known = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        own = module_name(path)
        edges = graph.setdefault(own, set())
        for _, base, names in imports(path, texts.get(path)):
            submodules = {f"{base}.{n}" for n in names} & known
            names_in_base = len(submodules) < len(names) or not names
            for target in (*submodules, *([base] if names_in_base else [])):
                if target in known and target != own:
                    edges.add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def private_imports(paths: Iterable[Path], text: str | None = None) -> list[str]:
    """``from project.module import _name``, and ``module._name`` through an imported module."""
    found: list[str] = []
    for path in paths:
        source = path.read_text(encoding="utf-8") if text is None else text
        tree = ast.parse(source)
        where = path.relative_to(ROOT)
        aliases: set[str] = set()
        for line, base, names in imports(path, text):
            if not _is_project(base):
                continue
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    found.append(f"{where}:{line}: imports {base}.{name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases |= {
                    (a.asname or a.name).split(".")[0] for a in node.names if _is_project(a.name)
                }
            elif isinstance(node, ast.ImportFrom) and node.module and _is_project(node.module):
                # ``from agent.app import forgetting`` binds a module: its privates are off limits.
                aliases |= {a.asname or a.name for a in node.names if not a.name[0].isupper()}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{where}:{node.lineno}: uses {node.value.id}.{node.attr}")
    return found


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


def test_no_import_cycles() -> None:
    found = cycles(dependency_graph(sources()))
    assert found == [], (
        "modules that import each other (directly, lazily or for types only): "
        + "; ".join(" <-> ".join(c) for c in found)
        + ". Break each circle: hand the lower module the narrow thing it uses (the object "
        "itself, or a Protocol it defines), not the module above that holds it."
    )


def test_no_private_name_crosses_a_module() -> None:
    assert private_imports(sources()) == []


@pytest.mark.parametrize(
    ("code", "where"),
    [
        ("from agent.errors import ConfigurationError\n", "memory/probe.py"),
        ("def f():\n    from graphs.builder import build_graph\n", "memory/probe.py"),
        ("from agent.cli import main\n", "agent/probe.py"),
        ("import agent.app\n", "graphs/probe.py"),
        ("from .app import AnalystApp\n", "agent/probe.py"),
        ("from agent.nodes.services import Services\n", "agent/research/probe.py"),
        ("from graphs.builder import build_graph\n", "agent/nodes/probe.py"),
        ("from agent.learning.profile import attribute\n", "agent/state.py"),
        ("from agent.recollection.reader import Recollection\n", "agent/research/probe.py"),
    ],
)
def test_the_contract_catches_an_upward_import(code: str, where: str) -> None:
    """The checker itself can fail: a probe module (never written to disk) in each layer."""
    assert len(violations([ROOT / where], text=code)) == 1


def test_the_cycle_check_catches_a_cycle() -> None:
    a, b, c = (ROOT / "agent" / f"probe_{n}.py" for n in "abc")
    texts = {
        a: "from agent.probe_b import x\n",
        b: "def f():\n    from agent.probe_a import y\n",  # a lazy import still closes a cycle
        c: "from agent.probe_a import y\n",  # depends on the cycle, is not in it
    }
    graph = dependency_graph([a, b, c], texts)
    assert cycles(graph) == [["agent.probe_a", "agent.probe_b"]]
    assert graph["agent.probe_c"] == {"agent.probe_a"}


def test_the_cycle_check_catches_a_cycle_through_a_type_only_import() -> None:
    """The circle ``AnalystApp`` and its parts made: the part names the app only for its
    type, and the app imports the part in a method."""
    app, part = ROOT / "agent" / "probe_app.py", ROOT / "agent" / "probe_part.py"
    texts = {
        app: "class App:\n    def part(self):\n        from agent.probe_part import Part\n",
        part: (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from agent.probe_app import App\n"
            "class Part:\n"
            "    def __init__(self, app: App) -> None: ...\n"
        ),
    }
    assert cycles(dependency_graph([app, part], texts)) == [["agent.probe_app", "agent.probe_part"]]


def test_importing_a_module_from_its_package_depends_on_the_module_only() -> None:
    """``from agent.probe import sub`` is ``import agent.probe.sub``: the package's own
    imports are not the importer's, so no circle is invented through the package."""
    package, sub, user = (
        ROOT / "agent" / "probe" / name for name in ("__init__.py", "sub.py", "user.py")
    )
    texts = {
        package: "from agent.probe.user import helper\n",  # a package that re-exports
        sub: "x = 1\n",
        user: "from agent.probe import sub\nfrom agent.probe import helper2\n",
    }
    graph = dependency_graph([package, sub, user], texts)
    assert graph["agent.probe.user"] == {"agent.probe.sub", "agent.probe"}
    texts[user] = "from agent.probe import sub\n"
    graph = dependency_graph([package, sub, user], texts)
    assert graph["agent.probe.user"] == {"agent.probe.sub"}
    assert cycles(graph) == []


@pytest.mark.parametrize(
    "code",
    [
        "from agent.app.service import _helper\n",
        "from agent.app import service\nservice._helper()\n",
        "import memory.facts.sqlite as backend\nbackend._connect()\n",
    ],
)
def test_the_private_name_check_catches_one(code: str) -> None:
    assert len(private_imports([ROOT / "agent" / "probe.py"], text=code)) == 1
