"""FileMemory refuses every way out of its root, writes atomically, and round-trips documents.

The path-escape matrix runs every operation against every escape (``..``, absolute paths, a
linked folder and a linked file pointing outside, globs with ``..``) and checks, each time,
that the call raised DocumentPathError, that nothing appeared or changed outside the root,
and that nothing was written inside it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.errors import (
    DocumentEncodingError,
    DocumentFormatError,
    DocumentNotFoundError,
    DocumentPathError,
    DocumentTooLargeError,
)
from memory.documents import FileMemory, join_front_matter, split_front_matter


def snapshot(folder: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under ``folder`` (links not followed) with its content and mtime."""
    out: dict[str, tuple[str, bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            if path.is_symlink():
                out[str(path.relative_to(folder))] = ("link", os.readlink(path), st.st_mtime_ns)
            elif path.is_dir():
                out[str(path.relative_to(folder))] = ("dir", "", st.st_mtime_ns)
            else:
                out[str(path.relative_to(folder))] = ("file", path.read_bytes(), st.st_mtime_ns)
    return out


@pytest.fixture
def world(tmp_path: Path) -> tuple[FileMemory, Path]:
    """A memory root with one document, and an outside folder reachable through two links."""
    root, outside = tmp_path / "mem", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nthe outside drawdown secret\n")
    (outside / "sub").mkdir()
    docs = FileMemory(root, index_path=tmp_path / "data" / "documents.sqlite")
    docs.write("notes/inside.md", "# Inside\n\nan inside drawdown note\n")
    os.symlink(outside, root / "linkdir")
    os.symlink(outside / "secret.md", root / "linkfile.md")
    os.symlink(outside / "secret.md", root / "notes" / "deeplink.md")
    return docs, outside


ESCAPES = [
    "../x.md",
    "a/../../x.md",
    "notes/../inside.md",  # '..' is refused even when it would stay inside
    "/tmp/x.md",
    "OUTSIDE_ABSOLUTE",  # replaced by an absolute path into the outside folder
    "linkdir/x.md",
    "linkdir/secret.md",
    "linkdir/sub/x.md",
    "linkfile.md",
    "notes/deeplink.md",
    "",
    "a\x00b.md",
]

GLOBS = [
    "../*.md",
    "**/../*.md",
    "notes/../../*",
    "/tmp/*.md",
    "OUTSIDE_ABSOLUTE",
    "linkdir/*.md",
    "linkdir/**/*.md",
    "linkdir",
    "linkfile.md",
    "",
]

OPERATIONS: dict[str, Callable[[FileMemory, str], Any]] = {
    "write": lambda d, p: d.write(p, "# pwned\n"),
    "write_meta": lambda d, p: d.write(p, "body", {"ticker": "NVDA"}),
    "write_exclusive": lambda d, p: d.write(p, "# pwned\n", exclusive=True),
    "write_bytes": lambda d, p: d.write_bytes(p, b"pwned"),
    "update": lambda d, p: d.update(p, lambda old: (old or "") + "pwned"),
    "read": lambda d, p: d.read(p),
    "read_text": lambda d, p: d.read_text(p),
    "read_raw": lambda d, p: d.read_raw(p),
    "exists": lambda d, p: d.exists(p),
    "delete": lambda d, p: d.delete(p),
    "resolve": lambda d, p: d.resolve(p),
}

GLOB_OPERATIONS: dict[str, Callable[[FileMemory, str], Any]] = {
    "list": lambda d, g: d.list(g),
    "scan": lambda d, g: d.scan(g),
    "search": lambda d, g: d.search("drawdown", pattern=g),
}


def _concrete(path: str, outside: Path) -> str:
    return str(outside / "x.md") if path == "OUTSIDE_ABSOLUTE" else path


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("path", ESCAPES)
def test_every_operation_refuses_every_escape(
    world: tuple[FileMemory, Path], operation: str, path: str
) -> None:
    docs, outside = world
    path = _concrete(path, outside)
    tmp_x = Path("/tmp/x.md")
    tmp_x_before = tmp_x.exists()
    before_out, before_in = snapshot(outside), snapshot(docs.root)
    with pytest.raises(DocumentPathError):
        OPERATIONS[operation](docs, path)
    assert snapshot(outside) == before_out, "something changed outside the root"
    assert snapshot(docs.root) == before_in, "something was written inside the root"
    assert tmp_x.exists() == tmp_x_before


@pytest.mark.parametrize("operation", sorted(GLOB_OPERATIONS))
@pytest.mark.parametrize("pattern", GLOBS)
def test_every_glob_operation_refuses_every_escape(
    world: tuple[FileMemory, Path], operation: str, pattern: str
) -> None:
    docs, outside = world
    pattern = _concrete(pattern, outside)
    before_out, before_in = snapshot(outside), snapshot(docs.root)
    with pytest.raises(DocumentPathError):
        GLOB_OPERATIONS[operation](docs, pattern)
    assert snapshot(outside) == before_out
    assert snapshot(docs.root) == before_in


def test_walks_never_reach_outside_through_links(world: tuple[FileMemory, Path]) -> None:
    docs, _ = world
    assert docs.list("**/*.md") == ["notes/inside.md"]
    assert docs.list("**") == ["notes/inside.md"]
    assert [s.path for s in docs.scan()] == ["notes/inside.md"]
    assert [h.path for h in docs.search("drawdown")] == ["notes/inside.md"]
    assert docs.search("secret") == []


def test_links_that_stay_inside_the_root_work(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    docs.write("real/a.md", "# A\n")
    os.symlink(docs.root / "real", docs.root / "alias")
    os.symlink(docs.root / "real" / "a.md", docs.root / "a-link.md")
    assert docs.read("alias/a.md").body == "# A\n"
    assert docs.read("a-link.md").body == "# A\n"
    docs.write("a-link.md", "# A2\n")  # written through the link, which stays a link
    assert (docs.root / "a-link.md").is_symlink()
    assert docs.read("real/a.md").body == "# A2\n"
    assert docs.delete("a-link.md")  # deletes the link, not its target
    assert docs.exists("real/a.md") and not (docs.root / "a-link.md").exists()


def test_non_utf8_content_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    docs.write("a.md", "original\n")
    before = snapshot(docs.root)
    for bad in (b"\xff\xfe bad", "caf\xe9".encode("latin-1")):
        with pytest.raises(DocumentEncodingError, match="not UTF-8"):
            docs.write_bytes("a.md", bad)
        with pytest.raises(DocumentEncodingError):
            docs.write_bytes("new.md", bad)
    assert snapshot(docs.root) == before
    (docs.root / "hand.md").write_bytes(b"\x80\x81 written by hand")
    with pytest.raises(DocumentEncodingError, match=r"hand\.md"):
        docs.read("hand.md")
    # Charts beside research notes are exact bytes; they are never read as text.
    docs.write_bytes("research/NVDA.png", b"\x89PNG\r\n\x1a\n")
    assert (docs.root / "research/NVDA.png").read_bytes() == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(DocumentEncodingError):
        docs.read_text("research/NVDA.png")
    os.symlink(docs.root / "a.md", docs.root / "alias.bin")
    with pytest.raises(DocumentEncodingError):  # the link's target is a Markdown document
        docs.write_bytes("alias.bin", b"\xff")
    assert docs.read_text("a.md") == "original\n"


def test_documents_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem", max_bytes=100)
    docs.write("a.md", "x" * 100)
    before = snapshot(docs.root)
    with pytest.raises(DocumentTooLargeError, match="101 bytes, over the 100-byte limit"):
        docs.write("a.md", "x" * 101)
    with pytest.raises(DocumentTooLargeError):
        docs.write("b.md", "small", {"note": "y" * 100})  # front matter counts too
    with pytest.raises(DocumentTooLargeError):
        docs.update("a.md", lambda old: (old or "") + "more")
    assert snapshot(docs.root) == before
    (docs.root / "big.md").write_text("y" * 500)
    with pytest.raises(DocumentTooLargeError, match="500 bytes"):
        docs.read("big.md")


def test_missing_documents_and_folders(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    with pytest.raises(DocumentNotFoundError, match=r"No document 'a\.md'"):
        docs.read("a.md")  # the root does not even exist yet
    assert not docs.exists("a.md") and not docs.delete("a.md")
    assert docs.list() == [] and docs.scan() == []
    assert not (tmp_path / "mem").exists(), "reads must not create the root"
    docs.write("f.md", "x")
    with pytest.raises(DocumentPathError, match="is a file, not a folder"):
        docs.write("f.md/g.md", "x")
    docs.write("d/e.md", "x")
    with pytest.raises(DocumentPathError, match="is a folder"):
        docs.write("d", "x")
    with pytest.raises(DocumentPathError, match="is a folder"):
        docs.delete("d")


METADATA_CASES = [
    {},
    {"ticker": "NVDA", "sources": ["a", "b"]},
    {"thread": "t-1", "as_of": "2023-12-29", "n": 3, "ok": True, "nested": {"k": [1, 2]}},
    {"title": "Ünïcode — ‘quotes’: yes", "empty": None},
]
BODIES = [
    "# A\n\ntext\n",
    "",
    "no trailing newline",
    "---\nlooks: like front matter\n---\nbody\n",
    "line\r\nwith CRLF\r\n",
    "--- not a fence\n",
]


@pytest.mark.parametrize("metadata", METADATA_CASES)
@pytest.mark.parametrize("body", BODIES)
def test_round_trip_with_front_matter(tmp_path: Path, metadata: dict[str, Any], body: str) -> None:
    docs = FileMemory(tmp_path / "mem")
    docs.write("notes/a.md", body, metadata)
    doc = docs.read("notes/a.md")
    assert (doc.metadata, doc.body) == (metadata, body)
    assert split_front_matter(join_front_matter(metadata, body)) == (metadata, body)


def test_front_matter_written_by_hand(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    docs.write_bytes("crlf.md", b"---\r\nticker: TSLA\r\n---\r\nbody\r\n")
    assert docs.read("crlf.md").metadata == {"ticker": "TSLA"}
    assert docs.read("crlf.md").body == "body\r\n"
    docs.write_bytes("empty.md", b"---\n---\nbody\n")
    assert (docs.read("empty.md").metadata, docs.read("empty.md").body) == ({}, "body\n")
    docs.write_bytes("list.md", b"---\n- a\n---\nbody\n")  # not a mapping: all body
    assert docs.read("list.md").body == "---\n- a\n---\nbody\n"
    docs.write_bytes("bad.md", b"---\nkey: [unclosed\n---\nbody\n")
    with pytest.raises(DocumentFormatError, match=r"bad\.md"):
        docs.read("bad.md")
    assert docs.read_text("bad.md").startswith("---\nkey")


def test_exclusive_write_refuses_existing_and_leaves_no_temp_files(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    docs.write("a.md", "one")
    with pytest.raises(FileExistsError):
        docs.write("a.md", "two", exclusive=True)
    os.symlink(tmp_path / "nowhere", docs.root / "dangling.md")
    with pytest.raises(DocumentPathError):  # a dangling link out of the root is refused
        docs.write("dangling.md", "x", exclusive=True)
    assert docs.read("a.md").body == "one"
    assert sorted(p.name for p in docs.root.iterdir()) == ["a.md", "dangling.md"]
    assert not (tmp_path / "nowhere").exists()


def test_files_get_ordinary_permissions(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    path = docs.write("a.md", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_globs(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    for p in ("a.md", "b.txt", "r/NVDA-1.md", "r/NVDA-1.png", "r/x/TSLA.md", ".hidden.md"):
        docs.write(p, "x")
    (docs.root / ".git").mkdir()
    (docs.root / ".git" / "c.md").write_text("x")
    assert docs.list() == ["a.md", "r/NVDA-1.md", "r/x/TSLA.md"]
    assert docs.list("*.md") == ["a.md"]
    assert docs.list("r/*") == ["r/NVDA-1.md", "r/NVDA-1.png"]
    assert docs.list("r") == ["r/NVDA-1.md", "r/NVDA-1.png", "r/x/TSLA.md"]
    assert docs.list("r/") == docs.list("r/**")
    assert docs.list("r/NVDA-?.[mp][dn]*") == ["r/NVDA-1.md", "r/NVDA-1.png"]
    assert docs.list("r/[!N]*/*.md") == ["r/x/TSLA.md"]
    assert docs.list("./a.md") == ["a.md"] and docs.list("missing/*.md") == []


# -- concurrency ----------------------------------------------------------------------------

VERSION_BYTES = 200_000


def _version(n: int) -> str:
    return f"# version {n}\n\n" + (chr(ord("a") + n) * VERSION_BYTES) + f"\nend {n}\n"


def _writer(root: str, n: int, rounds: int) -> None:
    docs = FileMemory(root)
    for _ in range(rounds):
        docs.write("shared.md", _version(n))


def _appender(root: str, n: int, rounds: int) -> None:
    docs = FileMemory(root)
    for i in range(rounds):
        docs.update("log.md", lambda old, i=i: (old or "") + f"{n}:{i}\n")


def _creator(root: str, n: int, results: Any) -> None:
    docs = FileMemory(root)
    try:
        docs.write("once.md", f"winner {n}", exclusive=True)
        results.put(n)
    except FileExistsError:
        pass


def test_concurrent_writers_leave_one_complete_version(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    docs = FileMemory(root)
    docs.write("shared.md", _version(0))
    versions = {_version(n) for n in range(6)}
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(root), n, 15)) for n in range(6)]
    for p in procs:
        p.start()
    seen = set()
    while any(p.is_alive() for p in procs):
        text = docs.read_text("shared.md")
        assert text in versions, f"a mix of versions ({len(text)} chars)"
        seen.add(text)
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert docs.read_text("shared.md") in versions
    assert [p.name for p in root.iterdir()] == ["shared.md"], "temporary files left behind"


def test_concurrent_updates_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_appender, args=(str(root), n, 25)) for n in range(4)]
    for p in procs:
        p.start()
    threads = [threading.Thread(target=_appender, args=(str(root), 10 + n, 25)) for n in range(3)]
    for t in threads:
        t.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    for t in threads:
        t.join()
    lines = FileMemory(root).read_text("log.md").splitlines()
    expected = {f"{n}:{i}" for n in [0, 1, 2, 3, 10, 11, 12] for i in range(25)}
    assert len(lines) == len(expected) and set(lines) == expected


def test_concurrent_exclusive_creators_have_one_winner(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    FileMemory(root).write("other.md", "x")
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_creator, args=(str(root), n, results)) for n in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    winners = []
    while not results.empty():
        winners.append(results.get())
    assert len(winners) == 1
    assert FileMemory(root).read_text("once.md") == f"winner {winners[0]}"
    assert sorted(p.name for p in root.iterdir()) == ["once.md", "other.md"]


def test_threads_share_one_file_memory(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem", index_path=tmp_path / "data" / "documents.sqlite")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(10):
                docs.write(f"t{n}/{i}.md", f"# note {n} {i}\n\nshared keyword\n")
                docs.search("shared keyword", limit=3)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(docs.index.matching_paths("shared keyword")) == 40


def test_writes_through_inside_links_index_the_real_file(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem", index_path=tmp_path / "data" / "documents.sqlite")
    docs.write("real/a.md", "# A\n\nplum\n")
    os.symlink(docs.root / "real", docs.root / "alias")
    assert [h.path for h in docs.search("plum")] == ["real/a.md"]
    docs.write("alias/a.md", "# A\n\napricot\n")
    assert [h.path for h in docs.search("apricot")] == ["real/a.md"]
    assert docs.search("plum") == []
    docs.delete("alias/a.md")
    assert docs.search("apricot") == [] and not docs.exists("real/a.md")
