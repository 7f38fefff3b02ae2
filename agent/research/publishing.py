"""Publishing an approved report into document memory, exactly once.

A publication is identified by (thread id, draft hash). Before writing, the publisher looks for
a research note that already carries both in its front matter; if one exists (publish retried
after a crash, or a replayed checkpoint) it returns that note instead of writing a second copy.
New notes are created with an exclusive link, so two concurrent publishers cannot both win.
"""

from __future__ import annotations

from pathlib import Path

from agent.state import Decision, Draft, Publication
from memory.documents import FileMemory

RESEARCH_DIR = "research"


def publish_report(
    documents: FileMemory, *, thread_id: str, draft: Draft, decision: Decision
) -> Publication:
    day = decision["decided_at"][:10]
    stem = f"{RESEARCH_DIR}/{draft['ticker']}-{day}"
    existing = find_publication(documents, stem, thread_id, draft["hash"])
    if existing is not None:
        return _with_chart(documents, existing, draft)
    metadata = {
        "ticker": draft["ticker"],
        "title": _title(draft, decision),
        "thread_id": thread_id,
        "draft_hash": draft["hash"],
        "decision": decision["action"],
        "approver": decision["approver"],
        "approved_at": decision["decided_at"],
        "data_as_of": draft["as_of"],
        "sources": list(draft["sources"]),
    }
    if decision["action"] == "edit":
        # The text is the reviewer's: the machine's title (and its rating) may not describe it.
        metadata["edited_by"] = decision["approver"]
    has_chart = bool(draft["chart_path"]) and Path(str(draft["chart_path"])).is_file()
    for n in range(1, 1000):
        name = stem if n == 1 else f"{stem}-{n}"
        if has_chart:
            metadata["chart"] = f"{Path(name).name}.png"
        try:
            documents.write(f"{name}.md", draft["markdown"], metadata, exclusive=True)
        except FileExistsError:
            # Taken — possibly by a concurrent publisher of this very draft.
            mine = _publication_at(documents, f"{name}.md", thread_id, draft["hash"])
            if mine is not None:
                return _with_chart(documents, mine, draft)
            continue
        published = _publication_at(documents, f"{name}.md", thread_id, draft["hash"])
        assert published is not None
        return _with_chart(documents, published, draft)
    raise RuntimeError(f"more than 999 research notes named {stem}*.md")  # pragma: no cover


def _title(draft: Draft, decision: Decision) -> str:
    """The note's title: the draft's, or for an edited report its own first ``# `` heading."""
    if decision["action"] != "edit":
        return draft["title"]
    for line in draft["markdown"].splitlines():
        if line.startswith("# ") and line[2:].strip():
            return line[2:].strip()
    return f"{draft['ticker']} report (edited by {decision['approver']})"


def _with_chart(documents: FileMemory, publication: Publication, draft: Draft) -> Publication:
    """Copy the draft's chart beside the note if it is not there yet (crash between the two)."""
    chart = publication["chart_path"]
    source = draft["chart_path"]
    if chart and source and not Path(chart).exists() and Path(source).is_file():
        root = documents.root.resolve()
        documents.write_bytes(str(Path(chart).relative_to(root)), Path(source).read_bytes())
    return publication


def find_publication(
    documents: FileMemory, stem: str, thread_id: str, draft_hash: str
) -> Publication | None:
    for rel in documents.list(f"{stem}*.md"):
        found = _publication_at(documents, rel, thread_id, draft_hash)
        if found is not None:
            return found
    return None


def _publication_at(
    documents: FileMemory, rel: str, thread_id: str, draft_hash: str
) -> Publication | None:
    meta = documents.read(rel).metadata
    if meta.get("thread_id") != thread_id or meta.get("draft_hash") != draft_hash:
        return None
    chart = meta.get("chart")
    return Publication(
        path=str(documents.resolve(rel)),
        chart_path=str(documents.resolve(str(Path(rel).parent / chart))) if chart else None,
        draft_hash=draft_hash,
        approver=str(meta.get("approver")),
        approved_at=str(meta.get("approved_at")),
        action=meta.get("decision", "approve"),
    )
