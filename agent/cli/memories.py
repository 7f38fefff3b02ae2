"""``analyst memories``: the old spelling of the long-term memory commands, kept as a hidden
alias group. Each command works as it did and first says its new spelling on stderr:

    memories add TEXT      ->  memory add TEXT
    memories search QUERY  ->  memory search QUERY
    memories list          ->  memory list --memories
    memories forget KEY    ->  memory forget --key KEY
"""

from __future__ import annotations

from typing import Annotated

import typer

import agent.cli.common as common
from agent.cli.common import JsonOpt, TenantOpt, UserOpt
from agent.cli.memory import items, lifecycle

#: Each old command and what it is now, after ``analyst``.
RENAMED = {
    "add": "memory add",
    "search": "memory search",
    "list": "memory list --memories",
    "forget": "memory forget --key",
}

app = common.group("memories", "The old name of `analyst memory` (add, search, list, forget).")


@app.callback()
def _renamed(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand in RENAMED:
        common.renamed(f"memories {ctx.invoked_subcommand}", RENAMED[ctx.invoked_subcommand])


app.command()(items.add)
app.command()(items.search)


@app.command(name="list")
def list_(
    user: UserOpt = None,
    tenant: TenantOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="Most recent N memories.")] = 100,
    json_mode: JsonOpt = False,
) -> None:
    """List your memories, newest first."""
    items.list_memories(user, tenant, limit, json_mode)


@app.command()
def forget(
    key: Annotated[
        str, typer.Argument(help="Key of the memory (see: analyst memory list --memories).")
    ],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Forget one memory."""
    lifecycle.forget_key(key, user, tenant, json_mode)
