"""Publishing an approved report into document memory, exactly once.

A publication is identified by (thread id, draft hash). Before writing, the publisher looks for
a research note that already carries both in its front matter; if one exists (publish retried
after a crash, or a replayed checkpoint) it returns that note instead of writing a second copy.
New notes are created with an exclusive link, so two concurrent publishers cannot both win.
A note found must also name the decision's approver and action: a note someone else created
with this thread and hash in its front matter is not taken for the publication.

Notes are written through the publishing principal's :class:`~memory.doc_authority.OwnedDocuments`
(``research/`` is records: created once, never replaced) and each write is audited.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from pathlib import Path

from agent.records import Decision, Draft, Publication
from memory.doc_authority import OwnedDocuments
from memory.documents import FileMemory

RESEARCH_DIR = "research"
#: The audit's reason for a publication's note and chart.
PUBLISH_REASON = "published an approved report"


async def publish_report(
    documents: OwnedDocuments, *, thread_id: str, draft: Draft, decision: Decision
) -> Publication:
    """The research note of ``draft`` under ``decision`` (written now, or the one a previous
    attempt wrote), with its chart beside it. File reads run in worker threads: the API
    server refuses blocking I/O on its event loop."""
    files = documents.files
    day = decision["decided_at"][:10]
    stem = f"{RESEARCH_DIR}/{draft['ticker']}-{day}"
    existing = await asyncio.to_thread(
        find_publication, files, stem, thread_id, draft["hash"], decision
    )
    if existing is not None:
        return await _with_chart(documents, existing, draft)
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
    has_chart = bool(draft["chart_path"]) and await asyncio.to_thread(
        Path(str(draft["chart_path"])).is_file
    )
    for n in range(1, 1000):
        name = stem if n == 1 else f"{stem}-{n}"
        if has_chart:
            metadata["chart"] = f"{Path(name).name}.png"
        try:
            await documents.write(
                f"{name}.md", draft["markdown"], metadata, reason=PUBLISH_REASON, exclusive=True
            )
        except FileExistsError:
            # Taken — possibly by a concurrent publisher of this very draft.
            mine = await asyncio.to_thread(
                _publication_at, files, f"{name}.md", thread_id, draft["hash"], decision
            )
            if mine is not None:
                return await _with_chart(documents, mine, draft)
            continue
        published = await asyncio.to_thread(
            _publication_at, files, f"{name}.md", thread_id, draft["hash"], decision
        )
        assert published is not None
        return await _with_chart(documents, published, draft)
    raise RuntimeError(f"more than 999 research notes named {stem}*.md")  # pragma: no cover


def _title(draft: Draft, decision: Decision) -> str:
    """The note's title: the draft's, or for an edited report its own first ``# `` heading."""
    if decision["action"] != "edit":
        return draft["title"]
    for line in draft["markdown"].splitlines():
        if line.startswith("# ") and line[2:].strip():
            return line[2:].strip()
    return f"{draft['ticker']} report (edited by {decision['approver']})"


async def _with_chart(
    documents: OwnedDocuments, publication: Publication, draft: Draft
) -> Publication:
    """Copy the draft's chart beside the note if it is not there yet (crash between the two)."""
    chart = publication["chart_path"]
    source = draft["chart_path"]

    def missing_chart() -> tuple[str, bytes] | None:
        if chart and source and not Path(chart).exists() and Path(source).is_file():
            rel = str(Path(chart).relative_to(documents.root.resolve()))
            return rel, Path(source).read_bytes()
        return None

    copy = await asyncio.to_thread(missing_chart)
    if copy is not None:
        with suppress(FileExistsError):  # a concurrent publisher of this draft copied it first
            await documents.write_bytes(*copy, reason=PUBLISH_REASON, exclusive=True)
    return publication


def find_publication(
    documents: FileMemory, stem: str, thread_id: str, draft_hash: str, decision: Decision
) -> Publication | None:
    """The note of ``stem`` published from this thread's draft under ``decision``, if any."""
    for rel in documents.list(f"{stem}*.md"):
        found = _publication_at(documents, rel, thread_id, draft_hash, decision)
        if found is not None:
            return found
    return None


def _publication_at(
    documents: FileMemory, rel: str, thread_id: str, draft_hash: str, decision: Decision
) -> Publication | None:
    from memory.errors import DocumentPathError

    try:
        meta = documents.read(rel).metadata
    except DocumentPathError:  # damaged (not UTF-8, bad front matter): not this publication
        return None
    if meta.get("thread_id") != thread_id or meta.get("draft_hash") != draft_hash:
        return None
    if meta.get("approver") != decision["approver"] or meta.get("decision") != decision["action"]:
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
