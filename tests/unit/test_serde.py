"""Checkpoint serialisation refuses unregistered types; encryption and URL parsing (no services)."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import ormsgpack
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_POS_ARGS

from agent.errors import CheckpointDecryptionError, ConfigurationError, UnsupportedBackendError
from agent.state import CHECKPOINT_TYPES_MODULES, Context
from memory.checkpoint import parse_checkpointer_url
from memory.retention import parse_age
from memory.serde import (
    SEALED_PREFIX,
    ValueCipher,
    parse_key,
    project_types,
    strict_redis_serializer,
    strict_serializer,
)
from memory.urls import redact


@dataclasses.dataclass
class Booby:
    """Writes a marker file when constructed: proof of whether a loader called it."""

    marker: str

    def __post_init__(self) -> None:
        Path(self.marker).write_text("constructed")


def test_the_apps_types_are_registered_only_when_the_app_names_them() -> None:
    assert ("agent.records", "Context") in project_types(CHECKPOINT_TYPES_MODULES)
    context = Context(tenant_id="t", user_id="u", mode="flash")
    serde = strict_serializer(CHECKPOINT_TYPES_MODULES)
    assert serde.loads_typed(serde.dumps_typed({"ctx": context})) == {"ctx": context}
    # memory/ names no application module: without the app's list, Context is plain data.
    assert project_types(()) == frozenset()
    bare = strict_serializer()
    loaded = bare.loads_typed(bare.dumps_typed({"ctx": context}))["ctx"]
    assert not isinstance(loaded, Context)


def test_an_unregistered_dataclass_is_not_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    serde = strict_serializer(CHECKPOINT_TYPES_MODULES)  # the app's allowlist, not this module
    stored = serde.dumps_typed({"value": Booby(str(marker))})
    marker.unlink()
    loaded = serde.loads_typed(stored)["value"]
    assert not isinstance(loaded, Booby)
    assert loaded == {"marker": str(marker)}  # the plain data, nothing instantiated
    assert not marker.exists()


def test_a_forged_constructor_call_is_not_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    forged = ormsgpack.packb(
        ormsgpack.Ext(
            EXT_CONSTRUCTOR_POS_ARGS,
            ormsgpack.packb(("subprocess", "call", [["touch", str(marker)]])),
        )
    )
    strict_serializer().loads_typed(("msgpack", forged))
    assert not marker.exists()


def test_redis_serializer_refuses_unregistered_envelopes(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    serde = strict_redis_serializer(CHECKPOINT_TYPES_MODULES)
    envelope = {
        "lc": 2,
        "type": "constructor",
        "id": [*__name__.split("."), "Booby"],
        "kwargs": {"marker": str(marker)},
    }
    loaded = serde.loads_typed(("json", json.dumps({"x": envelope}).encode()))
    assert loaded["x"]["kwargs"] == {"marker": str(marker)}
    assert not marker.exists()
    # LangChain messages are still revived by LangChain's own loader.
    message = HumanMessage(content="hello")
    assert serde.loads_typed(serde.dumps_typed([message])) == [message]


# -- encryption -------------------------------------------------------------------------------


def test_keys_raw_or_base64() -> None:
    raw = b"0123456789abcdef0123456789abcdef"
    assert parse_key(raw.decode()) == raw
    assert parse_key(base64.b64encode(raw).decode()) == raw
    with pytest.raises(ConfigurationError, match="16, 24 or 32 bytes"):
        parse_key("too-short")


def test_sealed_values_hide_and_restore_content() -> None:
    cipher = ValueCipher(b"k" * 32)
    value = {"markdown": "# NVDA equity research", "n": 3}
    sealed = cipher.seal(value)
    assert sealed.startswith(SEALED_PREFIX) and "NVDA" not in sealed
    assert cipher.open(sealed) == value
    assert (
        cipher.open("plain text written before encryption")
        == "plain text written before encryption"
    )
    assert cipher.seal(value) != sealed  # a fresh nonce every time


def test_wrong_key_or_tampering_is_an_error() -> None:
    sealed = ValueCipher(b"k" * 32).seal("secret")
    with pytest.raises(CheckpointDecryptionError, match="cannot be decrypted"):
        ValueCipher(b"j" * 32).open(sealed)
    head, _, body = sealed.rpartition(":")
    data = bytearray(base64.b64decode(body))
    data[-1] ^= 1
    with pytest.raises(CheckpointDecryptionError):
        ValueCipher(b"k" * 32).open(f"{head}:{base64.b64encode(bytes(data)).decode()}")


# -- URLs and durations -----------------------------------------------------------------------


def test_checkpointer_urls() -> None:
    pg = parse_checkpointer_url("postgres://u:pw@h:5432/db?pool_max=2&sslmode=disable")
    assert pg.backend == "postgres" and pg.options == {"pool_max": "2"}
    assert pg.target == "postgres://u:pw@h:5432/db?sslmode=disable"
    assert pg.display == "postgres://u:***@h:5432/db?pool_max=2&sslmode=disable"
    shallow = parse_checkpointer_url("redis+shallow://h:6380/0?prefix=p&ttl=90d")
    assert shallow.backend == "redis+shallow" and shallow.target == "redis://h:6380/0"
    assert shallow.options == {"prefix": "p", "ttl": "90d"}
    assert parse_checkpointer_url("redis://h:6380/0").backend == "redis"
    assert parse_checkpointer_url("sqlite:///x.sqlite").backend == "sqlite"
    assert parse_checkpointer_url("memory://").backend == "memory"
    with pytest.raises(UnsupportedBackendError) as caught:
        parse_checkpointer_url("mongodb://u:pw@h/db")
    message = str(caught.value)
    assert "pw" not in message and "mongodb://u:***@h/db" in message
    for scheme in ("sqlite:///", "postgres://", "redis://", "redis+shallow://", "memory://"):
        assert scheme in message


def test_redact_leaves_passwordless_urls_alone() -> None:
    assert redact("redis://h:6380/0") == "redis://h:6380/0"
    assert redact("redis://:pw@h:6380/0") == "redis://:***@h:6380/0"


def test_ages() -> None:
    assert parse_age("90d") == timedelta(days=90)
    assert parse_age("12h") == timedelta(hours=12)
    assert parse_age("2w") == timedelta(weeks=2)
    for bad in ("90", "d", "-1d", "0d", "soon"):
        with pytest.raises(ConfigurationError, match="is not a duration"):
            parse_age(bad)


def test_an_interrupt_read_without_langgraph_types_keeps_its_value_and_id() -> None:
    """A thread read (``threads``, ``show``) decodes a pending interrupt without importing
    ``langgraph.types`` (half a second of LangChain and LangSmith): the same value and id as
    LangGraph's own ``Interrupt``, which a process that has imported it still gets."""
    import subprocess
    import sys

    from langgraph.types import Interrupt

    from memory.serde import StoredInterrupt

    asked = Interrupt(value={"kind": "approval", "draft": "d-1", "text": "x" * 3}, id="i-42")
    kind, data = strict_serializer().dumps_typed([asked])
    assert strict_serializer().loads_typed((kind, data)) == [asked]  # LangGraph's type here
    child = (
        "import base64, json, sys\n"
        "from memory.serde import strict_serializer\n"
        f"value = strict_serializer().loads_typed(({kind!r}, base64.b64decode({base64.b64encode(data)!r})))\n"
        "print(json.dumps({'types': 'langgraph.types' in sys.modules, 'runs': "
        "'langsmith.run_trees' in sys.modules, 'class': type(value[0]).__qualname__, "
        "'value': value[0].value, 'id': value[0].id}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {
        "types": False,
        "runs": False,
        "class": StoredInterrupt.__qualname__,
        "value": asked.value,
        "id": asked.id,
    }
