"""The document search index follows the files: hand edits, additions and deletions.

Real SQLite files in each test's data folder, real Markdown files edited behind the program's
back, and the real ``analyst notes`` console script. A counting FileMemory proves that a
refresh re-reads only files whose time or size changed; an injected clock drives the
freshness window without sleeping.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from agent.errors import InvalidSearchError
from memory.doc_search import query_words, text_has_words, word_pattern
from memory.documents import FileMemory, RawDocument

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class CountingMemory(FileMemory):
    """FileMemory that counts the files the index opens."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.reads: list[str] = []

    def read_raw(self, relpath: str) -> RawDocument:
        self.reads.append(relpath)
        return super().read_raw(relpath)


def age(path: Path, seconds: float = 3600) -> None:
    """Back-date a file the way one edited some time ago looks (outside the racy window)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def hand_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    age(path)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def docs(tmp_path: Path, clock: Clock) -> CountingMemory:
    memory = CountingMemory(
        tmp_path / "mem",
        index_path=tmp_path / "data" / "documents.sqlite",
        refresh_interval=5.0,
        clock=clock,
    )
    for name, text in {
        "research/NVDA.md": "# NVDA\n\nMax drawdown was deep in 2022.\n\nBeta is high.\n",
        "research/TSLA.md": "# TSLA\n\nVolatility dominates.\n",
        "conventions/analysis-format.md": "# Format\n\n## Required sections\n\n1. Summary\n",
    }.items():
        hand_write(memory.root / name, text)
    return memory


def paths(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.path for h in hits]


def test_hand_edits_additions_and_deletions_after_the_freshness_window(
    docs: CountingMemory, clock: Clock
) -> None:
    assert paths(docs.search("drawdown")) == ["research/NVDA.md"]
    root = docs.root
    hand_write(root / "research/NVDA.md", "# NVDA\n\nNo longer mentions that.\n")
    hand_write(root / "learnings/drawdowns.md", "# Drawdowns\n\nA drawdown lesson.\n")
    (root / "research/TSLA.md").unlink()

    clock.now += 4.9  # inside the window: the index is trusted, no file is touched
    docs.reads.clear()
    assert paths(docs.search("drawdown")) == ["research/NVDA.md"]
    assert paths(docs.search("volatility")) == ["research/TSLA.md"]
    assert docs.reads == []

    clock.now += 0.2  # the window has passed: the next search scans first
    assert paths(docs.search("drawdown")) == ["learnings/drawdowns.md"]
    assert docs.search("volatility") == []
    assert sorted(docs.reads) == ["learnings/drawdowns.md", "research/NVDA.md"]


def test_reindex_picks_up_hand_edits_at_once(docs: CountingMemory) -> None:
    assert paths(docs.search("beta")) == ["research/NVDA.md"]
    hand_write(docs.root / "research/TSLA.md", "# TSLA\n\nBeta of TSLA is higher.\n")
    assert paths(docs.search("beta")) == ["research/NVDA.md"]  # within the window
    stats = docs.reindex()
    assert (stats.read, stats.indexed, stats.unchanged) == (1, 1, 2)
    assert sorted(paths(docs.search("beta"))) == ["research/NVDA.md", "research/TSLA.md"]


def test_own_writes_and_deletes_are_searchable_immediately(docs: CountingMemory) -> None:
    docs.search("anything")
    docs.write("learnings/new.md", "# New\n\nfresh insight\n")
    assert paths(docs.search("insight")) == ["learnings/new.md"]
    docs.delete("learnings/new.md")
    assert docs.search("insight") == []


def test_unchanged_files_are_not_read_again(docs: CountingMemory) -> None:
    first = docs.reindex()
    assert (first.scanned, first.read, first.indexed) == (3, 3, 3)
    docs.reads.clear()
    for _ in range(3):
        stats = docs.reindex()
        assert (stats.read, stats.indexed, stats.unchanged) == (0, 0, 3)
    assert docs.reads == []
    # Same size, new time: re-read, found identical, not re-indexed.
    age(docs.root / "research/TSLA.md", 60)
    stats = docs.reindex()
    assert (stats.read, stats.indexed, stats.unchanged) == (1, 0, 3)
    assert docs.reads == ["research/TSLA.md"]


def test_a_racy_edit_with_the_same_time_and_size_is_caught(tmp_path: Path) -> None:
    docs = CountingMemory(tmp_path / "mem", index_path=tmp_path / "d.sqlite")
    path = docs.root / "a.md"
    path.parent.mkdir(parents=True)
    path.write_text("alpha text\n")
    docs.reindex()  # read within the racy window: remembered as "check again"
    st = path.stat()
    path.write_text("gamma text\n")  # same size; restore the old time exactly
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert paths(docs.search("gamma")) == []  # within the freshness window
    docs.reindex()
    assert paths(docs.search("gamma")) == ["a.md"] and docs.search("alpha") == []


def test_problem_files_are_reported_and_retried_when_fixed(tmp_path: Path) -> None:
    docs = CountingMemory(tmp_path / "mem", index_path=tmp_path / "d.sqlite", max_bytes=200)
    hand_write(docs.root / "ok.md", "fine words\n")
    (docs.root / "latin1.md").write_bytes("caf\xe9 words\n".encode("latin-1"))
    age(docs.root / "latin1.md")
    hand_write(docs.root / "big.md", "words " * 100)
    stats = docs.reindex()
    assert sorted(p for p, _ in stats.skipped) == ["big.md", "latin1.md"]
    assert dict(docs.index.problems())["big.md"].startswith("Document 'big.md' is 600 bytes")
    assert "not UTF-8" in dict(docs.index.problems())["latin1.md"]
    assert paths(docs.search("words")) == ["ok.md"]
    docs.reads.clear()
    assert docs.reindex().read == 0  # a broken file is not re-read until it changes
    hand_write(docs.root / "latin1.md", "café words\n")
    docs.reindex()
    assert sorted(paths(docs.search("words"))) == ["latin1.md", "ok.md"]
    assert [p for p, _ in docs.index.problems()] == ["big.md"]


def test_ranking_paragraph_and_line(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem", index_path=tmp_path / "d.sqlite")
    docs.write("a.md", "# Apples\n\nintro\n\nrisk once\n")
    docs.write("b.md", "# Risk register\n\nrisk risk risk, every kind of risk.\n\nother\n")
    docs.write("c.md", "# C\n\nnothing here\n\nrisk and beta here\n", {"ticker": "NVDA"})
    hits = docs.search("risk")
    assert paths(hits)[0] == "b.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    c = next(h for h in hits if h.path == "c.md")
    assert (c.paragraph, c.line, c.title) == ("risk and beta here", 8, "C")
    both = docs.search("beta RISK")
    assert paths(both) == ["c.md"] and both[0].paragraph == "risk and beta here"
    assert paths(docs.search("nvda")) == ["c.md"]  # front matter is searchable text
    assert len(docs.search("risk", limit=1)) == 1
    assert paths(docs.search("risk", pattern="[ab].md")) in (["b.md", "a.md"],)
    with pytest.raises(InvalidSearchError, match="no words"):
        docs.search("  -- ?? ")


WORDS = [
    "alpha", "beta", "gamma", "delta", "drawdown", "risk", "NVDA", "tsla", "café", "naïve",
    "foo", "bar", "2023", "10k", "rsi", "Straße", "OR", "AND", "NEAR", "and",
]  # fmt: skip
SEPARATORS = [" ", " ", " ", "\n", "\n\n", "-", "_", ".", ", ", "/", "'", "(", ")", "*", '"']


def test_index_finds_exactly_what_a_plain_scan_finds(tmp_path: Path) -> None:
    rng = random.Random(7)
    docs = FileMemory(tmp_path / "mem", index_path=tmp_path / "d.sqlite")
    texts: dict[str, str] = {}
    for n in range(300):
        pieces = []
        for _ in range(rng.randint(3, 40)):
            word = rng.choice(WORDS)
            word = word.upper() if rng.random() < 0.2 else word
            word = word + rng.choice(["", "", "", "s", "ing"]) if rng.random() < 0.3 else word
            pieces.append(word + rng.choice(SEPARATORS))
        text = "".join(pieces)
        path = f"d{n % 7}/doc{n}.md"
        docs.write(path, text)
        texts[path] = text
    queries = [
        "alpha", "drawdown", "DRAWDOWN risk", "café", "CAFÉ", "naïve", "naive", "foo", "foo_bar",
        "bar-foo", "2023", "10k", "10K rsi", "straße", "or", "and", "near", "AND OR",
        "alphas", "delta gamma beta", "betaing", "tsla nvda", "rsi*", '"beta"', "beta)",
    ]  # fmt: skip
    for query in queries:
        patterns = [word_pattern(w) for w in query_words(query)]
        scan = {p for p, t in texts.items() if text_has_words(t, patterns)}
        assert docs.index.matching_paths(query) == scan, query
        assert set(paths(docs.search(query, limit=None))) == scan, query


def test_search_cost_does_not_read_files(tmp_path: Path) -> None:
    docs = CountingMemory(tmp_path / "mem", index_path=tmp_path / "d.sqlite")
    for n in range(200):
        hand_write(docs.root / f"n{n}.md", f"# Note {n}\n\nshared word and unique{n}\n")
    docs.reindex()
    docs.reads.clear()
    for n in range(50):
        assert paths(docs.search(f"unique{n}")) == [f"n{n}.md"]
    assert docs.reads == []


def test_another_process_sees_changes_after_its_window(tmp_path: Path, clock: Clock) -> None:
    index = tmp_path / "d.sqlite"
    a = FileMemory(tmp_path / "mem", index_path=index, refresh_interval=5.0, clock=clock)
    b = FileMemory(tmp_path / "mem", index_path=index, refresh_interval=5.0, clock=clock)
    a.write("x.md", "kiwi\n")
    assert paths(a.search("kiwi")) == ["x.md"]
    assert paths(b.search("kiwi")) == ["x.md"]  # same database, refreshed by a
    b.write("y.md", "kiwi mango\n")
    assert paths(b.search("mango")) == ["y.md"]  # b's own write
    clock.now += 1
    assert paths(a.search("mango")) == ["y.md"]  # b indexed it into the shared database
    b.delete("y.md")
    (tmp_path / "mem" / "z.md").write_text("mango by hand\n")
    clock.now += 5
    assert paths(a.search("mango")) == ["z.md"]


def test_index_is_bound_to_its_root_and_rebuilds_when_damaged(tmp_path: Path) -> None:
    index = tmp_path / "d.sqlite"
    one = FileMemory(tmp_path / "one", index_path=index)
    one.write("a.md", "apple\n")
    assert paths(one.search("apple")) == ["a.md"]
    one.close()
    two = FileMemory(tmp_path / "two", index_path=index)
    two.write("b.md", "banana\n")
    assert two.search("apple") == [] and paths(two.search("banana")) == ["b.md"]
    two.close()
    index.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    broken = FileMemory(tmp_path / "two", index_path=index)
    # Derived data: the damaged file is moved aside and the index built again, no command
    # needed (it used to take `analyst notes reindex --full`, which failed on it too).
    assert paths(broken.search("banana")) == ["b.md"]
    assert len(list(tmp_path.glob("d.sqlite.damaged-*"))) == 1
    stats = broken.reindex(full=True)
    assert stats.indexed == 1 and paths(broken.search("banana")) == ["b.md"]
    with sqlite3.connect(index) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1


# -- the CLI -------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_notes_end_to_end(analyst, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    mem = analyst.memory_dir
    hand_write(mem / "conventions/data-sources.md", "# Sources\n\nCite the bundled dataset.\n")
    hand_write(mem / "research/NVDA-2023-12-29.md", "---\nticker: NVDA\n---\n# NVDA\n\nbeta\n")

    assert analyst.json("notes", "list") == [
        "conventions/data-sources.md",
        "research/NVDA-2023-12-29.md",
    ]
    assert analyst.json("notes", "list", "research/*.md") == ["research/NVDA-2023-12-29.md"]
    shown = analyst.json("notes", "show", "research/NVDA-2023-12-29.md")
    assert shown["metadata"] == {"ticker": "NVDA"} and shown["body"] == "# NVDA\n\nbeta\n"
    plain = analyst("notes", "show", "research/NVDA-2023-12-29.md")
    assert plain.code == 0 and plain.out.startswith("---\nticker: NVDA\n---\n")

    hits = analyst.json("notes", "search", "bundled")
    assert [(h["path"], h["paragraph"], h["line"]) for h in hits] == [
        ("conventions/data-sources.md", "Cite the bundled dataset.", 3)
    ]
    # A hand edit is seen at once after reindex (a new process within the window would not
    # look: the previous search scanned moments ago).
    hand_write(mem / "learnings/lesson.md", "# Lesson\n\nbundled data is from 2023.\n")
    reindex = analyst.json("notes", "reindex")
    assert reindex["indexed"] == 1 and reindex["problems"] == []
    assert {h["path"] for h in analyst.json("notes", "search", "bundled")} == {
        "conventions/data-sources.md",
        "learnings/lesson.md",
    }
    text_run = analyst("notes", "search", "bundled", "--limit", "1")
    assert text_run.code == 0 and "Cite the bundled dataset." in text_run.out

    made = analyst("notes", "edit", "learnings/new.md", "--text", "# New\n\nkumquat\n")
    assert made.code == 0, str(made)
    assert [h["path"] for h in analyst.json("notes", "search", "kumquat")] == ["learnings/new.md"]
    source = tmp_path / "mine.md"
    source.write_text("# Mine\n\npersimmon\n")
    assert analyst("notes", "edit", "learnings/new.md", "--file", str(source)).code == 0
    assert (mem / "learnings/new.md").read_text() == "# Mine\n\npersimmon\n"

    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('persimmon', 'quince'))\n"
    )
    env = {**analyst.env, "EDITOR": f"{sys.executable} {editor}", "VISUAL": ""}
    edited = type(analyst)(env=env, data_dir=analyst.data_dir, memory_dir=mem)(
        "notes", "edit", "learnings/new.md"
    )
    assert edited.code == 0, str(edited)
    assert (mem / "learnings/new.md").read_text() == "# Mine\n\nquince\n"
    assert analyst("notes", "search", "persimmon").out.startswith("No document")

    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, mem / "escape")
    for args in (
        ("notes", "show", "../x.md"),
        ("notes", "edit", "/tmp/x.md", "--text", "x"),
        ("notes", "edit", "escape/x.md", "--text", "x"),
        ("notes", "list", "../*"),
        ("notes", "list", "escape/*"),
        ("notes", "search", "x", "--glob", "escape/**"),
        ("notes", "search", "???"),
    ):
        run = analyst.fail(*args)
        assert run.code == 2, str(run)
    assert list(outside.iterdir()) == []
    missing = analyst.fail("notes", "show", "nope.md")
    assert missing.code == 3 and "No document 'nope.md'" in missing.err
    no_editor = {**analyst.env, "EDITOR": "", "VISUAL": ""}
    run = type(analyst)(env=no_editor, data_dir=analyst.data_dir, memory_dir=mem).fail(
        "notes", "edit", "learnings/new.md"
    )
    assert "set $EDITOR" in run.err
    assert json.loads(analyst("notes", "reindex", "--full", "--json").out)["indexed"] == 4
