"""Safe checkpoint serialisation: an explicit type allowlist, and optional encryption.

A checkpoint is data another process wrote, possibly long ago; loading one must never import
and call arbitrary code. LangGraph's ``JsonPlusSerializer`` revives typed values by importing
``module.name`` and calling it. Here it runs in *strict* mode: only LangGraph's built-in safe
types (datetimes, UUIDs, messages, ``Send``/``Interrupt``/``Command``...) and the types of the
modules the application names (``modules``: memory knows no application module; the app
passes its state module through ``open_checkpointer(..., allowed_modules=...)``) are rebuilt;
anything else comes back as its plain serialised data and its constructor never runs.

The Redis saver stores checkpoints as JSON with its own serializer, whose reviver rebuilds any
importable dataclass; :class:`StrictRedisSerializer` puts the same allowlist in front of it.
Its encoder lets orjson walk the plain dicts, lists and scalars in C (upstream walks every
node in Python first, checking it against eight special types) and hands each node orjson
cannot encode to upstream's own code, so what it writes is byte-for-byte what upstream writes;
loading is not affected.

Encryption (``ANALYST_CHECKPOINT_KEY``): :class:`ValueCipher` seals every channel value and
pending write with AES (EAX mode: confidentiality and integrity, via LangGraph's
``EncryptedSerializer``) before a saver sees it, so the stored bytes of every backend hold
ciphertext only. Graph structure (checkpoint ids, channel versions, step metadata) stays
readable for listing and time travel.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from memory.errors import CheckpointDecryptionError, ConfigurationError, StorageCorruptError
from memory.serde_safe_types import SAFE_MSGPACK_TYPES

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

#: Prefix of a sealed (encrypted) value as stored by a saver.
SEALED_PREFIX = "analyst-sealed:v1:"

#: Exact types the Redis JSON encoder passes through unchanged.
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})

#: Exact types whose encoding orjson walks itself (see ``StrictRedisSerializer.dumps_typed``).
_JSON_FAST = frozenset({dict, list, tuple, str, int, float, bool})


def _registrable(obj: Any) -> bool:
    if not isinstance(obj, type):
        return False
    return (
        dataclasses.is_dataclass(obj)
        or issubclass(obj, enum.Enum)
        or (issubclass(obj, tuple) and hasattr(obj, "_fields"))
    )


def project_types(modules: Iterable[str]) -> frozenset[tuple[str, str]]:
    """The (module, name) pairs of the dataclasses, enums and named tuples defined in
    ``modules`` (the application's own types that checkpoints may hold)."""
    import importlib

    found: set[tuple[str, str]] = set()
    for name in modules:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if _registrable(value) and value.__module__ == name:
                found.add((name, value.__qualname__))
    return frozenset(found)


class DamagedValueError(StorageCorruptError):
    """A stored checkpoint value whose bytes do not decode (a damaged blob: ormsgpack's
    ``invalid UTF-8 string``, truncated data). A saver that knows its file names it and the
    thread, with ``reason``; on a server backend the message names the value's encoding."""

    def __init__(self, type_: str, detail: str) -> None:
        self.reason = detail.rstrip(".")
        super().__init__(
            "checkpoint value", f"(stored as {type_})", f"its bytes do not decode: {self.reason}"
        )


#: ``(module, name)`` of LangGraph's interrupt as its msgpack envelope names it.
_INTERRUPT_TYPE = ("langgraph.types", "Interrupt")


@dataclass(frozen=True)
class StoredInterrupt:
    """An interrupt read back by a process that has not imported ``langgraph.types``: the
    fields of LangGraph's ``Interrupt`` (``value``, ``id``; any newer field in ``extra``).

    Importing ``langgraph.types`` costs a process about half a second (LangChain's runnables,
    tracers and LangSmith's run trees) and a command that only reads a thread (``threads``,
    ``show``, ``history``) needs just the value and the id. A process that runs the graph
    has imported ``langgraph.types`` before it reads a checkpoint, so Pregel always gets
    LangGraph's own type (see :func:`_reading_hook`).
    """

    value: Any
    id: str
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _reading_hook(upstream: Callable[[int, bytes], Any]) -> Callable[[int, bytes], Any]:
    """``upstream``'s msgpack ext hook, except that an interrupt decodes as a
    :class:`StoredInterrupt` while ``langgraph.types`` is not imported in this process."""
    import sys

    import ormsgpack
    from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_KW_ARGS

    def hook(code: int, data: bytes) -> Any:
        if code == EXT_CONSTRUCTOR_KW_ARGS and "langgraph.types" not in sys.modules:
            envelope = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
            if tuple(envelope[:2]) == _INTERRUPT_TYPE and isinstance(envelope[2], dict):
                fields = dict(envelope[2])
                value, id_ = fields.pop("value", None), fields.pop("id", "")
                return StoredInterrupt(value, str(id_), fields)
        return upstream(code, data)

    return hook


@cache
def _strict_class() -> type[JsonPlusSerializer]:
    """The strict serializer's class, defined on first use: LangGraph's serializers (and the
    LangChain loader they import) load only in a process that reads or writes checkpoints."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    class _StrictSerializer(JsonPlusSerializer):
        """:class:`JsonPlusSerializer` whose decoding failures are :class:`DamagedValueError`
        (one clear error for every user whose thread holds the value), never a bare
        ``ValueError`` traceback; interrupts read without ``langgraph.types`` imported are
        :class:`StoredInterrupt`."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._unpack_ext_hook = _reading_hook(self._unpack_ext_hook)

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            try:
                return super().loads_typed(data)
            except ValueError as e:  # ormsgpack.MsgpackDecodeError, json and UTF-8 decoding
                raise DamagedValueError(data[0], str(e)) from e

    return _StrictSerializer


def strict_serializer(
    modules: Iterable[str] = (), extra: Iterable[tuple[str, str]] = ()
) -> JsonPlusSerializer:
    """LangGraph's serializer with deserialisation limited to LangGraph's safe types, the
    types defined in ``modules`` and the (module, name) pairs in ``extra``; a value whose
    bytes do not decode is a :class:`DamagedValueError`."""
    allowed = project_types(modules) | frozenset(extra)
    return _strict_class()(
        allowed_msgpack_modules=tuple(sorted(allowed)),
        # Legacy JSON constructor envelopes: LangGraph's safe set only.
        allowed_json_modules=None,
    )


def strict_redis_serializer(
    modules: Iterable[str] = (), extra: Iterable[tuple[str, str]] = ()
) -> SerializerProtocol:
    """The Redis saver's JSON serializer, with the same allowlist as :func:`strict_serializer`."""
    allowed = project_types(modules) | frozenset(extra)
    return _strict_redis_class()(allowed)


@cache
def _strict_redis_class() -> type[Any]:
    """The strict Redis serializer's class, defined on first use (as :func:`_strict_class`:
    the Redis saver's serializer loads only in a process that opens a Redis saver)."""
    from langgraph.checkpoint.redis.jsonplus_redis import JsonPlusRedisSerializer

    class StrictRedisSerializer(JsonPlusRedisSerializer):
        """Refuses to rebuild constructor envelopes outside the allowlist.

        The upstream reviver imports and calls any dataclass named in a stored envelope;
        here a disallowed envelope stays a plain dict and nothing is imported or called.
        """

        def __init__(self, allowed: frozenset[tuple[str, str]]) -> None:
            super().__init__(
                allowed_msgpack_modules=tuple(sorted(allowed)), allowed_json_modules=None
            )
            self._allowed = allowed

        def _preprocess_redis_json(
            self, obj: Any, *, encode_bytes: Callable[[bytes], Any] | None = None
        ) -> Any:
            upstream = super()._preprocess_redis_json
            return _walk_plain(obj, lambda value: upstream(value, encode_bytes=encode_bytes))

        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            # orjson walks the plain part of the value in C; only the nodes it cannot encode
            # itself (dataclasses, sets, Send, bytes, LangChain objects...) come back through
            # ``_encode_node``, which encodes each such subtree exactly as upstream would.
            # Anything orjson refuses (bytes, 64-bit overflow, non-str keys) takes upstream's
            # whole path, msgpack fallback included, so the outcome is upstream's.
            if type(obj) in _JSON_FAST:
                try:
                    return "json", orjson.dumps(
                        obj, default=self._encode_node, option=orjson.OPT_PASSTHROUGH_DATACLASS
                    )
                except TypeError:
                    pass
            return super().dumps_typed(obj)

        def _encode_node(self, value: Any) -> Any:
            """One node orjson cannot encode, as upstream's preprocess + encoder would write it."""
            processed = super()._preprocess_redis_json(value)
            if processed is value:
                processed = self._default_handler(value)  # raises TypeError for bytes, as upstream
            return orjson.Fragment(orjson.dumps(processed, default=self._default_handler))

        def _revive_if_needed(self, obj: Any) -> Any:
            if isinstance(obj, list):
                return [self._revive_if_needed(item) for item in obj]
            if isinstance(obj, dict) and _refused_envelope(obj, self._allowed):
                return {k: self._revive_if_needed(v) for k, v in obj.items()}
            return super()._revive_if_needed(obj)

    return StrictRedisSerializer


def _walk_plain(value: Any, special: Callable[[Any], Any]) -> Any:
    """``value`` as upstream's ``_preprocess_redis_json`` gives it, the fast way.

    Upstream tests every node against eight types (and re-imports three of them) before
    reaching the common case; a checkpoint is mostly plain dicts, lists and scalars. Exactly
    those builtin types are walked here with the result upstream would give (none of them is a
    bytes/Interrupt/Send/set/dataclass value); anything else, subclasses included, goes to
    ``special`` (upstream) unchanged, so the encoded bytes are identical. Loading is not
    touched: the allowlist still applies."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if kind is dict:
        return {k: _walk_plain(v, special) for k, v in value.items()}
    if kind is list:
        return [_walk_plain(v, special) for v in value]
    if kind is tuple:
        return tuple([_walk_plain(v, special) for v in value])
    return special(value)


def _refused_envelope(obj: Mapping[str, Any], allowed: frozenset[tuple[str, str]]) -> bool:
    """Whether ``obj`` is a constructor envelope naming a type outside the allowlist (it then
    stays a plain dict: nothing is imported or called)."""
    if obj.get("lc") not in (1, 2) or obj.get("type") != "constructor":
        return False
    ident = obj.get("id")
    if not isinstance(ident, list) or len(ident) < 2:
        return False
    key = (".".join(str(p) for p in ident[:-1]), str(ident[-1]))
    # LangChain's own serialised objects (messages) go to LangChain's loader, which only
    # revives its Serializable classes from its own namespaces.
    langchain = obj.get("lc") == 1 and str(ident[0]) in _langchain_namespaces()
    return not (langchain or _is_safe_type(key) or key in allowed)


def _langchain_namespaces() -> frozenset[str]:
    from langchain_core.load.load import DEFAULT_NAMESPACES

    return frozenset(DEFAULT_NAMESPACES)


def _is_safe_type(key: tuple[str, str]) -> bool:
    return key in SAFE_MSGPACK_TYPES or key == ("builtins", "set")


# -- encryption -------------------------------------------------------------------------


def parse_key(text: str | bytes, variable: str = "ANALYST_CHECKPOINT_KEY") -> bytes:
    """An AES key from ``variable`` (``ANALYST_CHECKPOINT_KEY`` or ``ANALYST_MEMORY_KEY``):
    16/24/32 raw bytes, or base64 of them."""
    raw = text.encode() if isinstance(text, str) else bytes(text)
    if len(raw) in (16, 24, 32):
        return raw
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) in (16, 24, 32):
        return decoded
    raise ConfigurationError(
        f"{variable} has {len(raw)} bytes; an AES key must be 16, 24 or 32 bytes, "
        "or the base64 of such a key. Make one with: "
        'python -c "import base64, os; print(base64.b64encode(os.urandom(32)).decode())"'
    )


class ValueCipher:
    """Seals values into opaque strings and opens them again (AES-EAX, authenticated).

    A sealed value is ``SEALED_PREFIX + type + ":" + base64(nonce | tag | ciphertext)``: a
    plain string, which every saver stores as it is. Values written before encryption was
    switched on are returned unchanged (they were already loaded by the strict serializer).
    """

    def __init__(self, key: bytes, serde: JsonPlusSerializer | None = None) -> None:
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        self._inner = EncryptedSerializer.from_pycryptodome_aes(
            serde=serde or strict_serializer(), key=parse_key(key)
        )

    def seal(self, value: Any) -> str:
        type_, data = self._inner.dumps_typed(value)
        return f"{SEALED_PREFIX}{type_}:{base64.b64encode(data).decode('ascii')}"

    def open(self, value: Any) -> Any:
        if not (isinstance(value, str) and value.startswith(SEALED_PREFIX)):
            return value
        type_, _, payload = value[len(SEALED_PREFIX) :].partition(":")
        try:
            return self._inner.loads_typed((type_, base64.b64decode(payload)))
        except (ValueError, KeyError, binascii.Error) as e:
            raise CheckpointDecryptionError() from e


R = TypeVar("R")


def record_from_json(cls: type[R], data: Mapping[str, Any]) -> R:
    """Rebuild a frozen record dataclass from its ``to_json`` shape: ISO strings become
    aware datetimes and lists become tuples where the field is typed so; keys that are not
    init fields (derived properties such as ``status``) are ignored. A missing required
    field is :class:`~memory.errors.InvalidMemoryError` naming it."""
    import typing
    from datetime import datetime

    from memory.errors import InvalidMemoryError

    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.name not in data:
            continue
        value, hint = data[f.name], str(hints.get(f.name, ""))
        if isinstance(value, str) and "datetime" in hint:
            value = datetime.fromisoformat(value)
        elif isinstance(value, list) and "tuple" in hint:
            value = tuple(value)
        values[f.name] = value
    try:
        return cls(**values)
    except TypeError as e:
        raise InvalidMemoryError(
            f"A {cls.__name__} in the backup is incomplete ({e}); the file is damaged or was "
            "not made by `analyst memory backup`."
        ) from None
