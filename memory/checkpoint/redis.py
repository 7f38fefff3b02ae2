"""Redis checkpoints (Redis Stack: RedisJSON + RediSearch), full history or shallow.

Contract: :func:`open_redis` yields a :class:`RedisSaver` (every checkpoint, time travel) or a
:class:`ShallowRedisSaver` (only each thread's latest checkpoint; asking for an older one is
:class:`CheckpointHistoryUnavailableError`) over a client the project owns and closes on exit.
An unreachable server is :class:`CheckpointerUnavailableError` (also mid-run, through
:class:`~memory.checkpoint.guard.Guarded`); a Redis without its modules is
:class:`CheckpointerModulesMissingError`. The search indexes are the schema:
:func:`setup_redis` creates the missing ones and says which.

The savers are LangGraph's, with ``aput`` / ``aput_writes`` replaced by the one-trip versions
of :class:`RedisOneTrip` / :class:`ShallowRedisOneTrip` (the same documents under the same
keys, see :mod:`memory.checkpoint.redis_wire`) and ``alist`` / ``aprune`` made exact (every
argument honoured, see :mod:`memory.checkpoint.redis_listing`); reading, indexes, deletion and
TTL refresh are upstream's. ``prefix`` and ``ttl`` come from the URL.

Imported only when a ``redis://`` URL is opened (the ``redis`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import orjson
import redis.exceptions
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.redis.ashallow import AsyncShallowRedisSaver
from langgraph.checkpoint.redis.util import to_storage_safe_id, to_storage_safe_str

import memory.checkpoint.redis_wire as wire
from memory.checkpoint.fast_writes import FastWrites
from memory.checkpoint.guard import Guarded, reason, unavailable_types
from memory.checkpoint.redis_listing import ExactListing, ShallowExactListing
from memory.checkpoint.url import CheckpointerURL, parse_duration_minutes
from memory.errors import (
    CheckpointerModulesMissingError,
    CheckpointerUnavailableError,
    CheckpointHistoryUnavailableError,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.serde.base import SerializerProtocol

#: MODULE LIST names of the modules the savers need, and how messages name them.
_REQUIRED_MODULES = {"ReJSON": "RedisJSON (ReJSON)", "search": "RediSearch (search)"}


class _OneTrip(FastWrites):
    """What both one-trip savers share: writes take the one-trip path while :meth:`one_trip`
    holds; the write documents are upstream's (``redis_wire.write_documents``), sent with what
    goes with them by :meth:`_send_writes`; no writes is nothing to do, as upstream."""

    #: Whether write documents carry storage-safe ids (the full saver's) or raw ones (shallow).
    storage_safe_ids: bool = True

    def one_trip(self) -> bool:
        """Whether writes take the one-trip path (else upstream's)."""
        raise NotImplementedError

    def fast_writes(self) -> bool:
        return self.one_trip()

    async def _fast_put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task: tuple[str, str]
    ) -> None:
        if not writes:
            return
        commands, keys = wire.write_documents(
            self, config, writes, *task, storage_safe_ids=self.storage_safe_ids
        )
        await self._send_writes(config, commands, keys)

    async def _send_writes(
        self, config: RunnableConfig, commands: list[tuple[Any, ...]], keys: list[str]
    ) -> None:
        """Send the commands writing the documents ``keys`` and what goes with them."""
        raise NotImplementedError


