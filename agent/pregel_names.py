"""Names LangGraph writes into checkpoints and run configs without exporting them.

Reading a thread from its checkpoints (:mod:`graphs.reading`) and telling a resumed run from
new input (:mod:`agent.nodes.capture`) need a few of Pregel's own names, which LangGraph keeps
in ``langgraph._internal._constants`` (``langgraph.constants`` still resolves them, with a
deprecation warning). The product imports no private module, so they are copied here, once;
``tests/unit/test_pregel_names.py`` fails when an upgrade of LangGraph changes one. The names
LangGraph does export (``langgraph.constants``: ``START``, ``TASKS``) are imported from there.
"""

from __future__ import annotations

#: The channel a task writes an interrupt's value to (a question waiting for an answer).
INTERRUPT = "__interrupt__"
#: The channel a ``Command(resume=...)`` is written to for the interrupted task.
RESUME = "__resume__"
#: The channel a task that raised writes its error to.
ERROR = "__error__"
#: The channel naming the node whose error stopped the run.
ERROR_SOURCE_NODE = "__error_source_node__"
#: The task id of writes made outside any task (input, ``update_state``, a run-wide resume).
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
#: The kind of a task triggered by a channel (a node's edge), a part of its task id's path.
PULL = "__pregel_pull"
#: The run-config key set (truthy) when a run continues from a checkpoint instead of new input.
CONFIG_KEY_RESUMING = "__pregel_resuming"
