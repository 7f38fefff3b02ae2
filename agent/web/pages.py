"""The dashboard's pages: plain data from the application in, :class:`~agent.web.html.Html`
out. No page reads storage; :mod:`agent.web.app` calls the application and passes what it
answered. Every form that changes something carries the CSRF token it is given.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent.web.html import Html, join, raw, tag
from agent.web.timeline import COLOURS, timeline_svg

if TYPE_CHECKING:
    from memory.facts import FactRecord

#: Where the dashboard's pages live (on the LangGraph server, beside its API).
PREFIX = "/dashboard"

#: (path, title) of the navigation, in order.
NAV = (
    ("profile", "Profile"),
    ("preferences", "Preferences & procedures"),
    ("candidates", "To review"),
    ("sessions", "Sessions"),
    ("events", "Events"),
    ("threads", "Threads & why"),
    ("documents", "Documents"),
    ("audit", "Audit"),
    ("account", "Forget everything"),
)

_STYLE = raw(
    "body{font-family:system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}"
    "header{background:#263238;color:#fff;padding:.6rem 1rem}header strong{margin-right:1.5rem}"
    "header a{color:#cfd8dc;"
    "margin-right:1rem;text-decoration:none}header a.on{color:#fff;font-weight:bold}"
    "main{padding:1rem;max-width:60rem}table{border-collapse:collapse;width:100%;"
    "margin-bottom:1rem}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;"
    "text-align:left;vertical-align:top}th{background:#eceff1}code{font-size:.85em}"
    ".fact{background:#fff;border:1px solid #ddd;border-radius:4px;padding:.6rem;"
    "margin-bottom:1rem}.muted{color:#666;font-size:.9em}form.inline{display:inline}"
    "button{cursor:pointer}.danger{background:#c62828;color:#fff;border:0;padding:.3rem .7rem;"
    "border-radius:3px}.plan{background:#fff8e1;border:1px solid #ffe082;padding:.6rem}"
    ".receipt{background:#e8f5e9;border:1px solid #a5d6a7;padding:.6rem}"
    "pre.doc{white-space:pre-wrap;background:#fff;border:1px solid #ddd;padding:.6rem}"
    ".error{background:#ffebee;border:1px solid #ef9a9a;padding:.6rem}"
    ".legend svg{margin-left:.6rem}"
)


#: The page's one style element, allowed by its hash in the Content-Security-Policy.
STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()


def url(path: str) -> str:
    """The address of a dashboard page (``path`` without the prefix)."""
    return f"{PREFIX}/{path}"


def layout(title: str, who: str, body: Any, *, active: str = "") -> Html:
    """A whole page: the navigation, whose memory it is, and ``body``."""
    links = [
        tag("a", {"href": url(path), "class_": "on" if path == active else None}, name)
        for path, name in NAV
    ]
    return Html(
        "<!doctype html>"
        + tag(
            "html",
            {"lang": "en"},
            tag(
                "head",
                {},
                tag("meta", {"charset": "utf-8"}),
                tag("meta", {"name": "viewport", "content": "width=device-width"}),
                tag("title", {}, f"{title} · analyst memory"),
                tag("style", {}, _STYLE),
            ),
            tag(
                "body",
                {},
                tag("header", {}, tag("strong", {}, "What the analyst remembers "), links),
                tag(
                    "main",
                    {},
                    tag("h1", {}, title),
                    tag("p", {"class_": "muted", "id": "who"}, f"Memory of {who}"),
                    body,
                ),
            ),
        )
    )


def form(action: str, csrf: str, *fields: Any, button: str, danger: bool = False) -> Html:
    """A POST form to ``action`` with the CSRF token and one submit button."""
    return tag(
        "form",
        {"method": "post", "action": url(action), "class_": "inline"},
        tag("input", {"type": "hidden", "name": "csrf", "value": csrf}),
        list(fields),
        tag("button", {"type": "submit", "class_": "danger" if danger else None}, button),
    )


def hidden(name: str, value: str) -> Html:
    return tag("input", {"type": "hidden", "name": name, "value": value})


def value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def forget_link(item_id: str, label: str = "Delete…") -> Html:
    """A link to the plan of forgetting ``item_id`` (nothing is deleted by following it)."""
    from urllib.parse import quote

    return tag("a", {"href": url(f"forget?id={quote(item_id, safe='')}")}, label)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], empty: str) -> Html:
    if not rows:
        return tag("p", {"class_": "empty"}, empty)
    return tag(
        "table",
        {},
        tag("tr", {}, [tag("th", {}, h) for h in headers]),
        [tag("tr", {}, [tag("td", {}, c) for c in row]) for row in rows],
    )


def _when(iso: str | None) -> str:
    return "" if not iso else iso[:16].replace("T", " ")


def _legend() -> Html:
    return tag(
        "p",
        {"class_": "legend muted"},
        "Timeline:",
        [
            join(
                [
                    tag(
                        "svg",
                        {"width": 12, "height": 12, "aria-hidden": "true"},
                        tag("rect", {"width": 12, "height": 12, "fill": c}),
                    ),
                    f" {status} ",
                ]
            )
            for status, c in COLOURS.items()
            if status != "candidate"
        ],
    )


# -- pages ------------------------------------------------------------------------------


def profile(
    shown: dict[str, Any],
    histories: dict[str, list[FactRecord]],
    now: datetime,
    csrf: str,
    notice: str | None = None,
) -> Html:
    """Each fact in force with its history (a timeline and a table), source episode and
    validity; a form that states a new value and a link that forgets it."""
    facts = [
        _fact(fact, histories.get(fact["attribute"], []), now, csrf)
        for fact in shown.get("profile", [])
    ]
    body = [
        tag("p", {"class_": "receipt", "id": "notice"}, notice) if notice else None,
        _legend(),
        join(facts) if facts else tag("p", {"class_": "empty"}, "No profile facts yet."),
        _remember_form(csrf),
    ]
    return join(b for b in body if b is not None)


def _fact(fact: dict[str, Any], history: list[FactRecord], now: datetime, csrf: str) -> Html:
    """One fact in force: its value and provenance, its history, and how to correct or
    forget it."""
    name = fact["attribute"]
    return tag(
        "section",
        {"class_": "fact", "id": f"fact-{name}", "data-attribute": name},
        tag("h2", {}, name, " = ", tag("span", {"class_": "value"}, value_text(fact["value"]))),
        tag(
            "p",
            {"class_": "muted"},
            f"since {_when(fact['since'])} · source {fact['source']} · episode "
            f"{', '.join(fact['episode_ids']) or '-'} · fact {fact['memory_id']}",
        ),
        timeline_svg(history, now),
        _history_table(history),
        _correct_form(name, csrf),
        " ",
        forget_link(fact["memory_id"], "Delete this fact…"),
    )


def _history_table(history: list[FactRecord]) -> Html:
    """Every value an attribute held: status, validity, source and the episode it came from."""
    rows = [
        (
            value_text(r.value),
            r.status,
            _when(r.valid_from.isoformat()),
            _when(r.valid_to.isoformat()) if r.valid_to else "now",
            r.source,
            r.source_episode_id or "",
            tag("code", {}, r.memory_id),
        )
        for r in history
    ]
    return table(
        ("value", "status", "from", "to", "source", "episode", "fact"), rows, "No history."
    )


def _correct_form(name: str, csrf: str) -> Html:
    """States a new value of attribute ``name``, in the user's words."""
    placeholder = f"e.g. my {name.replace('_', ' ')} is …"
    field = tag("input", {"name": "text", "size": 40, "required": True, "placeholder": placeholder})
    label = tag("label", {}, "Correct it, in your words: ", field)
    return form("profile/state", csrf, label, button="Record")


