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
- ``redis``: the one-trip Redis saver (:mod:`memory.checkpoint.redis`);
- ``redis+shallow``: the one-trip shallow Redis saver;
- ``sealed-sqlite``: :class:`~memory.checkpoint.sealed.SealedSaver` over the SQLite saver.

Which capabilities a saver has is decided as upstream decides it
(``DetectedCapabilities.from_instance``: the async method is overridden) and written down in
:data:`IMPLEMENTED`, which a test checks against the savers themselves; the tests of a
capability a saver does not implement are not collected (upstream's report says "not
implemented" for them). Tests that contradict a documented design decision of a saver are
listed in :data:`INAPPLICABLE` with the reason and are not collected either (a test checks
that every entry still names a real upstream test); everything collected must pass, and
nothing is skipped.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
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
from memory.checkpoint import open_checkpointer
from tests.support.servers import (
    fresh_postgres_database,
    fresh_redis_prefix,
    redis_checkpointer_url,
    redis_client,
)

pytestmark = [pytest.mark.integration]

SpecTest = Callable[[BaseCheckpointSaver[Any]], Awaitable[None]]

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

SAVERS = ["sqlite", "postgres", "redis", "redis+shallow", "sealed-sqlite"]

_BASE = frozenset(
    {
        Capability.PUT,
        Capability.PUT_WRITES,
        Capability.GET_TUPLE,
        Capability.LIST,
        Capability.DELETE_THREAD,
    }
)
#: What each saver implements, as upstream's detection sees it (checked by
#: ``test_each_saver_implements_what_the_table_says``). None implements delete_for_runs or
#: copy_thread; the SQLite savers do not implement prune.
IMPLEMENTED: dict[str, frozenset[Capability]] = {
    "sqlite": _BASE,
    "postgres": _BASE | {Capability.PRUNE},
    "redis": _BASE | {Capability.PRUNE},
    "redis+shallow": _BASE | {Capability.PRUNE},
    "sealed-sqlite": _BASE,
}
KEY = base64.b64encode(b"k" * 32).decode()

# Reasons a test does not apply. Each names the behaviour, whose code it is, and why the
# project can live with it. The Redis readers (alist, aget_tuple) and aprune are upstream's,
# inherited unchanged; the project replaces only aput / aput_writes.
_ANY_NAMESPACE = (
    "langgraph-checkpoint-redis's alist (inherited unchanged) reads checkpoint_ns='' as 'every "
    "namespace' (its own comment: 'Search for checkpoints with any namespace'), so listing the "
    "root namespace also returns subgraph checkpoints; the analyst graph has no subgraphs"
)
_FILTER_KEYS = (
    "langgraph-checkpoint-redis's alist (inherited unchanged) filters on source, step, "
    "thread_id and run_id only and raises ValueError('Unsupported filter key') for any other "
    "metadata key; the project never filters listings"
)
_BEFORE_ULID = (
    "langgraph-checkpoint-redis's alist (inherited unchanged) honours `before` only when the "
    "checkpoint id parses as a ULID; LangGraph's ids are UUIDv6, so the cursor is ignored; the "
    "project never lists with `before`"
)
_PRUNE_EMPTY = (
    "langgraph-checkpoint-redis's aprune (inherited unchanged) raises ValueError for an empty "
    "thread list instead of doing nothing; the project's retention deletes threads one by one "
    "with adelete_thread (memory.retention) and never calls aprune"
)
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

#: (saver, upstream test name) -> why that test does not apply to that saver.
INAPPLICABLE: dict[tuple[str, str], str] = {
    **{
        (saver, test): reason
        for saver in ("redis", "redis+shallow")
        for test, reason in {
            "test_list_by_namespace": _ANY_NAMESPACE,
            "test_list_multiple_namespaces": _ANY_NAMESPACE,
            "test_prune_keep_latest_across_namespaces": _ANY_NAMESPACE + " (prune is checked "
            "through a listing of the root namespace)",
            "test_prune_empty_list_noop": _PRUNE_EMPTY,
        }.items()
    },
    ("redis", "test_list_metadata_custom_keys"): _FILTER_KEYS,
    ("redis", "test_list_before"): _BEFORE_ULID,
    ("redis", "test_list_limit_plus_before"): _BEFORE_ULID,
    **{
        ("redis+shallow", test): _SHALLOW_HISTORY
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
        ("redis+shallow", test): _SHALLOW_OLD_ID
        for test in (
            "test_put_multiple_checkpoints_same_thread",
            "test_put_incremental_channel_update",
            "test_get_tuple_specific_checkpoint_id",
            # An id that was never stored: a shallow saver cannot tell it from a replaced one.
            "test_get_tuple_nonexistent_checkpoint_id",
        )
    },
    ("redis+shallow", "test_put_parent_config"): _SHALLOW_NO_PARENT,
    ("redis+shallow", "test_get_tuple_parent_config"): _SHALLOW_NO_PARENT,
    ("redis+shallow", "test_put_writes_cleared_on_next_checkpoint"): (
        "langgraph-checkpoint-redis's shallow saver deliberately keeps the writes of earlier "
        "checkpoints (its aput: 'We intentionally do NOT clean up old writes here', issue #133: "
        "interrupt writes are saved before the next checkpoint and must survive it) and "
        "aget_tuple returns them with the latest checkpoint; the project's aput keeps upstream's "
        "behaviour (tests/integration/test_checkpoint_wire.py)"
    ),
    ("redis+shallow", "test_list_includes_pending_writes"): (
        "langgraph-checkpoint-redis's shallow alist (inherited unchanged) always returns "
        "pending_writes=[]; aget_tuple, which LangGraph uses to resume, returns them"
    ),
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
    modules = {"allowed_modules": CHECKPOINT_TYPES_MODULES}
    if name in ("sqlite", "sealed-sqlite"):
        key = {"encryption_key": KEY} if name == "sealed-sqlite" else {}
        async with open_checkpointer(f"sqlite:///{tmp_path}/cp.sqlite", **modules, **key) as s:
            yield Opened(name, s)
    elif name == "postgres":
        with fresh_postgres_database() as url:
            async with open_checkpointer(url, **modules) as s:
                yield Opened(name, s)
    else:
        with _redis_prefix_swept() as token:
            url = redis_checkpointer_url(token, shallow=name == "redis+shallow")
            async with open_checkpointer(url, **modules) as s:
                yield Opened(name, s)


def _cases() -> list[Any]:
    return [
        pytest.param(name, test, id=f"{name}-{capability.value}-{test.__name__}")
        for name in SAVERS
        for capability, tests in SPEC.items()
        if capability in IMPLEMENTED[name]
        for test in tests
        if (name, test.__name__) not in INAPPLICABLE
    ]


@pytest.mark.parametrize(("name", "spec_test"), _cases())
async def test_upstream_conformance(name: str, spec_test: SpecTest, tmp_path: Path) -> None:
    async with open_saver(name, tmp_path) as opened:
        await spec_test(opened.saver)


@pytest.mark.parametrize("name", SAVERS)
async def test_each_saver_implements_what_the_table_says(name: str, tmp_path: Path) -> None:
    """IMPLEMENTED decides which upstream tests run: it must match the savers themselves."""
    async with open_saver(name, tmp_path) as opened:
        detected = DetectedCapabilities.from_instance(opened.saver).detected
    assert set(detected) == set(IMPLEMENTED[name])


def test_every_inapplicable_entry_names_a_real_test() -> None:
    """A renamed upstream test must not leave a stale exclusion behind."""
    names = {test.__name__ for tests in SPEC.values() for test in tests}
    assert {test for _, test in INAPPLICABLE} <= names
    assert {saver for saver, _ in INAPPLICABLE} <= set(SAVERS)
