"""The root ``analyst`` Typer app: run, resume, approve, reject, edit, show, history, chat.

Each command parses its options, calls :class:`~agent.app.AnalystApp` through
:func:`agent.cli.common.call`, and renders: Rich text by default, one JSON object on stdout
with ``--json`` (its keys are stable for scripts). Failures are raised, never caught here:
:func:`agent.cli.common.run` turns them into one ``error:`` line and an exit code.

The command groups (``threads``, ``facts``, ``memory``, ``notes``, ``db``; ``memories`` is the
hidden old name of part of ``memory``) live in their own modules, which import only typer at top
level; this one registers them. Heavy modules (LangGraph, numpy, matplotlib) are imported inside
commands so ``--help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

import agent.cli.common as common
from agent.cli.common import (
    CheckpointerOpt,
    CommandError,
    JsonOpt,
    ModelOpt,
    TenantOpt,
    UserOpt,
)
from agent.cli.dashboard import dashboard
from agent.cli.db import app as db_app
from agent.cli.facts import app as facts_app
from agent.cli.memories import app as memories_app
from agent.cli.memory import app as memory_app
from agent.cli.notes import app as notes_app
from agent.cli.threads import app as threads_app

if TYPE_CHECKING:
    from agent.app import AnalystApp, ThreadView
    from agent.records import ModeChoice

app = typer.Typer(
    name="analyst",
    help="An equity-research agent with layered memory. Runs offline on bundled market data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@contextmanager
def charts_warmed() -> Iterator[None]:
    """A warm chart process for a command whose graph run may draw a chart
    (:mod:`agent.research.chart_process`), started before anything else is imported."""
    from agent.research.chart_process import warmed

    with warmed():
        yield


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"analyst {version('analyst')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """An equity-research agent with layered memory. Runs offline on bundled market data."""


DraftOpt = Annotated[
    str | None,
    typer.Option(
        "--draft",
        help="Hash (or an 8+ character prefix) of the draft you read; the decision fails if the "
        "thread's draft has changed. Default: the draft awaiting approval now.",
    ),
]


def progress(json_mode: bool) -> Callable[[str, dict[str, Any]], None] | None:
    """One line per finished node on the console (nothing with ``--json``)."""
    if json_mode:
        return None
    import agent.cli.render as render

    console = common.console()
    return lambda node, update: render.progress(console, node, update)


def emit(view: ThreadView, json_mode: bool, *, show_draft: bool = True) -> None:
    if json_mode:
        common.print_json(view.to_json())
        return
    import agent.cli.render as render

    render.thread(common.console(), view, show_draft=show_draft)


# -- commands -------------------------------------------------------------------------------


@app.command()
def run(
    query: Annotated[str, typer.Argument(help='What to analyse, e.g. "Analyze NVDA".')],
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    thread: Annotated[
        str | None, typer.Option("--thread", help="Thread id (default: a new one).")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="auto (router decides), deep or flash.")
    ] = "auto",
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Research a ticker and stop at the approval point with a draft and the critic's verdict."""
    if mode not in ("auto", "deep", "flash"):
        raise CommandError(f"--mode '{mode}' is not one of auto, deep, flash.")
    with charts_warmed():
        from agent.app import new_thread_id

        chosen = cast("ModeChoice", mode)
        settings = common.settings(
            user, tenant, model=model, checkpointer_url=checkpointer, announce_model=True
        )
        thread_id = new_thread_id() if thread is None else thread
        view = common.call(
            settings,
            lambda a: a.start(
                query, thread_id=thread_id, mode=chosen, on_update=progress(json_mode)
            ),
            thread_id=thread_id,
        )
    emit(view, json_mode)


@app.command()
def resume(
    thread_id: Annotated[str, typer.Argument(help="Thread to continue.")],
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
    forget: Annotated[
        str | None,
        typer.Option(
            "--forget",
            help="Answer the thread's question what to forget: yes (all of it), no (none) or "
            "ID,ID (only those of the listed ids; commas and/or spaces).",
        ),
    ] = None,
) -> None:
    """Continue a thread that stopped mid-run (crash, Ctrl+C) from its last checkpoint, or
    answer the question it is paused on (--forget)."""
    answer = None if forget is None else {"forget": common.forget_answer(forget)}
    with charts_warmed():
        settings = common.settings(
            user, tenant, model=model, checkpointer_url=checkpointer, announce_model=True
        )
        view = common.call(
            settings,
            lambda a: a.resume(thread_id, on_update=progress(json_mode), answer=answer),
            thread_id=thread_id,
            interrupted=f"Interrupted again. Continue with: analyst resume {thread_id}",
        )
    emit(view, json_mode)


