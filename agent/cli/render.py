"""Rich rendering for the CLI and chat: progress lines, drafts, verdicts, tables.

Pure presentation: functions take a console and plain values, and never touch storage. Text
that came from storage, a user or a model is shown, never obeyed: placed in a markup string it
goes through :func:`~agent.cli.terminal.literal`, in a listing's cells through
:func:`~agent.cli.terminal.printable`, and otherwise it is printed with ``markup=False`` (the
console's :class:`~agent.cli.terminal.Printable` hook escapes control characters in all of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agent.cli.terminal import literal, printable

if TYPE_CHECKING:
    from agent.app import CheckpointView, ThreadView

STATUS_STYLE = {
    "noted": "blue",
    "answered": "blue",
    "declined": "magenta",
    "awaiting_approval": "bold yellow",
    "published": "bold green",
    "rejected": "bold red",
    "running": "cyan",
    "interrupted": "magenta",
}
VERDICT_STYLE = {"pass": "green", "needs_attention": "yellow", "fail": "red"}


#: Statuses of a request answered without research (the reply says it all).
ANSWERED = ("noted", "declined", "answered")


def said(console: Console, reply: str) -> None:
    """The analyst's reply, as plain text: it may quote memory and the user's words, so it is
    never read as markup, and control characters (terminal escape codes) are shown escaped."""
    console.print(
        Text.assemble(("analyst:", "bold"), " ", printable(reply, keep="\n\t")), soft_wrap=True
    )


def plural(count: int, word: str) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def progress(console: Console, node: str, update: dict[str, Any]) -> None:
    """One line per finished node, saying what it did."""
    if node == "capture" and update.get("status") not in ANSWERED:
        return  # it stored the turn; the router's line says what the request is
    if node in ("capture", "router", "answer", "ideas") and update.get("status") in ANSWERED:
        detail = str(update["status"])
    elif node == "router" and update.get("intent") == "question":
        detail = "a question about memory"
    elif node == "router" and update.get("intent") == "ideas":
        detail = "ideas from your profile"
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
        count = len(review.get("findings", []))
        detail = f"verdict {review.get('verdict')} ({plural(count, 'finding')})"
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
    console.print(f"[green]✓[/] [bold]{node:<9}[/] {literal(detail)}")


def thread(
    console: Console, view: ThreadView, *, show_draft: bool = True, commands: bool = True
) -> None:
    """One thread: status, reply, the draft awaiting a decision, the question it is paused on,
    what it published, and what memory did (``commands``: say which command answers)."""
    style = STATUS_STYLE.get(view.status, "white")
    console.print(
        f"Thread [bold]{view.thread_id}[/] · [{style}]{view.status.replace('_', ' ')}[/]"
        + (f" · {literal(view.ticker)}" if view.ticker else "")
        + (f" · {escape(repr(view.query))}" if view.query else "")
    )
    usage(console, view)
    if view.reply and view.status not in ANSWERED:
        said(console, view.reply)
    for note in view.step_notes:
        console.print(f"[yellow]step note:[/] {literal(note)}", soft_wrap=True)
    if view.status == "awaiting_approval":
        if show_draft and view.draft_markdown:
            # Imported here: the Markdown renderer is the slowest import of the CLI's start.
            from rich.markdown import Markdown
            from rich.panel import Panel

            console.print(
                Panel(
                    Markdown(view.draft_markdown),
                    title=f"Draft {view.draft_hash[:12] if view.draft_hash else ''}",
                    expand=True,
                )
            )
        if view.chart_path:
            console.print(f"Chart: {literal(view.chart_path)}")
        _verdict(console, view)
        if view.decision_error:
            console.print(f"[red]Last decision refused:[/] {literal(view.decision_error)}")
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
            f"[green]Published[/] {literal(pub.get('path'))}"
            + (f" (chart {literal(pub.get('chart_path'))})" if pub.get("chart_path") else "")
            + literal(
                f" · {pub.get('action')} by {pub.get('approver')} at {pub.get('approved_at')}"
            ),
            soft_wrap=True,
        )
    elif view.status == "rejected":
        console.print(f"[red]{literal(view.stop_reason)}[/]")
    elif view.status in ANSWERED:
        said(console, view.reply)
    elif view.status == "awaiting_confirmation" and view.confirmation:
        if view.confirmation.get("kind") == "forget_confirmation":
            forget_question(console, view.confirmation)
            if commands:
                t = view.thread_id
                console.print(
                    "Nothing is deleted until you answer:\n"
                    f"  analyst resume {t} --forget yes     (all of them)\n"
                    f"  analyst resume {t} --forget ID,ID   (only those)\n"
                    f"  analyst resume {t} --forget no      (none)"
                )
    elif view.status == "interrupted":
        console.print(
            f"Stopped before {', '.join(view.next_nodes) or 'the end'}; "
            f"continue with: analyst resume {view.thread_id}"
        )
    _earlier_publications(console, view)
    _memory(console, view)
    if view.forgotten is not None:
        forget_receipt(console, view.forgotten, done=True)
    if view.thread_deleted:
        console.print(
            f"Thread {view.thread_id} was deleted: it held words you asked to forget.",
            soft_wrap=True,
        )


def _memory(console: Console, view: ThreadView) -> None:
    """What memory did around the run: procedures enforced, extraction, a failed extraction."""
    for p in view.procedures:
        # Ideas never name what an exclusion leaves out, so a procedure's words are not shown.
        text = "applied" if view.intent == "ideas" else literal(p["text"])
        console.print(
            f"[cyan]procedure:[/] {text} ({literal(p['procedure_id'])})",
            soft_wrap=True,
        )
    for job in view.memory_jobs:
        result = job.get("result") or {}
        counts = ", ".join(
            f"{len(result[k])} {k}"
            for k in ("facts", "candidates", "events", "ungrounded")
            if result.get(k)
        )
        console.print(
            f"[cyan]memory:[/] {job['kind'].replace('_', ' ')} extraction {job['status']}"
            + (f" ({counts})" if counts else ""),
            soft_wrap=True,
        )
    if view.memory_warning:
        console.print(f"[bold red]memory:[/] {literal(view.memory_warning)}", soft_wrap=True)


def context_loaded(console: Console, loaded: dict[str, Any], recalled: Sequence[str] = ()) -> None:
    """What a session loaded from memory (``analyst memory context``, the chat's first turn);
    ``recalled``: the memory keys the request's plan used, so an empty session start is not
    reported as "nothing remembered" when the plan did use a memory."""
    if not any(loaded.get(k) for k in ("profile", "procedures", "sessions", "open_items")):
        if recalled:
            console.print(
                f"Recalled for this request: {len(recalled)} "
                f"{'memory' if len(recalled) == 1 else 'memories'} ({', '.join(recalled)}).",
                markup=False,
            )
        else:
            console.print("Nothing remembered yet.")
        return
    console.print(
        f"Loaded from memory: {loaded.get('tokens', 0)} of {loaded.get('budget', 0)} tokens"
        + (f" ({loaded['left_out']} older sessions left out)" if loaded.get("left_out") else "")
    )
    for name, fact in sorted((loaded.get("profile") or {}).items()):
        console.print(
            f"  {name}: {fact['value']!r} ({fact['source']}, fact {fact['memory_id']})",
            soft_wrap=True,
            markup=False,
        )
    for p in loaded.get("procedures") or []:
        console.print(f"  procedure {p['procedure_id']}: {p['text']}", soft_wrap=True, markup=False)
    for session in loaded.get("sessions") or []:
        console.print(
            f"  session {session['session_id']} ({session['ended'][:10]}): {session['summary']}",
            soft_wrap=True,
            markup=False,
        )
    for item in loaded.get("open_items") or []:
        console.print(f"  open item: {item['text']}", soft_wrap=True, markup=False)


def _earlier_publications(console: Console, view: ThreadView) -> None:
    """The thread's publications other than the one just reported: never lost from view."""
    earlier = list(view.publications)
    if view.status == "published" and earlier and earlier[-1] == view.publication:
        earlier.pop()
    if not earlier:
        return
    console.print(f"Published earlier in this thread ({len(earlier)}):")
    for pub in earlier:
        console.print(
            f"  {pub.get('path')} · {pub.get('action')} by {pub.get('approver')} at "
            f"{pub.get('approved_at')}",
            soft_wrap=True,
            markup=False,
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
        f"Critic verdict: [{style}]{literal(view.verdict)}[/] (the critic never approves; you "
        "decide)"
    )
    for f in view.findings:
        console.print(f"  - {f.get('severity')}: {f.get('message')}", markup=False)


# -- listings: one line per item, fitted to the console's width ----------------------------


@dataclass
class Column:
    """One column of a :func:`listing`.

    ``drop``: when the line does not fit, columns are dropped highest ``drop`` first (0: never
    dropped). ``elastic``: free text that takes the width left and is shortened with ``…`` (at
    most one per listing). Other columns are shown whole, so ids and dates are never cut.
    """

    header: str
    cells: list[str]
    drop: int = 0
    elastic: bool = False
    right: bool = False
    styles: list[str] | None = None
    #: for the elastic column: the width below which other columns are dropped instead
    min_width: int = 12

    def width(self) -> int:
        return max([cell_len(self.header), *(cell_len(c) for c in self.cells)])


GAP = "  "


def one_line(text: str) -> str:
    """``text`` on one line: every run of whitespace (newlines included) becomes one space."""
    return " ".join(text.split())


def listing(console: Console, columns: Sequence[Column]) -> None:
    """Print a header and one line per row within ``console.width`` (80 when not a terminal).

    Cells are shown on one line with control characters escaped (:func:`printable`; a cell is
    never read as markup). Columns are dropped in their ``drop`` order until the rest fits,
    then the elastic column gets the remaining width. Nothing else is ever shortened: an id longer than the screen
    makes its line wrap (the terminal's doing), it is never cut.
    """
    shown = [
        replace(c, header=printable(c.header), cells=[printable(one_line(x)) for x in c.cells])
        for c in columns
        if not c.drop or any(x.strip() for x in c.cells)  # an empty optional column says nothing
    ]

    def needed(cols: Sequence[Column]) -> int:
        fixed = sum(c.width() for c in cols if not c.elastic)
        elastic = sum(min(c.min_width, c.width()) for c in cols if c.elastic)
        return fixed + elastic + len(GAP) * (len(cols) - 1)

    while needed(shown) > console.width and any(c.drop for c in shown):
        shown.remove(max(shown, key=lambda c: c.drop))
    fixed = sum(c.width() for c in shown if not c.elastic) + len(GAP) * (len(shown) - 1)
    widths = [
        max(min(c.min_width, c.width()), min(c.width(), console.width - fixed))
        if c.elastic
        else c.width()
        for c in shown
    ]
    last = len(shown) - 1

    def line(cells: Sequence[tuple[str, str | None]]) -> Text:
        out = Text(no_wrap=True)
        for i, ((cell, style), column, width) in enumerate(zip(cells, shown, widths, strict=True)):
            text = Text(cell, style=style or "")
            if column.elastic:
                text.truncate(width, overflow="ellipsis")
            pad = " " * max(0, width - text.cell_len)
            if column.right:
                out.append(pad)
            out.append_text(text)
            if i < last:
                out.append(GAP if column.right else pad + GAP)
        return out

    console.print(line([(c.header, "bold") for c in shown]), soft_wrap=True)
    for row in range(len(shown[0].cells) if shown else 0):
        cells = [(c.cells[row], c.styles[row] if c.styles else None) for c in shown]
        console.print(line(cells), soft_wrap=True)


def when(value: str | None) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS`` in UTC for listings (``--json`` keeps the
    full value)."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def thread_table(console: Console, views: Sequence[ThreadView]) -> None:
    if not views:
        console.print('No threads yet. Start one with: analyst run "Analyze NVDA"')
        return
    statuses = [v.status.replace("_", " ") for v in views]
    listing(
        console,
        [
            Column("thread", [v.thread_id for v in views]),
            Column("status", statuses, styles=[STATUS_STYLE.get(v.status, "") for v in views]),
            Column("ticker", [v.ticker or "" for v in views], drop=2),
            Column("updated (UTC)", [when(v.updated_at) for v in views], drop=3),
            Column("draft", [(v.draft_hash or "")[:12] for v in views], drop=4),
            Column("query", [v.query for v in views], elastic=True, min_width=20),
        ],
    )


def history_table(console: Console, thread_id: str, items: Sequence[CheckpointView]) -> None:
    console.print(f"Checkpoints of {thread_id} (newest first)", soft_wrap=True, markup=False)
    listing(
        console,
        [
            Column("step", [str(c.step) for c in items], right=True),
            Column("source", [c.source for c in items], drop=2),
            Column("ran", [", ".join(c.ran) for c in items], elastic=True),
            Column("next", [", ".join(c.next_nodes) for c in items], drop=3),
            Column("checkpoint", [c.checkpoint_id for c in items]),
            Column("created (UTC)", [when(c.created_at) for c in items], drop=1),
        ],
    )


# -- what the agent remembers about you (analyst memory show / why / remember) -------------


def _episodes(item: dict[str, Any]) -> str:
    return ", ".join(item.get("episode_ids") or []) or "no episode"


def memory_show(console: Console, seen: dict[str, Any], *, compact: bool = False) -> None:
    """Seed 003's "what the agent remembers about you": each layer, each item with its
    provenance and the command that edits or deletes it (``compact``: the chat's /memories,
    one line per item with its id and the command that removes it)."""

    def out(text: str) -> None:
        console.print(text, soft_wrap=True, markup=False, highlight=False)

    out(f"What the analyst remembers about you ({seen['user_id']}, tenant {seen['tenant_id']}):")
    out("Profile:" if seen["profile"] else "Profile: nothing yet.")
    for f in seen["profile"]:
        out(
            f"  {f['attribute']}: {f['value']!r} ({f['source']} since {f['since'][:10]}; "
            f"fact {f['memory_id']}" + ("" if compact else f"; episodes {_episodes(f)}") + ")"
        )
        if not compact:
            out(f"    edit: {f['edit']}")
        out(f"    delete: {f['delete']}")
    out("Procedures:" if seen["procedures"] else "Procedures: none.")
    for p in seen["procedures"]:
        out(
            f"  {p['text']} ({p['procedure_id']}; review by {p['review_at'][:10]}"
            + ("" if compact else f"; episodes {_episodes(p)}")
            + ")"
        )
        out(f"    retire: {p['delete']}")
    out("Recent sessions:" if seen["sessions"] else "Recent sessions: none yet.")
    for s in seen["sessions"]:
        out(f"  {s['ended'][:10]}: {s['summary']} ({s['session_id']})")
        for item in s.get("open_items") or []:
            out(f"    open item: {item}")
    for layer, title in (
        ("preferences", "Preferences"),
        ("memories", "Other memories"),
        ("events", "Events"),
    ):
        rows = seen[layer]
        if not rows and layer != "preferences":
            continue
        out(f"{title}:" if rows else f"{title}: none.")
        for m in rows:
            when_ = (m.get("at") or m.get("updated_at") or "")[:10]
            out(
                f"  {m['text']} ({m['kind']}, {when_}, importance {m['importance']}; {m['key']}"
                + ("" if compact else f"; episodes {_episodes(m)}")
                + ")"
            )
            out(f"    delete: {m['delete']}")
    if seen["candidates"]:
        out("Awaiting your word:")
        for c in seen["candidates"]:
            out(f"  [{c['kind']}] {c['quote']!r} ({c['reason']}; {c['candidate_id']})")
            out("    " + " · ".join(c[k] for k in ("confirm", "reject") if k in c))


def memory_why(console: Console, used: dict[str, Any]) -> None:
    """What a thread's last request used from memory (``analyst memory why``, chat /why)."""

    def out(text: str) -> None:
        console.print(text, soft_wrap=True, markup=False, highlight=False)

    out(f"Thread {used['thread_id']} · {used['status'].replace('_', ' ')} · {used['query']!r}")
    if used["planned"]:
        out(f"Plan: {', '.join(used['plan'])}. {used['plan_rationale']}")
    else:
        out("The last request was not planned (a quick snapshot or an answer without research).")
    out("Facts used:" if used["facts"] else "Facts used: none.")
    for f in used["facts"]:
        out(
            f"  {f['attribute']}: {f['value']!r} ({f['source']} since {str(f['since'])[:10]}; "
            f"fact {f['memory_id']}; episodes {_episodes(f)})"
        )
    out("Procedures enforced:" if used["procedures"] else "Procedures enforced: none.")
    for p in used["procedures"]:
        out(f"  {p['text']} ({p['procedure_id']}; episodes {_episodes(p)})")
    out("Recalled memories:" if used["recalled"] else "Recalled memories: none.")
    for m in used["recalled"]:
        s = m.get("score") or {}
        out(
            f"  {m['key']} [{m['kind']}] {m['text']!r} score {s.get('total', 0):.3f} "
            f"(relevance {s.get('relevance', 0):.3f}, recency {s.get('recency', 0):.3f}, "
            f"importance {s.get('importance', 0):.3f})"
            + ("; cited by the plan" if m.get("cited") else "")
            + f"; episodes {_episodes(m)}"
        )
    for f in used["learned"]:
        out(f"Learned from the message: {f['attribute']} = {f.get('value')!r}")
    for rule in used["constraints"]:
        out(f"Constraint of this conversation: {rule}")
    loaded = used["context_loaded"]
    if any(loaded.get(k) for k in ("profile", "procedures", "sessions", "open_items")):
        out("Loaded when the conversation started:")
        for s in loaded.get("sessions") or []:
            out(f"  session {s['session_id']}: {s['summary']}")
        for item in loaded.get("open_items") or []:
            out(f"  open item: {item['text']} ({item['session_id']})")
        if loaded.get("profile") or loaded.get("procedures"):
            out(
                f"  {len(loaded.get('profile') or {})} profile fact(s), "
                f"{len(loaded.get('procedures') or [])} procedure(s)"
            )


def remembered(console: Console, done: dict[str, Any]) -> None:
    """What ``remember`` stored: scope, state, each item with its id and how to remove it."""

    def out(text: str) -> None:
        console.print(text, soft_wrap=True, markup=False, highlight=False)

    out(f"Remembered as {done['as']} for {done['scope']}; {done['state']}.")
    for item in done["stored"]:
        if item["kind"] == "fact":
            what = f"{item['attribute']} = {item['value']!r}"
        else:
            what = repr(item["text"])
        out(f"  {item['kind']} {item['id']}: {what} (episode {done['episode_id']})")
        out(f"    remove: {item['remove']}")


def forget_receipt(console: Console, receipt: dict[str, Any], *, done: bool) -> None:
    """A forget's or a retention sweep's plan (``done`` False: what would go) or receipt (what
    went): the items a topic or range found, per tier the count and ids, what is kept and why
    (an item due for review with the commands that keep or delete it), notes, backups."""

    def out(text: str) -> None:
        console.print(text, soft_wrap=True, markup=False, highlight=False)

    for row in receipt.get("found", []):
        by = " (by meaning: deleted only when named)" if row.get("by") == "meaning" else ""
        out(f"Found {row['tier']} {row['id']}: {row['text']}{by}")
    head = "Deleted" if done else "Would delete"
    for tier, found in receipt["deleted"].items():
        shown = ", ".join(found["ids"][:10]) + (" ..." if found["count"] > 10 else "")
        out(f"{head} {found['count']} {tier}: {shown or '-'}")
    for tier, found in receipt.get("rewritten", {}).items():
        if found["count"]:
            verb = ("Wrote" if tier == "facts" else "Rewrote") if done else "Would rewrite"
            what = "new versions of facts" if tier == "facts" else tier
            out(f"{verb} {found['count']} {what}: {', '.join(found['ids'][:10])}")
    for kept in receipt["kept"]:
        if kept.get("status") == "due for review":
            out(
                f"Due for review since {kept['review_at'][:10]}: {kept['what']} (owner "
                f"{kept['owner']}). Keep: {kept['confirm']}  Delete: {kept['delete']}"
            )
            continue
        paths = ", ".join(kept.get("paths", [])) or "-"
        out(f"Kept {kept['what']} ({paths}): {kept['why']}")
    for note in receipt["notes"]:
        out(note)
    out(receipt["backups"])


def forget_question(console: Console, request: dict[str, Any]) -> None:
    """What the model proposed to forget (a ``forget_confirmation``), item by item."""

    def out(text: str) -> None:
        console.print(text, soft_wrap=True, markup=False, highlight=False)

    out(f"analyst: {request['question']}")
    for item in request["items"]:
        out(f"  {item['tier']} {item['id']}: {item['text']}")
