"""Plumbing shared by every ``analyst`` command: options, consoles, the app session, exits.

:func:`run` is the one place a failure becomes an exit code. Commands just raise: an
:class:`~agent.errors.AnalystError` (its ``exit_code``: 1 failure, 2 bad input or
configuration, 3 unknown thread or wrong state, 4 model failure) or :class:`Interrupted` (130
for Ctrl+C, 143 for SIGTERM) becomes one ``error:`` line on stderr; anything else is a bug and
keeps its traceback.
:class:`CommandError` is the command line's own bad input (exit 2 unless it says otherwise).

Commands reach storage only through :class:`~agent.app.AnalystApp`: :func:`call` opens one for
a command, :class:`AppSession` keeps one open on one event loop for as long as a chat lasts.

Only typer and the standard library are imported at module level so ``analyst --help`` stays
fast; Rich, settings and the application are imported when a command runs.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

import typer

import agent.cli.heap as heap
from agent.errors import AnalystError

if TYPE_CHECKING:
    import asyncio
    from datetime import datetime

    from rich.console import Console

    from agent.app import AnalystApp
    from agent.settings import Settings

T = TypeVar("T")

#: A command's work: given the open app, a coroutine that produces its result.
Body = Callable[["AnalystApp"], Coroutine[Any, Any, T]]

UserOpt = Annotated[
    str | None, typer.Option("--user", help="User to act as (default: $ANALYST_USER or $USER).")
]
TenantOpt = Annotated[
    str | None, typer.Option("--tenant", help="Tenant (default: $ANALYST_TENANT or 'default').")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="offline, or openai:<model> (needs OPENAI_API_KEY or OPENAI_BASE_URL). "
        "Default: $ANALYST_MODEL, else a model if an endpoint is configured.",
    ),
]
CheckpointerOpt = Annotated[
    str | None,
    typer.Option(
        "--checkpointer",
        help="Checkpointer URL: sqlite:///PATH, postgres://..., redis://..., "
        "redis+shallow://... or memory:// (default: $ANALYST_CHECKPOINTER, else SQLite in the "
        "data folder).",
    ),
]


# -- failures and the one place they become exit codes -------------------------------------


class CommandError(AnalystError):
    """Input the command itself cannot use (a bad option value, an unreadable file)."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class Interrupted(Exception):
    """Ctrl+C (exit 130) or SIGTERM (exit 143) while a command ran; the message says how to
    pick the thread up again."""

    exit_code = 130

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class Terminated(BaseException):
    """SIGTERM arrived. A ``BaseException`` like ``KeyboardInterrupt``, so no ``except
    Exception`` on the way swallows it; :func:`call` and :func:`run` make it exit 143."""

    exit_code = 143


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def install_signal_handlers() -> None:
    """Ctrl+C raises ``KeyboardInterrupt`` and SIGTERM raises :class:`Terminated`, whatever
    the process inherited: a shell starts background jobs (``nohup analyst run ... &``) with
    SIGINT ignored, and a Ctrl+C sent to them must still stop the run cleanly."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)


def keep_files_private() -> None:
    """Make every file this process creates private to the user (umask 077). The tiers set
    their modes explicitly (:mod:`memory.config`); this also covers what libraries create
    (Qdrant's shard files, charts, SQLite files of other backends)."""
    import os

    os.umask(0o077)


def run(command: typer.Typer, args: Sequence[str] | None = None) -> None:
    """Run the command line and exit: the one mapping from failures to exit codes.

    Typer handles ``--help``, usage errors (exit 2) and ``typer.Exit``; a Ctrl+C outside an
    app call (while parsing, say) is Typer's own silent exit 130. Every command's help is
    reflowed into paragraphs here (:mod:`agent.cli.helptext`), whatever its docstring's
    line breaks.
    """
    import typer.main

    from agent.cli.helptext import reflow_commands

    try:
        reflow_commands(typer.main.get_command(command))(args=args)
    except Interrupted as stop:
        err(str(stop))
        sys.exit(stop.exit_code)
    except Terminated:
        err("Terminated.")
        sys.exit(Terminated.exit_code)
    except AnalystError as error:
        err(" ".join([str(error), *getattr(error, "__notes__", ())]))
        sys.exit(error.exit_code)
    except (OSError, sqlite3.DatabaseError) as error:
        # A read-only folder, a full disk or a damaged file under a tier that did not name
        # its file itself: name the file (OSError knows it) or else the data folder.
        from memory.health import storage_fault

        where = getattr(error, "filename", None)
        fault = storage_fault(error, "file" if where else "data folder", where or _data_dir())
        if fault is None:
            raise
        err(str(fault))
        sys.exit(fault.exit_code)


def _data_dir() -> str:
    from agent.settings import Settings

    try:
        return str(Settings.from_env().data_dir)
    except AnalystError:
        return "(ANALYST_DATA_DIR)"


def interrupted_message(thread_id: str | None, what: str = "Interrupted") -> str:
    if thread_id is None:
        return f"{what}."
    return f"{what}. Thread {thread_id} is saved; continue it with: analyst resume {thread_id}"


# -- consoles -------------------------------------------------------------------------------


@cache
def console() -> Console:
    """The one console for output (stdout). It shows control characters escaped, whatever is
    printed (:class:`agent.cli.terminal.Printable`)."""
    from rich.console import Console

    from agent.cli.terminal import safe_console

    return safe_console(Console(highlight=False))


@cache
def errors() -> Console:
    """The one console for errors and notes (stderr), as safe as :func:`console`."""
    from rich.console import Console

    from agent.cli.terminal import safe_console

    return safe_console(Console(stderr=True, highlight=False))


def err(message: str) -> None:
    """One ``error:`` line; the message is plain text (it may quote a user's id or words)."""
    from rich.text import Text

    errors().print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)


