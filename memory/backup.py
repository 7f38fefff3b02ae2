"""Backup and restore of the embedded files, and the integrity check over all of them.

An :class:`Embedded` is one file or folder of the embedded defaults (the application lists
them: checkpoints, thread index, fact ledger, embeddings cache, document index, the cold-store
folder). :func:`check` runs :mod:`memory.health`'s checks over them; :func:`backup` copies
each SQLite file with SQLite's online backup API (a consistent copy while other processes keep
using the file) and each folder while holding its ``<folder>.lock`` (the lock the embedded
store takes, so no process has it open), then writes ``manifest.json``. :func:`restore` checks
every file of a backup first, keeps the current files in ``<data dir>/backups/`` and then
copies the backup in (SQLite files again through the backup API, so open connections see the
restored content, not a file swapped under them).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from memory.errors import StorageError, StoreLockedError
from memory.health import FileCheck, check_folder, check_sqlite, guarded

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
    size: int

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "what": self.what,
            "source": self.source,
            "target": self.target,
            "bytes": self.size,
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
        dest.mkdir(parents=True, exist_ok=True)
    copied: list[Copied] = []
    for item in files:
        if not item.path.exists():
            continue
        target = dest / item.name
        if item.kind == "sqlite":
            _copy_sqlite(item, item.path, target)
        else:
            with folder_held(item.path, lock_timeout), guarded("backup folder", dest):
                shutil.copytree(item.path, target)
        copied.append(Copied(item.name, item.what, str(item.path), str(target), _size(target)))
    manifest = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": [c.to_json() for c in copied],
    }
    with guarded("backup folder", dest):
        (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
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
                shutil.copytree(source, item.path)
        restored.append(Copied(item.name, item.what, str(source), str(item.path), _size(item.path)))
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
                    shutil.copyfile(part, keep / f"{item.name}{suffix}")


def _replace_file(item: Embedded, source: Path) -> None:
    """Put a copy of ``source`` in place of a damaged file (and drop its stale journal)."""
    with guarded(item.what, item.path):
        staging = item.path.with_name(f".{item.path.name}.restoring")
        shutil.copyfile(source, staging)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{item.path}{suffix}").unlink(missing_ok=True)
        staging.replace(item.path)


def _copy_sqlite(item: Embedded, source: Path, target: Path) -> None:
    """SQLite's online backup from ``source`` into ``target`` (created or overwritten)."""
    with guarded(item.what, source):
        reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        with guarded(item.what, target):
            target.parent.mkdir(parents=True, exist_ok=True)
            writer = sqlite3.connect(target, timeout=30)
            try:
                reader.backup(writer)
            finally:
                writer.close()
    finally:
        reader.close()


@contextmanager
def folder_held(path: Path, timeout: float) -> Iterator[None]:
    """Hold ``<path>.lock`` (the embedded store's own lock) so no process has the folder."""
    lock_path = path.with_name(path.name + ".lock")
    with guarded("store folder lock", lock_path):
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held across yield
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(path, timeout) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