def _decide(
    thread_id: str,
    decision: dict[str, Any],
    as_: str | None,
    draft: str | None,
    model: str | None,
    user: str | None,
    tenant: str | None,
    json_mode: bool,
    checkpointer: str | None,
) -> None:
    """Send ``decision`` on the draft of ``thread_id`` (the one awaiting approval now, unless
    --draft names the one read), signed by --as or else the user, and show the thread after."""
    settings = common.settings(user, tenant, model=model, checkpointer_url=checkpointer)
    decision["approver"] = as_ or settings.user_id

    async def body(a: AnalystApp) -> ThreadView:
        if draft is None:
            current = await a.view(thread_id)
            decision["draft_hash"] = current.draft_hash or ""
        else:
            decision["draft_hash"] = draft
        return await a.decide(thread_id, decision, on_update=progress(json_mode))

    view = common.call(
        settings,
        body,
        thread_id=thread_id,
        interrupted=(
            f"Interrupted. Thread {thread_id} is saved; check it with: analyst show {thread_id}"
        ),
    )
    emit(view, json_mode, show_draft=False)


@app.command()
def approve(
    thread_id: Annotated[str, typer.Argument(help="Thread awaiting approval.")],
    as_: Annotated[
        str | None, typer.Option("--as", help="Approver name recorded with the decision.")
    ] = None,
    draft: DraftOpt = None,
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Approve the draft and publish it to .agent-memory/research/."""
    decision = {"action": "approve"}
    _decide(thread_id, decision, as_, draft, model, user, tenant, json_mode, checkpointer)


@app.command()
def reject(
    thread_id: Annotated[str, typer.Argument(help="Thread awaiting approval.")],
    feedback: Annotated[
        str, typer.Option("--feedback", help="What the next revision must change.")
    ],
    as_: Annotated[str | None, typer.Option("--as", help="Reviewer name.")] = None,
    draft: DraftOpt = None,
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Send the draft back to the reporter with feedback (at most 3 revisions)."""
    decision = {"action": "reject", "feedback": feedback}
    with charts_warmed():  # the reporter drafts the next revision, with its chart
        _decide(thread_id, decision, as_, draft, model, user, tenant, json_mode, checkpointer)


@app.command()
def edit(
    thread_id: Annotated[str, typer.Argument(help="Thread awaiting approval.")],
    file: Annotated[Path, typer.Option("--file", help="Markdown file with your version.")],
    as_: Annotated[str | None, typer.Option("--as", help="Editor name.")] = None,
    draft: DraftOpt = None,
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Replace the draft with your own text and publish that."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CommandError(f"Cannot read --file {file}: {e}. Give a UTF-8 Markdown file.") from e
    decision = {"action": "edit", "text": text}
    _decide(thread_id, decision, as_, draft, model, user, tenant, json_mode, checkpointer)


# Listed in --help where it always was: after the decisions, before show.
app.add_typer(threads_app, name="threads")


@app.command()
def show(
    thread_id: Annotated[str, typer.Argument(help="Thread to show.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Show a thread: status, plan, draft, critic verdict, publication."""
    settings = common.settings(user, tenant, checkpointer_url=checkpointer)
    emit(common.call(settings, lambda a: a.view(thread_id)), json_mode)


@app.command()
def history(
    thread_id: Annotated[str, typer.Argument(help="Thread whose checkpoints to list.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """List a thread's checkpoints, newest first."""
    settings = common.settings(user, tenant, checkpointer_url=checkpointer)
    items = common.call(settings, lambda a: a.history(thread_id))
    if json_mode:
        common.print_json([vars(c) for c in items])
        return
    import agent.cli.render as render

    render.history_table(common.console(), thread_id, items)


@app.command()
def chat(
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Continue this thread.")] = None,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """A chat-style session: ask for analyses, then /approve, /reject, /edit. /help lists commands."""
    from agent.cli.chat import ChatSession

    # The prompt comes first: the app (and the line saying which model runs) loads in the
    # background and opens on the first turn. A --model that cannot be used still fails here.
    settings = common.settings(user, tenant, model=model, checkpointer_url=checkpointer)
    # One app for the whole conversation: every turn and slash command uses it.
    with common.AppSession(settings, lazy=True, announce_model=True) as session:
        code = ChatSession(
            session,
            settings.principal,
            thread_id=thread,
            idle_minutes=settings.session_idle_minutes,
        ).run()
    sys.exit(code)


app.command()(dashboard)
app.add_typer(db_app, name="db")
app.add_typer(facts_app, name="facts")
app.add_typer(memories_app, name="memories", hidden=True)  # the old name of `memory`
app.add_typer(memory_app, name="memory")
app.add_typer(notes_app, name="notes")
