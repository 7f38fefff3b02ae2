"""The command line's plumbing, in-process: the one mapping from failures to exit codes, the
chat loop driven only through its callback, one app per session, and the collector held while
a command starts."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console

from agent.app import AnalystApp, ThreadView
from agent.cli import common
from agent.cli.chat import ChatSession
from agent.cli.common import AppSession, CommandError, Interrupted
from agent.errors import AnalystError, ModelTransientError, ThreadNotFoundError
from agent.settings import Settings
from memory.identity import Principal


def _cli() -> typer.Typer:
    cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @cli.command()
    def unknown() -> None:
        raise ThreadNotFoundError("T")

    @cli.command()
    def bad() -> None:
        raise CommandError("--mode 'x' is not one of auto, deep, flash.")

    @cli.command()
    def editor() -> None:
        raise CommandError("The editor exited with 3; nothing was saved.", 1)

    @cli.command()
    def model() -> None:
        error = ModelTransientError("Model server error (HTTP 503).")
        error.add_note("Thread T is saved; continue it with: analyst resume T")
        raise error

    @cli.command()
    def stop() -> None:
        raise Interrupted("Interrupted. Thread T is saved; continue it with: analyst resume T")

    @cli.command()
    def fine() -> None:
        print("ok")

    return cli


@pytest.mark.parametrize(
    ("command", "code", "line"),
    [
        ("unknown", 3, "error: No thread 'T' for this user."),
        ("bad", 2, "error: --mode 'x' is not one of auto, deep, flash."),
        ("editor", 1, "error: The editor exited with 3; nothing was saved."),
        (
            "model",
            4,
            "error: Model server error (HTTP 503). Thread T is saved; continue it with: "
            "analyst resume T",
        ),
        ("stop", 130, "error: Interrupted. Thread T is saved; continue it with: analyst resume T"),
        ("fine", 0, None),
    ],
)
def test_a_failure_is_one_line_on_stderr_and_its_exit_code(
    command: str, code: int, line: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        common.run(_cli(), [command])
    assert (exit_.value.code or 0) == code
    out, err = capsys.readouterr()
    if line is None:
        assert (out, err) == ("ok\n", "")
    else:
        assert out == ""
        assert err.startswith(line) and err.count("\n") == 1, err


def test_usage_errors_stay_typers_own(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        common.run(_cli(), ["nope"])
    assert exit_.value.code == 2
    assert "No such command" in capsys.readouterr().err


def test_settings_build_the_principal_once() -> None:
    settings = Settings.from_env(user_id="bob", tenant_id="acme")
    assert settings.principal == Principal("acme", "bob")


def test_one_app_serves_every_call_of_a_session(isolated_env: Path) -> None:
    seen: list[AnalystApp] = []

    async def threads(app: AnalystApp) -> list[ThreadView]:
        seen.append(app)
        return await app.threads()

    with AppSession(Settings.from_env()) as session:
        assert session(threads) == [] and session(threads) == []
        assert session.app.principal == Principal("default", "tester")
    assert len(seen) == 2 and seen[0] is seen[1]
    with pytest.raises(RuntimeError):
        _ = session.app  # closed with the session
    assert not (isolated_env / "data").exists(), "listing no threads opened storage"


class FakeApp:
    """Stands in for AnalystApp: what the chat loop may reach goes through the callback."""

    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []
        self.started: list[str] = []
        self.ended: list[str] = []

    async def start(
        self, query: str, *, thread_id: str, on_update: Any = None, keep_session: bool = False
    ) -> ThreadView:
        assert keep_session, "the chat keeps one session until /new, /quit or idle time"
        self.started.append(thread_id)
        return ThreadView(thread_id, "awaiting_approval", query, draft_hash="d" * 64)

    async def understand(self, query: str) -> str:
        return "research"

    async def decide(
        self,
        thread_id: str,
        decision: dict[str, Any],
        *,
        on_update: Any = None,
        keep_session: bool = False,
    ) -> ThreadView:
        self.decisions.append(decision)
        return ThreadView(thread_id, "published", publication={"path": "x.md"})

    @property
    def memory(self) -> FakeApp:
        return self  # the memory controls: only end_session is reached

    async def end_session(self, thread_id: str) -> list[dict[str, Any]]:
        self.ended.append(thread_id)
        return []

    async def threads(self) -> list[ThreadView]:
        return []


def test_the_chat_loop_reaches_the_app_only_through_its_callback() -> None:
    fake = FakeApp()
    calls: list[int] = []

    def call(body: Any) -> Any:
        import asyncio

        calls.append(1)
        return asyncio.run(body(fake))

    lines: Iterator[str] = iter(
        ["Analyze NVDA", "/approve", "/new", "/threads", "Analyze TSLA", "/quit"]
    )
    out = io.StringIO()
    session = ChatSession(
        call,
        Principal("default", "tester"),
        console=Console(file=out, width=200),
        read_line=lambda _prompt: next(lines),
    )
    assert session.run() == 0
    assert len(calls) == 6  # two requests, one decision, one listing, two session ends
    assert fake.decisions == [{"approver": "tester", "action": "approve", "draft_hash": "d" * 64}]
    first, second = fake.started
    assert first != second, "/new starts a new thread"
    assert fake.ended == [first, second], "/new and /quit end the session"
    assert f"Bye. This conversation is thread {second}." in out.getvalue()


def test_a_long_silence_ends_the_session_and_starts_a_new_one() -> None:
    fake = FakeApp()
    now = [0.0]
    # "n": keep the draft on the thread rather than set it aside for a new one.
    lines: Iterator[str] = iter(["Analyze NVDA", "Analyze AAPL", "n", "Analyze TSLA", "/quit"])

    def read(_prompt: str) -> str:
        line = next(lines)
        if line == "Analyze TSLA":
            now[0] += 31 * 60  # more than the 30 idle minutes
        return line

    session = ChatSession(
        lambda body: __import__("asyncio").run(body(fake)),
        Principal("default", "tester"),
        console=Console(file=io.StringIO(), width=200),
        read_line=read,
        idle_minutes=30,
        clock=lambda: now[0],
    )
    assert session.run() == 0
    first, same, fresh = fake.started
    assert first == same and fresh != first
    assert fake.ended == [first, fresh]


def test_an_analyst_error_in_a_turn_keeps_the_session_going() -> None:
    def call(body: Any) -> Any:
        raise AnalystError("Unknown ticker XYZQ.")

    lines = iter(["Analyze XYZQ", "/quit"])
    out = io.StringIO()
    session = ChatSession(
        call,
        Principal("default", "tester"),
        console=Console(file=out, width=200),
        read_line=lambda _prompt: next(lines),
    )
    assert session.run() == 0
    assert "error: Unknown ticker XYZQ." in out.getvalue()


@pytest.mark.parametrize(
    ("said", "allow_ids", "answer"),
    [
        ("y", True, True),
        (" YES ", False, True),
        ("n", True, False),
        ("No", True, False),
        ("", True, False),
        ("   ", True, False),
        ("ep-1", True, ["ep-1"]),
        ("ep-1,fact-2", True, ["ep-1", "fact-2"]),
        ("ep-1 fact-2", True, ["ep-1", "fact-2"]),
        (" ep-1, fact-2 ,,  mem/3 ", True, ["ep-1", "fact-2", "mem/3"]),
        ("ep-1 fact-2", False, False),
    ],
)
def test_one_parser_reads_every_answer_to_forget_these(
    said: str, allow_ids: bool, answer: bool | list[str]
) -> None:
    """`analyst resume --forget` and the chat's prompt accept the same answers: y/yes, n/no or
    nothing, or ids separated by commas and/or spaces (only where ids are asked for)."""
    assert common.forget_answer(said, allow_ids=allow_ids) == answer


def test_the_collector_is_held_while_a_command_starts_then_its_heap_is_frozen() -> None:
    """``heap.hold`` raises the youngest generation's threshold (the collector stays on);
    ``settle`` freezes what start-up built and restores the thresholds, once; in a fresh
    interpreter, as the console script starts."""
    code = (
        "import gc\n"
        "from agent.cli import heap\n"
        "found = gc.get_threshold()\n"
        "heap.hold()\n"
        "assert gc.isenabled() and gc.get_threshold() == (heap.START_UP_OBJECTS, *found[1:])\n"
        "built = [[i] for i in range(1000)]\n"
        "heap.settle()\n"
        "assert gc.get_threshold() == found, gc.get_threshold()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert frozen >= 1000, frozen\n"
        "heap.settle()\n"
        "assert gc.get_freeze_count() == frozen\n"
        "heap.hold(); heap.freeze_for_exit(); heap.settle()\n"
        "assert gc.get_threshold() == found\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
