"""``analyst memory`` commands that show and steer the write path (``agent.learning``).

Every turn is stored as an episode; memory is extracted at durable points (after a decision,
when a session ends) into candidates, facts, procedures, session summaries and events.
``review`` / ``confirm`` / ``reject`` decide the candidates; ``context``, ``procedures``,
``sessions``, ``episodes``, ``events`` and ``audit`` show the layers; ``jobs`` shows the
extraction queue, ``worker`` drains it, ``end THREAD`` ends one session now; ``consolidate``
merges older events into one theme per ticker (facts untouched).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

import agent.cli.common as common
from agent.cli.common import CommandError, JsonOpt, TenantOpt, UserOpt

app = typer.Typer()


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
    common.print_rows(
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
            markup=False,
        )
    elif "fact" in result:
        f = result["fact"]
        console.print(
            f"Confirmed {f['attribute']} = {f['value']!r} (fact {f['memory_id']}).",
            soft_wrap=True,
            markup=False,
        )
    else:
        console.print(
            f"Confirmed; remembered as {result.get('memory')}.", soft_wrap=True, markup=False
        )


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
    import agent.cli.render as render

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
            common.console().print(
                f"Retired {retire}: {done['text']!r}.", soft_wrap=True, markup=False
            )
        return
    rows = common.call(settings, lambda a: a.memory.procedures())
    common.print_rows(
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
    common.print_rows(
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
    common.print_rows(
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
    common.print_rows(rows, json_mode, "jobs", "No extraction jobs.", _job_columns)


@app.command()
def worker(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """Run every due extraction job (ending idle sessions first), then stop."""
    settings = common.settings(user, tenant)
    rows = common.call(settings, lambda a: a.memory.drain())
    common.print_rows(rows, json_mode, "jobs", "Nothing to do: the queue is empty.", _job_columns)


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
    common.print_rows(
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
    common.print_rows(
        rows, json_mode, "jobs", "Nothing new to learn from this thread.", _job_columns
    )


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
    common.print_rows(
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
            f"Theme {theme['key']}: {theme['ticker']}, {theme['events']} events.",
            soft_wrap=True,
            markup=False,
        )
    if report["decayed"]:
        console.print(f"Decayed {len(report['decayed'])} merged events (importance -1).")
