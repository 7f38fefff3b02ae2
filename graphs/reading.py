"""A thread's state read from its checkpoints and the checkpointer alone, as the graph reads it.

LangGraph's ``aget_state`` and ``aget_state_history`` rebuild the graph's channels and prepare
the next step's tasks to say what a checkpoint holds, which nodes run next and which
interrupts wait for an answer: that needs ``langgraph.graph`` and Pregel, about a second of
imports for a command that only reads. For this graph's shape (:mod:`graphs.shape`: plain
nodes, each triggered by its own ``branch:to:<node>`` channel, no subgraphs) the answer
follows from the checkpoint and its pending writes, by the rules Pregel applies:

- values: the state's channels the checkpoint holds, the list reducers ``[]`` when unwritten;
- next: each node whose trigger channel holds a value newer than the version the node last
  saw (``versions_seen``), in the order the graph adds its nodes; a live read leaves out a
  task that finished (it recorded an output write);
- interrupts: what each of those tasks wrote to ``__interrupt__`` (a live read: only while
  the task has not finished, i.e. the question still waits).

Whatever these rules do not cover reads ``None``, and the caller asks the graph
(:func:`graphs.builder.reading_graph`): a checkpoint format other than the current one, a
pending ``Send``, a subgraph's checkpoint, a write to the state not applied yet (a task that
finished within an unsaved step, an ``update_state``). A test compares both readings on real
threads in every status.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langgraph.constants import TASKS
from xxhash import xxh3_128_hexdigest

from agent.pregel_names import ERROR, ERROR_SOURCE_NODE, INTERRUPT, NULL_TASK_ID, PULL, RESUME
from graphs.shape import LIST_KEYS, NODES, STATE_KEYS

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointMetadata, CheckpointTuple

#: The checkpoint format these rules read (LangGraph's current one: older ones are migrated
#: by the graph when it reads them).
FORMAT = 4
#: The graph's entry node and its trigger channel (``langgraph.constants.START``).
START = "__start__"
#: Writes that say what happened to a task rather than what it produced
#: (``langgraph.pregel._task_status.CONTROL_WRITES``); the graph ignores them in state.
CONTROL_WRITES = frozenset((ERROR, ERROR_SOURCE_NODE, INTERRUPT, RESUME))
#: Each node with the channel that triggers it, in the order the graph adds them.
TRIGGERS = ((START, START), *((node, f"branch:to:{node}") for node in NODES))


@dataclass(frozen=True)
class ThreadState:
    """What the application reads of a thread at one checkpoint: the fields of LangGraph's
    ``StateSnapshot`` of the same name, with the same values."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: RunnableConfig
    metadata: CheckpointMetadata | None
    created_at: str | None
    parent_config: RunnableConfig | None
    interrupts: tuple[Any, ...]


def thread_config(thread_id: str) -> RunnableConfig:
    """The config that names a thread's latest checkpoint (the root namespace)."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def read_state(saver: BaseCheckpointSaver[Any], thread_id: str) -> ThreadState | None:
    """The thread's state now (``aget_state``): ``None`` when these rules do not cover its
    latest checkpoint. A thread without checkpoints has empty values and nothing next."""
    config = thread_config(thread_id)
    saved = await saver.aget_tuple(config)
    if saved is None:
        return ThreadState({}, (), config, None, None, None, ())
    return state_at(saved, live=True)


async def read_history(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[ThreadState] | None:
    """Every checkpoint of the thread, newest first, each as the record of its step
    (``aget_state_history``): ``None`` when these rules do not cover one of them."""
    states = [state_at(saved, live=False) async for saved in saver.alist(thread_config(thread_id))]
    if any(state is None for state in states):
        return None
    return [state for state in states if state is not None]


def state_at(saved: CheckpointTuple, *, live: bool) -> ThreadState | None:
    """The state at the checkpoint ``saved``: as it stands now (``live``, with what its
    finished tasks and answered interrupts say) or as the record of its step; ``None`` when
    these rules do not cover it."""
    checkpoint = saved.checkpoint
    metadata = saved.metadata or {}
    channels = checkpoint["channel_values"]
    writes = saved.pending_writes or []
    if checkpoint.get("v") != FORMAT or TASKS in channels or metadata.get("parents"):
        return None
    if any(task == NULL_TASK_ID and channel not in CONTROL_WRITES for task, channel, _ in writes):
        return None  # an input written to the state, not applied yet
    output, raised = _task_writes(writes)
    step = int(metadata.get("step", -1)) + 1
    tasks = _next_tasks(checkpoint, step)
    if live and any(output.get(task_id) for task_id, _ in tasks):
        return None  # a finished task whose writes the graph would apply to the values
    values: dict[str, Any] = {}
    for key in STATE_KEYS:
        if key in channels:
            values[key] = channels[key]
        elif key in LIST_KEYS:
            values[key] = []
    return ThreadState(
        values=values,
        next=tuple(name for _, name in tasks),
        config=saved.config,
        metadata=saved.metadata,
        created_at=checkpoint["ts"],
        parent_config=saved.parent_config,
        interrupts=tuple(i for task_id, _ in tasks for i in raised.get(task_id, ())),
    )


def _task_writes(writes: list[Any]) -> tuple[dict[str, bool], dict[str, list[Any]]]:
    """Per task id: whether it recorded an output write (it finished), and its latest
    interrupts (``langgraph.pregel._task_status.read_task_statuses``)."""
    output: dict[str, bool] = {}
    raised: dict[str, list[Any]] = {}
    for task_id, channel, value in writes:
        if task_id == NULL_TASK_ID:
            continue
        output.setdefault(task_id, False)
        if channel == INTERRUPT:
            raised.setdefault(task_id, []).extend(value if isinstance(value, Sequence) else [value])
        elif channel not in CONTROL_WRITES:
            output[task_id] = True
    return output, raised


def _next_tasks(checkpoint: Any, step: int) -> list[tuple[str, str]]:
    """(task id, node) of each node the checkpoint triggers for ``step``."""
    versions = checkpoint["channel_versions"]
    if not versions:
        return []
    null = type(next(iter(versions.values())))()
    channels = checkpoint["channel_values"]
    namespace = binascii.unhexlify(checkpoint["id"].replace("-", ""))
    tasks = []
    for node, trigger in TRIGGERS:
        seen = checkpoint["versions_seen"].get(node)
        if trigger not in channels:
            continue
        if seen is not None and not versions.get(trigger, null) > seen.get(trigger, null):
            continue
        parts = (node, str(step), node, PULL, trigger)  # namespace, step, name, kind, triggers
        digest = xxh3_128_hexdigest(namespace + "".join(parts).encode())
        task_id = "-".join((digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32]))
        tasks.append((task_id, node))
    return tasks
