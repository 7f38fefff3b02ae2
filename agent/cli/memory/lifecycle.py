"""``analyst memory`` commands that delete or copy what is kept of you.

``forget`` deletes items by id, what a topic or a date range finds, or everything of yours
(account deletion): the cascade takes what was derived, a tombstone keeps extraction from
learning it again, and nothing goes without ``--yes`` (or ``--only`` the listed ids);
``forget --key KEY`` forgets one long-term memory at once. ``sweep [--dry-run]`` enforces the
retention policy (``ANALYST_RETENTION``) across tiers. ``backup FILE`` writes everything of
yours to one file (any backend); ``restore FILE`` puts it back without what you forgot since.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import agent.cli.common as common
from agent.cli.common import CommandError, JsonOpt, TenantOpt, UserOpt

if TYPE_CHECKING:
    from agent.settings import Settings

app = typer.Typer()


IdsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Ids to forget: an episode, fact, candidate, procedure, session or memory key."
    ),
]
TopicOpt = Annotated[
    str | None,
    typer.Option("--topic", help="Find what is about TEXT (by keyword and by meaning)."),
]
AboutOpt = Annotated[
    str | None,
    typer.Option(
        "--about",
        help='The facts a description names by attribute and value ("that I own NVDA", '
        '"my horizon", "where I work").',
    ),
]
FromOpt = Annotated[
    str | None, typer.Option("--from", help="First day (YYYY-MM-DD, UTC) of a range.")
]
ToOpt = Annotated[
    str | None, typer.Option("--to", help="Last day (YYYY-MM-DD, UTC) of a range, included.")
]
OnlyOpt = Annotated[
    str | None,
    typer.Option("--only", help="Delete only these listed ids (ID,ID) of a topic or range."),
]
EverythingOpt = Annotated[
    bool,
    typer.Option("--everything", help="Account deletion: everything of yours, every tier."),
]
KeyOpt = Annotated[
    str | None,
    typer.Option(
        "--key",
        help="One long-term memory (see: analyst memory list --memories), forgotten at once.",
    ),
]
YesOpt = Annotated[bool, typer.Option("--yes", help="Delete (without it: only show).")]
DraftsOpt = Annotated[
    bool,
    typer.Option(
        "--drafts", help="Also delete the threads it takes whose draft awaits a decision."
    ),
]


@app.command()
def forget(
    ids: IdsArg = None,
    topic: TopicOpt = None,
    about: AboutOpt = None,
    from_: FromOpt = None,
    to: ToOpt = None,
    only: OnlyOpt = None,
    everything: EverythingOpt = False,
    key: KeyOpt = None,
    yes: YesOpt = False,
    drafts: DraftsOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Forget items by ID, what --topic, --about or --from/--to finds, --everything, or a --key.

    Each forget cascades to what was derived (facts, summaries, candidates, memories, their
    vectors and cache rows, extraction jobs, the threads that hold the words) and stores a
    tombstone (a keyed hash) so extraction does not learn it again. A topic or range is
    listed first: --yes deletes all of it, --only ID,ID the listed ids you name. Without
    --yes (or --only) nothing is deleted and the exit status is 2. The receipt lists, per
    tier, what was deleted (counts and ids), what was kept and why, and the backups that
    still hold the data. --about TEXT finds the facts TEXT names by attribute and value:
    an element of a list (holdings:NVDA) goes from every version that held it and the rest
    of the list is kept; summaries naming it are rewritten. A thread whose draft awaits a
    decision is kept unless --drafts says to delete it too. --key KEY forgets that memory
    the same way, without a listing or --yes (exit 3 if you have no memory KEY)."""
    if key is not None:
        asked = ids or topic is not None or about is not None or from_ is not None
        if asked or to is not None or only or everything:
            raise CommandError(
                "--key forgets one memory; give no ids, topic, range or --everything."
            )
        forget_key(key, user, tenant, json_mode)
        return
    ranged = from_ is not None or to is not None
    if everything:
        if ids or topic is not None or about is not None or ranged:
            raise CommandError("--everything forgets everything; give no ids, topic or range.")
        settings = common.settings(user, tenant)
        receipt = common.call(settings, lambda a: a.memory.forget_account(confirm=yes))
        done = yes
    else:
        if not ids and topic is None and about is None and not ranged:
            raise CommandError(
                "Say what to forget: ID..., --topic TEXT, --about TEXT, --from DATE --to DATE, "
                "or --everything (account deletion)."
            )
        since, until = common.day(from_, "--from"), common.day(to, "--to", end=True)
        settings = common.settings(user, tenant)
        receipt = _forget_found(
            settings, ids or (), topic, about, (since, until), only, yes=yes, drafts=drafts
        )
        done = bool(receipt["confirmed"])
    _show_forget(receipt, done=done, json_mode=json_mode, listed=not (everything or ids))


