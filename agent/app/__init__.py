"""The application layer: :class:`AnalystApp` (``agent.app.service``, the threads), through
which the CLI, the chat and scripts reach the principal's opened tiers (``agent.app.tiers``),
every memory operation (``agent.app.memory``, :attr:`AnalystApp.memory`) and storage
administration (``agent.app.storage``). Memory kinds are registered in ``agent.app.kinds``."""

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
