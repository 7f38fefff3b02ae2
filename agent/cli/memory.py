"""``analyst memory``: what the agent learned from your conversations, and its write state.

The write path (``agent.learning.learner``) stores every turn as an episode and extracts memory at
durable points: after a decision, and when a session ends. These commands show and steer it:

- ``review`` lists candidates awaiting your word (standing instructions, repeated behaviour,
  facts whose authority is unclear, preferences) and the items the grounding check refused;
  ``confirm`` / ``reject`` decide one (a confirmed standing instruction becomes a procedure).
- ``context`` shows what a new session loads; ``procedures``, ``sessions``, ``episodes`` and
  ``events`` (by meaning, time and ticker) show the layers; ``jobs`` shows the extraction queue; ``worker`` drains it (ending sessions
  idle for ``ANALYST_SESSION_IDLE_MINUTES``); ``end THREAD`` ends one session now;
  ``consolidate`` merges older events into themes per ticker and decays them (facts untouched).
- ``show`` is seed 003's "what the agent remembers about you" (each item with the command that
  edits or deletes it); ``why THREAD`` what a thread's last request used, from its state;
  ``remember TEXT --as fact|preference|procedure`` stores what you ask, citing an episode;
  ``list`` is one line per remembered item; ``export`` everything of yours as one JSON document.
- ``sweep [--dry-run]`` enforces the retention policy (``ANALYST_RETENTION``) across tiers.
- ``backup FILE`` writes everything of yours to one file (any backend); ``restore FILE`` puts it
  back without what you forgot since (tombstones and the audit's deletes applied first).

A thin layer like the other groups: parse, call :class:`~agent.app.AnalystApp`, render.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli import common
from agent.cli.common import CommandError, JsonOpt, TenantOpt, UserOpt, group

app = group("memory", "What the analyst learned from your conversations: review, context, jobs.")


def _print(rows: list[dict[str, Any]], json_mode: bool, key: str, empty: str, columns: Any) -> None:
    if json_mode:
        common.print_json({key: rows}, ensure_ascii=False)
        return
    console = common.console()
    if not rows:
        console.print(empty, soft_wrap=True)
        return
    from agent.cli import render

    render.listing(console, columns(rows))


def _candidate_columns(rows: list[dict[str, Any]]) -> list[Any]:
    from agent.cli.render import Column

    return [
        Column("id", [r["candidate_id"] for r in rows]),
        Column("kind", [r["kind"] for r in rows]),
        Column("status", [r["status"] for r in rows], drop=2),
        Column("reason", [r["reason"] for r in rows], drop=1),
        Column("quote", [r["quote"] for r in rows], elastic=True, min_width=24),
    ]


@app.command()
def review(
    user: UserOpt = None,
    tenant: TenantOpt = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every candidate, decided and refused ones too.")
    ] = False,
    json_mode: JsonOpt = False,
) -> None:
    """List the candidates awaiting your review (confirm or reject each by its id)."""
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.review(status=None if all_ else "pending"))
    _print(
        rows,
        json_mode,
        "candidates",
        "Nothing to review. The agent proposes candidates as you talk to it.",
        _candidate_columns,
    )
    if rows and not json_mode:
        common.console().print(
            "Confirm with: analyst memory confirm ID · reject with: analyst memory reject ID",
            soft_wrap=True,
        )


@app.command()
def confirm(
    candidate_id: Annotated[str, typer.Argument(help="Candidate id (see: analyst memory review).")],
    value: Annotated[
        str | None, typer.Option("--value", help="A corrected value for a fact (JSON or text).")
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", help="Corrected wording of a procedure or preference.")
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Confirm a candidate: a standing instruction becomes a procedure for every thread."""
    edited: dict[str, Any] = {}
    if value is not None:
        try:
            edited["value"] = json.loads(value)
        except json.JSONDecodeError:
            edited["value"] = value
    if text is not None:
        if not text.strip():
            raise CommandError("--text is empty; give the corrected wording.")
        edited["text"] = text.strip()
    settings = common.settings(user, tenant)
    result = common.call(settings, lambda a: a.memory.confirm(candidate_id, edited or None))
    if json_mode:
        common.print_json(result, ensure_ascii=False)
        return
    console = common.console()
    if "procedure" in result:
        p = result["procedure"]
        console.print(
            f"Procedure {p['procedure_id']} is in force in every thread: {p['text']!r} "
            f"(review by {p['review_at'][:10]}).",
            soft_wrap=True,
        )
    elif "fact" in result:
        f = result["fact"]
        console.print(
            f"Confirmed {f['attribute']} = {f['value']!r} (fact {f['memory_id']}).", soft_wrap=True
        )
    else:
        console.print(f"Confirmed; remembered as {result.get('memory')}.", soft_wrap=True)


