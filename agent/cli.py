"""``analyst``: the command line. A thin layer: parse, call :class:`AnalystApp`, render.

Heavy modules (LangGraph, numpy, matplotlib) are imported inside commands so ``--help`` stays
fast. Errors the user can act on print one clear line to stderr and exit non-zero; ``--json``
prints one JSON object on stdout whose keys are stable for scripts.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer

from agent import cli_common as common
from agent.cli_common import JsonOpt, TenantOpt, UserOpt, err, note

if TYPE_CHECKING:
    from agent.app import AnalystApp, ThreadView
    from agent.settings import Settings
    from agent.state import ModeChoice

T = TypeVar("T")

app = typer.Typer(
    name="analyst",
    help="An equity-research agent with layered memory. Runs offline on bundled market data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

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
DraftOpt = Annotated[
    str | None,
    typer.Option(
        "--draft",
        help="Hash (or an 8+ character prefix) of the draft you read; the decision fails if the "
        "thread's draft has changed. Default: the draft awaiting approval now.",
    ),
]


def main() -> None:
    app()


# -- plumbing -------------------------------------------------------------------------------


def _settings(
    user: str | None,
    tenant: str | None,
    model: str | None = None,
    *,
    announce: bool = False,
    checkpointer: str | None = None,
) -> Settings:
    """Settings from the environment plus flags; ``announce`` prints the model line once."""
    settings = common.settings(user, tenant, model=model, checkpointer_url=checkpointer)
    if announce:
        from agent.models import resolve_model

        line = resolve_model(settings).note
        if line:
            note(line)
    return settings


def _run(
    settings: Settings,
    body: Callable[[AnalystApp], Coroutine[Any, Any, T]],
    *,
    thread_id: str | None = None,
) -> T:
    """Open the app for the principal in ``settings`` and run ``body``; map errors to exits.

    When a model call fails mid-run the thread is saved at its last checkpoint; with
    ``thread_id`` the message says how to continue it.
    """
    from agent.app import AnalystApp
    from agent.errors import AnalystError, ModelError
    from memory.identity import Principal

    async def go() -> T:
        principal = Principal(settings.tenant_id, settings.user_id)
        async with AnalystApp.open(settings, principal) as analyst:
            return await body(analyst)

    try:
        return asyncio.run(go())
    except AnalystError as error:
        message = str(error)
        if thread_id and isinstance(error, ModelError):
            message += f" Thread {thread_id} is saved; continue it with: analyst resume {thread_id}"
        err(message)
        raise typer.Exit(error.exit_code) from None


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def _progress(json_mode: bool) -> Callable[[str, dict[str, Any]], None] | None:
    if json_mode:
        return None
    from agent import render

    console = _console()
    return lambda node, update: render.progress(console, node, update)


def _emit(view: ThreadView, json_mode: bool, *, show_draft: bool = True) -> None:
    if json_mode:
        print(json.dumps(view.to_json(), indent=2))
        return
    from agent import render

    render.thread(_console(), view, show_draft=show_draft)


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
    from agent.app import new_thread_id

    if mode not in ("auto", "deep", "flash"):
        err(f"--mode '{mode}' is not one of auto, deep, flash.")
        raise typer.Exit(2)
    chosen = cast("ModeChoice", mode)
    settings = _settings(user, tenant, model, announce=True, checkpointer=checkpointer)
    thread_id = thread or new_thread_id()
    try:
        view = _run(
            settings,
            lambda a: a.start(
                query, thread_id=thread_id, mode=chosen, on_update=_progress(json_mode)
            ),
            thread_id=thread_id,
        )
    except KeyboardInterrupt:
        err(
            f"Interrupted. Thread {thread_id} is saved; continue it with: analyst resume {thread_id}"
        )
        raise typer.Exit(130) from None
    _emit(view, json_mode)


@app.command()
def resume(
    thread_id: Annotated[str, typer.Argument(help="Thread to continue.")],
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Continue a thread that stopped mid-run (crash, Ctrl+C) from its last checkpoint."""
    settings = _settings(user, tenant, model, announce=True, checkpointer=checkpointer)
    try:
        view = _run(
            settings,
            lambda a: a.resume(thread_id, on_update=_progress(json_mode)),
            thread_id=thread_id,
        )
    except KeyboardInterrupt:
        err(f"Interrupted again. Continue with: analyst resume {thread_id}")
        raise typer.Exit(130) from None
    _emit(view, json_mode)


def _decide(
    thread_id: str,
    decision: dict[str, Any],
    user: str | None,
    tenant: str | None,
    json_mode: bool,
    draft: str | None,
    model: str | None = None,
    checkpointer: str | None = None,
) -> None:
    settings = _settings(user, tenant, model, checkpointer=checkpointer)
    decision.setdefault("approver", settings.user_id)

    async def body(a: AnalystApp) -> ThreadView:
        if draft is None:
            current = await a.view(thread_id)
            decision["draft_hash"] = current.draft_hash or ""
        else:
            decision["draft_hash"] = draft
        return await a.decide(thread_id, decision, on_update=_progress(json_mode))

    try:
        view = _run(settings, body, thread_id=thread_id)
    except KeyboardInterrupt:
        err(f"Interrupted. Thread {thread_id} is saved; check it with: analyst show {thread_id}")
        raise typer.Exit(130) from None
    _emit(view, json_mode, show_draft=False)


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
    decision: dict[str, Any] = {"action": "approve"}
    if as_:
        decision["approver"] = as_
    _decide(thread_id, decision, user, tenant, json_mode, draft, model, checkpointer)


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
    decision: dict[str, Any] = {"action": "reject", "feedback": feedback}
    if as_:
        decision["approver"] = as_
    _decide(thread_id, decision, user, tenant, json_mode, draft, model, checkpointer)


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
        err(f"Cannot read --file {file}: {e}. Give a UTF-8 Markdown file.")
        raise typer.Exit(2) from None
    decision: dict[str, Any] = {"action": "edit", "text": text}
    if as_:
        decision["approver"] = as_
    _decide(thread_id, decision, user, tenant, json_mode, draft, model, checkpointer)


