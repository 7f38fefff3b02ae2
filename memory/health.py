"""Storage faults of the embedded files, as one clear error; and the integrity check.

A damaged SQLite file, a read-only data folder and a full disk reach Python as
``sqlite3.DatabaseError`` or ``OSError`` with a terse message and no file name.
:func:`storage_fault` turns one into a :class:`~memory.errors.StorageError` that names the
file, says what is wrong and what to do; :func:`guarded` applies it around a block that uses
one file. :func:`check_sqlite` and :func:`check_folder` are what ``analyst db check`` runs over
every embedded file (SQLite's own ``PRAGMA integrity_check``, opened read-only so a check
never changes or creates anything).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memory.errors import (
    StorageCorruptError,
    StorageError,
    StorageFullError,
    StorageReadOnlyError,
)

_CORRUPT = ("malformed", "not a database", "corrupt", "file is encrypted")
_READ_ONLY = ("readonly", "read-only", "unable to open database file")
_FULL = ("disk is full", "database or disk is full")
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_READ_ONLY_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM}


def storage_fault(error: BaseException, what: str, path: object) -> StorageError | None:
    """The :class:`StorageError` ``error`` means for the ``what`` at ``path``, or None when it
    is not a storage fault (a programming error, a lock timeout: left as it is)."""
    if isinstance(error, StorageError):
        return error
    if isinstance(error, OSError):
        if error.errno in _FULL_ERRNOS:
            return StorageFullError(what, path, error.strerror or str(error))
        if error.errno in _READ_ONLY_ERRNOS:
            return StorageReadOnlyError(what, path, error.strerror or str(error))
        return None
    if not isinstance(error, sqlite3.DatabaseError):
        return None
    text = str(error)
    lowered = text.lower()
    if any(word in lowered for word in _CORRUPT):
        return StorageCorruptError(what, path, text)
    if any(word in lowered for word in _FULL):
        return StorageFullError(what, path, text)
    if any(word in lowered for word in _READ_ONLY):
        return StorageReadOnlyError(what, path, text)
    if "disk i/o error" in lowered:
        # A short write (file-size limit, a device gone) as SQLite reports it.
        return StorageFullError(what, path, text)
    return None


# -- memory-mapped files -----------------------------------------------------------------------

#: Qdrant Edge maps its WAL segments and page files as sparse 32 MiB files and writes through
#: the map. A store into a page the filesystem cannot allocate is a SIGBUS that kills the
#: process (exit 135, no message), never an ENOSPC Python could catch; so its writer checks
#: first that every mapped byte, and the next WAL segment, can be allocated.
MAPPED_SEGMENT = 32 << 20
#: The mapped size of a new shard holding one item: 225 MiB apparent, nearly all holes
#: (WAL segments, page files, flags), measured with qdrant-edge-py 0.9.0 on Linux.
NEW_SHARD_MAPPED = 226 << 20


def unallocated_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` map but the filesystem has not allocated (holes)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                info = os.stat(os.path.join(root, name))
            except OSError:
                continue  # removed meanwhile (a swap, a WAL segment retired)
            total += max(0, info.st_size - info.st_blocks * 512)
    return total


def free_bytes(path: Path) -> int:
    """Free space, for this process, on the filesystem holding ``path`` (or its nearest
    existing parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def read_only_view(folder: Path) -> tempfile.TemporaryDirectory[str]:
    """A private copy of ``folder`` (holes kept: ``cp --sparse=always``) in a temporary
    folder removed when the returned object is: Qdrant Edge maps every file writable, so it
    cannot load a shard in a read-only folder; reads are served from the copy."""
    view = tempfile.TemporaryDirectory(prefix="analyst-read-only-")
    target = Path(view.name) / folder.name
    done = subprocess.run(
        ["cp", "-a", "--sparse=always", str(folder), str(target)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        view.cleanup()
        raise StorageReadOnlyError(
            "long-term memory folder", folder, f"no readable copy: {done.stderr.strip()}"
        )
    return view


def ensure_mapped_space(what: str, folder: Path) -> None:
    """Raise :class:`StorageFullError` naming ``folder`` and the space needed unless its disk
    can back every page its memory-mapped files may write (see :data:`MAPPED_SEGMENT`)."""
    holes = unallocated_bytes(folder) if (folder / "segments").exists() else NEW_SHARD_MAPPED
    needed = holes + MAPPED_SEGMENT
    free = free_bytes(folder)
    if free < needed:
        raise StorageFullError(
            what,
            folder,
            f"its disk has {_human(free)} free and this store's memory-mapped files need "
            f"{_human(needed)}",
        )


def is_corruption(error: BaseException) -> bool:
    """Whether ``error`` says the file's bytes are damaged (not a lock, space or permission)."""
    return isinstance(error, sqlite3.DatabaseError) and any(
        word in str(error).lower() for word in _CORRUPT
    )


@contextmanager
def guarded(what: str, path: object) -> Iterator[None]:
    """Raise storage faults inside the block as the :class:`StorageError` naming ``path``."""
    try:
        yield
    except (sqlite3.DatabaseError, OSError) as error:
        fault = storage_fault(error, what, path)
        if fault is None or fault is error:
            raise
        raise fault from error


# -- the integrity check -----------------------------------------------------------------------


@dataclass(frozen=True)
class FileCheck:
    """One embedded file or folder: ``ok``, ``missing`` (never created: fine), ``damaged``,
    or -- its bytes intact -- ``full`` (no space left beside it) or ``unwritable``
    (a read-only folder or mount)."""

    what: str
    path: str
    status: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "damaged"

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "path": self.path, "status": self.status, "detail": self.detail}


#: The file a Qdrant Edge shard holds while deleted items' bytes may remain in it
#: (``memory.store.erasing.PENDING_FILE``; named here, below the store, without importing it).
ERASE_PENDING = "analyst-erase-pending"
#: Below this much free space SQLite cannot create a WAL index or journal beside a file.
_FULL_BELOW = 1 << 20


def check_sqlite(what: str, path: Path) -> FileCheck:
    """``PRAGMA integrity_check`` of one SQLite file, opened read-only (nothing is created).

    A file SQLite cannot open because its folder is full or read-only (it needs to create the
    WAL index beside it) is checked again without one: intact bytes there are ``full`` or
    ``unwritable``, never ``damaged``."""
    if not path.exists():
        return FileCheck(what, str(path), "missing", "not created yet")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            tables = int(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        if is_corruption(error):
            return FileCheck(what, str(path), "damaged", str(error))
        return _check_immutable(what, path, str(error))
    if rows != ["ok"]:
        return FileCheck(what, str(path), "damaged", "; ".join(rows[:3]))
    return FileCheck(what, str(path), "ok", f"{tables} schema objects, {_size(path)}")


def _check_immutable(what: str, path: Path, why: str) -> FileCheck:
    """Check the bytes of a file SQLite could not open normally (``why``) without SQLite's
    shared memory, then say why it could not: a full disk, a read-only folder."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        return FileCheck(what, str(path), "damaged", str(error))
    if rows != ["ok"]:
        return FileCheck(what, str(path), "damaged", "; ".join(rows[:3]))
    free = free_bytes(path.parent)
    if free < _FULL_BELOW:
        return FileCheck(
            what,
            str(path),
            "full",
            f"not damaged ({_size(path)} intact); its disk has {_human(free)} free: free some "
            "space",
        )
    if not os.access(path.parent, os.W_OK) or not os.access(path, os.W_OK):
        return FileCheck(what, str(path), "unwritable", f"read-only folder, {_size(path)} intact")
    return FileCheck(what, str(path), "damaged", why)


def check_folder(what: str, path: Path) -> FileCheck:
    """Every file under ``path`` can be read to its end (an embedded store's folder)."""
    if not path.exists():
        return FileCheck(what, str(path), "missing", "not created yet")
    count = total = 0
    try:
        for root, _dirs, files in os.walk(path, onerror=_raise):
            for name in files:
                file = Path(root) / name
                with file.open("rb") as stream:
                    while chunk := stream.read(1 << 20):
                        total += len(chunk)
                count += 1
    except OSError as error:
        return FileCheck(what, str(path), "damaged", f"{error.strerror or error}: {error.filename}")
    detail = f"{count} files, {_human(total)} readable"
    if (path / ERASE_PENDING).exists():
        detail += "; deleted memories still being erased from its files (background rewrite)"
    return FileCheck(what, str(path), "ok", detail)


def _raise(error: OSError) -> None:
    raise error


def _size(path: Path) -> str:
    return _human(path.stat().st_size)


def _human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
