"""Integration fixtures: the real ``analyst`` console script and the application in-process.

``analyst`` runs the installed console script (found next to ``sys.executable``) as a
subprocess whose environment is this test's, so it uses the test's own data and memory
folders. ``open_app`` opens the same storage in-process through :class:`AnalystApp`, the way
a second process (a script, another approver) would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agent.app import AnalystApp, CheckpointView
from agent.errors import ThreadNotFoundError
from agent.settings import Settings
from memory.identity import Principal
from tests.support.servers import PgLedger, postgres_ledger
from tests.support.waiting import wait_until

EXE = Path(sys.executable).with_name("analyst")
T = TypeVar("T")

OpenApp = Callable[..., AbstractAsyncContextManager[AnalystApp]]


@dataclass(frozen=True)
class Run:
    """One finished CLI process."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        command = " ".join(self.args)
        return f"analyst {command} -> exit {self.code}\nstdout: {self.out}\nstderr: {self.err}"

    def json(self) -> Any:
        assert self.code == 0, str(self)
        return json.loads(self.out)

    @property
    def refused(self) -> bool:
        """Failed the way the CLI promises: an ``error:`` line on stderr, no traceback, no stdout."""
        lines = self.err.splitlines()
        return (
            self.code != 0
            and any(line.startswith("error: ") for line in lines)
            and "Traceback" not in self.err
            and self.out == ""
        )


@dataclass(frozen=True)
class Analyst:
    """The ``analyst`` CLI bound to one test's data and memory folders."""

    env: dict[str, str]
    data_dir: Path
    memory_dir: Path
    exe: Path = EXE

    def environ(self, step_delay: float = 0.0) -> dict[str, str]:
        return {**self.env, "ANALYST_STEP_DELAY": str(step_delay)}

    def __call__(self, *args: str, input: str | None = None, timeout: float = 180) -> Run:
        proc = subprocess.run(
            [str(self.exe), *args],
            env=self.environ(),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)

    def json(self, *args: str) -> Any:
        """Run with ``--json``; the command must succeed."""
        return self(*args, "--json").json()

    def fail(self, *args: str) -> Run:
        """Run a command that must fail: non-zero exit, a message on stderr, no stdout."""
        run = self(*args)
        assert run.code != 0, str(run)
        assert run.refused, str(run)
        return run

    def many(self, *commands: Sequence[str]) -> list[Run]:
        """Run independent commands concurrently (each is a separate process)."""
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda args: self(*args), commands))

    def popen(self, *args: str, step_delay: float) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(self.exe), *args],
            env=self.environ(step_delay),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def research_notes(self) -> list[Path]:
        return sorted((self.memory_dir / "research").glob("*.md"))

    # -- the same storage, read in-process -------------------------------------------------

    def _in_process(self, user: str, body: Callable[[AnalystApp], Awaitable[T]]) -> T:
        async def go() -> T:
            settings = Settings.from_env(self.env)
            async with AnalystApp.open(settings, Principal(settings.tenant_id, user)) as app:
                return await body(app)

        return asyncio.run(go())

    def history(self, thread_id: str, user: str = "tester") -> list[CheckpointView]:
        """The thread's checkpoints, newest first."""
        return self._in_process(user, lambda app: app.history(thread_id))

    def state(self, thread_id: str, user: str = "tester") -> dict[str, Any]:
        """The thread's latest state values."""

        async def values(app: AnalystApp) -> dict[str, Any]:
            app.require_thread(thread_id)
            graph = await app.graph()
            snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
            return dict(snap.values)

        return self._in_process(user, values)

    def executor_steps(self, thread_id: str, user: str = "tester") -> int:
        """How many executor steps of the thread are checkpointed (0 before it exists)."""
        try:
            return sum("executor" in c.ran for c in self.history(thread_id, user))
        except ThreadNotFoundError:
            return 0

    def wait_for_executor_step(
        self, proc: subprocess.Popen[str], thread_id: str, timeout: float = 180
    ) -> int:
        """Wait until the running ``proc`` has checkpointed an executor step; return the count.

        Fails at once, with the run's output, if the process ends first."""
        steps = 0

        def stepped() -> bool:
            nonlocal steps
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"the run ended before it could be stopped: {out}{err}")
            steps = self.executor_steps(thread_id)
            return bool(steps)

        wait_until(stepped, f"an executor checkpoint for {thread_id}", timeout)
        return steps


@pytest.fixture
def analyst(isolated_env: Path) -> Analyst:
    assert EXE.is_file(), f"the analyst console script is not installed next to {sys.executable}"
    env = dict(os.environ)
    # Wide, plain output: rich would otherwise wrap long lines at 80 columns (it ignores
    # COLUMNS on a dumb terminal unless LINES is set too).
    env.update(COLUMNS="200", LINES="50", TERM="dumb", NO_COLOR="1")
    return Analyst(
        env=env, data_dir=Path(env["ANALYST_DATA_DIR"]), memory_dir=Path(env["ANALYST_MEMORY_DIR"])
    )


@pytest.fixture
def open_app(isolated_env: Path) -> OpenApp:
    """``open_app(user="tester")``: the application over this test's storage, in-process."""

    def opener(user: str = "tester") -> AbstractAsyncContextManager[AnalystApp]:
        settings = Settings.from_env()
        return AnalystApp.open(settings, Principal(settings.tenant_id, user))

    return opener


@pytest.fixture(params=["embedded", "postgres"])
def backend(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> Iterator[PgLedger | None]:
    """Where the ledger and the journal live (``ANALYST_FACTS``) for the test: the data
    folder's SQLite file (``None``), then a fresh Postgres database used through its
    application role, set up by its owner (row security in force)."""
    if request.param == "embedded":
        yield None
        return
    with postgres_ledger() as ledger:
        monkeypatch.setenv("ANALYST_FACTS", ledger.app_url)
        yield ledger


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh fact ledger: a SQLite file (its folder not yet created), or Postgres set up by
    an owner for an application role (neither superuser nor BYPASSRLS). A test module may
    define its own ``ledger_url`` (e.g. with an admin bootstrapped) instead."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'data' / 'facts.sqlite'}"
        return
    with postgres_ledger() as ledger:
        yield ledger.app_url