threads_app = typer.Typer(
    help="List your threads (the default), delete one, or prune idle ones.",
    no_args_is_help=False,
)
app.add_typer(threads_app, name="threads")


@threads_app.callback(invoke_without_command=True)
def threads(
    ctx: typer.Context,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Most recent N threads.")] = 50,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """List your threads with their status."""
    ctx.obj = {"user": user, "tenant": tenant, "checkpointer": checkpointer}
    if ctx.invoked_subcommand is not None:
        return
    settings = _settings(user, tenant, checkpointer=checkpointer)
    views = _run(settings, lambda a: a.threads(limit))
    if json_mode:
        print(
            json.dumps(
                [
                    {
                        k: v.to_json()[k]
                        for k in (
                            "thread_id",
                            "status",
                            "query",
                            "ticker",
                            "draft_hash",
                            "publication",
                        )
                    }
                    for v in views
                ],
                indent=2,
            )
        )
        return
    from agent import render

    render.thread_table(_console(), views)


def _group_settings(
    ctx: typer.Context, user: str | None, tenant: str | None, checkpointer: str | None
) -> Settings:
    """Options given to the subcommand win over those given to the ``threads`` group."""
    parent = ctx.parent.obj if ctx.parent is not None and ctx.parent.obj else {}
    return _settings(
        user or parent.get("user"),
        tenant or parent.get("tenant"),
        checkpointer=checkpointer or parent.get("checkpointer"),
    )


@threads_app.command("prune")
def threads_prune(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than", help="Delete threads idle for longer than this: 90d, 12h, 2w..."
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be deleted; delete nothing.")
    ] = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Delete your threads idle for longer than --older-than: whole threads, never part of one."""
    settings = _group_settings(ctx, user, tenant, checkpointer)
    report = _run(settings, lambda a: a.prune(older_than, dry_run=dry_run))
    if json_mode:
        print(json.dumps(report.to_json(), indent=2))
        return
    console = _console()
    verb = "would delete" if dry_run else "deleted"
    for item in report.deleted:
        console.print(
            f"{verb} {item.thread_id}  (idle {item.idle_days} days, last activity "
            f"{item.last_activity})"
        )
    running = f", {len(report.skipped_running)} running (skipped)" if report.skipped_running else ""
    console.print(
        f"{len(report.deleted)} {verb}, {report.kept} kept{running}; cutoff {report.cutoff}."
    )


@threads_app.command("delete")
def threads_delete(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(help="Thread to delete with all its checkpoints.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Delete one of your threads: every checkpoint and write of it, and its listing."""
    settings = _group_settings(ctx, user, tenant, checkpointer)
    if not yes and not typer.confirm(f"Delete thread {thread_id} and all its checkpoints?"):
        raise typer.Exit(1)
    _run(settings, lambda a: a.delete_thread(thread_id))
    _console().print(f"deleted {thread_id}")


@app.command()
def show(
    thread_id: Annotated[str, typer.Argument(help="Thread to show.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Show a thread: status, plan, draft, critic verdict, publication."""
    settings = _settings(user, tenant, checkpointer=checkpointer)
    _emit(_run(settings, lambda a: a.view(thread_id)), json_mode)


@app.command()
def history(
    thread_id: Annotated[str, typer.Argument(help="Thread whose checkpoints to list.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """List a thread's checkpoints, newest first."""
    settings = _settings(user, tenant, checkpointer=checkpointer)
    items = _run(settings, lambda a: a.history(thread_id))
    if json_mode:
        print(json.dumps([vars(c) for c in items], indent=2))
        return
    from agent import render

    render.history_table(_console(), thread_id, items)


@app.command()
def chat(
    model: ModelOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Continue this thread.")] = None,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """A chat-style session: ask for analyses, then /approve, /reject, /edit. /help lists commands."""
    from agent.chat import ChatSession

    settings = _settings(user, tenant, model, announce=True, checkpointer=checkpointer)
    session = ChatSession(settings, thread_id=thread)
    sys.exit(session.run())


# -- command groups owned by their memory tiers ----------------------------------------------
# Each module below defines a Typer app whose module imports only typer at top level (keep
# `analyst --help` fast); register one line per group here.
from agent.cli_db import app as db_app  # noqa: E402  (typer-only module)
from agent.cli_facts import app as facts_app  # noqa: E402  (typer-only module)
from agent.cli_memories import app as memories_app  # noqa: E402  (typer-only module)
from agent.cli_notes import app as notes_app  # noqa: E402  (typer-only module)

app.add_typer(db_app, name="db")
app.add_typer(facts_app, name="facts")
app.add_typer(memories_app, name="memories")
app.add_typer(notes_app, name="notes")


if __name__ == "__main__":  # pragma: no cover
    main()
