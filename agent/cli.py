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

UserOpt = Annotated[
    str | None, typer.Option("--user", help="User to act as (default: $ANALYST_USER or $USER).")
]
TenantOpt = Annotated[
    str | None, typer.Option("--tenant", help="Tenant (default: $ANALYST_TENANT or 'default').")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")]
DraftOpt = Annotated[
    str | None,
    typer.Option(
        "--draft",
        help="Hash (or 12+ char prefix) of the draft you read; the decision fails if the "
        "thread's draft has changed. Default: the draft awaiting approval now.",
    ),
]


def main() -> None:
    app()


# -- plumbing -------------------------------------------------------------------------------


def _settings(user: str | None, tenant: str | None) -> Settings:
    from agent.settings import Settings

    return Settings.from_env(user_id=user, tenant_id=tenant)


def _run(settings: Settings, body: Callable[[AnalystApp], Coroutine[Any, Any, T]]) -> T:
    """Open the app for the principal in ``settings`` and run ``body``; map errors to exits."""
    from agent.app import AnalystApp
    from agent.errors import AnalystError
    from memory.threads import Principal

    async def go() -> T:
        principal = Principal(settings.tenant_id, settings.user_id)
        async with AnalystApp.open(settings, principal) as analyst:
            return await body(analyst)

    try:
        return asyncio.run(go())
    except AnalystError as error:
        _err(str(error))
        raise typer.Exit(error.exit_code) from None


def _err(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)


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
    user: UserOpt = None,
    tenant: TenantOpt = None,
    thread: Annotated[
        str | None, typer.Option("--thread", help="Thread id (default: a new one).")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="auto (router decides), deep or flash.")
    ] = "auto",
    json_mode: JsonOpt = False,
) -> None:
    """Research a ticker and stop at the approval point with a draft and the critic's verdict."""
    from agent.app import new_thread_id

    if mode not in ("auto", "deep", "flash"):
        _err(f"--mode '{mode}' is not one of auto, deep, flash.")
        raise typer.Exit(2)
    chosen = cast("ModeChoice", mode)
    settings = _settings(user, tenant)
    thread_id = thread or new_thread_id()
    try:
        view = _run(
            settings,
            lambda a: a.start(
                query, thread_id=thread_id, mode=chosen, on_update=_progress(json_mode)
            ),
        )
    except KeyboardInterrupt:
        _err(
            f"Interrupted. Thread {thread_id} is saved; continue it with: analyst resume {thread_id}"
        )
        raise typer.Exit(130) from None
    _emit(view, json_mode)


@app.command()
def resume(
    thread_id: Annotated[str, typer.Argument(help="Thread to continue.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Continue a thread that stopped mid-run (crash, Ctrl+C) from its last checkpoint."""
    settings = _settings(user, tenant)
    try:
        view = _run(settings, lambda a: a.resume(thread_id, on_update=_progress(json_mode)))
    except KeyboardInterrupt:
        _err(f"Interrupted again. Continue with: analyst resume {thread_id}")
        raise typer.Exit(130) from None
    _emit(view, json_mode)


def _decide(
    thread_id: str,
    decision: dict[str, Any],
    user: str | None,
    tenant: str | None,
    json_mode: bool,
    draft: str | None,
) -> None:
    settings = _settings(user, tenant)
    decision.setdefault("approver", settings.user_id)

    async def body(a: AnalystApp) -> ThreadView:
        if draft is None:
            current = await a.view(thread_id)
            decision["draft_hash"] = current.draft_hash or ""
        else:
            decision["draft_hash"] = draft
        return await a.decide(thread_id, decision, on_update=_progress(json_mode))

    _emit(_run(settings, body), json_mode, show_draft=False)


@app.command()
def approve(
    thread_id: Annotated[str, typer.Argument(help="Thread awaiting approval.")],
    as_: Annotated[
        str | None, typer.Option("--as", help="Approver name recorded with the decision.")
    ] = None,
    draft: DraftOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Approve the draft and publish it to .agent-memory/research/."""
    decision: dict[str, Any] = {"action": "approve"}
    if as_:
        decision["approver"] = as_
    _decide(thread_id, decision, user, tenant, json_mode, draft)


@app.command()
def reject(
    thread_id: Annotated[str, typer.Argument(help="Thread awaiting approval.")],
    feedback: Annotated[
        str, typer.Option("--feedback", help="What the next revision must change.")
    ],
    as_: Annotated[str | None, typer.Option("--as", help="Reviewer name.")] = None,
    draft: DraftOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Send the draft back to the reporter with feedback (at most 3 revisions)."""
    decision: dict[str, Any] = {"action": "reject", "feedback": feedback}
    if as_:
        decision["approver"] = as_
    _decide(thread_id, decision, user, tenant, json_mode, draft)


@app.command()
def edit(
    thread_id: Annotated[str, typer.Argument(help="Thread awaiting approval.")],
    file: Annotated[Path, typer.Option("--file", help="Markdown file with your version.")],
    as_: Annotated[str | None, typer.Option("--as", help="Editor name.")] = None,
    draft: DraftOpt = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Replace the draft with your own text and publish that."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        _err(f"Cannot read --file {file}: {e}. Give a UTF-8 Markdown file.")
        raise typer.Exit(2) from None
    decision: dict[str, Any] = {"action": "edit", "text": text}
    if as_:
        decision["approver"] = as_
    _decide(thread_id, decision, user, tenant, json_mode, draft)


@app.command()
def threads(
    user: UserOpt = None,
    tenant: TenantOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Most recent N threads.")] = 50,
    json_mode: JsonOpt = False,
) -> None:
    """List your threads with their status."""
    settings = _settings(user, tenant)
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


@app.command()
def show(
    thread_id: Annotated[str, typer.Argument(help="Thread to show.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Show a thread: status, plan, draft, critic verdict, publication."""
    settings = _settings(user, tenant)
    _emit(_run(settings, lambda a: a.view(thread_id)), json_mode)


@app.command()
def history(
    thread_id: Annotated[str, typer.Argument(help="Thread whose checkpoints to list.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """List a thread's checkpoints, newest first."""
    settings = _settings(user, tenant)
    items = _run(settings, lambda a: a.history(thread_id))
    if json_mode:
        print(json.dumps([vars(c) for c in items], indent=2))
        return
    from agent import render

    render.history_table(_console(), thread_id, items)


@app.command()
def chat(
    user: UserOpt = None,
    tenant: TenantOpt = None,
    thread: Annotated[str | None, typer.Option("--thread", help="Continue this thread.")] = None,
) -> None:
    """A chat-style session: ask for analyses, then /approve, /reject, /edit. /help lists commands."""
    from agent.chat import ChatSession

    settings = _settings(user, tenant)
    session = ChatSession(settings, thread_id=thread)
    sys.exit(session.run())


if __name__ == "__main__":  # pragma: no cover
    main()
