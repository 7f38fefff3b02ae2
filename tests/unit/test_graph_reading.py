"""The graph's shape as plain data matches the compiled graph; what the checkpoint reading
leaves to the graph.

:mod:`graphs.shape` restates the nodes and state channels LangGraph builds from
``AnalystState``; :func:`graphs.reading.state_at` declines (``None``) every checkpoint its rules
do not cover, so the caller reads it through the graph. Its agreement with the graph on real
threads is ``tests/integration/test_thread_reading.py``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from agent.state import CHECKPOINT_TYPES_MODULES
from graphs.builder import reading_graph
from graphs.reading import NULL_TASK_ID, TASKS, TRIGGERS, state_at
from graphs.shape import LIST_KEYS, NODES, STATE_KEYS
from memory.serde import project_types


def test_the_shape_is_the_compiled_graphs() -> None:
    graph = reading_graph(InMemorySaver())
    assert tuple(graph.stream_channels_asis) == STATE_KEYS
    assert tuple((name, *node.triggers) for name, node in graph.nodes.items()) == TRIGGERS
    assert tuple(graph.nodes)[1:] == NODES
    channels: dict[str, Any] = dict(graph.channels)
    fresh = {k for k, ch in channels.items() if k in STATE_KEYS and ch.is_available()}
    assert fresh == set(LIST_KEYS)
    assert all(isinstance(channels[k], BinaryOperatorAggregate) for k in LIST_KEYS)
    assert all(channels[k].get() == [] for k in LIST_KEYS)


def test_the_state_module_defines_no_type_a_checkpoint_rebuilds() -> None:
    """So the checkpointer's allowlist need not import it (and LangGraph's graph with it)."""
    assert CHECKPOINT_TYPES_MODULES == ("agent.records",)
    assert project_types(("agent.state",)) == frozenset()


def saved(checkpoint: Any, writes: list[tuple[str, str, Any]] | None = None) -> CheckpointTuple:
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}}
    return CheckpointTuple(config, checkpoint, {"step": 1, "source": "loop"}, None, writes or [])


def checkpoint(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {**empty_checkpoint(), "v": 4}  # what LangGraph writes today
    base["channel_values"] = {"query": "Analyze NVDA", "branch:to:router": None}
    base["channel_versions"] = {"query": "1", "branch:to:router": "2"}
    return {**base, **changes}


def test_a_plain_checkpoint_is_read() -> None:
    state = state_at(saved(checkpoint()), live=True)
    assert state is not None
    assert state.values == {"messages": [], "publications": [], "query": "Analyze NVDA"}
    assert state.next == ("router",)


@pytest.mark.parametrize(
    ("case", "changes", "writes"),
    [
        ("an older checkpoint format", {"v": 1}, []),
        (
            "a pending Send",
            {"channel_values": {"query": "q", TASKS: ["send"]}, "channel_versions": {TASKS: "1"}},
            [],
        ),
        ("an input written to the state", {}, [(NULL_TASK_ID, "query", "changed")]),
    ],
)
def test_what_the_rules_do_not_cover_is_left_to_the_graph(
    case: str, changes: dict[str, Any], writes: list[tuple[str, str, Any]]
) -> None:
    assert state_at(saved(checkpoint(**changes), writes), live=True) is None, case


def test_reading_imports_no_graph_runtime() -> None:
    code = (
        "import sys, graphs.reading, graphs.shape\n"
        "bad = [m for m in sys.modules if m.startswith(('langgraph.graph', 'langgraph.pregel'))]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
