"""Savers that write their own, faster way where they can and upstream's way where not.

Contract: a saver class that mixes in :class:`FastWrites` (before LangGraph's saver class)
answers ``aput`` and ``aput_writes`` with its own versions (:meth:`FastWrites._fast_put`,
:meth:`FastWrites._fast_put_writes`) while :meth:`FastWrites.fast_writes` holds, and with the
LangGraph saver's own otherwise (the library's internals it relies on are gone). The rows or
documents written are the same either way: the Redis savers' one-trip writes
(:mod:`memory.checkpoint.redis`) and the SQLite saver's group commit
(:mod:`memory.checkpoint.sqlite`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


class FastWrites(BaseCheckpointSaver[Any]):
    """``aput`` / ``aput_writes`` the saver's own way while :meth:`fast_writes` holds."""

    def fast_writes(self) -> bool:
        """Whether writes take the saver's own path (else upstream's)."""
        raise NotImplementedError

    async def _fast_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        raise NotImplementedError

    async def _fast_put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task: tuple[str, str]
    ) -> None:
        """Store ``writes`` of ``task`` (its id and path)."""
        raise NotImplementedError

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not self.fast_writes():
            return await super().aput(config, checkpoint, metadata, new_versions)
        return await self._fast_put(config, checkpoint, metadata)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self.fast_writes():
            await super().aput_writes(config, writes, task_id, task_path)
            return
        await self._fast_put_writes(config, writes, (task_id, task_path))
