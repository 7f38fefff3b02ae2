"""Graph assembly: the analyst's StateGraph builder and compile-time wiring of memory.

``build_graph`` and ``compile_graph`` (:mod:`graphs.builder`) load on first use, so a module
that only reads threads (:mod:`graphs.reading`) does not import LangGraph's graph package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphs.builder import build_graph, compile_graph

__all__ = ["build_graph", "compile_graph"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        import graphs.builder

        return getattr(graphs.builder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
