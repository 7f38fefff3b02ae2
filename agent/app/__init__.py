"""The application layer's service: :class:`AnalystApp` (``agent.app.service``), through which
the CLI, the chat and scripts reach every memory tier, and its memory controls
(``agent.app.memory``, :attr:`AnalystApp.memory`)."""

from agent.app.service import LATER, AnalystApp, OnUpdate, new_thread_id, within_limit
from agent.app.views import CheckpointView, ThreadView

__all__ = [
    "LATER",
    "AnalystApp",
    "CheckpointView",
    "OnUpdate",
    "ThreadView",
    "new_thread_id",
    "within_limit",
]
