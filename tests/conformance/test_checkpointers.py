"""One conformance suite for hot memory, run on every checkpointer backend.

Each test drives the real analyst graph (offline analyst, bundled prices) on a real backend:
SQLite file, Postgres database, Redis Stack (full and shallow) and, where it applies, the
in-process memory saver. Every test gets its own database / key prefix / folder. What is
checked: pausing at approval and resuming from another process, history, time travel,
durability modes against a killed process, deletion (verified by reading the backend's own
tables and keys), isolation of concurrent threads, retention, the serialisation allowlist,
and encryption at rest. History, time travel, deletion, retention and async durability also
run with every backend behind the encrypting wrapper (``sealed-<backend>``, the application's
``ANALYST_CHECKPOINT_KEY``).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from agent.app import AnalystApp
from agent.errors import CheckpointHistoryUnavailableError
from agent.market import SampleDataProvider
from agent.nodes.services import Services
from agent.settings import Settings
from agent.state import CHECKPOINT_TYPES_MODULES, Context
from graphs.builder import compile_graph
from memory.checkpoint import keeps_history, open_checkpointer
from memory.documents import FileMemory
from memory.identity import Principal
from memory.retention import prune_threads
from tests.support.servers import (
    fresh_postgres_database,
    fresh_redis_prefix,
    redis_checkpointer_url,
    redis_client,
)
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration]

EXE = Path(sys.executable).with_name("analyst")
ALL = ["sqlite", "postgres", "redis", "redis+shallow", "memory"]
#: Backends another process can reach.
SHARED = ["sqlite", "postgres", "redis", "redis+shallow"]
#: Backends that keep every checkpoint.
WITH_HISTORY = ["sqlite", "postgres", "redis", "memory"]
#: Every backend behind SealedSaver (the application's ANALYST_CHECKPOINT_KEY).
SEALED = [f"sealed-{name}" for name in ALL]
CONTEXT = Context(tenant_id="default", user_id="tester")
WHO = Principal("default", "tester")
#: The super-steps of "Analyze NVDA" up to the approval pause: input, capture, router,
#: planner, five executor steps, reporter, critic, approval.
STEPS_TO_APPROVAL = 12
KEY = base64.b64encode(b"k" * 32).decode()


@dataclass
class Backend:
    name: str
    url: str
    token: str
    tmp: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    #: The checkpoint encryption key of a ``sealed-`` backend, else None.
    key: str | None = None

    @property
    def kind(self) -> str:
        """The storage backend, sealed or not (``sealed-redis`` -> ``redis``)."""
        return self.name.removeprefix("sealed-")

    def thread(self, label: str) -> str:
        """A thread id carrying the test's token (Redis cleanup finds keys by it)."""
        return f"{self.token}-{label}"

    def settings(self, **overrides: Any) -> Settings:
        overrides.setdefault("checkpoint_key", self.key)
        return Settings.from_env(checkpointer_url=self.url, **overrides)

    def services(self) -> Services:
        return Services(
            market=SampleDataProvider(),
            documents=FileMemory(self.tmp / "memory"),
            artifacts_dir=self.tmp / "data" / "artifacts",
        )

    @asynccontextmanager
    async def graph(self, **kwargs: Any) -> AsyncIterator[Any]:
        kwargs.setdefault("allowed_modules", CHECKPOINT_TYPES_MODULES)
        kwargs.setdefault("encryption_key", self.key)
        async with open_checkpointer(self.url, **kwargs) as saver:
            yield compile_graph(saver, services=self.services())

    @asynccontextmanager
    async def app(self, **overrides: Any) -> AsyncIterator[AnalystApp]:
        async with AnalystApp.open(self.settings(**overrides), WHO, self.services()) as app:
            yield app

    def env(self, **more: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(ANALYST_CHECKPOINTER=self.url, PYTHONUNBUFFERED="1", NO_COLOR="1")
        env.update(COLUMNS="200", LINES="50", TERM="dumb")
        if self.key:
            env.update(ANALYST_CHECKPOINT_KEY=self.key)
        env.update(more)
        return env

    def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(EXE), *args],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    name = request.param
    kind = name.removeprefix("sealed-")
    key = KEY if kind != name else None
    token = f"c{uuid.uuid4().hex[:10]}"
    if kind == "sqlite":
        yield Backend(name, f"sqlite:///{tmp_path}/checkpoints.sqlite", token, tmp_path, key=key)
    elif kind == "memory":
        yield Backend(name, "memory://", token, tmp_path, key=key)
    elif kind == "postgres":
        with fresh_postgres_database() as url:
            yield Backend(name, url, token, tmp_path, key=key)
    else:
        with fresh_redis_prefix() as prefix:
            url = redis_checkpointer_url(prefix, shallow=kind == "redis+shallow")
            yield Backend(name, url, prefix, tmp_path, key=key)