class RedisOneTrip(_OneTrip):
    """``AsyncRedisSaver`` writes in one round trip each, wire-compatible with upstream.

    Upstream's ``aput`` stores the checkpoint through RedisVL (a pipeline of one JSON.SET),
    then sets the thread's latest-checkpoint pointer in a second round trip (and EXPIREs in
    more, with a TTL); redis-py re-encodes every document with the standard ``json`` module
    after the serializer produced it with orjson, and builds a fresh JSON command helper per
    command. Here the same documents under the same keys go out as orjson bytes (the
    checkpoint spliced from the serializer's output rather than parsed and encoded again):
    ``aput`` as one pipelined batch of plain commands, no script (checkpoint, then pointer,
    then TTLs: no reader sees the pointer before the document, acknowledged before it
    returns; see :func:`~memory.checkpoint.redis_wire.put_checkpoint`), ``aput_writes`` in one
    pipelined write (write documents, the checkpoint's ``has_writes`` flag, the key registry,
    TTLs). Upstream's readers, indexes, ``alist``, ``adelete_thread`` and TTL refresh work
    unchanged. Cluster mode, or an upstream release without the internals
    :func:`~memory.checkpoint.redis_wire.one_trip_supported` checks, keeps upstream's path.
    """

    def one_trip(self) -> bool:
        saver: Any = self
        return not saver.cluster_mode and wire.one_trip_supported(saver, shallow=False)

    def _checkpoint_doc(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        *,
        interrupted: bool = False,
    ) -> tuple[dict[str, Any], str, RunnableConfig]:
        """The document, key and returned config of upstream's ``aput`` (or its variant
        written when a save is cancelled)."""
        saver: Any = self
        configurable = dict(config["configurable"])
        run_id = configurable.pop("run_id", metadata.get("run_id"))
        thread_id = configurable.pop("thread_id")
        checkpoint_ns = configurable.pop("checkpoint_ns")
        config_checkpoint_id = configurable.pop("checkpoint_id", None)
        thread_ts = configurable.pop("thread_ts", "")
        checkpoint_id = config_checkpoint_id or thread_ts or checkpoint.get("id", "")
        parent_checkpoint_id = None
        if (
            checkpoint.get("id")
            and config_checkpoint_id
            and checkpoint.get("id") != config_checkpoint_id
        ):
            parent_checkpoint_id = config_checkpoint_id
            checkpoint_id = checkpoint["id"]
        doc: dict[str, Any] = {
            "thread_id": to_storage_safe_id(thread_id),
            "run_id": to_storage_safe_id(run_id) if run_id else "",
            "checkpoint_ns": to_storage_safe_str(checkpoint_ns),
            "checkpoint_id": to_storage_safe_id(checkpoint_id),
        }
        if interrupted:
            parent = checkpoint.get("parent_checkpoint_id")
            doc["parent_checkpoint_id"] = to_storage_safe_id(str(parent)) if parent else ""
            doc["checkpoint"] = wire.dump_checkpoint(saver, checkpoint.copy())
            doc["metadata"] = wire.dump_metadata(
                saver, {**metadata, "interrupted": True, "stream_mode": "values"}
            )
            doc["has_writes"] = False
        else:
            doc["parent_checkpoint_id"] = (
                to_storage_safe_id(parent_checkpoint_id) if parent_checkpoint_id else ""
            )
            doc["checkpoint_ts"] = (
                wire.checkpoint_ts(checkpoint_id, lambda: time.time() * 1000)
                if checkpoint_id
                else None
            )
            doc["checkpoint"] = wire.checkpoint_json(saver, checkpoint)
            doc["metadata"] = wire.dump_metadata(saver, metadata)
            doc["has_writes"] = False
            if "source" in metadata and "step" in metadata:
                doc["source"] = metadata["source"]
                doc["step"] = metadata["step"]
        key = wire.checkpoint_key(saver, thread_id, checkpoint_ns, checkpoint_id)
        next_config: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
        }
        return doc, key, next_config

    async def _fast_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        saver: Any = self
        doc, key, next_config = self._checkpoint_doc(config, checkpoint, metadata)
        configurable = next_config["configurable"]
        latest = wire.latest_key(saver, configurable["thread_id"], configurable["checkpoint_ns"])
        try:
            await wire.put_checkpoint(
                saver, key, latest, orjson.dumps(doc), wire.ttl_seconds(saver)
            )
        except asyncio.CancelledError:
            # As upstream: a cancelled save still stores the checkpoint, marked interrupted.
            with contextlib.suppress(Exception):
                doc, key, _ = self._checkpoint_doc(config, checkpoint, metadata, interrupted=True)
                await saver.client.execute_command("JSON.SET", key, "$", orjson.dumps(doc))
                await wire.apply_ttl(saver, key)
            raise
        return next_config

    async def _send_writes(
        self, config: RunnableConfig, commands: list[tuple[Any, ...]], keys: list[str]
    ) -> None:
        saver: Any = self
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = config["configurable"]["checkpoint_id"]
        checkpoint_key = wire.checkpoint_key(saver, thread_id, checkpoint_ns, checkpoint_id)
        commands.append(("JSON.MERGE", checkpoint_key, "$", b'{"has_writes":true}'))
        expires = list(keys)
        zset_key = wire.write_keys_zset(saver, thread_id, checkpoint_ns, checkpoint_id)
        if zset_key:
            commands.append(wire.zadd_in_order(zset_key, keys))
            expires.append(zset_key)
        merge_failed = False
        for result in await wire.writes_pipeline(saver, commands, expires):
            if isinstance(result, Exception):
                if "JSON.MERGE" in str(result) or "merge" in str(result).lower():
                    merge_failed = True
                else:
                    raise result
        if merge_failed:
            # Upstream's fallback for a RedisJSON without JSON.MERGE.
            with contextlib.suppress(Exception):
                data = await saver.client.json().get(checkpoint_key)
                if isinstance(data, dict) and not data.get("has_writes"):
                    data["has_writes"] = True
                    await saver.client.json().set(checkpoint_key, "$", data)


