"""``analyst db``: schema setup for the storage backends; check, backup and restore.

``analyst db check`` runs an integrity check of every embedded file and reads only;
``analyst db backup DEST`` / ``analyst db restore SRC`` copy the embedded defaults (SQLite's
online backup API; the long-term memory folder while no process holds it). A restore keeps the
tombstones and audit entries made since the backup and forgets again what users had forgotten
(:func:`agent.app.memory_backup.reapply_forgets`), so a restored file does not bring it back.

``analyst db setup`` creates or migrates the checkpointer's tables (Postgres), search indexes
(Redis) or file (SQLite) and says what it did; running it again changes nothing. The other
commands also apply a missing schema on first use, so this is for operators who prefer to
provision ahead of time (and for checking a URL works).

Only typer and the standard library are imported at module level (``analyst --help`` stays
fast); the application is imported inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agent.cli import common
from memory.errors import StorageError

if TYPE_CHECKING:
    from agent.app import AnalystApp
    from memory.backup import Copied
    from memory.health import FileCheck

app = typer.Typer(
    help="Storage: set up the backends (idempotent); check, back up and restore the embedded files."
)


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


@app.command("check")
def check(
    json_mode: common.JsonOpt = False,
) -> None:
    """Integrity check of every embedded file (checkpoints, threads, facts, embeddings cache,
    document index, the long-term memory folder); reads only. Exit 1 if one is damaged."""
    settings = common.settings()

    async def body(a: AnalystApp) -> list[FileCheck]:
        return a.check_storage()

    checks = common.call(settings, body)
    if json_mode:
        common.print_json([c.to_json() for c in checks])
    else:
        for c in checks:
            print(f"{c.status:<8} {c.what:<24} {c.path}")
            if c.detail:
                print(f"         {c.detail}")
    damaged = [c for c in checks if not c.ok]
    if damaged:
        names = ", ".join(f"{c.what} {c.path}" for c in damaged)
        raise StorageError(
            f"{len(damaged)} damaged: {names}. Restore from a backup with: analyst db restore "
            "BACKUP (a cache or index can simply be moved aside: it is rebuilt)."
        )


@app.command("backup")
def backup(
    dest: Annotated[Path, typer.Argument(help="A new (or empty) folder for the backup.")],
    json_mode: common.JsonOpt = False,
) -> None:
    """Copy every embedded file into DEST: SQLite files with SQLite's online backup (safe
    while other processes use them), the long-term memory folder while no process holds it."""
    settings = common.settings()

    async def body(a: AnalystApp) -> list[Copied]:
        return a.backup(dest)

    copied = common.call(settings, body)
    if json_mode:
        common.print_json({"backup": str(dest), "files": [c.to_json() for c in copied]})
        return
    for c in copied:
        print(f"{c.what:<24} {c.source} -> {c.target} ({c.size} bytes)")
    print(f"backup: {len(copied)} files in {dest} (restore with: analyst db restore {dest})")


@app.command("restore")
def restore(
    src: Annotated[Path, typer.Argument(help="A folder made by `analyst db backup`.")],
    json_mode: common.JsonOpt = False,
) -> None:
    """Restore the embedded files from a backup. Every file is checked first; the files it
    replaces are kept under <data dir>/backups/. Stop other analyst processes first."""
    settings = common.settings()

    async def body(a: AnalystApp) -> tuple[list[Copied], str, dict[str, dict[str, int]]]:
        restored, kept = a.restore(src)
        return restored, kept, await a.reapply_forgets()

    restored, kept, forgotten = common.call(settings, body)
    if json_mode:
        common.print_json(
            {
                "restored": [c.to_json() for c in restored],
                "previous_files_kept_in": kept,
                "forgotten_again": forgotten,
            }
        )
        return
    for c in restored:
        print(f"{c.what:<24} {c.source} -> {c.target}")
    print(f"restored {len(restored)} files from {src}; the files replaced are kept in {kept}")
    for who, counts in forgotten.items():
        done = ", ".join(f"{n} {tier}" for tier, n in counts.items())
        print(f"forgotten again for {who} (forgotten after the backup was made): {done}")