def _remember_form(csrf: str) -> Html:
    """Tells the analyst something new, as a fact, a preference or a procedure."""
    return tag(
        "section",
        {"class_": "fact"},
        tag("h2", {}, "Tell the analyst something"),
        form(
            "remember",
            csrf,
            tag("input", {"name": "text", "size": 50, "required": True}),
            tag(
                "select",
                {"name": "as"},
                [tag("option", {"value": v}, v) for v in ("fact", "preference", "procedure")],
            ),
            button="Remember",
        ),
    )


def preferences(shown: dict[str, Any], procedures: list[dict[str, Any]], csrf: str) -> Html:
    """Preferences (long-term memories) and the procedures in force, each removable."""
    prefs = table(
        ("preference", "importance", "updated", ""),
        [
            (m["text"], m.get("importance", ""), _when(m.get("updated_at")), forget_link(m["key"]))
            for m in shown.get("preferences", []) + shown.get("memories", [])
        ],
        "No preferences.",
    )
    procs = table(
        ("procedure", "rule", "since", "review", ""),
        [
            (
                p["text"],
                tag("code", {}, json.dumps(p["rule"], ensure_ascii=False)),
                _when(p["confirmed_at"]),
                _when(p["review_at"]),
                form("procedures/retire", csrf, hidden("id", p["procedure_id"]), button="Retire"),
            )
            for p in procedures
        ],
        "No procedures in force.",
    )
    return Html(tag("h2", {}, "Preferences") + prefs + tag("h2", {}, "Procedures in force") + procs)