class ShallowRedisOneTrip(_OneTrip):
    """``AsyncShallowRedisSaver`` writes in one round trip each, wire-compatible.

    As :class:`RedisOneTrip`: upstream's documents and keys, encoded once with orjson; the
    checkpoint in one JSON.SET (with a TTL, JSON.SET and EXPIRE in one MULTI/EXEC), the
    writes with their registry entry and TTLs in one pipeline.
    """

    storage_safe_ids = False

    def one_trip(self) -> bool:
        return wire.one_trip_supported(self, shallow=True)

    def _checkpoint_doc(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[dict[str, Any], str, RunnableConfig]:
        """The document, key and returned config of upstream's ``aput``."""
        saver: Any = self
        configurable = dict(config["configurable"])
        run_id = configurable.pop("run_id", metadata.get("run_id"))
        thread_id = configurable.pop("thread_id")
        checkpoint_ns = configurable.pop("checkpoint_ns")
        ts = None
        if checkpoint["id"]:
            ts = wire.checkpoint_ts(
                checkpoint["id"], lambda: wire.fallback_timestamp(saver, checkpoint)
            )
        copy = checkpoint.copy()
        copy["channel_values"] = checkpoint.get("channel_values", {})
        doc = {
            "thread_id": thread_id,
            "run_id": to_storage_safe_id(run_id) if run_id else "",
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "checkpoint_ts": ts,
            "checkpoint": wire.checkpoint_json(saver, copy),
            "metadata": wire.dump_metadata(saver, metadata),
        }
        if "source" in metadata and "step" in metadata:
            doc["source"] = metadata["source"]
            doc["step"] = metadata["step"]
        key = wire.shallow_checkpoint_key(saver, thread_id, checkpoint_ns)
        next_config: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }
        return doc, key, next_config

    async def _fast_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        saver: Any = self
        doc, key, next_config = self._checkpoint_doc(config, checkpoint, metadata)
        ttl = wire.ttl_seconds(saver)
        if ttl is None:
            await saver.client.execute_command("JSON.SET", key, "$", orjson.dumps(doc))
        else:
            commands = [("JSON.SET", key, "$", orjson.dumps(doc)), ("EXPIRE", key, ttl)]
            wire.raise_first_error(await wire.round_trip(saver, commands, transaction=True))
        return next_config

    async def _send_writes(
        self, config: RunnableConfig, commands: list[tuple[Any, ...]], keys: list[str]
    ) -> None:
        saver: Any = self
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        zset_key = f"write_keys_zset:{thread_id}:{to_storage_safe_str(checkpoint_ns)}:shallow"
        commands.append(wire.zadd_in_order(zset_key, keys))
        for result in await wire.writes_pipeline(saver, commands, [*keys, zset_key]):
            if isinstance(result, Exception):
                raise result


# Upstream's aput takes an extra stream_mode argument that LangGraph never passes.
class RedisSaver(Guarded, ExactListing, RedisOneTrip, AsyncRedisSaver):  # type: ignore[misc]
    """LangGraph's async Redis saver, writing in one round trip per call; connection
    failures name the URL. ``client`` is the project's redis client (closed by the factory)."""

    backend = "redis"
    shallow = False

    def __init__(self, client: Any, *, display_url: str, **kwargs: Any) -> None:
        super().__init__(redis_client=client, **kwargs)
        self.client = client
        self.display_url = display_url


class ShallowRedisSaver(Guarded, ShallowExactListing, ShallowRedisOneTrip, AsyncShallowRedisSaver):
    """The latest checkpoint per thread only; asking for an older one is an error.

    Upstream answers any checkpoint id with the latest checkpoint, which would make a
    "fork from an earlier checkpoint" silently fork from the latest one instead.
    """

    backend = "redis+shallow"
    shallow = True

    def __init__(self, client: Any, *, display_url: str, **kwargs: Any) -> None:
        super().__init__(redis_client=client, **kwargs)
        self.client = client
        self.display_url = display_url

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await super().aget_tuple(config)
        wanted = config["configurable"].get("checkpoint_id")
        if wanted and found is not None and found.config["configurable"]["checkpoint_id"] != wanted:
            raise CheckpointHistoryUnavailableError(self.display_url, str(wanted))
        return found

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)
        # Upstream rebuilds the checkpoint key with the default prefix, so under a custom
        # prefix the checkpoint survived: delete whatever the indexes still hold.
        from redisvl.query import FilterQuery
        from redisvl.query.filter import Tag

        for index in (self.checkpoints_index, self.checkpoint_writes_index):
            query = FilterQuery(
                filter_expression=Tag("thread_id") == to_storage_safe_id(thread_id),
                return_fields=["thread_id"],
                num_results=10000,
            )
            with self._guard():
                found = await index.search(query)
                keys = [doc.id for doc in found.docs]
                if keys:
                    await self.client.delete(*keys)