@app.command()
def reject(
    candidate_id: Annotated[str, typer.Argument(help="Candidate id (see: analyst memory review).")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept with it).")] = (
        "rejected by the user"
    ),
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Reject a candidate: it is kept as rejected and never applied."""
    settings = common.settings(user, tenant)
    result = common.call(settings, lambda a: a.memory.reject(candidate_id, reason))
    if json_mode:
        common.print_json(result, ensure_ascii=False)
        return
    common.console().print(f"Rejected {candidate_id}.", soft_wrap=True)


@app.command()
def context(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """Show what a new session loads: profile, procedures, recent sessions, open items."""
    settings = common.settings(user, tenant)
    loaded = common.call(settings, lambda a: a.memory.context())
    if json_mode:
        common.print_json({"context_loaded": loaded}, ensure_ascii=False)
        return
    from agent.cli import render

    render.context_loaded(common.console(), loaded)


@app.command()
def procedures(
    retire: Annotated[
        str | None, typer.Option("--retire", help="Stop enforcing this procedure id.")
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """List your procedures in force (or retire one)."""
    from agent.cli.render import Column

    settings = common.settings(user, tenant)
    if retire:
        done = common.call(settings, lambda a: a.memory.retire_procedure(retire))
        if json_mode:
            common.print_json(done, ensure_ascii=False)
        else:
            common.console().print(f"Retired {retire}: {done['text']!r}.", soft_wrap=True)
        return
    rows = common.call(settings, lambda a: a.memory.procedures())
    _print(
        rows,
        json_mode,
        "procedures",
        'No procedures. Say a standing instruction ("never analyse TSLA") and confirm it.',
        lambda rs: [
            Column("id", [r["procedure_id"] for r in rs]),
            Column("review by", [r["review_at"][:10] for r in rs], drop=1),
            Column("text", [r["text"] for r in rs], elastic=True, min_width=24),
        ],
    )


@app.command()
def sessions(
    limit: Annotated[int, typer.Option("--limit", help="Most recent N sessions.")] = 20,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """List your session summaries, newest first."""
    from agent.cli.render import Column

    if limit < 1:
        raise CommandError(f"--limit {limit}: list at least 1 session.")
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.sessions(limit))
    _print(
        rows,
        json_mode,
        "sessions",
        "No sessions summarised yet.",
        lambda rs: [
            Column("session", [r["session_id"] for r in rs]),
            Column("ended", [r["ended"][:16] for r in rs], drop=1),
            Column("summary", [r["summary"] for r in rs], elastic=True, min_width=24),
        ],
    )


@app.command()
def episodes(
    thread: Annotated[str | None, typer.Option("--thread", help="Only this thread.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most N episodes.")] = 1000,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """List your stored turns (episodes), oldest first."""
    from agent.cli.render import Column

    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.episodes(thread_id=thread, limit=limit))
    _print(
        rows,
        json_mode,
        "episodes",
        "No episodes stored yet.",
        lambda rs: [
            Column("id", [r["episode_id"] for r in rs]),
            Column("thread", [r["thread_id"] for r in rs], drop=2),
            Column("kind", [r["kind"] for r in rs], drop=1),
            Column("text", [r["text"] for r in rs], elastic=True, min_width=24),
        ],
    )


def _job_columns(rows: list[dict[str, Any]]) -> list[Any]:
    from agent.cli.render import Column

    return [
        Column("job", [r["job_id"] for r in rows]),
        Column("kind", [r["kind"] for r in rows]),
        Column("status", [r["status"] for r in rows]),
        Column("tries", [str(r["attempts"]) for r in rows], right=True, drop=2),
        Column("thread", [r["thread_id"] for r in rows], drop=1),
        Column("error", [r["last_error"] or "" for r in rows], elastic=True, min_width=10),
    ]


@app.command()
def jobs(
    status: Annotated[
        str | None, typer.Option("--status", help="pending, running, done or failed.")
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Show the extraction queue: what is pending, running, done or failed."""
    if status not in (None, "pending", "running", "done", "failed"):
        raise CommandError(f"--status '{status}' is not one of pending, running, done, failed.")
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.jobs(status=status))
    _print(rows, json_mode, "jobs", "No extraction jobs.", _job_columns)


@app.command()
def worker(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """Run every due extraction job (ending idle sessions first), then stop."""
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.drain())
    _print(rows, json_mode, "jobs", "Nothing to do: the queue is empty.", _job_columns)