def note(message: str) -> None:
    """A dim note on stderr; the message is plain text."""
    from rich.text import Text

    errors().print(Text(message, style="dim"), soft_wrap=True)


def renamed(old: str, new: str) -> None:
    """Say on stderr that the command typed as ``analyst OLD`` is now ``analyst NEW`` (the
    old spelling is a hidden alias that still works)."""
    note(f"`analyst {old}` is now `analyst {new}`.")


def print_json(value: Any, **options: Any) -> None:
    """Print ``value`` as JSON on stdout, unstyled, for scripts (``options`` go to json.dumps;
    the default indent is 2). Every character a terminal could act on is a JSON escape
    (``\\u001b``, ``\\u009b``, ``\\u202e``), also with ``ensure_ascii=False``."""
    from agent.cli.terminal import UNSAFE

    text = json.dumps(value, **{"indent": 2, **options})
    # json.dumps escapes C0 inside strings; a raw newline is the indentation's own.
    print(UNSAFE.sub(lambda m: "\n" if m.group() == "\n" else f"\\u{ord(m.group()):04x}", text))


def forget_answer(text: str, *, allow_ids: bool = True) -> bool | list[str]:
    """The answer to "forget these?", from ``analyst resume --forget`` or the chat prompt:
    True for y/yes; False for n/no or nothing; otherwise (``allow_ids``) the ids it lists,
    separated by commas and/or spaces (without ``allow_ids``: False)."""
    import re

    said = text.strip()
    if said.lower() in ("y", "yes"):
        return True
    if not allow_ids or said.lower() in ("n", "no", ""):
        return False
    return [i for i in re.split(r"[\s,]+", said) if i]


def day(value: str | None, flag: str, *, end: bool = False) -> datetime | None:
    """``YYYY-MM-DD`` (given as ``flag``) as the start of that day in UTC (``end``: of the
    next day, so the day is included); None stays None; anything else is a
    :class:`CommandError` naming ``flag``."""
    from datetime import UTC, datetime, timedelta

    if value is None:
        return None
    try:
        start = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError as e:
        raise CommandError(f"{flag} {value!r} is not a date like 2026-09-30.") from e
    return start + timedelta(days=1) if end else start


def print_rows(
    rows: list[dict[str, Any]],
    json_mode: bool,
    key: str,
    empty: str,
    columns: Callable[[list[dict[str, Any]]], Sequence[Any]],
) -> None:
    """A listing: ``{key: rows}`` as JSON, else ``empty`` when there are no rows, else one
    line per row with the :class:`~agent.cli.render.Column` list ``columns(rows)`` gives."""
    if json_mode:
        print_json({key: rows}, ensure_ascii=False)
        return
    if not rows:
        console().print(empty, soft_wrap=True)
        return
    from agent.cli.render import listing

    listing(console(), columns(rows))