def _client(spec: CheckpointerURL) -> Any:
    """A redis client for the URL, built as upstream builds its own (redisvl's factory)."""
    from redisvl.redis.connection import RedisConnectionFactory

    return RedisConnectionFactory.get_async_redis_connection(
        spec.target, socket_connect_timeout=5, socket_timeout=30
    )


@asynccontextmanager
async def open_redis(
    spec: CheckpointerURL, serde: SerializerProtocol, *, setup: bool
) -> AsyncIterator[RedisSaver | ShallowRedisSaver]:
    """The URL's saver (full or shallow) over a client that is closed on exit."""
    kwargs: dict[str, Any] = {}
    prefix = spec.options.get("prefix")
    if prefix:
        kwargs["checkpoint_prefix"] = f"{prefix}:checkpoint"
        kwargs["checkpoint_write_prefix"] = f"{prefix}:checkpoint_write"
    if spec.options.get("ttl"):
        minutes = parse_duration_minutes(spec.options["ttl"], what="ttl in the Redis URL")
        kwargs["ttl"] = {"default_ttl": minutes, "refresh_on_read": True}
    client = _client(spec)
    try:
        cls = ShallowRedisSaver if spec.backend == "redis+shallow" else RedisSaver
        saver = cls(client, display_url=spec.display, **kwargs)
        saver.serde = serde
        try:
            await client.ping()
        except unavailable_types() as e:
            raise CheckpointerUnavailableError(spec.display, reason(e)) from e
        if setup:
            await _setup(spec, saver)
        yield saver
    finally:
        await client.aclose()


async def setup_redis(spec: CheckpointerURL, serde: SerializerProtocol) -> str:
    """Create the missing search indexes (idempotent); say which were created."""
    async with open_redis(spec, serde, setup=False) as saver:
        await _require_modules(spec, saver.client)
        existing = await _indexes(saver.client)
        await _setup(spec, saver)
        wanted = {saver.checkpoints_index.name, saver.checkpoint_writes_index.name}
        created = sorted(wanted - existing)
    if created:
        return f"{spec.display}: created search indexes {', '.join(created)}"
    return f"{spec.display}: search indexes already present"


async def _modules(client: Any) -> set[str] | None:
    """Names of the loaded modules, or None when MODULE LIST is not permitted."""
    try:
        listed = await client.module_list()
    except redis.exceptions.ResponseError:
        return None
    names = set()
    for item in listed:
        name = item.get(b"name", item.get("name", b""))
        names.add(name.decode() if isinstance(name, bytes) else str(name))
    return names


async def _require_modules(spec: CheckpointerURL, client: Any) -> None:
    modules = await _modules(client)
    if modules is not None:
        missing = [label for name, label in _REQUIRED_MODULES.items() if name not in modules]
        if missing:
            raise CheckpointerModulesMissingError(spec.display, missing)


async def _setup(spec: CheckpointerURL, saver: RedisSaver | ShallowRedisSaver) -> None:
    await _require_modules(spec, saver.client)
    for attempt in range(_SETUP_ATTEMPTS):
        try:
            await saver.asetup()
            return
        except Exception as e:
            message = str(e).lower()
            if isinstance(e, redis.exceptions.ResponseError) and "unknown command" in message:
                raise CheckpointerModulesMissingError(
                    spec.display, list(_REQUIRED_MODULES.values())
                ) from e
            # Two processes setting up a new prefix at once: the other one created an index
            # between redisvl's check and its create. Setting up again skips what exists.
            if "index already exists" not in message or attempt + 1 == _SETUP_ATTEMPTS:
                raise


#: How often setup is tried when another process creates the same indexes at the same time.
_SETUP_ATTEMPTS = 3


async def _indexes(client: Any) -> set[str]:
    names = await client.execute_command("FT._LIST")
    return {n.decode() if isinstance(n, bytes) else str(n) for n in names}