@app.command()
def audit(
    since: Annotated[
        str | None, typer.Option("--since", help="From a date (2026-11-01) or an age (7d).")
    ] = None,
    of: Annotated[
        str | None,
        typer.Option("--of", help="Another user's audit (needs the tenant's admin grant)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="The most recent N entries.")] = 1000,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Show the memory audit: writes, confirmations, reads into a prompt and deletions of your
    memory (ids and keyed hashes only, never content), oldest first."""
    from agent.cli.render import Column

    if limit < 1:
        raise CommandError(f"--limit {limit}: show at least 1 entry.")
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.audit(since=since, user=of, limit=limit))
    _print(
        rows,
        json_mode,
        "audit",
        "Nothing audited yet.",
        lambda rs: [
            Column("time", [r["at"][:19] for r in rs]),
            Column("action", [r["action"] for r in rs]),
            Column("tier", [r["tier"] for r in rs]),
            Column("ids", [", ".join(r["item_ids"]) for r in rs], elastic=True, min_width=20),
            Column("reason", [r["reason"] for r in rs], drop=1),
        ],
    )


@app.command()
def end(
    thread_id: Annotated[str, typer.Argument(help="The conversation to end now.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """End a session now: summarise it and extract what it taught (normally automatic)."""
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.end_session(thread_id), thread_id=thread_id)
    _print(rows, json_mode, "jobs", "Nothing new to learn from this thread.", _job_columns)


@app.command()
def events(
    query: Annotated[
        str | None,
        typer.Argument(help='What to look for, e.g. "what did we decide about NVDA last month".'),
    ] = None,
    ticker: Annotated[str | None, typer.Option("--ticker", help="Only events about it.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most N events.")] = 10,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Find decisions, rejections and milestones by meaning, time and ticker."""
    from agent.cli.render import Column, when

    settings = common.settings(user, tenant)
    found = common.call(settings, lambda a: a.memory.events(query, ticker=ticker, limit=limit))
    rows = [m.to_json() for m in found]
    _print(
        rows,
        json_mode,
        "events",
        "No events yet: decisions and rejections are remembered as you make them.",
        lambda rs: [
            Column("key", [r["key"] for r in rs]),
            Column("when", [when(r["at"] or r["updated_at"]) for r in rs], drop=2),
            Column("kind", [r["kind"] for r in rs], drop=1),
            Column("text", [r["text"] for r in rs], elastic=True, min_width=24),
        ],
    )


@app.command()
def consolidate(
    older_than_days: Annotated[
        int, typer.Option("--older-than-days", min=0, help="Only events older than this.")
    ] = 30,
    min_group: Annotated[
        int, typer.Option("--min-group", min=2, help="Events of a ticker needed for a theme.")
    ] = 3,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Merge older events into one theme per ticker and decay them; facts are never touched."""
    settings = common.settings(user, tenant)
    report = common.call(
        settings,
        lambda a: a.memory.consolidate(older_than_days=older_than_days, min_group=min_group),
    )
    if json_mode:
        common.print_json(report, ensure_ascii=False)
        return
    console = common.console()
    if not report["themes"]:
        console.print("Nothing to consolidate.")
    for theme in report["themes"]:
        console.print(
            f"Theme {theme['key']}: {theme['ticker']}, {theme['events']} events.", soft_wrap=True
        )
    if report["decayed"]:
        console.print(f"Decayed {len(report['decayed'])} merged events (importance -1).")


# -- what the agent remembers about you (seed 003: user-initiated controls) -------------------


@app.command()
def show(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """What the agent remembers about you, each item with the command that edits or deletes it."""
    settings = common.settings(user, tenant)
    seen = common.call(settings, lambda a: a.memory.show())
    if json_mode:
        common.print_json(seen, ensure_ascii=False)
        return
    from agent.cli import render

    render.memory_show(common.console(), seen)


@app.command()
def why(
    thread_id: Annotated[str, typer.Argument(help="The thread whose last request to explain.")],
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """What the thread's last plan or answer used from memory, with provenance and scores."""
    settings = common.settings(user, tenant)
    used = common.call(settings, lambda a: a.memory.why(thread_id), thread_id=thread_id)
    if json_mode:
        common.print_json(used, ensure_ascii=False)
        return
    from agent.cli import render

    render.memory_why(common.console(), used)


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help='What to remember, e.g. "my horizon is 5 years".')],
    as_: Annotated[
        str,
        typer.Option(
            "--as", help="fact (a profile attribute), preference (default) or procedure (a rule)."
        ),
    ] = "preference",
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Remember TEXT as you say: a fact, a preference or a procedure, in every conversation."""
    if as_ not in ("fact", "preference", "procedure"):
        raise CommandError(f"--as '{as_}' is not one of fact, preference, procedure.")
    settings = common.settings(user, tenant)
    done = common.call(settings, lambda a: a.memory.remember(text, as_=as_))  # type: ignore[arg-type]
    if json_mode:
        common.print_json(done, ensure_ascii=False)
        return
    from agent.cli import render

    render.remembered(common.console(), done)


@app.command(name="list")
def list_(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """Everything remembered about you across layers, one line each, with its id."""
    from agent.cli.render import Column, when

    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.listing())
    _print(
        rows,
        json_mode,
        "items",
        "Nothing remembered about you yet.",
        lambda rs: [
            Column("layer", [r["layer"] for r in rs]),
            Column("id", [r["id"] for r in rs]),
            Column("when", [when(r["when"]) for r in rs], drop=1),
            Column("text", [r["text"] for r in rs], elastic=True, min_width=24),
        ],
    )


@app.command()
def export(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """Everything kept of you as one JSON document (always JSON; --json is accepted)."""
    settings = common.settings(user, tenant)
    common.print_json(common.call(settings, lambda a: a.memory.export()), ensure_ascii=False)


@app.command()
def forget(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="Ids to forget: an episode, fact, candidate, procedure, session or memory key."
        ),
    ] = None,
    topic: Annotated[
        str | None,
        typer.Option("--topic", help="Find what is about TEXT (by keyword and by meaning)."),
    ] = None,
    from_: Annotated[
        str | None, typer.Option("--from", help="First day (YYYY-MM-DD, UTC) of a range.")
    ] = None,
    to: Annotated[
        str | None, typer.Option("--to", help="Last day (YYYY-MM-DD, UTC) of a range, included.")
    ] = None,
    only: Annotated[
        str | None,
        typer.Option("--only", help="Delete only these listed ids (ID,ID) of a topic or range."),
    ] = None,
    everything: Annotated[
        bool,
        typer.Option("--everything", help="Account deletion: everything of yours, every tier."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Delete (without it: only show).")] = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Forget items by ID, what --topic or --from/--to finds, or --everything of yours.

    Each forget cascades to what was derived (facts, summaries, candidates, memories, their
    vectors and cache rows, extraction jobs, the threads that hold the words) and stores a
    tombstone (a keyed hash) so extraction does not learn it again. A topic or range is
    listed first: --yes deletes all of it, --only ID,ID the listed ids you name. Without
    --yes (or --only) nothing is deleted and the exit status is 2. The receipt lists, per
    tier, what was deleted (counts and ids), what was kept and why, and the backups that
    still hold the data."""
    chosen = [i.strip() for i in (only or "").split(",") if i.strip()] if only else None
    ranged = from_ is not None or to is not None
    if everything:
        if ids or topic is not None or ranged:
            raise CommandError("--everything forgets everything; give no ids, topic or range.")
        settings = common.settings(user, tenant)
        receipt = common.call(settings, lambda a: a.memory.forget_account(confirm=yes))
        done = yes
    else:
        if not ids and topic is None and not ranged:
            raise CommandError(
                "Say what to forget: ID..., --topic TEXT, --from DATE --to DATE, or --everything "
                "(account deletion)."
            )
        since, until = _day(from_, "--from"), _day(to, "--to", end=True)
        settings = common.settings(user, tenant)
        receipt = common.call(
            settings,
            lambda a: a.memory.forget(
                ids or (), topic=topic, since=since, until=until, only=chosen, confirm=yes
            ),
        )
        done = bool(receipt["confirmed"])
    if json_mode:
        common.print_json(receipt, ensure_ascii=False)
    else:
        from agent.cli import render

        render.forget_receipt(common.console(), receipt, done=done)
    if not done:
        raise CommandError(
            "Nothing was deleted: run again with --yes to delete all of the above"
            + ("" if everything or ids else ", or with --only ID,ID to delete some of it")
            + "."
        )


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
    console.print(receipt["why_skipped"], soft_wrap=True)


def _day(value: str | None, flag: str, *, end: bool = False) -> Any:
    """``YYYY-MM-DD`` as the start of that day in UTC (``end``: of the next day)."""
    from datetime import UTC, datetime, timedelta

    if value is None:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError as e:
        raise CommandError(f"{flag} {value!r} is not a date like 2026-09-30.") from e
    return day + timedelta(days=1) if end else day


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
    from agent.cli import render

    render.forget_receipt(common.console(), receipt, done=not dry_run)
