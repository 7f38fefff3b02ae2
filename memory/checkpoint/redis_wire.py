"""What the Redis savers put on the wire: upstream's documents and keys, in fewer round trips.

Contract: every function here produces exactly the commands LangGraph's Redis savers would
send (same JSON documents, same keys, same TTLs), packed so that a save takes one round
trip: :func:`round_trip` sends a batch on one pooled connection, :func:`put_checkpoint`
stores a checkpoint, then its thread's pointer, in one batch, :func:`write_documents`
builds the pending-write documents. ``tests/integration/test_checkpoint_wire.py`` compares what they store with what
the upstream classes store.

The functions take the saver (``saver.client`` is the project's own redis client, passed to
upstream as ``redis_client``; ``saver.serde`` and ``saver.ttl_config`` are public) and reach
upstream's key builders and document encoders through the small functions in "upstream
internals" below -- the only place upstream privates are touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from langgraph.checkpoint.base import WRITES_IDX_MAP, Checkpoint
from langgraph.checkpoint.redis.util import to_storage_safe_id, to_storage_safe_str

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


# -- upstream internals -----------------------------------------------------------------------
# The one-trip savers must write the bytes LangGraph's Redis savers write, under their keys,
# so that upstream's readers, indexes, listing, deletion and TTL refresh work unchanged. The
# key builders and encoders that decide those bytes are private methods of the upstream
# classes (langgraph-checkpoint-redis has no public API for them); each is reached through
# exactly one function below. :func:`one_trip_supported` checks they all exist: when a release
# renames or removes one, the savers write through upstream's own ``aput`` / ``aput_writes``
# (the same data, more round trips) instead of failing, and the wire test, which asserts the
# one-trip path is active, fails and names the drift.

_FULL_PRIVATES = (
    "_make_redis_checkpoint_key_cached",
    "_make_redis_checkpoint_writes_key_cached",
    "_make_redis_checkpoint_latest_key",
    "_dump_checkpoint",
    "_dump_metadata",
    "_encode_blob",
    "_key_registry",
    "_apply_ttl_to_keys",
)
_SHALLOW_PRIVATES = (
    "_make_shallow_redis_checkpoint_key_cached",
    "_make_redis_checkpoint_writes_key_cached",
    "_dump_checkpoint",
    "_dump_metadata",
    "_encode_blob",
    "_extract_fallback_timestamp",
)


def one_trip_supported(saver: Any, *, shallow: bool) -> bool:
    """Whether every upstream internal the one-trip writes need is present on ``saver``."""
    names = _SHALLOW_PRIVATES if shallow else _FULL_PRIVATES
    return all(hasattr(saver, name) for name in names)


def checkpoint_key(saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    """Upstream's key of a checkpoint document (full saver)."""
    return str(saver._make_redis_checkpoint_key_cached(thread_id, checkpoint_ns, checkpoint_id))


def shallow_checkpoint_key(saver: Any, thread_id: str, checkpoint_ns: str) -> str:
    """Upstream's key of a thread's only checkpoint document (shallow saver)."""
    return str(saver._make_shallow_redis_checkpoint_key_cached(thread_id, checkpoint_ns))


def writes_key(
    saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str, idx: int
) -> str:
    """Upstream's key of one pending-write document."""
    return str(
        saver._make_redis_checkpoint_writes_key_cached(
            thread_id, checkpoint_ns, checkpoint_id, task_id, idx
        )
    )


def latest_key(saver: Any, thread_id: str, checkpoint_ns: str) -> str:
    """Upstream's latest-checkpoint pointer key of a thread and namespace."""
    return str(saver._make_redis_checkpoint_latest_key(thread_id, checkpoint_ns))


