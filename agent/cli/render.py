"""Rich rendering for the CLI and chat: progress lines, drafts, verdicts, tables.

Pure presentation: functions take a console and plain values, and never touch storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table

if TYPE_CHECKING:
    from agent.app import CheckpointView, ThreadView

STATUS_STYLE = {
    "noted": "blue",
    "declined": "magenta",
    "awaiting_approval": "bold yellow",
    "published": "bold green",
    "rejected": "bold red",
    "running": "cyan",
    "interrupted": "magenta",
}
VERDICT_STYLE = {"pass": "green", "needs_attention": "yellow", "fail": "red"}


def progress(console: Console, node: str, update: dict[str, Any]) -> None:
    """One line per finished node, saying what it did."""
    if node == "router" and update.get("status") in ("noted", "declined"):
        detail = str(update["status"])
    elif node == "router":
        tickers = ", ".join(update.get("tickers", []))
        mode = "deep research" if update.get("mode") == "deep" else "quick snapshot"
        detail = f"{mode} on {tickers}"
    elif node == "planner":
        detail = f"{len(update.get('plan', []))} steps planned"
    elif node == "executor":
        results = update.get("results") or {}
        last = list(results)[-1] if results else "?"
        detail = f"step {update.get('step_index', '?')}: {last}"
    elif node == "reporter":
        draft = update.get("draft") or {}
        detail = f"draft {str(draft.get('hash', ''))[:12]} (revision {draft.get('revision', 0)})"
    elif node == "critic":
        review = update.get("critique") or {}
        detail = f"verdict {review.get('verdict')} ({len(review.get('findings', []))} findings)"
    elif node == "approval":
        decisions = update.get("decisions") or []
        if update.get("decision_error"):
            detail = f"decision refused: {update['decision_error']}"
        elif decisions:
            d = decisions[-1]
            detail = f"{d.get('action')} by {d.get('approver')}"
        else:
            detail = "decision recorded"
    elif node == "publish":
        detail = f"published {(update.get('publication') or {}).get('path')}"
    else:
        detail = ""
    console.print(f"[green]✓[/] [bold]{node:<9}[/] {detail}")


def thread(console: Console, view: ThreadView, *, show_draft: bool = True) -> None:
    style = STATUS_STYLE.get(view.status, "white")
    console.print(
        f"Thread [bold]{view.thread_id}[/] · [{style}]{view.status.replace('_', ' ')}[/]"
        + (f" · {view.ticker}" if view.ticker else "")
        + (f" · {view.query!r}" if view.query else "")
    )
    usage(console, view)
    if view.reply and view.status not in ("noted", "declined"):
        console.print(f"[bold]analyst:[/] {view.reply}", soft_wrap=True)
    for note in view.step_notes:
        console.print(f"[yellow]step note:[/] {note}", soft_wrap=True)
    if view.status == "awaiting_approval":
        if show_draft and view.draft_markdown:
            console.print(
                Panel(
                    Markdown(view.draft_markdown),
                    title=f"Draft {view.draft_hash[:12] if view.draft_hash else ''}",
                    expand=True,
                )
            )
        if view.chart_path:
            console.print(f"Chart: {view.chart_path}")
        _verdict(console, view)
        if view.decision_error:
            console.print(f"[red]Last decision refused:[/] {view.decision_error}")
        t = view.thread_id
        console.print(
            f"\nAwaiting your decision on draft [bold]{(view.draft_hash or '')[:12]}[/]:\n"
            f"  analyst approve {t}\n"
            f'  analyst reject {t} --feedback "what to change"\n'
            f"  analyst edit {t} --file draft.md"
        )
    elif view.status == "published" and view.publication:
        pub = view.publication
        console.print(
            f"[green]Published[/] {pub.get('path')}"
            + (f" (chart {pub.get('chart_path')})" if pub.get("chart_path") else "")
            + f" · {pub.get('action')} by {pub.get('approver')} at {pub.get('approved_at')}",
            soft_wrap=True,
        )
    elif view.status == "rejected":
        console.print(f"[red]{view.stop_reason}[/]")
    elif view.status in ("noted", "declined"):
        console.print(f"[bold]analyst:[/] {view.reply}")
    elif view.status == "interrupted":
        console.print(
            f"Stopped before {', '.join(view.next_nodes) or 'the end'}; "
            f"continue with: analyst resume {view.thread_id}"
        )


def usage(console: Console, view: ThreadView) -> None:
    u = view.usage or {}
    if u.get("calls"):
        console.print(
            f"[dim]Model {view.model}: {u['calls']} calls, {u.get('input_tokens', 0)} input + "
            f"{u.get('output_tokens', 0)} output = {u.get('total_tokens', 0)} tokens this request.[/]"
        )


def _verdict(console: Console, view: ThreadView) -> None:
    style = VERDICT_STYLE.get(view.verdict or "", "white")
    console.print(
        f"Critic verdict: [{style}]{view.verdict}[/] (the critic never approves; you decide)"
    )
    for f in view.findings:
        console.print(f"  - {f.get('severity')}: {f.get('message')}")


def thread_table(console: Console, views: Sequence[ThreadView]) -> None:
    if not views:
        console.print('No threads yet. Start one with: analyst run "Analyze NVDA"')
        return
    table = Table(title="Threads")
    for column in ("thread", "status", "ticker", "query", "draft", "updated"):
        table.add_column(column, no_wrap=column in ("thread", "draft"))
    for v in views:
        style = STATUS_STYLE.get(v.status, "white")
        table.add_row(
            v.thread_id,
            f"[{style}]{v.status.replace('_', ' ')}[/]",
            v.ticker or "",
            v.query,
            (v.draft_hash or "")[:12],
            v.updated_at or "",
        )
    console.print(table)


def history_table(console: Console, thread_id: str, items: Sequence[CheckpointView]) -> None:
    table = Table(title=f"Checkpoints of {thread_id} (newest first)")
    for column in ("step", "source", "ran", "next", "checkpoint", "created"):
        table.add_column(column, no_wrap=column in ("checkpoint", "created"))
    for c in items:
        table.add_row(
            str(c.step),
            c.source,
            ", ".join(c.ran),
            ", ".join(c.next_nodes),
            c.checkpoint_id,
            c.created_at,
        )
    console.print(table)
