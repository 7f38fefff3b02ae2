"""``analyst db``: explicit, idempotent schema setup for the storage backends.

``analyst db setup`` creates or migrates the checkpointer's tables (Postgres), search indexes
(Redis) or file (SQLite) and says what it did; running it again changes nothing. The other
commands also apply a missing schema on first use, so this is for operators who prefer to
provision ahead of time (and for checking a URL works).

Only typer and the standard library are imported at module level (``analyst --help`` stays
fast); the application is imported inside the command.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli import common

app = typer.Typer(help="Storage schema: set up or migrate the backends (idempotent).")


@app.command("setup")
def setup(
    checkpointer: Annotated[
        str | None,
        typer.Option(
            "--checkpointer",
            help="Checkpointer URL (default: $ANALYST_CHECKPOINTER, else SQLite in the data "
            "folder).",
        ),
    ] = None,
) -> None:
    """Create or migrate the checkpointer schema; safe to run any number of times."""
    settings = common.settings(checkpointer_url=checkpointer)
    message = common.call(settings, lambda a: a.setup_checkpointer())
    print(f"checkpointer: {message}")