def write_keys_zset(saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Any:
    """Upstream's key-registry sorted set of a checkpoint's writes, or None without a registry."""
    registry = saver._key_registry
    if not registry:
        return None
    return registry.make_write_keys_zset_key(thread_id, checkpoint_ns, checkpoint_id)


def dump_checkpoint(saver: Any, checkpoint: Checkpoint) -> Any:
    """Upstream's checkpoint object inside the document."""
    return saver._dump_checkpoint(checkpoint)


def dump_metadata(saver: Any, metadata: Mapping[str, Any]) -> Any:
    """Upstream's metadata object inside the document."""
    return saver._dump_metadata(metadata)


def encode_blob(saver: Any, blob: bytes) -> Any:
    """Upstream's encoding of a serialised write value inside its document."""
    return saver._encode_blob(blob)


async def apply_ttl(saver: Any, key: str) -> None:
    """Upstream's TTL on ``key`` (and its related keys)."""
    await saver._apply_ttl_to_keys(key)


def fallback_timestamp(saver: Any, checkpoint: Checkpoint) -> Any:
    """Upstream's ``checkpoint_ts`` for a shallow checkpoint whose id is not a ULID."""
    return saver._extract_fallback_timestamp(checkpoint)


# -- documents --------------------------------------------------------------------------------


def ttl_seconds(saver: Any) -> int | None:
    """The saver's default TTL in seconds, or None without one."""
    ttl = saver.ttl_config
    return int(ttl["default_ttl"] * 60) if ttl and "default_ttl" in ttl else None


def checkpoint_ts(checkpoint_id: str, fallback: Callable[[], Any]) -> Any:
    """Upstream's ``checkpoint_ts``: the id's ULID timestamp, else ``fallback()``."""
    from ulid import ULID

    try:
        return ULID.from_str(checkpoint_id).timestamp
    except Exception:  # LangGraph's ids are UUIDv6, not ULIDs: upstream falls back as well
        return fallback()


def checkpoint_json(saver: Any, checkpoint: Checkpoint) -> Any:
    """Upstream's ``_dump_checkpoint(checkpoint)``, as JSON to embed in the document.

    Upstream serialises the checkpoint to JSON, parses it back into a dict, adds ``type`` and
    ``pending_sends`` (and makes channel versions strings), and the dict is then encoded once
    more inside the document. When the serializer's JSON already has that shape (versions are
    strings, as this saver's ``get_next_version`` makes them), the same object is spliced
    from the serialised bytes instead; otherwise upstream's path runs.
    """
    versions = checkpoint.get("channel_versions", {})
    if (
        "type" not in checkpoint
        and "pending_sends" not in checkpoint
        and all(type(v) is str for v in versions.values())
    ):
        type_, data = saver.serde.dumps_typed(checkpoint)
        if type_ == "json" and data.startswith(b"{") and data != b"{}":
            return orjson.Fragment(b'{"type":"json",' + data[1:-1] + b',"pending_sends":[]}')
    return dump_checkpoint(saver, checkpoint.copy())


def write_documents(
    saver: Any,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    *,
    storage_safe_ids: bool,
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Upstream's write documents, one ``JSON.SET`` each, and their keys, in order.

    The full saver stores the ids through upstream's storage-safe escaping; the shallow one
    stores them as given (``storage_safe_ids``), as their upstream classes do.
    """
    thread_id = config["configurable"]["thread_id"]
    checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
    checkpoint_id = config["configurable"]["checkpoint_id"]
    ids = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
    if storage_safe_ids:
        ids = {
            "thread_id": to_storage_safe_id(thread_id),
            "checkpoint_ns": to_storage_safe_str(checkpoint_ns),
            "checkpoint_id": to_storage_safe_id(checkpoint_id),
        }
    commands: list[tuple[Any, ...]] = []
    keys: list[str] = []
    for idx, (channel, value) in enumerate(writes):
        type_, blob = saver.serde.dumps_typed(value)
        doc = {
            **ids,
            "task_id": task_id,
            "task_path": task_path,
            "idx": WRITES_IDX_MAP.get(channel, idx),
            "channel": channel,
            "type": type_,
            "blob": encode_blob(saver, blob),
        }
        key = writes_key(saver, thread_id, checkpoint_ns, checkpoint_id, task_id, doc["idx"])
        commands.append(("JSON.SET", key, "$", orjson.dumps(doc)))
        keys.append(key)
    return commands, keys


def zadd_in_order(zset_key: str, keys: Sequence[str]) -> tuple[Any, ...]:
    """The key registry's entry: each write key ranked by its position (upstream's ZADD)."""
    ranks = {key: idx for idx, key in enumerate(keys)}
    return ("ZADD", zset_key, *[x for kv in ranks.items() for x in kv[::-1]])


# -- round trips ------------------------------------------------------------------------------


async def round_trip(
    saver: Any, commands: Sequence[tuple[Any, ...]], *, transaction: bool = False
) -> list[Any]:
    """Send ``commands`` on one pooled connection in one write and read every reply.

    A checkpoint save is a handful of commands; redis-py's ``Pipeline`` object spends about
    as long in Python building its command stack and running response callbacks as the
    loopback round trip itself takes. Here the commands are packed and sent with the
    connection's own methods. Error replies come back as exception values, in order, for the
    caller to judge. With ``transaction`` the commands run in MULTI/EXEC (nothing else
    interleaves, and a command refused at queue time aborts them all, raised here). A broken
    connection is dropped, as redis-py's pipeline does, and the error propagates.
    """
    import redis.exceptions

    sent: Sequence[tuple[Any, ...]] = (
        [("MULTI",), *commands, ("EXEC",)] if transaction else commands
    )
    pool = saver.client.connection_pool
    conn = await pool.get_connection()
    try:
        await conn.send_packed_command(conn.pack_commands(sent))
        replies: list[Any] = []
        for _ in sent:
            try:
                replies.append(await conn.read_response())
            except redis.exceptions.ResponseError as e:
                replies.append(e)
    except BaseException:
        await conn.disconnect()
        raise
    finally:
        await pool.release(conn)
    if not transaction:
        return replies
    queued, executed = replies[1:-1], replies[-1]
    if isinstance(executed, Exception):  # EXECABORT: say which command was refused
        raise next((e for e in queued if isinstance(e, Exception)), executed)
    return list(executed)


async def writes_pipeline(
    saver: Any, commands: list[tuple[Any, ...]], expires: list[str]
) -> list[Any]:
    """One round trip: the write commands, then best-effort EXPIREs (failures ignored).

    Returns the write commands' results, errors included, for the caller to judge as
    upstream does.
    """
    ttl = ttl_seconds(saver)
    if ttl is not None:
        commands = [*commands, *(("EXPIRE", key, ttl) for key in expires)]
    results = await round_trip(saver, commands)
    return results[: len(results) - (len(expires) if ttl is not None else 0)]


async def put_checkpoint(
    saver: Any, key: str, latest: str, document: bytes, ttl: int | None
) -> None:
    """Store a checkpoint document, then point the thread's latest key at it: one trip.

    One pipelined batch of plain commands -- JSON.SET of the document, SET of the pointer
    (with GET, to learn the one it replaces), the TTLs -- where upstream takes two round trips
    and an earlier version of this function ran a Lua script (its interpreter cost about 15 us
    of server time per save on top of the JSON.SET it made). What upstream's readers rely on
    is the order: a pointer never names a document not yet stored (``aget_tuple`` reads a
    dangling pointer as an empty thread). One connection's commands run in the order sent, so
    the pointer moves only after the document is stored, as with upstream's two trips; upstream
    is not atomic either (another client's commands may run between them), so a MULTI/EXEC
    would add only cost (about 20 us a save, measured). A failing JSON.SET does not stop the
    batch, though: if it is refused (say the key holds another type), the pointer has already
    moved, so it is set back to the checkpoint it named before (a reader in between finds no
    latest checkpoint) and the refusal is raised.
    """
    commands: list[tuple[Any, ...]] = [
        ("JSON.SET", key, "$", document),
        ("SET", latest, key, "GET"),
    ]
    if ttl is not None:
        commands += [("EXPIRE", key, ttl), ("EXPIRE", latest, ttl)]
    stored, previous, *_ = await round_trip(saver, commands)
    if isinstance(stored, Exception):
        if isinstance(previous, Exception):  # the pointer was not set either
            raise stored
        undo = ("DEL", latest) if previous is None else ("SET", latest, previous, "KEEPTTL")
        raise_first_error(await round_trip(saver, [undo]))
        raise stored
    raise_first_error([previous])


def raise_first_error(results: Sequence[Any]) -> None:
    """Raise the first error reply of a batch, if any."""
    for result in results:
        if isinstance(result, Exception):
            raise result
