"""Snapshots the size of the data: sparse files stay sparse in a snapshot, in the copy a
restore keeps of what it replaces, and in the restored folder; old copies are pruned.

The embedded store's write-ahead log and vector files are 32 MB files holding a few KB for a
few memories; a plain copy wrote about 224 MB per snapshot and per restore (issue 25). Sizes
here are allocated blocks (``st_blocks``, what ``du`` counts), never ``st_size``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memory.backup import copy_sparse
from tests.integration.conftest import Analyst

MIB = 1 << 20


def allocated(path: Path) -> int:
    """Bytes on disk of a file or of every file under a folder."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files)


def apparent(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def same_files(a: Path, b: Path) -> None:
    """The two folders hold the same files with the same bytes (holes read as zeros)."""
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def recall(analyst: Analyst, query: str) -> list[tuple[str, float]]:
    """What ``memory search`` answers: keys and relevance, best first (recency moves with
    the clock, relevance does not)."""
    found = analyst.json("memory", "search", query)["memories"]
    return [(m["key"], m["score"]["relevance"]) for m in found]


def listing(analyst: Analyst) -> list[tuple[str, str, str]]:
    found = analyst.json("memory", "list", "--memories")["memories"]
    return [(m["key"], m["text"], m["updated_at"]) for m in found]


def test_copy_sparse_writes_only_the_data_and_keeps_every_byte(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with open(src, "wb") as f:
        f.truncate(64 * MIB)
        for at in (0, 20 * MIB + 5, 64 * MIB - 3):
            f.seek(at)
            f.write(b"abc")
        f.seek(40 * MIB)
        f.write(bytes(MIB))  # written zeros: data to the file system, a hole in the copy
    assert allocated(src) > MIB  # the written zeros take blocks in the source

    copy_sparse(src, dst)

    assert dst.stat().st_size == src.stat().st_size
    assert dst.read_bytes() == src.read_bytes()
    assert allocated(dst) <= 64 * 1024, allocated(dst)  # three small extents


def test_copy_sparse_of_a_file_ending_in_a_hole_keeps_its_length(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(b"head")
    os.truncate(src, 8 * MIB)
    copy_sparse(src, dst)
    assert dst.stat().st_size == 8 * MIB and dst.read_bytes() == src.read_bytes()
    empty = tmp_path / "empty"
    empty.touch()
    copy_sparse(empty, tmp_path / "empty-copy")
    assert (tmp_path / "empty-copy").read_bytes() == b""


def test_snapshot_and_restore_take_the_disk_space_of_the_data(
    analyst: Analyst, tmp_path: Path
) -> None:
    for text in ("I prefer long-term holdings", "Semis are my focus", "Avoid high leverage"):
        assert analyst("memory", "add", text).code == 0
    live = analyst.data_dir / "qdrant-edge"
    assert apparent(live) > 100 * MIB  # the store's sparse files: mostly holes
    before = recall(analyst, "semiconductors")
    listed = listing(analyst)

    snap = tmp_path / "snap"
    made: dict[str, Any] = analyst.json("db", "snapshot", str(snap))
    copied = snap / "qdrant-edge"
    same_files(live, copied)
    assert allocated(copied) <= 3 * allocated(live), (allocated(copied), allocated(live))
    assert allocated(snap) * 20 < apparent(snap), (allocated(snap), apparent(snap))
    folder = next(f for f in made["files"] if f["name"] == "qdrant-edge")
    assert folder["allocated_bytes"] == allocated(copied)
    assert folder["bytes"] == apparent(copied)

    assert analyst("memory", "add", "Added after the snapshot").code == 0
    restored = analyst.json("db", "restore-snapshot", str(snap))
    kept = Path(restored["previous_files_kept_in"])
    assert allocated(kept) <= 3 * allocated(live), (allocated(kept), allocated(live))
    assert allocated(live) <= 3 * allocated(copied), (allocated(live), allocated(copied))
    same_files(copied, live)  # holes restored as holes, every byte the same

    assert listing(analyst) == listed
    assert recall(analyst, "semiconductors") == before


def test_restores_keep_the_newest_before_restore_copies(analyst: Analyst, tmp_path: Path) -> None:
    assert analyst("memory", "add", "Semis are my focus").code == 0
    snap = tmp_path / "snap"
    analyst.json("db", "snapshot", str(snap))
    keeping = Analyst({**analyst.env, "ANALYST_KEEP_BEFORE_RESTORE": "2"}, *analyst_dirs(analyst))
    kept = [keeping.json("db", "restore-snapshot", str(snap))["previous_files_kept_in"]]
    kept += [keeping.json("db", "restore-snapshot", str(snap))["previous_files_kept_in"]]
    kept += [keeping.json("db", "restore-snapshot", str(snap))["previous_files_kept_in"]]
    left = sorted(str(p) for p in (analyst.data_dir / "backups").iterdir())
    assert left == kept[1:]  # the oldest went, once the newest copy was complete
    for folder in left:
        assert json.loads((Path(folder) / "manifest.json").read_text())["files"]

    refused = Analyst({**analyst.env, "ANALYST_KEEP_BEFORE_RESTORE": "0"}, *analyst_dirs(analyst))
    run = refused.fail("db", "restore-snapshot", str(snap))
    assert run.code == 2 and "ANALYST_KEEP_BEFORE_RESTORE" in run.err
    assert sorted(str(p) for p in (analyst.data_dir / "backups").iterdir()) == left


def analyst_dirs(analyst: Analyst) -> tuple[Path, Path]:
    return analyst.data_dir, analyst.memory_dir
