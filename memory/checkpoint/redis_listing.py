"""Listing and pruning on the Redis savers as ``BaseCheckpointSaver`` specifies them.

Contract: mixed in before LangGraph's Redis saver classes, :class:`ExactListing` (full saver)
and :class:`ShallowExactListing` (shallow saver) make ``alist`` honour every argument the way
the SQLite, Postgres and in-memory savers do, and ``aprune`` of no threads do nothing, while
reading exactly the documents upstream writes (no new fields, no new indexes). Upstream's
``alist`` reads ``checkpoint_ns=""`` as "every namespace", ignores ``before`` unless the
checkpoint id is a ULID (LangGraph's ids are UUIDv6), refuses (full) or silently ignores
(shallow) any metadata filter key other than ``source``, ``step``, ``thread_id`` and
``run_id``; its ``aprune`` raises ``ValueError`` for an empty thread list. The shallow saver's
``alist`` also returns checkpoints without their channel values and pending writes.

What the search index can answer is still asked of it: the namespace (upstream stores the
root namespace of the full saver under its own sentinel for ``""``), the four indexed
metadata keys, and then ``limit``. ``before`` (ids are index tags, which have no order in a
query) and other metadata keys (stored, not indexed) are checked on the listed checkpoints,
newest first, and ``limit`` counts only the checkpoints that pass; such a listing reads all
of the thread's checkpoints that the index matched.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, get_checkpoint_id
from langgraph.checkpoint.redis.util import EMPTY_STRING_SENTINEL

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

#: Metadata keys upstream's index answers; any other key is checked on the listed tuples.
INDEXED_FILTER_KEYS = frozenset({"source", "step", "thread_id", "run_id"})


class _Listing(BaseCheckpointSaver[Any]):
    """The shared part: split the arguments, ask upstream, check the rest, count the limit."""

    def _index_config(self, config: RunnableConfig | None) -> tuple[RunnableConfig | None, bool]:
        """The config to hand upstream, and whether the namespace must still be checked."""
        raise NotImplementedError

    async def _complete(self, item: CheckpointTuple) -> CheckpointTuple | None:
        """The tuple as ``aget_tuple`` returns it (None: gone since it was listed)."""
        return item

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        wanted = filter or {}
        indexed = {k: v for k, v in wanted.items() if k in INDEXED_FILTER_KEYS}
        stored = {k: v for k, v in wanted.items() if k not in INDEXED_FILTER_KEYS}
        before_id = get_checkpoint_id(before) if before else None
        index_config, check_ns = self._index_config(config)
        namespace = (config or {}).get("configurable", {}).get("checkpoint_ns")
        checked_here = bool(stored) or before_id is not None or check_ns
        listed: AsyncGenerator[CheckpointTuple, None] = super().alist(  # type: ignore[assignment]
            index_config, filter=indexed or None, limit=None if checked_here else limit
        )
        count = 0
        async with aclosing(listed) as items:
            async for found in items:
                item = await self._complete(found)
                if item is None:
                    continue
                ids = item.config["configurable"]
                if check_ns and ids.get("checkpoint_ns", "") != namespace:
                    continue
                if before_id is not None and ids["checkpoint_id"] >= before_id:
                    continue
                if not _matches(item.metadata, stored):
                    continue
                yield item
                count += 1
                if limit is not None and count >= limit:
                    return

    async def aprune(self, thread_ids: Sequence[str], **kwargs: Any) -> None:
        """Upstream's prune; pruning no threads does nothing (upstream raises ValueError)."""
        if thread_ids:
            await super().aprune(thread_ids, **kwargs)


class ExactListing(_Listing):
    """For ``AsyncRedisSaver``: the root namespace asked of the index by its stored form."""

    def _index_config(self, config: RunnableConfig | None) -> tuple[RunnableConfig | None, bool]:
        if config is None or config["configurable"].get("checkpoint_ns") != "":
            return config, False
        # Upstream stores "" as EMPTY_STRING_SENTINEL and filters on a namespace only when it
        # is truthy; the sentinel is truthy and its storage form is itself.
        configurable = {**config["configurable"], "checkpoint_ns": EMPTY_STRING_SENTINEL}
        return {**config, "configurable": configurable}, False


class ShallowExactListing(_Listing):
    """For ``AsyncShallowRedisSaver``: each listed checkpoint read in full.

    The shallow saver stores the namespace as given (``""`` included, which its index query
    cannot match), so the namespace is checked on the listed checkpoints; there is at most one
    per thread and namespace. Upstream lists only ids and a few metadata fields; each is read
    again through ``aget_tuple`` for its channel values, metadata and pending writes.
    """

    def _index_config(self, config: RunnableConfig | None) -> tuple[RunnableConfig | None, bool]:
        namespace = None if config is None else config["configurable"].get("checkpoint_ns")
        return config, namespace is not None

    async def _complete(self, item: CheckpointTuple) -> CheckpointTuple | None:
        # The thread and namespace's checkpoint, whichever is latest by now (naming the listed
        # id would be refused as history if a newer one replaced it meanwhile).
        ids = item.config["configurable"]
        latest: dict[str, Any] = {k: ids[k] for k in ("thread_id", "checkpoint_ns") if k in ids}
        return await self.aget_tuple({"configurable": latest})


def _matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(key in metadata and metadata[key] == value for key, value in wanted.items())
