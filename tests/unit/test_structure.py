"""The product's size limits and its use of other packages' internals.

The product is ``agent/``, ``graphs/`` and ``memory/`` (``tests/`` and ``scripts/``, the
benchmarks and tools, are not held to these counts):

- no module over :data:`MAX_MODULE_LINES` lines (every line of the file counts);
- no function or method over :data:`MAX_FUNCTION_LINES` lines, counted with :mod:`ast` from
  its ``def`` line to its last line (``end_lineno - lineno + 1``): decorators are not counted,
  its docstring, comments and blank lines are; a nested function counts in its parent too;
- no import of a third-party package's private module or name (``langgraph._internal``,
  ``from pydantic import _x``): it can change in any release. Use the public API, or copy the
  value once with a test that checks it against the package (``agent/pregel_names.py``,
  ``tests/unit/test_pregel_names.py``).

Every failure names the file, the function or import, its size and the fix. Each check is
probed with a synthetic module (text never written to disk) that breaks it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("agent", "graphs", "memory")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80


def product_files() -> list[Path]:
    return sorted(p for pkg in PRODUCT for p in (ROOT / pkg).rglob("*.py"))


def _read(path: Path, texts: dict[Path, str] | None) -> str:
    return texts[path] if texts and path in texts else path.read_text(encoding="utf-8")


def long_modules(paths: Iterable[Path], texts: dict[Path, str] | None = None) -> list[str]:
    """One message per module over :data:`MAX_MODULE_LINES` lines."""
    found = []
    for path in paths:
        lines = len(_read(path, texts).splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(
                f"{path.relative_to(ROOT)} is {lines} lines (limit {MAX_MODULE_LINES}): move a "
                "part that stands alone (a class, a group of helpers) into a module of its own "
                "beside it, and import it from there"
            )
    return found


def long_functions(paths: Iterable[Path], texts: dict[Path, str] | None = None) -> list[str]:
    """One message per function or method over :data:`MAX_FUNCTION_LINES` lines."""
    found = []
    for path in paths:
        tree = ast.parse(_read(path, texts), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(
                    f"{path.relative_to(ROOT)}:{node.lineno} {node.name} is {lines} lines "
                    f"(limit {MAX_FUNCTION_LINES}): split it into named steps, each a function "
                    "of its own that says what it does"
                )
    return found


def _third_party(module: str) -> bool:
    top = module.split(".")[0]
    return top not in (*PRODUCT, "tests", "scripts") and top not in sys.stdlib_module_names


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_imports(paths: Iterable[Path], texts: dict[Path, str] | None = None) -> list[str]:
    """One message per import of a third-party package's private module or name."""
    found = []
    for path in paths:
        tree = ast.parse(_read(path, texts), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for dotted in named:
                parts = dotted.split(".")
                if _third_party(dotted) and any(_private(p) for p in parts[1:]):
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} imports {dotted}, private to "
                        f"{parts[0]}: use its public API, or copy the value once with a test "
                        "that checks it against the package (as agent/pregel_names.py does)"
                    )
                    break
    return found


def test_no_module_is_over_the_limit() -> None:
    found = long_modules(product_files())
    assert not found, "\n".join(found)


def test_no_function_is_over_the_limit() -> None:
    found = long_functions(product_files())
    assert not found, "\n".join(found)


def test_no_private_module_of_another_package_is_imported() -> None:
    found = private_imports(product_files())
    assert not found, "\n".join(found)


def test_the_product_is_what_is_counted() -> None:
    names = {p.relative_to(ROOT).parts[0] for p in product_files()}
    assert names == set(PRODUCT)
    assert (ROOT / "agent" / "app" / "service.py") in product_files()


# -- the checks can fail --------------------------------------------------------------------


def test_the_module_check_catches_a_long_module() -> None:
    probe = ROOT / "agent" / "probe.py"
    at_limit = "x = 1\n" * MAX_MODULE_LINES
    assert long_modules([probe], {probe: at_limit}) == []
    (message,) = long_modules([probe], {probe: at_limit + "y = 2\n"})
    assert message.startswith(f"agent/probe.py is {MAX_MODULE_LINES + 1} lines (limit 700)")
    assert "module of its own" in message


def _function(name: str, lines: int, *, decorated: bool = False, prefix: str = "") -> str:
    """A function ``lines`` lines long from its ``def``, indented by ``prefix``."""
    head = f"{prefix}@staticmethod\n" if decorated else ""
    body = "".join(f"{prefix}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{head}{prefix}def {name}():\n{body}"


def test_the_function_check_catches_a_long_function_or_method() -> None:
    probe = ROOT / "memory" / "probe.py"
    fine = _function("fine", MAX_FUNCTION_LINES, decorated=True)  # decorators are not counted
    method = "class C:\n" + _function("long_method", MAX_FUNCTION_LINES + 1, prefix="    ")
    text = fine + _function("too_long", MAX_FUNCTION_LINES + 5).replace("def", "async def") + method
    found = long_functions([probe], {probe: text})
    assert [m.split(" is ")[0] for m in found] == [
        "memory/probe.py:82 too_long",
        "memory/probe.py:168 long_method",
    ]
    assert found[0].startswith("memory/probe.py:82 too_long is 85 lines (limit 80): split it")
    assert "is 81 lines" in found[1]


@pytest.mark.parametrize(
    "code",
    [
        "from langgraph._internal._constants import CONFIG_KEY_RESUMING\n",
        "import langgraph._internal._constants as c\n",
        "from langgraph import _internal\n",
        "def f():\n    from pydantic._internal import _model_construction\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from qdrant_client._x import Y\n",
    ],
)
def test_the_import_check_catches_a_private_module(code: str) -> None:
    probe = ROOT / "graphs" / "probe.py"
    (message,) = private_imports([probe], {probe: code})
    assert message.startswith("graphs/probe.py:")
    assert "public API" in message


@pytest.mark.parametrize(
    "code",
    [
        "from langgraph.constants import TASKS\n",
        "from agent.app.service import _helper\n",  # the project's own: test_layers.py's rule
        "import _thread\nfrom os import _exit\n",  # the standard library's
        "from . import _sibling\n",
        "from langgraph.types import __all__\n",
    ],
)
def test_the_import_check_passes_a_public_or_own_import(code: str) -> None:
    probe = ROOT / "graphs" / "probe.py"
    assert private_imports([probe], {probe: code}) == []