def group(name: str, help: str) -> typer.Typer:
    """A command group with the house defaults."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


# -- settings and the application -----------------------------------------------------------


def settings(
    user: str | None = None,
    tenant: str | None = None,
    *,
    announce_model: bool = False,
    **overrides: Any,
) -> Settings:
    """Settings from the environment plus command-line overrides (None means 'not given').

    ``announce_model`` prints the one line saying which model runs (or why none does). A
    ``model`` given on the command line that cannot be used is an error naming ``--model``.
    """
    from agent.settings import Settings

    chosen = Settings.from_env(user_id=user, tenant_id=tenant, **overrides)
    flagged = overrides.get("model") is not None
    if announce_model or flagged:
        from agent.reasoning.chat_model import resolve_model

        line = resolve_model(chosen, flag="--model" if flagged else None).note
        if line and announce_model:
            note(line)
    return chosen


class AppSession:
    """One :class:`~agent.app.AnalystApp` for the settings' principal, on one event loop.

    ``session(body)`` runs ``body(app)`` to completion. Whatever tier one call opened (the
    checkpointer, the store and its TTL sweeper, the fact ledger) serves the next call; all of
    them close when the session exits. The app holds a thread's lock only while a call runs
    that thread, so other processes can decide on it between calls.

    ``lazy`` (the chat): entering returns at once; :meth:`warm_up` imports the heavy modules
    (LangGraph, the app, the graph) on a background thread while the user types, and the app
    opens on the first call, which first says which model runs (``announce_model``).
    """

    def __init__(
        self, settings: Settings, *, lazy: bool = False, announce_model: bool = False
    ) -> None:
        self.settings = settings
        self.lazy = lazy
        self.announce_model = announce_model
        self._runner: asyncio.Runner | None = None
        self._stack = AsyncExitStack()
        self._app: AnalystApp | None = None
        self._warm: threading.Thread | None = None
        self._note = ""

    @property
    def app(self) -> AnalystApp:
        if self._app is None:
            raise RuntimeError("AppSession: use it inside a 'with' block")
        return self._app

    def __enter__(self) -> AppSession:
        if not self.lazy:
            self._open()
        return self

    def warm_up(self) -> None:
        """Start loading what the first call needs on a background thread (a lazy session;
        once). The chat calls it once its prompt is on the screen."""
        if self.lazy and self._app is None and self._warm is None:
            self._warm = threading.Thread(target=self._prepare, name="analyst-warm-up", daemon=True)
            self._warm.start()

    def _prepare(self) -> None:
        """Import what the first turn needs, and find which model runs (background thread)."""
        import importlib

        # What opening the app needs (what the old eager open imported; the graph itself is
        # left to the first turn, so that a chat quit at once does not wait for it).
        for module in ("agent.app", "agent.app.memory"):
            importlib.import_module(module)
        if self.announce_model:
            from agent.reasoning.chat_model import resolve_model

            self._note = resolve_model(self.settings).note or ""

    def _open(self) -> None:
        self.warm_up()
        if self._warm is not None:
            self._warm.join()
            self._warm = None
            if self._note:
                note(self._note)
        import asyncio

        from agent.app import AnalystApp

        self._runner = asyncio.Runner()
        opening = AnalystApp.open(self.settings, self.settings.principal)
        try:
            self._app = self._runner.run(self._stack.enter_async_context(opening))
        except BaseException:
            self._runner.close()
            self._runner = None
            raise

    def __call__(self, body: Body[T]) -> T:
        if self._app is None and self.lazy:
            self._open()
        app = self.app
        assert self._runner is not None
        try:
            return self._runner.run(body(app))
        finally:
            heap.settle()  # the first call loaded what the next ones use

    def __exit__(self, *exc: object) -> None:
        if self._warm is not None:
            self._warm.join()  # never leave an import half done at exit
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            runner.run(self._stack.aclose())
        finally:
            self._app = None
            runner.close()


class AppCall(Protocol):
    """Runs one body against an open app: what the chat loop is given instead of storage."""

    def __call__(self, body: Body[T]) -> T: ...


def call(
    settings: Settings,
    body: Body[T],
    *,
    thread_id: str | None = None,
    interrupted: str | None = None,
) -> T:
    """Open the app for the principal in ``settings``, run ``body``, close the app.

    With ``thread_id``, a model failure says how to continue the thread (it is saved at its
    last checkpoint). A Ctrl+C becomes :class:`Interrupted` with ``interrupted`` as its
    message (default: how to resume ``thread_id``); SIGTERM becomes one that exits 143 and says
    how to resume ``thread_id``.
    """
    from agent.errors import ModelError

    try:
        with AppSession(settings) as session:
            return session(body)
    except KeyboardInterrupt:
        raise Interrupted(interrupted or interrupted_message(thread_id)) from None
    except Terminated:
        message = interrupted_message(thread_id, "Terminated")
        raise Interrupted(message, Terminated.exit_code) from None
    except ModelError as error:
        if thread_id:
            error.add_note(
                f"Thread {thread_id} is saved; continue it with: analyst resume {thread_id}"
            )
        raise
