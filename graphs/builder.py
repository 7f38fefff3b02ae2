"""Build the analyst graph; persistence is attached at compile time, never inside nodes.

::

    START -> capture --> router --> planner -> executor --(more steps)--> executor
               |           |                       \\--(done)--> reporter -> critic -> approval
               |           +--(flash)--> executor
               |           +--(a question about memory)--> answer --> remember
               |           +--(what to buy, no ticker)--> ideas --> remember
               |           +--(noted / answered / declined)--> remember
               +--(forget ...)--> remember
    approval --approve/edit--> publish -> remember
    approval --reject--> reporter (at most 3 times)
    approval --4th reject--> remember (rejected)
    remember -> END   (may first pause to confirm a proposed forget and, in chat, what it
                       proposes to remember)

``build_graph`` returns the uncompiled ``StateGraph``; ``compile_graph`` is the one place the
checkpointer (hot memory) and store (cold memory) are handed to ``compile(...)``. Neither
reads the environment unless no services are given, and neither opens a connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from agent.state import AnalystState, Context, InputState
from graphs.shape import NODES

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.store.base import BaseStore

    from agent.nodes.services import Services

GRAPH_NAME = "analyst"


def _retryable(error: Exception) -> bool:
    """Transient model failures and I/O; never bad input, configuration or refusals."""
    from agent.errors import ModelTransientError

    return isinstance(error, ModelTransientError | OSError | TimeoutError)


def build_graph(
    services: Services | None = None,
) -> StateGraph[AnalystState, Context, InputState, AnalystState]:
    from agent.nodes.answer import Answer
    from agent.nodes.approval import Approval
    from agent.nodes.capture import Capture
    from agent.nodes.critic import Critic
    from agent.nodes.executor import Executor
    from agent.nodes.ideas import Ideas
    from agent.nodes.planner import Planner
    from agent.nodes.publish import Publish
    from agent.nodes.remember import Remember
    from agent.nodes.reporter import Reporter
    from agent.nodes.router import Router

    if services is None:
        from agent.nodes.services import Services
        from agent.settings import Settings

        services = Services.from_settings(Settings.from_env())
    retry = RetryPolicy(
        max_attempts=services.retry_attempts,
        initial_interval=services.retry_initial_interval,
        backoff_factor=2.0,
        jitter=True,
        retry_on=_retryable,
    )
    classes = (
        Capture,
        Router,
        Planner,
        Executor,
        Reporter,
        Critic,
        Approval,
        Publish,
        Answer,
        Ideas,
    )
    nodes = zip(NODES, (*classes, Remember), strict=True)
    return _shape({name: node(services) for name, node in nodes}, retry)


def _shape(
    nodes: Mapping[str, Any], retry: RetryPolicy | None
) -> StateGraph[AnalystState, Context, InputState, AnalystState]:
    """The graph of ``nodes`` (one per name of :data:`NODES`) with its fixed edges; the other
    routes are the ``Command`` each node returns."""
    graph = StateGraph(AnalystState, context_schema=Context, input_schema=InputState)
    for name in NODES:
        graph.add_node(name, nodes[name], retry_policy=None if name == "approval" else retry)
    graph.add_edge(START, "capture")
    graph.add_edge("planner", "executor")
    graph.add_edge("reporter", "critic")
    graph.add_edge("critic", "approval")
    graph.add_edge("publish", "remember")
    graph.add_edge("remember", END)
    return graph


def reading_graph(
    checkpointer: BaseCheckpointSaver,
) -> CompiledStateGraph[AnalystState, Context, InputState, AnalystState]:
    """The graph's shape over ``checkpointer``, for reading threads only: the same nodes,
    edges and state, so a thread's state, its next nodes, interrupts and history read exactly
    as through :func:`compile_graph`; but no node can run, and neither the nodes nor what
    they use (models, market data, the learner) are imported, so ``analyst threads``,
    ``show`` and ``history`` start fast."""
    return _shape(dict.fromkeys(NODES, _read_only), None).compile(
        checkpointer=checkpointer, name=GRAPH_NAME
    )


def _read_only(state: AnalystState) -> dict[str, Any]:
    raise RuntimeError("reading_graph() only reads threads; run them with compile_graph()")


def compile_graph(
    checkpointer: BaseCheckpointSaver | None,
    store: BaseStore | None = None,
    services: Services | None = None,
) -> CompiledStateGraph[AnalystState, Context, InputState, AnalystState]:
    return build_graph(services).compile(checkpointer=checkpointer, store=store, name=GRAPH_NAME)
