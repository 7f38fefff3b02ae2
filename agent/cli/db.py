"""``analyst db``: schema setup for the storage backends; check, snapshot and restore the files.

``analyst db check`` runs an integrity check of every embedded file and reads only;
``analyst db snapshot DEST`` / ``analyst db restore-snapshot SRC`` copy the embedded files
themselves, for every user at once (SQLite's online backup API; the long-term memory folder
while no process holds it); ``analyst memory backup`` is the other kind, one user's memory as a
logical document on any backend. A restore keeps the tombstones and audit entries made since the
snapshot and forgets again what users had forgotten, so a restored file does not bring it back.
``db backup`` / ``db restore`` are hidden aliases of the two (they say the new spelling).

``analyst db init --admin USER`` is the ledger owner's act that makes a tenant's first admin
(``memory.facts.FactStore.bootstrap_admin``): on SQLite it must run as the OS user owning the
data folder, on Postgres with ``ANALYST_FACTS`` naming the owner's URL. No tenant's admin is
ever whoever asked first.

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

import agent.cli.common as common
from memory.errors import StorageError

if TYPE_CHECKING:
    from agent.app import AnalystApp
    from memory.backup import Copied
    from memory.health import FileCheck

app = typer.Typer(
    help="Storage: set up the backends (idempotent); check, snapshot and restore the embedded "
    "files."
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
    message = common.call(settings, lambda a: a.storage.setup_checkpointer())
    print(f"checkpointer: {message}")


@app.command("init")
def init(
    admin: Annotated[
        str,
        typer.Option(
            "--admin", help="The user to make an admin of the tenant (may grant, reads all)."
        ),
    ],
    tenant: common.TenantOpt = None,
    json_mode: common.JsonOpt = False,
) -> None:
    """Create the fact ledger if needed and make USER an admin of the tenant: the owner's act
    (SQLite: run as the OS user owning the data folder; Postgres: ANALYST_FACTS=<owner URL>)."""
    from memory.errors import FactAuthorityError

    settings = common.settings(admin, tenant)

    async def body(a: AnalystApp) -> bool:
        return await (await a.tiers.facts()).bootstrap_admin(admin)

    try:
        made = common.call(settings, body)
    except FactAuthorityError as e:
        raise common.CommandError(str(e)) from None
    if json_mode:
        common.print_json(
            {"tenant": settings.tenant_id, "admin": admin, "granted": made}, indent=None
        )
        return
    state = "granted" if made else "already an admin"
    print(f"{admin}: admin of tenant {settings.tenant_id} ({state}).")


@app.command("check")
def check(
    json_mode: common.JsonOpt = False,
) -> None:
    """Integrity check of every embedded file (checkpoints, threads, facts, embeddings cache,
    document index, the long-term memory folder); reads only. Exit 1 if one is damaged or
    the disk beside one is full (said apart: "full" and "unwritable" files are intact)."""
    settings = common.settings()

    async def body(a: AnalystApp) -> list[FileCheck]:
        return a.storage.check_storage()

    checks = common.call(settings, body)
    if json_mode:
        common.print_json([c.to_json() for c in checks])
    else:
        for c in checks:
            print(f"{c.status:<8} {c.what:<24} {c.path}")
            if c.detail:
                print(f"         {c.detail}")
    damaged = [c for c in checks if not c.ok]
    full = [c for c in checks if c.status == "full"]
    if full and not damaged:
        names = ", ".join(f"{c.what} {c.path}" for c in full)
        raise StorageError(
            f"No file is damaged, but the disk is full beside: {names}. Free some space (no "
            "restore is needed); writes fail until then and reads keep working."
        )
    if damaged:
        names = ", ".join(f"{c.what} {c.path}" for c in damaged)
        raise StorageError(
            f"{len(damaged)} damaged: {names}. Restore from a snapshot with: analyst db "
            "restore-snapshot SNAPSHOT (a cache or index can simply be moved aside: it is "
            "rebuilt)."
        )


@app.command("snapshot")
def snapshot(
    dest: Annotated[Path, typer.Argument(help="A new (or empty) folder for the snapshot.")],
    json_mode: common.JsonOpt = False,
) -> None:
    """Copy every embedded file into DEST: SQLite files with SQLite's online backup (safe
    while other processes use them), the long-term memory folder while no process holds it.
    (One user's memory on any backend: `analyst memory backup FILE`.)"""
    settings = common.settings()

    async def body(a: AnalystApp) -> list[Copied]:
        return a.storage.backup(dest)

    copied = common.call(settings, body)
    if json_mode:
        common.print_json({"backup": str(dest), "files": [c.to_json() for c in copied]})
        return
    for c in copied:
        print(f"{c.what:<24} {c.source} -> {c.target} ({c.allocated} bytes on disk)")
    print(
        f"snapshot: {len(copied)} files, {sum(c.allocated for c in copied)} bytes on disk, "
        f"in {dest} "
        f"(restore with: analyst db restore-snapshot {dest})"
    )


@app.command("restore-snapshot")
def restore_snapshot(
    src: Annotated[Path, typer.Argument(help="A folder made by `analyst db snapshot`.")],
    json_mode: common.JsonOpt = False,
) -> None:
    """Restore the embedded files from a snapshot. Every file is checked first; the files it
    replaces are kept under <data dir>/backups/ (the newest ANALYST_KEEP_BEFORE_RESTORE such
    copies stay). Stop other analyst processes first."""
    settings = common.settings()

    async def body(a: AnalystApp) -> tuple[list[Copied], str, dict[str, dict[str, int]]]:
        restored, kept = a.storage.restore(src)
        return restored, kept, await a.storage.reapply_forgets()

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
    print(
        f"(the newest {settings.keep_before_restore} such copies are kept: "
        "ANALYST_KEEP_BEFORE_RESTORE)"
    )
    for who, counts in forgotten.items():
        done = ", ".join(f"{n} {tier}" for tier, n in counts.items())
        print(f"forgotten again for {who} (forgotten after the snapshot was made): {done}")


@app.command("backup", hidden=True)
def backup(
    dest: Annotated[Path, typer.Argument(help="A new (or empty) folder for the snapshot.")],
    json_mode: common.JsonOpt = False,
) -> None:
    """The old name of `analyst db snapshot`."""
    common.renamed("db backup", "db snapshot")
    snapshot(dest, json_mode)


@app.command("restore", hidden=True)
def restore(
    src: Annotated[Path, typer.Argument(help="A folder made by `analyst db snapshot`.")],
    json_mode: common.JsonOpt = False,
) -> None:
    """The old name of `analyst db restore-snapshot`."""
    common.renamed("db restore", "db restore-snapshot")
    restore_snapshot(src, json_mode)