def _forget_found(
    settings: Settings,
    ids: Sequence[str],
    topic: str | None,
    about: str | None,
    days: tuple[datetime | None, datetime | None],
    only: str | None,
    *,
    yes: bool,
    drafts: bool,
) -> dict[str, Any]:
    """The receipt of forgetting ``ids`` and what ``topic``, ``about`` or the ``days`` (since,
    until) find; ``only``: the listed ids (ID,ID) to delete of them."""
    chosen = [i.strip() for i in (only or "").split(",") if i.strip()] if only else None
    since, until = days
    return common.call(
        settings,
        lambda a: a.memory.forget(
            ids,
            topic=topic,
            about=about,
            since=since,
            until=until,
            only=chosen,
            confirm=yes,
            drafts=drafts,
        ),
    )


def _show_forget(receipt: dict[str, Any], *, done: bool, json_mode: bool, listed: bool) -> None:
    """Print a forget's receipt; if nothing was deleted, say how to delete (``listed``: what a
    topic or range found, of which --only may delete some) and exit 2."""
    if json_mode:
        common.print_json(receipt, ensure_ascii=False)
    else:
        import agent.cli.render as render

        render.forget_receipt(common.console(), receipt, done=done)
    if not done:
        raise CommandError(
            "Nothing was deleted: run again with --yes to delete all of the above"
            + (", or with --only ID,ID to delete some of it" if listed else "")
            + "."
        )


def forget_key(key: str, user: str | None, tenant: str | None, json_mode: bool) -> None:
    """``analyst memory forget --key KEY``: forget one long-term memory now, as any forget does
    (:class:`~memory.errors.MemoryNotFoundError` if there is none); JSON: ``{"forgotten": KEY}``."""
    settings = common.settings(user, tenant)
    common.call(settings, lambda a: a.memory.forget_memory(key))
    if json_mode:
        common.print_json({"forgotten": key}, indent=None)
        return
    common.console().print(f"Forgot {key}.", soft_wrap=True)


@app.command()
def backup(
    dest: Annotated[Path, typer.Argument(help="A new file for the backup (JSON, mode 0600).")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Back up everything kept of you (journal, facts with history, memories, your profile
    document, threads with every checkpoint) to one file, on any backend. `analyst memory
    restore FILE` puts it back without what you forget in the meantime."""
    settings = common.settings(user, tenant)
    done = common.call(settings, lambda a: a.memory.backup(dest))
    if json_mode:
        common.print_json(done)
        return
    counts = ", ".join(f"{n} {tier}" for tier, n in done["counts"].items())
    print(f"backup: {done['backup']} ({done['bytes']} bytes): {counts}")
    print(f"restore with: analyst memory restore {done['backup']}")


@app.command()
def restore(
    src: Annotated[Path, typer.Argument(help="A file made by `analyst memory backup`.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Restore a memory backup of yours. What you forgot after the backup was made stays
    forgotten (tombstones and the audit's deletes are applied first), with what was derived
    from it; what is stored already is kept as it is."""
    settings = common.settings(user, tenant)
    receipt = common.call(settings, lambda a: a.memory.restore(src))
    if json_mode:
        common.print_json(receipt)
        return
    console = common.console()
    for tier, found in receipt["restored"].items():
        skipped = receipt["skipped"].get(tier, {}).get("count", 0)
        console.print(
            f"{tier}: restored {found['count']}, skipped {skipped} (forgotten since the backup)"
        )
    console.print(receipt["why_skipped"], soft_wrap=True, markup=False)


@app.command()
def sweep(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be deleted.")
    ] = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Delete what the retention policy (ANALYST_RETENTION) says has expired, in every tier.

    Expired episodes take what was derived from them; summaries, events, memories,
    candidates, finished jobs, old fact history rows, retired procedures and idle threads go
    by their own ages. Current facts, active procedures and high-importance memories are
    never deleted by age: past their review date they are listed as due for review, with the
    commands that confirm or delete them. The receipt lists, per tier, what was deleted
    (counts and ids) and what was kept and why."""
    settings = common.settings(user, tenant)
    receipt = common.call(settings, lambda a: a.memory.sweep(dry_run=dry_run))
    if json_mode:
        common.print_json(receipt, ensure_ascii=False)
        return
    import agent.cli.render as render

    render.forget_receipt(common.console(), receipt, done=not dry_run)
