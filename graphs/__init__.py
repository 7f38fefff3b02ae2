"""Graph assembly: the analyst's StateGraph builder and compile-time wiring of memory."""

from graphs.builder import build_graph, compile_graph

__all__ = ["build_graph", "compile_graph"]
