"""FileMemory keeps every write inside its root, atomically; publishing happens once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.errors import DocumentPathError
from agent.research.publishing import publish_report
from agent.research.report import content_hash
from agent.state import Decision, Draft
from memory.doc_authority import Authority, OwnedDocuments
from memory.documents import FileMemory
from memory.identity import Principal


@pytest.fixture
def docs(tmp_path: Path) -> FileMemory:
    return FileMemory(tmp_path / "mem")


def test_round_trip_with_front_matter(docs: FileMemory) -> None:
    docs.write("notes/a.md", "# A\n\ntext\n", {"ticker": "NVDA", "sources": ["x", "y"]})
    doc = docs.read("notes/a.md")
    assert doc.metadata == {"ticker": "NVDA", "sources": ["x", "y"]}
    assert doc.body == "# A\n\ntext\n"
    assert docs.list() == ["notes/a.md"]
    assert oct((docs.root / "notes/a.md").stat().st_mode & 0o777) != "0o600"


@pytest.mark.parametrize("bad", ["../x.md", "/tmp/x.md", "a/../../x.md", ""])
def test_escaping_paths_are_refused(docs: FileMemory, tmp_path: Path, bad: str) -> None:
    with pytest.raises(DocumentPathError):
        docs.write(bad, "x")
    assert not (tmp_path / "x.md").exists()


def test_symlinked_folder_leading_outside_is_refused(docs: FileMemory, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    docs.root.mkdir(parents=True)
    os.symlink(outside, docs.root / "link")
    with pytest.raises(DocumentPathError, match="outside"):
        docs.write("link/x.md", "x")
    assert list(outside.iterdir()) == []


def test_exclusive_write_refuses_existing(docs: FileMemory) -> None:
    docs.write("a.md", "one")
    with pytest.raises(FileExistsError):
        docs.write("a.md", "two", exclusive=True)
    assert docs.read("a.md").body == "one"
    assert sorted(p.name for p in docs.root.iterdir()) == ["a.md"]  # no temp file left


def _as_al(docs: FileMemory) -> OwnedDocuments:
    """The documents as the approver ``al`` (no journal: unaudited)."""
    return OwnedDocuments(docs, Authority(Principal("default", "al")), None)


def _draft(text: str, chart: Path | None) -> Draft:
    return Draft(
        ticker="NVDA",
        title="t",
        markdown=text,
        hash=content_hash(text),
        revision=0,
        as_of="2023-12-29",
        sources=["src"],
        chart_path=str(chart) if chart else None,
        metrics={},
        recommendation={},
    )


async def test_publish_is_exactly_once_per_thread_and_draft(
    docs: FileMemory, tmp_path: Path
) -> None:
    chart = tmp_path / "c.png"
    chart.write_bytes(b"\x89PNG fake")
    draft = _draft("# Report\n", chart)
    decision = Decision(
        action="approve",
        draft_hash=draft["hash"],
        approver="al",
        decided_at="2026-11-29T10:00:00+00:00",
    )
    first = await publish_report(_as_al(docs), thread_id="t-1", draft=draft, decision=decision)
    (docs.root / "research/NVDA-2026-11-29.png").unlink()  # crash between note and chart
    again = await publish_report(_as_al(docs), thread_id="t-1", draft=draft, decision=decision)
    assert again == first
    assert docs.list("research/*") == [
        "research/NVDA-2026-11-29.md",
        "research/NVDA-2026-11-29.png",
    ]
    assert (docs.root / "research/NVDA-2026-11-29.png").read_bytes() == b"\x89PNG fake"
    other = await publish_report(_as_al(docs), thread_id="t-2", draft=draft, decision=decision)
    assert other["path"].endswith("research/NVDA-2026-11-29-2.md")
    meta = docs.read("research/NVDA-2026-11-29.md").metadata
    assert meta["thread_id"] == "t-1" and meta["approver"] == "al"
    assert meta["draft_hash"] == draft["hash"] and meta["chart"] == "NVDA-2026-11-29.png"


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# NVDA: Hold, not Buy\n\nMy own view.\n", "NVDA: Hold, not Buy"),
        ("My own view, no heading.\n", "NVDA report (edited by al)"),
    ],
)
async def test_an_edited_report_is_titled_by_its_own_text(
    docs: FileMemory, text: str, title: str
) -> None:
    machine_title = "NVDA equity research: Buy (high confidence)"
    machine = Draft(**{**_draft(f"# {machine_title}\n", None), "title": machine_title})
    edited = Draft(**{**machine, "markdown": text, "hash": content_hash(text)})
    decision = Decision(
        action="edit",
        draft_hash=edited["hash"],
        approver="al",
        decided_at="2026-11-29T10:00:00+00:00",
    )
    published = await publish_report(_as_al(docs), thread_id="t-e", draft=edited, decision=decision)
    meta = docs.read("research/NVDA-2026-11-29.md").metadata
    assert published["path"].endswith("research/NVDA-2026-11-29.md")
    assert meta["title"] == title != machine["title"]
    assert meta["decision"] == "edit" and meta["edited_by"] == "al"
