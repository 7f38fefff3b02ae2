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
        # A crash may have struck between the note and its chart: finish the job.
        if existing["chart_path"] and not Path(existing["chart_path"]).exists():
            _copy_chart(draft, Path(existing["chart_path"]))
        return existing
    metadata = {
        "ticker": draft["ticker"],
        "title": draft["title"],
        "thread_id": thread_id,
        "draft_hash": draft["hash"],
        "decision": decision["action"],
        "approver": decision["approver"],
        "approved_at": decision["decided_at"],
        "data_as_of": draft["as_of"],
        "sources": list(draft["sources"]),
    }
    for n in range(1, 1000):
        name = stem if n == 1 else f"{stem}-{n}"
        chart_rel = None
        if draft["chart_path"] and Path(draft["chart_path"]).is_file():
            chart_rel = f"{name}.png"
            metadata["chart"] = Path(chart_rel).name
        try:
            path = documents.write(f"{name}.md", draft["markdown"], metadata, exclusive=True)
        except FileExistsError:
            metadata.pop("chart", None)
            continue
        if chart_rel:
            _copy_chart(draft, documents.resolve(chart_rel))
        return Publication(
            path=str(path),
            chart_path=str(documents.resolve(chart_rel)) if chart_rel else None,
            draft_hash=draft["hash"],
            approver=decision["approver"],
            approved_at=decision["decided_at"],
            action=decision["action"],
        )
    raise RuntimeError(f"more than 999 research notes named {stem}*.md")  # pragma: no cover


def _copy_chart(draft: Draft, target: Path) -> None:
    if draft["chart_path"] and Path(draft["chart_path"]).is_file():
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(Path(draft["chart_path"]).read_bytes())
        tmp.replace(target)


def find_publication(
    documents: FileMemory, stem: str, thread_id: str, draft_hash: str
) -> Publication | None:
    for rel in documents.list(f"{stem}*.md"):
        meta = documents.read(rel).metadata
        if meta.get("thread_id") == thread_id and meta.get("draft_hash") == draft_hash:
            chart = meta.get("chart")
            return Publication(
                path=str(documents.resolve(rel)),
                chart_path=str(documents.resolve(str(Path(rel).parent / chart))) if chart else None,
                draft_hash=draft_hash,
                approver=str(meta.get("approver")),
                approved_at=str(meta.get("approved_at")),
                action=meta.get("decision", "approve"),
            )
    return None
