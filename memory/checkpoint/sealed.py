"""Encryption at rest for any saver: channel values and pending writes stored sealed.

Contract: :class:`SealedSaver` wraps a ``BaseCheckpointSaver`` and a
:class:`~memory.serde.ValueCipher`. Every channel value and pending write is sealed (AES-EAX,
authenticated) before the wrapped saver sees it and opened when read back; everything else
(ids, versions, metadata, parent links) passes through, so listing, history, time travel,
deletion and retention behave exactly as on the wrapped saver. Values stored before
encryption was switched on are read back unchanged; a wrong key or tampered bytes is
:class:`CheckpointDecryptionError`.

The wrapper offers exactly the optional capabilities of the saver it wraps (``aprune``,
``acopy_thread``, ``adelete_for_runs``): ``SealedSaver(inner, cipher)`` builds an instance of
a subclass that overrides those of them ``inner``'s class overrides, and no others, so that
LangGraph's capability detection (``langgraph-checkpoint-conformance`` looks for overridden
methods) sees the same saver through the wrapper as without it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from functools import cache
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

    def __new__(cls, *args: Any, **kwargs: Any) -> SealedSaver:
        # Arguments are optional here so that copy and pickle (which call __new__ bare) work.
        inner = args[0] if args else kwargs.get("inner")
        if cls is SealedSaver and inner is not None:
            cls = _sealed_class(_optional_capabilities(type(inner)))
        return super().__new__(cls)

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

    def _seal_writes(self, writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return [(channel, self.cipher.seal(value)) for channel, value in writes]

    def _open(self, item: CheckpointTuple) -> CheckpointTuple:
        cp = item.checkpoint
        values = {k: self.cipher.open(v) for k, v in cp["channel_values"].items()}
        writes = None
        if item.pending_writes is not None:
            writes = [(t, c, self.cipher.open(v)) for t, c, v in item.pending_writes]
        return item._replace(checkpoint={**cp, "channel_values": values}, pending_writes=writes)

    def _open_found(self, item: CheckpointTuple | None) -> CheckpointTuple | None:
        return None if item is None else self._open(item)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._open_found(await self.inner.aget_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            yield self._open(item)

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
        await self.inner.aput_writes(config, self._seal_writes(writes), task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)

    # Sync variants, for savers that offer them.
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._open_found(self.inner.get_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for item in self.inner.list(config, filter=filter, before=before, limit=limit):
            yield self._open(item)

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
        self.inner.put_writes(config, self._seal_writes(writes), task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


# -- optional capabilities, offered only when the wrapped saver offers them -------------------
# None of them touches a value: pruning, copying and deleting by run move or drop stored
# (sealed) records as they are, so each passes straight through.


class _Prune(SealedSaver):
    async def aprune(self, thread_ids: Sequence[str], **kwargs: Any) -> None:
        await self.inner.aprune(thread_ids, **kwargs)

    def prune(self, thread_ids: Sequence[str], **kwargs: Any) -> None:
        self.inner.prune(thread_ids, **kwargs)


class _CopyThread(SealedSaver):
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self.inner.acopy_thread(source_thread_id, target_thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.inner.copy_thread(source_thread_id, target_thread_id)


class _DeleteForRuns(SealedSaver):
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.inner.adelete_for_runs(run_ids)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.inner.delete_for_runs(run_ids)


#: Optional async method of ``BaseCheckpointSaver`` -> the mixin that passes it through.
_OPTIONAL: dict[str, type[SealedSaver]] = {
    "aprune": _Prune,
    "acopy_thread": _CopyThread,
    "adelete_for_runs": _DeleteForRuns,
}


def _optional_capabilities(saver_type: type) -> frozenset[str]:
    """The optional async methods ``saver_type`` overrides (as LangGraph detects them)."""
    return frozenset(
        name
        for name in _OPTIONAL
        if getattr(saver_type, name, None) is not getattr(BaseCheckpointSaver, name)
    )


@cache
def _sealed_class(methods: frozenset[str]) -> type[SealedSaver]:
    """The SealedSaver subclass offering exactly ``methods`` of the optional capabilities."""
    if not methods:
        return SealedSaver
    bases = tuple(_OPTIONAL[name] for name in _OPTIONAL if name in methods)
    label = "".join(base.__name__.removeprefix("_") for base in bases)
    return type(f"SealedSaver{label}", bases, {"__doc__": SealedSaver.__doc__})
