"""The analyst graph's shape as plain data: its nodes and its state's channels, without LangGraph.

:mod:`graphs.builder` adds :data:`NODES` to the ``StateGraph`` in this order;
:mod:`graphs.reading` reads threads from these names alone. :data:`STATE_KEYS` and
:data:`LIST_KEYS` restate what LangGraph makes of :class:`agent.state.AnalystState` (its output
channels, in order, and the reducer channels that read as ``[]`` before any write); a unit
test compares them with the compiled graph, so the two cannot drift apart.
"""

from __future__ import annotations

#: The graph's nodes, in the order they are added (``approval`` alone is never retried: it
#: only interrupts).
NODES = (
    "capture",
    "router",
    "planner",
    "executor",
    "reporter",
    "critic",
    "approval",
    "publish",
    "answer",
    "ideas",
    "remember",
)

#: The state's channels, in the order of ``AnalystState`` (what a snapshot's values hold).
STATE_KEYS = (
    "messages",
    "summary",
    "constraints",
    "publications",
    "turns",
    "context_loaded",
    "memory_asked",
    "owner",
    "query",
    "request",
    "episode_id",
    "learned",
    "intent",
    "cited",
    "procedures",
    "forget_proposed",
    "forget_confirmed",
    "reply",
    "usage",
    "route_reason",
    "plan_rationale",
    "mode",
    "tickers",
    "plan",
    "recalled",
    "facts_used",
    "memories_used",
    "step_index",
    "results",
    "draft",
    "critique",
    "feedback",
    "revisions",
    "decisions",
    "decision_error",
    "status",
    "publication",
    "stop_reason",
)

#: The state's reducer channels over lists (``add_messages``, ``append_publications``): they
#: read as ``[]`` in a snapshot even before anything was written to them.
LIST_KEYS = ("messages", "publications")
