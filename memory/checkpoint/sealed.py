"""Encryption at rest for any saver: channel values and pending writes stored sealed.

Contract: :class:`SealedSaver` wraps a ``BaseCheckpointSaver`` and a
:class:`~memory.serde.ValueCipher`. Every channel value and pending write is sealed (AES-EAX,
authenticated) before the wrapped saver sees it and opened when read back; everything else
(ids, versions, metadata, parent links) passes through, so listing, history, time travel,
deletion and retention behave exactly as on the wrapped saver. Values stored before
encryption was switched on are read back unchanged; a wrong key or tampered bytes is
:class:`CheckpointDecryptionError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from memory.serde import ValueCipher


class SealedSaver(BaseCheckpointSaver[Any]):
    """Wraps any saver so that channel values and pending writes are stored sealed.

    Everything else (ids, versions, metadata, parent links) passes through, so listing,
    history, time travel, deletion and retention work exactly as on the wrapped saver.
    """

    def __init__(self, inner: BaseCheckpointSaver[Any], cipher: ValueCipher) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.cipher = cipher

    @property
    def config_specs(self) -> list[Any]:
        return self.inner.config_specs

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)

    def _seal(self, checkpoint: Checkpoint) -> Checkpoint:
        values = {k: self.cipher.seal(v) for k, v in checkpoint["channel_values"].items()}
        return {**checkpoint, "channel_values": values}

    def _open(self, item: CheckpointTuple | None) -> CheckpointTuple | None:
        if item is None:
            return None
        cp = item.checkpoint
        values = {k: self.cipher.open(v) for k, v in cp["channel_values"].items()}
        writes = None
        if item.pending_writes is not None:
            writes = [(t, c, self.cipher.open(v)) for t, c, v in item.pending_writes]
        return item._replace(checkpoint={**cp, "channel_values": values}, pending_writes=writes)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._open(await self.inner.aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            opened = self._open(item)
            assert opened is not None
            yield opened

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.inner.aput(config, self._seal(checkpoint), metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        sealed = [(channel, self.cipher.seal(value)) for channel, value in writes]
        await self.inner.aput_writes(config, sealed, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)

    # Sync variants, for savers that offer them.
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._open(self.inner.get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for item in self.inner.list(config, filter=filter, before=before, limit=limit):
            opened = self._open(item)
            assert opened is not None
            yield opened

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.inner.put(config, self._seal(checkpoint), metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        sealed = [(channel, self.cipher.seal(value)) for channel, value in writes]
        self.inner.put_writes(config, sealed, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)