def candidates(rows: list[dict[str, Any]], csrf: str, confirmable: Sequence[str]) -> Html:
    """What the analyst would remember if you say so: confirm or reject each."""
    return table(
        ("kind", "what", "your words", "why asked", ""),
        [
            (
                c["kind"],
                tag("code", {}, json.dumps(c["payload"], ensure_ascii=False)),
                c["quote"],
                c.get("reason") or "",
                [
                    form(
                        "candidates/confirm",
                        csrf,
                        hidden("id", c["candidate_id"]),
                        button="Confirm",
                    )
                    if c["kind"] in confirmable
                    else None,
                    " ",
                    form(
                        "candidates/reject",
                        csrf,
                        hidden("id", c["candidate_id"]),
                        hidden("reason", "rejected in the dashboard"),
                        button="Reject",
                    ),
                ],
            )
            for c in rows
        ],
        "Nothing awaits your review.",
    )


def sessions(rows: list[dict[str, Any]]) -> Html:
    return table(
        ("ended", "topic", "summary", "open items", ""),
        [
            (
                _when(s["ended"]),
                s["topic"],
                s["summary"],
                tag("ul", {}, [tag("li", {}, i) for i in s["open_items"]]),
                forget_link(s["session_id"]),
            )
            for s in rows
        ],
        "No sessions summarised yet.",
    )


def events(rows: list[dict[str, Any]]) -> Html:
    return table(
        ("when", "kind", "event", "tickers", ""),
        [
            (
                _when(e.get("at") or e.get("updated_at")),
                e.get("kind", ""),
                e["text"],
                ", ".join(e.get("tickers") or []),
                forget_link(e["key"]),
            )
            for e in rows
        ],
        "No events.",
    )


def audit(rows: list[dict[str, Any]]) -> Html:
    return table(
        ("when", "action", "tier", "items", "reason"),
        [
            (
                _when(a.get("at")),
                a.get("action", ""),
                a.get("tier", ""),
                tag("code", {}, ", ".join(a.get("item_ids") or [])),
                a.get("reason") or "",
            )
            for a in reversed(rows)
        ],
        "Nothing audited yet.",
    )


def threads(rows: list[dict[str, Any]], used: dict[str, Any] | None) -> Html:
    """The principal's threads; with ``used``, what one thread's last request used."""
    listing = table(
        ("thread", "status", "request", ""),
        [
            (
                tag("code", {}, t["thread_id"]),
                t["status"],
                t.get("query") or "",
                tag("a", {"href": url(f"threads?why={t['thread_id']}")}, "what it used"),
            )
            for t in rows
        ],
        "No threads.",
    )
    if used is None:
        return listing
    facts = table(
        ("fact", "value", "source"),
        [(f["attribute"], value_text(f.get("value")), f.get("source", "")) for f in used["facts"]],
        "No profile fact used.",
    )
    recalled = table(
        ("memory", "cited", "text"),
        [
            (m.get("key", ""), "yes" if m["cited"] else "", m.get("text", ""))
            for m in used["recalled"]
        ],
        "No memory recalled.",
    )
    procs = table(
        ("procedure",),
        [(p.get("text", json.dumps(p, ensure_ascii=False)),) for p in used["procedures"]],
        "No procedure enforced.",
    )
    return Html(
        listing
        + tag(
            "section",
            {"id": "why"},
            tag("h2", {}, f"What {used['thread_id']} used: ", used.get("query") or ""),
            tag("p", {}, used.get("plan_rationale") or used.get("route_reason") or ""),
            facts,
            recalled,
            procs,
        )
    )


