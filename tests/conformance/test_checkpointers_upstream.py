"""LangGraph's own checkpointer conformance suite, run on every saver this project builds.

``langgraph-checkpoint-conformance`` (the ``libs/checkpoint-conformance`` package of the
LangGraph repository) specifies the ``BaseCheckpointSaver`` contract as plain async test
functions, one list per capability (put, put_writes, get_tuple, list, delete_thread, and the
optional delete_for_runs, copy_thread, prune). Its ``validate()`` runner calls them in a loop
on one saver per capability; here each upstream test is one pytest item instead, so every
result is visible by name.

Savers under test -- the ones the project subclasses or wraps, each opened through
``open_checkpointer`` exactly as the application opens it, on a fresh file, database or key
prefix per test:

- ``sqlite``: the group-commit SQLite saver (:mod:`memory.checkpoint.sqlite`);
- ``postgres``: the guarded Postgres saver over its pool (:mod:`memory.checkpoint.postgres`);
- ``redis``: the one-trip, exact-listing Redis saver (:mod:`memory.checkpoint.redis`);
- ``redis+shallow``: the one-trip, exact-listing shallow Redis saver;
- ``memory``: LangGraph's in-memory saver with the project's strict serializer;
- ``sealed-<each of them>``: :class:`~memory.checkpoint.sealed.SealedSaver` over it
  (``encryption_key`` set).

Which capabilities a saver has is decided as upstream decides it
(``DetectedCapabilities.from_instance``: the async method is overridden) and written down in
:data:`IMPLEMENTED`, which a test checks against the savers themselves (the sealed saver must
detect as exactly the saver it wraps); the tests of a capability a saver does not implement
are not collected (upstream's report says "not implemented" for them). The only other tests
not collected are in :data:`INAPPLICABLE`: what a shallow saver cannot do by design, each with
its reason (a test checks that every entry still names a real upstream test). Everything
collected must pass, and nothing is skipped.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance.capabilities import Capability, DetectedCapabilities
from langgraph.checkpoint.conformance.spec import test_copy_thread as copy_thread_spec
from langgraph.checkpoint.conformance.spec import test_delete_for_runs as delete_for_runs_spec
from langgraph.checkpoint.conformance.spec import test_delete_thread as delete_thread_spec
from langgraph.checkpoint.conformance.spec import test_get_tuple as get_tuple_spec
from langgraph.checkpoint.conformance.spec import test_list as list_spec
from langgraph.checkpoint.conformance.spec import test_prune as prune_spec
from langgraph.checkpoint.conformance.spec import test_put as put_spec
from langgraph.checkpoint.conformance.spec import test_put_writes as put_writes_spec

from agent.state import CHECKPOINT_TYPES_MODULES
from memory.checkpoint import SealedSaver, open_checkpointer
from tests.support.servers import (
    fresh_postgres_database,
    fresh_redis_prefix,
    redis_checkpointer_url,
    redis_client,
)

pytestmark = [pytest.mark.integration]

SpecTest = Callable[..., Coroutine[Any, Any, None]]

#: Every upstream test, by capability, in upstream's order.
SPEC: dict[Capability, list[SpecTest]] = {
    Capability.PUT: put_spec.ALL_PUT_TESTS,
    Capability.PUT_WRITES: put_writes_spec.ALL_PUT_WRITES_TESTS,
    Capability.GET_TUPLE: get_tuple_spec.ALL_GET_TUPLE_TESTS,
    Capability.LIST: list_spec.ALL_LIST_TESTS,
    Capability.DELETE_THREAD: delete_thread_spec.ALL_DELETE_THREAD_TESTS,
    Capability.DELETE_FOR_RUNS: delete_for_runs_spec.ALL_DELETE_FOR_RUNS_TESTS,
    Capability.COPY_THREAD: copy_thread_spec.ALL_COPY_THREAD_TESTS,
    Capability.PRUNE: prune_spec.ALL_PRUNE_TESTS,
}

BACKENDS = ["sqlite", "postgres", "redis", "redis+shallow", "memory"]
#: Every backend as the application opens it, plain and sealed (``encryption_key`` set).
SAVERS = [*BACKENDS, *(f"sealed-{backend}" for backend in BACKENDS)]

_BASE = frozenset(
    {
        Capability.PUT,
        Capability.PUT_WRITES,
        Capability.GET_TUPLE,
        Capability.LIST,
        Capability.DELETE_THREAD,
    }
)
#: What each backend's saver implements, as upstream's detection sees it; the sealed saver
#: over it implements the same (both checked by ``test_detected_capabilities``). None
#: implements delete_for_runs or copy_thread; the SQLite and in-memory savers do not prune.
IMPLEMENTED: dict[str, frozenset[Capability]] = {
    "sqlite": _BASE,
    "postgres": _BASE | {Capability.PRUNE},
    "redis": _BASE | {Capability.PRUNE},
    "redis+shallow": _BASE | {Capability.PRUNE},
    "memory": _BASE,
}
KEY = base64.b64encode(b"k" * 32).decode()

# The only exclusions: what a shallow saver cannot do by design. It keeps one checkpoint per
# thread and namespace (no history, no time travel), and LangGraph's shallow Redis saver keeps
# the writes of a replaced checkpoint on purpose. Every other upstream test runs on every
# saver, sealed or not.
_SHALLOW = (
    "redis+shallow keeps only the latest checkpoint of each thread and namespace, by design "
    "(no history, no time travel); "
)
_SHALLOW_HISTORY = _SHALLOW + "this test stores several checkpoints of one thread and expects all"
_SHALLOW_OLD_ID = _SHALLOW + (
    "asking for any other checkpoint id raises CheckpointHistoryUnavailableError (the "
    "project's ShallowRedisSaver.aget_tuple) instead of upstream's silent answer with the "
    "latest checkpoint, so that a fork from an old checkpoint cannot fork from the latest"
)
_SHALLOW_NO_PARENT = _SHALLOW + "its document stores no parent checkpoint id (upstream's format)"
_SHALLOW_KEEPS_WRITES = (
    "langgraph-checkpoint-redis's shallow saver deliberately keeps the writes of earlier "
    "checkpoints (its aput: 'We intentionally do NOT clean up old writes here', issue #133: "
    "interrupt writes are saved before the next checkpoint and must survive it) and "
    "aget_tuple returns them with the latest checkpoint; the project keeps upstream's "
    "behaviour (tests/integration/test_checkpoint_wire.py)"
)
_SHALLOW_EXCLUSIONS: dict[str, str] = {
    **{
        test: _SHALLOW_HISTORY
        for test in (
            "test_list_all",
            "test_list_by_thread",
            "test_list_ordering",
            "test_list_metadata_filter_single_key",
            "test_list_metadata_filter_step",
            "test_list_metadata_custom_keys",
            "test_list_before",
            "test_list_limit",
            "test_list_limit_plus_before",
            "test_list_combined_thread_and_filter",
        )
    },
    **{
        test: _SHALLOW_OLD_ID
        for test in (
            "test_put_multiple_checkpoints_same_thread",
            "test_put_incremental_channel_update",
            "test_get_tuple_specific_checkpoint_id",
            # An id that was never stored: a shallow saver cannot tell it from a replaced one.
            "test_get_tuple_nonexistent_checkpoint_id",
        )
    },
    "test_put_parent_config": _SHALLOW_NO_PARENT,
    "test_get_tuple_parent_config": _SHALLOW_NO_PARENT,
    "test_put_writes_cleared_on_next_checkpoint": _SHALLOW_KEEPS_WRITES,
}

#: (saver, upstream test name) -> why that test does not apply to that saver.
INAPPLICABLE: dict[tuple[str, str], str] = {
    (saver, test): reason
    for saver in ("redis+shallow", "sealed-redis+shallow")
    for test, reason in _SHALLOW_EXCLUSIONS.items()
}


@dataclass
class Opened:
    name: str
    saver: BaseCheckpointSaver[Any]


@contextmanager
def _redis_prefix_swept() -> Iterator[str]:
    """A fresh Redis key prefix; afterwards also the keys named after the test's threads.

    Upstream's tests use random thread ids, and some of the savers' keys (the key registry's
    sorted sets, the shallow saver's registry) carry the thread id but not the prefix: they
    are found through the prefix's search indexes before ``fresh_redis_prefix`` drops them.
    """
    client: Any = redis_client()
    with fresh_redis_prefix() as token:
        try:
            yield token
        finally:
            threads: set[str] = set()
            indexes = {i.decode() for i in client.execute_command("FT._LIST")}
            for index in (f"{token}:checkpoint", f"{token}:checkpoint_write"):
                if index not in indexes:
                    continue
                reply = client.execute_command(
                    "FT.AGGREGATE", index, "*", "GROUPBY", "1", "@thread_id",
                    "LIMIT", "0", "10000",
                )  # fmt: skip
                threads |= _aggregated_thread_ids(reply)
            for thread in threads:
                keys = list(client.scan_iter(match=f"*{thread}*", count=1000))
                if keys:
                    client.delete(*keys)


def _aggregated_thread_ids(reply: Any) -> set[str]:
    """The ``thread_id`` groups of an FT.AGGREGATE reply, in RESP3 (a map) or RESP2 form."""
    if isinstance(reply, dict):
        rows = [r.get(b"extra_attributes", {}) for r in reply.get(b"results", [])]
    else:
        rows = [dict(zip(row[::2], row[1::2], strict=True)) for row in reply[1:]]
    return {row[b"thread_id"].decode() for row in rows if row.get(b"thread_id")}


@asynccontextmanager
async def open_saver(name: str, tmp_path: Path) -> AsyncIterator[Opened]:
    """The saver ``name`` on its own fresh storage, opened as the application opens it."""
    backend = name.removeprefix("sealed-")
    options: dict[str, Any] = {"allowed_modules": CHECKPOINT_TYPES_MODULES}
    if name != backend:
        options["encryption_key"] = KEY
    if backend == "sqlite":
        async with open_checkpointer(f"sqlite:///{tmp_path}/cp.sqlite", **options) as s:
            yield Opened(name, s)
    elif backend == "memory":
        async with open_checkpointer("memory://", **options) as s:
            yield Opened(name, s)
    elif backend == "postgres":
        with fresh_postgres_database() as url:
            async with open_checkpointer(url, **options) as s:
                yield Opened(name, s)
    else:
        with _redis_prefix_swept() as token:
            url = redis_checkpointer_url(token, shallow=backend == "redis+shallow")
            async with open_checkpointer(url, **options) as s:
                yield Opened(name, s)


def _cases() -> list[Any]:
    return [
        pytest.param(name, test, id=f"{name}-{capability.value}-{test.__name__}")
        for name in SAVERS
        for capability, tests in SPEC.items()
        if capability in IMPLEMENTED[name.removeprefix("sealed-")]
        for test in tests
        if (name, test.__name__) not in INAPPLICABLE
    ]


@pytest.mark.parametrize(("name", "spec_test"), _cases())
async def test_upstream_conformance(name: str, spec_test: SpecTest, tmp_path: Path) -> None:
    async with open_saver(name, tmp_path) as opened:
        await spec_test(opened.saver)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_detected_capabilities(backend: str, tmp_path: Path) -> None:
    """IMPLEMENTED decides which upstream tests run: it must match the savers themselves, and
    the sealed saver must offer exactly what the saver it wraps offers."""
    async with open_saver(backend, tmp_path) as plain:
        unwrapped = DetectedCapabilities.from_instance(plain.saver).detected
    async with open_saver(f"sealed-{backend}", tmp_path) as sealed:
        assert isinstance(sealed.saver, SealedSaver)
        wrapped = DetectedCapabilities.from_instance(sealed.saver).detected
    assert set(unwrapped) == set(IMPLEMENTED[backend])
    assert set(wrapped) == set(unwrapped)


def test_every_inapplicable_entry_names_a_real_test() -> None:
    """A renamed upstream test must not leave a stale exclusion behind."""
    names = {test.__name__ for tests in SPEC.values() for test in tests}
    assert {test for _, test in INAPPLICABLE} <= names
    assert {saver for saver, _ in INAPPLICABLE} <= set(SAVERS)