def over(names: list[str]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("backend", names, indirect=True)


async def run_to_approval(graph: Any, thread_id: str, query: str = "Analyze NVDA") -> Any:
    config = {"configurable": {"thread_id": thread_id}}
    await graph.ainvoke({"query": query}, config, context=CONTEXT)
    snap = await graph.aget_state(config)
    assert snap.next == ("approval",), snap.next
    return snap


async def lineage(graph: Any, config: dict[str, Any]) -> list[str]:
    """Checkpoint ids from ``config`` back to the thread's first, following parent links."""
    ids: list[str] = []
    snap = await graph.aget_state(config)
    while snap is not None and snap.config:
        ids.append(snap.config["configurable"]["checkpoint_id"])
        if not snap.parent_config:
            break
        snap = await graph.aget_state(snap.parent_config)
    return ids


def approval(snap: Any) -> Command[Any]:
    draft = snap.values["draft"]
    return Command(resume={"action": "approve", "draft_hash": draft["hash"], "approver": "x"})


# -- what a backend holds for a thread, read with the backend's own client -------------------


def stored(backend: Backend, saver: Any, thread_id: str) -> list[bytes]:
    """Every stored record of ``thread_id`` as raw bytes, read directly from the backend."""
    if backend.kind == "sqlite":
        path = backend.url[len("sqlite:///") :]
        with sqlite3.connect(path) as conn:
            rows = [
                *conn.execute("SELECT * FROM checkpoints WHERE thread_id = ?", (thread_id,)),
                *conn.execute("SELECT * FROM writes WHERE thread_id = ?", (thread_id,)),
            ]
        return [
            repr(row).encode() + b"".join(c for c in row if isinstance(c, bytes)) for row in rows
        ]
    if backend.kind == "postgres":
        import psycopg

        out: list[bytes] = []
        with psycopg.connect(backend.url) as conn:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                for row in conn.execute(
                    f"SELECT * FROM {table} WHERE thread_id = %s",
                    (thread_id,),
                ):
                    out.append(
                        b"".join(
                            bytes(c) if isinstance(c, bytes | memoryview) else str(c).encode()
                            for c in row
                        )
                    )
        return out
    if backend.kind.startswith("redis"):
        client: Any = redis_client()
        out = []
        for key in client.scan_iter(match=f"*{thread_id}*", count=1000):
            kind = client.type(key).decode()
            if kind == "ReJSON-RL":
                out.append(key + json.dumps(client.json().get(key)).encode())
            elif kind == "string":
                out.append(key + client.get(key))
            elif kind == "zset":
                out.append(key + b"".join(client.zrange(key, 0, -1)))
            else:
                out.append(key + kind.encode())
        return out
    # memory: the saver's own dictionaries
    inner = getattr(saver, "inner", saver)
    records: list[bytes] = []
    for ns in inner.storage.get(thread_id, {}).values():
        for item in ns.values():
            records.append(repr(item).encode())
    for mapping in (inner.writes, inner.blobs):
        for k, v in mapping.items():
            if k[0] == thread_id:
                records.append(repr((k, v)).encode())
    return records


# -- pause, resume elsewhere ------------------------------------------------------------------


@over(SHARED)
async def test_pause_at_approval_then_approve_from_another_process(backend: Backend) -> None:
    thread = backend.thread("approve")
    async with backend.app() as app:
        view = await app.start("Analyze NVDA", thread_id=thread)
    assert view.status == "awaiting_approval" and view.draft_hash

    done = backend.cli("approve", thread, "--draft", view.draft_hash, "--as", "reviewer", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "published"
    assert result["publication"]["draft_hash"] == view.draft_hash
    assert Path(result["publication"]["path"]).is_file()

    listed = backend.cli("threads", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["status"] for t in json.loads(listed.stdout) if t["thread_id"] == thread] == [
        "published"
    ]


# -- history ----------------------------------------------------------------------------------


@over(ALL + SEALED)
async def test_history_lists_every_super_step(backend: Backend) -> None:
    async with backend.graph() as graph:
        snap = await run_to_approval(graph, backend.thread("history"))
        config = {"configurable": {"thread_id": backend.thread("history")}}
        history = [s async for s in graph.aget_state_history(config)]
        if not keeps_history(graph.checkpointer):
            assert backend.kind == "redis+shallow"
            assert [s.config for s in history] == [snap.config]
            return
        assert len(history) == STEPS_TO_APPROVAL
        steps = [s.metadata["step"] for s in history]
        assert steps == list(range(STEPS_TO_APPROVAL - 2, -2, -1))
        for child, parent in itertools.pairwise(history):
            assert (
                child.parent_config["configurable"]["checkpoint_id"]
                == (parent.config["configurable"]["checkpoint_id"])
            )
        assert history[-1].next == ("__start__",) and history[0].next == ("approval",)
        limited = [s async for s in graph.aget_state_history(config, limit=3)]
        assert [s.config for s in limited] == [s.config for s in history[:3]]


# -- time travel ------------------------------------------------------------------------------


@over(WITH_HISTORY + [f"sealed-{name}" for name in WITH_HISTORY])
async def test_fork_from_an_earlier_checkpoint_leaves_the_original_intact(
    backend: Backend,
) -> None:
    thread = backend.thread("fork")
    async with backend.graph() as graph:
        original = await run_to_approval(graph, thread)
        config = {"configurable": {"thread_id": thread}}
        before = [s async for s in graph.aget_state_history(config)]
        # The checkpoint right after planning: replan with two steps instead of five.
        planned = [s for s in before if s.next == ("executor",)][-1]
        fork = await graph.aupdate_state(
            planned.config, {"plan": planned.values["plan"][:2]}, as_node="planner"
        )
        await graph.ainvoke(None, fork, context=CONTEXT)

        head = await graph.aget_state(config)
        assert head.next == ("approval",)
        assert len(head.values["plan"]) == 2
        assert head.values["draft"]["hash"] != original.values["draft"]["hash"]
        original_ids = [s.config["configurable"]["checkpoint_id"] for s in before]
        fork_ids = await lineage(graph, head.config)
        shared = original_ids[original_ids.index(planned.config["configurable"]["checkpoint_id"]) :]
        assert fork_ids[-len(shared) :] == shared  # the fork grows from the planned checkpoint
        assert not set(fork_ids[: -len(shared)]) & set(original_ids)

        # The original branch is untouched and can still be continued.
        again = await graph.aget_state(original.config)
        assert again.values == original.values and again.next == ("approval",)
        assert await lineage(graph, original.config) == original_ids
        everything = [s async for s in graph.aget_state_history(config)]
        assert set(original_ids) < {s.config["configurable"]["checkpoint_id"] for s in everything}
        await graph.ainvoke(approval(again), original.config, context=CONTEXT)
        published = await graph.aget_state(config)
        assert published.values["status"] == "published"
        assert published.values["publication"]["draft_hash"] == original.values["draft"]["hash"]


@over(["redis+shallow"])
async def test_shallow_backend_refuses_time_travel_clearly(backend: Backend) -> None:
    thread = backend.thread("shallow")
    async with backend.graph() as graph:
        paused = await run_to_approval(graph, thread)
        await graph.ainvoke(approval(paused), paused.config, context=CONTEXT)
        assert not keeps_history(graph.checkpointer)
        with pytest.raises(CheckpointHistoryUnavailableError, match="no history") as caught:
            await graph.aupdate_state(paused.config, {"query": "Analyze AAPL"})
        assert "shallow" in str(caught.value) and "redis+shallow://" in str(caught.value)
        head = await graph.aget_state({"configurable": {"thread_id": thread}})
        assert head.values["status"] == "published"


# -- durability -------------------------------------------------------------------------------


#: The metadata step of the checkpoint written after the first executor step.
FIRST_EXECUTOR_STEP = 2

#: Seconds a CLI run may take to reach a condition the test waits for (a run on a loaded
#: machine has taken over 60 s to its first step).
RUN_DEADLINE_S = 180


def _start_and_kill_after_first_step(backend: Backend, thread: str, durability: str) -> str:
    """Run the CLI slowly, SIGKILL it right after the first executor step; return its output.

    With ``sync`` durability the kill waits until that step's checkpoint is visible in the
    backend (the run pauses 1.5 s before each further step, so it is still mid-run); with
    ``exit`` nothing is stored before the run ends, so the kill comes at once.
    """
    proc = subprocess.Popen(
        [str(EXE), "run", "Analyze NVDA", "--thread", thread],
        env=backend.env(ANALYST_DURABILITY=durability, ANALYST_STEP_DELAY="1.5"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + RUN_DEADLINE_S
    try:
        for line in proc.stdout:
            seen.append(line)
            if "executor" in line and "step 1" in line:
                if durability == "sync":
                    asyncio.run(_checkpoint_visible(backend, thread, FIRST_EXECUTOR_STEP, deadline))
                else:  # nothing is stored only while the run (four more 1.5 s steps) lasts
                    assert proc.poll() is None, f"the run ended before the kill: {''.join(seen)}"
                break
            assert time.monotonic() < deadline, "".join(seen)
        else:
            raise AssertionError(f"the run ended before its first step: {''.join(seen)}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    return "".join(seen)


async def _checkpoint_visible(backend: Backend, thread: str, step: int, deadline: float) -> None:
    """Return once a checkpoint of ``thread`` at ``step`` or later can be read back from the
    backend through a saver of its own; fail at ``deadline`` (``time.monotonic()``)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    async with open_checkpointer(backend.url, allowed_modules=CHECKPOINT_TYPES_MODULES) as saver:
        while True:
            latest = await saver.aget_tuple(config)
            if latest is not None and latest.metadata.get("step", -1) >= step:
                return
            assert time.monotonic() < deadline, f"no checkpoint at step {step} of {thread}"
            await asyncio.sleep(0.05)


@over(SHARED)
async def test_durability_modes_are_honoured_by_a_killed_run(backend: Backend) -> None:
    modes = ("sync", "exit")
    threads = {mode: backend.thread(f"durability-{mode}") for mode in modes}
    loop = asyncio.get_running_loop()
    outputs = await asyncio.gather(
        *(
            loop.run_in_executor(None, _start_and_kill_after_first_step, backend, threads[m], m)
            for m in modes
        )
    )
    assert all("executor" in out for out in outputs)

    async with backend.graph() as graph:

        async def checkpoints(thread: str) -> list[Any]:
            return [
                t async for t in graph.checkpointer.alist({"configurable": {"thread_id": thread}})
            ]

        synced = await checkpoints(threads["sync"])
        if keeps_history(graph.checkpointer):
            # input, router, planner and the first executor step are all there
            assert {c.metadata["step"] for c in synced} >= {-1, 0, 1, 2}
        else:
            assert len(synced) == 1 and synced[0].metadata["step"] >= 2
        assert await checkpoints(threads["exit"]) == []

    # The synced thread continues from where the process died.
    async with backend.app() as app:
        view = await app.resume(threads["sync"])
        assert view.status == "awaiting_approval" and len(view.plan) == 5


@over(["sqlite", "postgres", "redis", "memory", "sealed-sqlite", "sealed-postgres", "sealed-redis"])
async def test_async_durability_writes_every_checkpoint(backend: Backend) -> None:
    async with backend.app(durability="async") as app:
        view = await app.start("Analyze NVDA", thread_id=backend.thread("async"))
        assert view.status == "awaiting_approval"
        history = await app.history(backend.thread("async"))
    assert len(history) == STEPS_TO_APPROVAL


# -- deletion ---------------------------------------------------------------------------------


@over(ALL + SEALED)
async def test_deleting_a_thread_removes_every_record_of_it(backend: Backend) -> None:
    gone, kept = backend.thread("gone"), backend.thread("kept")
    async with backend.app() as app:
        await app.start("Analyze NVDA", thread_id=gone)
        paused = await app.view(gone)
        await app.decide(
            gone, {"action": "approve", "draft_hash": paused.draft_hash, "approver": "x"}
        )
        await app.start("Analyze AAPL", thread_id=kept)
        saver = (await app.graph()).checkpointer
        assert stored(backend, saver, gone) and stored(backend, saver, kept)

        await app.delete_thread(gone)

        assert stored(backend, saver, gone) == []
        assert stored(backend, saver, kept)
        assert app.index.get(WHO, gone) is None
        assert (await app.view(kept)).status == "awaiting_approval"


@over(ALL + SEALED)
async def test_deleting_threads_at_once_removes_every_record_of_each(backend: Backend) -> None:
    gone = [backend.thread(f"gone-{n}") for n in range(3)]
    kept = backend.thread("kept")
    async with backend.app() as app:
        for thread, ticker in zip([*gone, kept], ["NVDA", "AAPL", "MSFT", "TSLA"], strict=True):
            await app.start(f"Analyze {ticker}", thread_id=thread)
        saver = (await app.graph()).checkpointer
        assert all(stored(backend, saver, t) for t in [*gone, kept])

        assert await app.tiers.delete_threads([*gone, "not-mine"]) == sorted(gone)

        assert all(stored(backend, saver, t) == [] for t in gone)
        assert stored(backend, saver, kept)
        assert all(app.index.get(WHO, t) is None for t in gone)
        assert (await app.view(kept)).status == "awaiting_approval"
        audited = [e for e in await app.memory.audit() if e["tier"] == "threads"]
        assert sorted(i for e in audited for i in e["item_ids"]) == sorted(gone)
        assert all(len(e["item_ids"]) == 1 for e in audited)  # one entry per thread


# -- concurrency ------------------------------------------------------------------------------


@over(ALL)
async def test_concurrent_runs_on_different_threads_do_not_interfere(backend: Backend) -> None:
    tickers = ("NVDA", "AAPL", "MSFT")
    async with backend.graph() as graph:
        snaps = await asyncio.gather(
            *(run_to_approval(graph, backend.thread(t), f"Analyze {t}") for t in tickers)
        )
        for ticker, snap in zip(tickers, snaps, strict=True):
            assert snap.values["tickers"] == [ticker]
            assert snap.values["draft"]["ticker"] == ticker
            assert f"# {ticker} " in snap.values["draft"]["markdown"]
        await asyncio.gather(
            *(graph.ainvoke(approval(s), s.config, context=CONTEXT) for s in snaps)
        )
        for ticker in tickers:
            head = await graph.aget_state({"configurable": {"thread_id": backend.thread(ticker)}})
            assert head.values["status"] == "published"
            assert head.values["publication"]["path"].endswith(".md")
            assert ticker in Path(head.values["publication"]["path"]).name


# -- retention --------------------------------------------------------------------------------


@over(ALL + SEALED)
async def test_prune_deletes_whole_idle_threads_and_kept_threads_still_resume(
    backend: Backend,
) -> None:
    old, recent = backend.thread("old"), backend.thread("recent")
    async with backend.app() as app:
        # One after the other: every checkpoint of ``old`` is older than any of ``recent``.
        await app.start("Analyze NVDA", thread_id=old)
        await app.start("Analyze AAPL", thread_id=recent)
        saver = (await app.graph()).checkpointer
        recent_ts = (await saver.aget_tuple({"configurable": {"thread_id": recent}})).checkpoint[
            "ts"
        ]
        # 90 days after the recent thread's last checkpoint: the older thread is past the line.
        now = datetime.fromisoformat(recent_ts) + timedelta(days=90)
        kept_records = len(stored(backend, saver, recent))

        dry = await prune_threads(
            saver, app.index, WHO, older_than=timedelta(days=90), label="90d", dry_run=True, now=now
        )
        assert [c.thread_id for c in dry.deleted] == [old] and dry.kept == 1
        assert stored(backend, saver, old)

        done = await prune_threads(
            saver, app.index, WHO, older_than=timedelta(days=90), label="90d", now=now
        )
        assert [c.thread_id for c in done.deleted] == [old]
        assert stored(backend, saver, old) == [] and app.index.get(WHO, old) is None
        # Nothing of the kept thread was touched, and it still resumes.
        assert len(stored(backend, saver, recent)) == kept_records
        paused = await app.view(recent)
        final = await app.decide(
            recent, {"action": "approve", "draft_hash": paused.draft_hash, "approver": "x"}
        )
        assert final.status == "published"


@over(["sqlite"])
def test_prune_command(backend: Backend) -> None:
    first = backend.cli("run", "Analyze NVDA", "--thread", backend.thread("a"), "--json")
    assert first.returncode == 0, first.stderr
    dry = backend.cli("threads", "prune", "--older-than", "90d", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["deleted"] == [] and json.loads(dry.stdout)["kept"] == 1
    last = asyncio.run(_last_checkpoint_time(backend, backend.thread("a")))
    _wait_until_past(last + timedelta(seconds=1))
    gone = backend.cli("threads", "prune", "--older-than", "1s")
    assert gone.returncode == 0, gone.stderr
    assert f"deleted {backend.thread('a')}" in gone.stdout
    listed = backend.cli("threads", "--json")
    assert json.loads(listed.stdout) == []
    bad = backend.cli("threads", "prune", "--older-than", "soon")
    assert bad.returncode == 2 and "--older-than 'soon' is not a duration" in bad.stderr


async def _last_checkpoint_time(backend: Backend, thread: str) -> datetime:
    """When the latest checkpoint of ``thread`` was written (the time retention reads)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    async with open_checkpointer(backend.url, allowed_modules=CHECKPOINT_TYPES_MODULES) as saver:
        latest = await saver.aget_tuple(config)
    assert latest is not None, f"no checkpoint of {thread}"
    return datetime.fromisoformat(latest.checkpoint["ts"])


def _wait_until_past(moment: datetime, timeout: float = 60) -> None:
    """Return once the wall clock (the one ``threads prune`` reads) is past ``moment``."""
    wait_until(lambda: datetime.now(moment.tzinfo) > moment, f"the clock passing {moment}", timeout)


@over(["redis", "redis+shallow"])
async def test_redis_ttl_applies_to_every_key(backend: Backend) -> None:
    backend.url += "&ttl=2d"
    thread = backend.thread("ttl")
    async with backend.graph() as graph:
        await run_to_approval(graph, thread)
    client: Any = redis_client()
    keys = list(client.scan_iter(match=f"*{thread}*", count=1000))
    ttls = {key: client.ttl(key) for key in keys}
    checkpoint_keys = [k for k in keys if b":checkpoint:" in k]
    assert checkpoint_keys and all(0 < ttls[k] <= 2 * 86400 for k in checkpoint_keys), ttls


# -- safe serialisation and encryption --------------------------------------------------------


@dataclass
class Booby:
    """Not registered: rebuilding it from a checkpoint would run its __post_init__."""

    marker: str

    def __post_init__(self) -> None:
        Path(self.marker).write_text("constructed")


@over(ALL)
async def test_unregistered_type_in_a_checkpoint_is_refused(backend: Backend) -> None:
    marker = backend.tmp / "constructed.txt"
    thread = backend.thread("booby")
    async with backend.graph() as graph:
        snap = await run_to_approval(graph, thread)
        trap = Booby(str(marker))
        marker.unlink()
        await graph.aupdate_state(snap.config, {"results": {"trap": trap}}, as_node="critic")
        head = await graph.aget_state({"configurable": {"thread_id": thread}})
    loaded = head.values["results"]["trap"]
    assert not isinstance(loaded, Booby)
    assert not marker.exists(), "an unregistered class was instantiated from a checkpoint"
    # Registered project types do come back as themselves.
    assert head.values["draft"]["hash"] == snap.values["draft"]["hash"]


@over(ALL)
@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_encryption_keeps_report_text_out_of_the_stored_bytes(
    backend: Backend, encrypted: bool
) -> None:
    thread = backend.thread("secret")
    key = KEY if encrypted else None
    async with backend.graph(encryption_key=key) as graph:
        snap = await run_to_approval(graph, thread)
        raw = b"\n".join(stored(backend, graph.checkpointer, thread))
        draft = snap.values["draft"]
        phrases = [draft["title"], "Peer comparison", "Analyze NVDA"]
        found = [p for p in phrases if p.encode() in raw]
        if encrypted:
            assert found == [], found
        else:
            assert found, "the probe should see plain text when encryption is off"
        # Readable again with the key, through a fresh connection.
    async with backend.graph(encryption_key=key) as graph:
        if backend.kind != "memory":
            again = await graph.aget_state(snap.config)
            assert again.values["draft"]["markdown"] == draft["markdown"]
            await graph.ainvoke(approval(again), snap.config, context=CONTEXT)
            done = await graph.aget_state({"configurable": {"thread_id": thread}})
            assert done.values["status"] == "published"
