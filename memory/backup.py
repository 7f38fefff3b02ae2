"""Backup and restore of the embedded files, and the integrity check over all of them.

An :class:`Embedded` is one file or folder of the embedded defaults (the application lists
them: checkpoints, thread index, fact ledger, embeddings cache, document index, the cold-store
folder). :func:`check` runs :mod:`memory.health`'s checks over them; :func:`backup` copies
each SQLite file with SQLite's online backup API (a consistent copy while other processes keep
using the file) and each folder while holding its ``<folder>.lock`` (the lock the embedded
store takes, so no process has it open), then writes ``manifest.json``. :func:`restore` checks
every file of a backup first, keeps the current files in ``<data dir>/backups/`` and then
copies the backup in (SQLite files again through the backup API, so open connections see the
restored content, not a file swapped under them). Everything a backup or a restore writes is
private to the user (:func:`memory.config.private_folder` / :func:`~memory.config.private_file`):
a backup holds the same memory as the files it copies.

Folders are copied sparse (:func:`copy_sparse`): the embedded store's write-ahead log and
vector files are large files with little data in them (224 MB apparent, under 1 MB written
for a few memories), and a plain copy would write every hole out as zeros. A backup, and the
copy a restore keeps of what it replaces, take about the disk space of the live folder;
:func:`prune_kept` removes the oldest of those restore copies.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from memory.config import (
    PRIVATE_FILE,
    PRIVATE_FOLDER,
    data_extents,
    private_file,
    private_folder,
)
from memory.errors import StorageError
from memory.health import ERASE_PENDING, FileCheck, check_folder, check_sqlite, guarded

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Embedded:
    """One embedded file or folder: what it is, where, and whether it is derived data."""

    name: str  # stable short name: the file's name inside a backup
    what: str
    path: Path
    kind: Literal["sqlite", "folder"]
    derived: bool = False  # rebuilt on demand when lost (a cache, an index)


@dataclass(frozen=True)
class Copied:
    name: str
    what: str
    source: str
    target: str
    size: int  # apparent bytes (a sparse file's holes count)
    allocated: int  # bytes on disk (st_blocks): what the copy really takes

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "what": self.what,
            "source": self.source,
            "target": self.target,
            "bytes": self.size,
            "allocated_bytes": self.allocated,
        }


def check(files: Sequence[Embedded]) -> list[FileCheck]:
    """The state of every embedded file (nothing is opened for writing or created)."""
    return [
        check_sqlite(f.what, f.path) if f.kind == "sqlite" else check_folder(f.what, f.path)
        for f in files
    ]


def backup(
    files: Sequence[Embedded], dest: str | os.PathLike[str], *, lock_timeout: float = 10.0
) -> list[Copied]:
    """Copy every existing embedded file into the folder ``dest`` (created; must be empty)."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise StorageError(
            f"The backup folder {dest} is not empty; choose a new folder (a backup never "
            "overwrites another).",
            "backup folder",
            dest,
        )
    with guarded("backup folder", dest):
        private_folder(dest)
    copied: list[Copied] = []
    for item in files:
        if not item.path.exists():
            continue
        target = dest / item.name
        if item.kind == "sqlite":
            _copy_sqlite(item, item.path, target)
        else:
            erased_first(item)
            with folder_held(item.path, lock_timeout), guarded("backup folder", dest):
                shutil.copytree(item.path, target, copy_function=copy_sparse)
                _make_private(target)
        copied.append(_copied(item, item.path, target))
    manifest = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": [c.to_json() for c in copied],
    }
    with guarded("backup folder", dest):
        private_file(dest / MANIFEST).write_text(
            json.dumps(manifest, indent=2) + "\n", encoding="utf-8"
        )
    return copied


def restore(
    files: Sequence[Embedded],
    src: str | os.PathLike[str],
    keep: str | os.PathLike[str],
    *,
    lock_timeout: float = 10.0,
) -> list[Copied]:
    """Restore the backup in ``src``; the files it replaces are backed up to ``keep`` first.

    Every file of the backup is checked before anything changes; a damaged or incomplete
    backup is refused. Files the backup does not hold are left as they are.
    """
    src = Path(src)
    manifest_path = src / MANIFEST
    if not manifest_path.is_file():
        raise StorageError(
            f"{src} is not a backup made by `analyst db snapshot` (no {MANIFEST}).",
            "backup folder",
            src,
        )
    listed = {entry["name"] for entry in json.loads(manifest_path.read_text())["files"]}
    chosen = [f for f in files if f.name in listed]
    for item in chosen:
        source = src / item.name
        probe = (check_sqlite if item.kind == "sqlite" else check_folder)(item.what, source)
        if probe.status != "ok":
            raise StorageError(
                f"The backup's {item.what} {source} is {probe.status} ({probe.detail}); "
                "nothing was restored.",
                item.what,
                source,
            )
    healthy = {f.name: check([f])[0].status == "ok" for f in chosen}
    _keep([f for f in chosen if f.path.exists()], healthy, Path(keep), lock_timeout)
    restored: list[Copied] = []
    for item in chosen:
        source = src / item.name
        if item.kind == "sqlite" and healthy[item.name]:
            _copy_sqlite(item, source, item.path)  # open connections see the restored pages
        elif item.kind == "sqlite":
            _replace_file(item, source)
        else:
            with folder_held(item.path, lock_timeout), guarded(item.what, item.path):
                if item.path.exists():
                    shutil.rmtree(item.path)
                shutil.copytree(source, item.path, copy_function=copy_sparse)
                _make_private(item.path)
        restored.append(_copied(item, source, item.path))
    return restored