def documents(rows: list[dict[str, Any]]) -> Html:
    """The documents the principal may read: research notes (with their ticker and status),
    their profile document, the shared conventions."""
    from urllib.parse import quote

    return table(
        ("document", "title", "ticker", "status", "updated"),
        [
            (
                tag("a", {"href": url(f"document?path={quote(d['path'], safe='/')}")}, d["path"]),
                str(d["metadata"].get("title") or ""),
                str(d["metadata"].get("ticker") or ""),
                str(d["metadata"].get("status") or ""),
                str(d["metadata"].get("updated") or d["metadata"].get("date") or "")[:16],
            )
            for d in rows
        ],
        "No documents.",
    )


def document(doc: dict[str, Any]) -> Html:
    """One document as stored: its front matter, its chart (a research note's) and its
    Markdown, as text."""
    from urllib.parse import quote

    meta = table(
        ("field", "value"),
        [(k, value_text(v)) for k, v in doc["metadata"].items()],
        "No front matter.",
    )
    chart = None
    if doc["metadata"].get("chart"):
        src = url(f"chart?path={quote(doc['path'], safe='/')}")
        chart = tag("img", {"src": src, "alt": f"The chart of {doc['path']}", "class_": "chart"})
    return Html(join([meta, chart or "", tag("pre", {"class_": "doc"}, doc["body"])]))


def _receipt_lines(receipt: dict[str, Any], done: bool) -> list[Html]:
    """The plan (``done`` False) or receipt, as the CLI's ``forget_receipt`` says it."""
    lines: list[Html] = []
    for row in receipt.get("found", []):
        lines.append(tag("li", {}, f"Found {row['tier']} {row['id']}: {row['text']}"))
    head = "Deleted" if done else "Would delete"
    for tier, found in receipt["deleted"].items():
        ids = ", ".join(found["ids"][:20]) + (" …" if found["count"] > 20 else "")
        lines.append(
            tag("li", {"class_": "deleted"}, f"{head} {found['count']} {tier}: {ids or '-'}")
        )
    for kept in receipt.get("kept", []):
        if kept.get("status") == "due for review":
            lines.append(tag("li", {}, f"Due for review: {kept['what']}"))
            continue
        lines.append(tag("li", {}, f"Kept {kept['what']}: {kept['why']}"))
    for note in receipt.get("notes", []):
        lines.append(tag("li", {}, note))
    if receipt.get("backups"):
        lines.append(tag("li", {}, receipt["backups"]))
    return lines


def forget_plan(item_id: str, plan: dict[str, Any], csrf: str) -> Html:
    """What forgetting ``item_id`` would delete (with what was derived from it), and the
    button that does it."""
    return Html(
        tag(
            "div",
            {"class_": "plan", "id": "plan"},
            tag(
                "p",
                {},
                "Nothing has been deleted yet. Forgetting ",
                tag("code", {}, item_id),
                " would:",
            ),
            tag("ul", {}, _receipt_lines(plan, done=False)),
        )
        + form("forget", csrf, hidden("id", item_id), button="Forget it", danger=True)
        + " "
        + tag("a", {"href": url("profile")}, "Cancel")
    )


def receipt(receipt_: dict[str, Any], what: str) -> Html:
    return tag(
        "div",
        {"class_": "receipt", "id": "receipt"},
        tag("p", {}, f"Done: {what}. Receipt:"),
        tag("ul", {}, _receipt_lines(receipt_, done=True)),
    )


def account_plan(plan: dict[str, Any], csrf: str) -> Html:
    """The account-deletion plan, shown before anything is deleted."""
    return Html(
        tag(
            "div",
            {"class_": "plan", "id": "plan"},
            tag("p", {}, "Nothing has been deleted yet. Deleting everything would:"),
            tag("ul", {}, _receipt_lines(plan, done=False)),
        )
        + form(
            "account/forget",
            csrf,
            tag(
                "label",
                {},
                tag(
                    "input", {"type": "checkbox", "name": "sure", "value": "yes", "required": True}
                ),
                " I understand everything above is deleted for good. ",
            ),
            button="Delete everything",
            danger=True,
        )
    )


def error(message: str) -> Html:
    return tag("p", {"class_": "error", "id": "error"}, message)
