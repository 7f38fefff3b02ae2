"""``analyst threads``: list your threads (the default), delete one, or prune idle ones.

Options given to the group (``analyst threads --user bob prune ...``) apply to its
subcommands; an option given to the subcommand wins. Only typer and the standard library are
imported at module level so ``analyst --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

import agent.cli.common as common
from agent.cli.common import CheckpointerOpt, JsonOpt, TenantOpt, UserOpt

if TYPE_CHECKING:
    from agent.app import AnalystApp
    from agent.settings import Settings

app = typer.Typer(
    help="List your threads (the default), delete one, or prune idle ones.",
    no_args_is_help=False,
)

#: The keys of each thread in ``analyst threads --json``.
LISTED_KEYS = ("thread_id", "status", "query", "ticker", "draft_hash", "publication")


@app.callback(invoke_without_command=True)
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
    settings = common.settings(user, tenant, checkpointer_url=checkpointer)
    views = common.call(settings, lambda a: a.threads(limit))
    if json_mode:
        common.print_json([{k: v.to_json()[k] for k in LISTED_KEYS} for v in views])
        return
    import agent.cli.render as render

    render.thread_table(common.console(), views)


def _group_settings(
    ctx: typer.Context, user: str | None, tenant: str | None, checkpointer: str | None
) -> Settings:
    """Options given to the subcommand win over those given to the ``threads`` group."""
    parent = ctx.parent.obj if ctx.parent is not None and ctx.parent.obj else {}
    return common.settings(
        user or parent.get("user"),
        tenant or parent.get("tenant"),
        checkpointer_url=checkpointer or parent.get("checkpointer"),
    )


@app.command("prune")
def prune(
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
    report = common.call(settings, lambda a: a.prune(older_than, dry_run=dry_run))
    if json_mode:
        common.print_json(report.to_json())
        return
    console = common.console()
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


@app.command("delete")
def delete(
    ctx: typer.Context,
    thread_id: Annotated[str, typer.Argument(help="Thread to delete with all its checkpoints.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    checkpointer: CheckpointerOpt = None,
) -> None:
    """Delete one of your threads: every checkpoint and write of it, and its listing."""
    settings = _group_settings(ctx, user, tenant, checkpointer)

    async def delete(app: AnalystApp) -> None:
        # Whose it is first: a thread that is not yours is not found, before any question.
        app.require_thread(thread_id)
        if not yes and not typer.confirm(f"Delete thread {thread_id} and all its checkpoints?"):
            raise typer.Exit(1)
        await app.delete_thread(thread_id)

    common.call(settings, delete)
    common.console().print(f"deleted {thread_id}")