def _keep(
    files: Sequence[Embedded], healthy: dict[str, bool], keep: Path, lock_timeout: float
) -> None:
    """The files a restore replaces, copied to ``keep`` (damaged ones byte for byte)."""
    backup([f for f in files if healthy[f.name]], keep, lock_timeout=lock_timeout)
    for item in files:
        if healthy[item.name]:
            continue
        with guarded("backup folder", keep):
            for suffix in ("", "-wal"):
                part = Path(f"{item.path}{suffix}")
                if part.exists():
                    shutil.copyfile(part, private_file(keep / f"{item.name}{suffix}"))


def _replace_file(item: Embedded, source: Path) -> None:
    """Put a copy of ``source`` in place of a damaged file (and drop its stale journal)."""
    with guarded(item.what, item.path):
        staging = item.path.with_name(f".{item.path.name}.restoring")
        shutil.copyfile(source, private_file(staging))
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{item.path}{suffix}").unlink(missing_ok=True)
        staging.replace(item.path)


def _copy_sqlite(item: Embedded, source: Path, target: Path) -> None:
    """SQLite's online backup from ``source`` into ``target`` (created or overwritten)."""
    with guarded(item.what, source):
        reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        with guarded(item.what, target):
            writer = sqlite3.connect(private_file(target), timeout=30)
            try:
                reader.backup(writer)
            finally:
                writer.close()
    finally:
        reader.close()


def erased_first(item: Embedded, timeout: float = 300.0) -> None:
    """Wait for the background erasure of a store folder a forget left pending, so a backup
    never copies what was forgotten (:mod:`memory.store.erasing`)."""
    if not (item.path / ERASE_PENDING).exists():
        return
    from memory.store.erasing import wait_erased

    if not wait_erased(item.path, timeout):
        raise StorageError(
            f"The {item.what} {item.path} is still erasing deleted memories after "
            f"{timeout:.0f} s; try the backup again once `analyst db check` no longer says so.",
            item.what,
            item.path,
        )


def folder_held(path: Path, timeout: float) -> AbstractContextManager[None]:
    """Hold ``<path>.lock``, the embedded store's own lock, so no process has the folder open
    (:func:`memory.store.edge.folder_lock`: one implementation, private, naming its holder by
    pid and program only). Imported here: only a folder's backup needs the store's engine."""
    from memory.store.edge import folder_lock

    return folder_lock(path, timeout)


def _make_private(folder: Path) -> None:
    """Make a copied folder private to the user: its folders 0700, its files 0600."""
    os.chmod(folder, PRIVATE_FOLDER)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(Path(root, name), PRIVATE_FOLDER)
        for name in files:
            os.chmod(Path(root, name), PRIVATE_FILE)


def prune_kept(folder: Path, prefix: str, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` folders named ``<prefix><timestamp>`` in ``folder``
    (the copies restores kept of what they replaced; the timestamps sort by name). Answers
    the folders removed."""
    if not folder.is_dir():
        return []
    kept = sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith(prefix))
    gone = kept[: max(0, len(kept) - keep)]
    with guarded("backup folder", folder):
        for old in gone:
            shutil.rmtree(old)
    return gone


#: Bytes read (and compared with zeros) at a time inside a file's data.
_CHUNK = 1 << 16
_ZEROS = bytes(_CHUNK)


def copy_sparse(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    """Copy the file ``src`` to ``dst`` writing only its data: holes stay holes.

    The data extents are found with ``SEEK_DATA``/``SEEK_HOLE`` (so a 32 MB write-ahead log
    with 4 KB in it reads 4 KB), and a zero-filled chunk inside them is skipped too (as ``cp
    --sparse=always``; it also keeps a copy small on a file system without ``SEEK_DATA``);
    the copy is then cut to the source's length. A copy of a sparse copy is byte for byte
    the same file. The signature is :func:`shutil.copytree`'s ``copy_function``."""
    with open(src, "rb") as reader, open(dst, "wb") as writer:
        rfd, wfd = reader.fileno(), writer.fileno()
        size = os.fstat(rfd).st_size
        for start, end in data_extents(rfd, size):
            at = start
            while at < end:
                chunk = os.pread(rfd, min(_CHUNK, end - at), at)
                if not chunk:
                    break  # the file shrank under us; the length is set below
                if chunk != _ZEROS[: len(chunk)]:
                    os.pwrite(wfd, chunk, at)
                at += len(chunk)
        os.ftruncate(wfd, size)
    return str(dst)


def _copied(item: Embedded, source: Path, target: Path) -> Copied:
    size, allocated = _size(target)
    return Copied(item.name, item.what, str(source), str(target), size, allocated)


def _size(path: Path) -> tuple[int, int]:
    """The apparent and the allocated bytes of a file, or of all files under a folder."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    stats = [p.stat() for p in files]
    return sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)
