"""What the storage tiers read from the application's settings, and how they make files.

``memory/`` does not import the application. A factory that is configured "from settings"
takes any object with the attributes below (the analyst's ``agent.settings.Settings`` is one),
so the storage layer states exactly which settings it depends on and nothing more.

Files the tiers create hold a user's memory, so they are private to that user: folders 0700
(:func:`private_folder`), files 0600 (:func:`private_file`, created before SQLite opens them so
that its ``-wal`` and ``-shm`` files, which take the database's mode, are private too). The
modes are explicit, whatever the process umask. A lock file says who holds it with
:func:`lock_holder`: a pid and a program name, never the command line, which can carry what a
user typed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
from pathlib import Path
from typing import Protocol

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


class StorageSettings(Protocol):
    """The settings the memory tiers are built from."""

    @property
    def data_dir(self) -> Path: ...  # runtime data: stores, caches, indexes

    @property
    def memory_dir(self) -> Path: ...  # Markdown document memory

    @property
    def store(self) -> str: ...  # long-term store URL

    @property
    def qdrant_url(self) -> str | None: ...

    @property
    def qdrant_api_key(self) -> str | None: ...

    @property
    def qdrant_path(self) -> Path: ...

    @property
    def embeddings(self) -> str: ...  # ``minilm`` or ``openai:<model>``

    @property
    def openai_api_key(self) -> str | None: ...

    @property
    def openai_base_url(self) -> str | None: ...

    @property
    def model_timeout(self) -> float: ...

    @property
    def model_retries(self) -> int: ...


def private_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder, with every folder this call creates (missing parents included)
    private to the user (0700). A folder that exists already keeps its mode: it may be one the
    user chose to share, such as the parent of the data folder."""
    folder = Path(path)
    missing: list[Path] = []
    at = folder
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=PRIVATE_FOLDER)
        except FileExistsError:
            continue  # another process made it at the same moment
        os.chmod(created, PRIVATE_FOLDER)  # the umask may have taken bits from mkdir's mode
    return folder


def private_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a file private to the user (0600): created empty if missing (an empty file
    is an empty SQLite database), its folder created by :func:`private_folder`; an existing
    file of this user that others can read (made by an older version) is made private."""
    file = Path(path)
    private_folder(file.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    status = file.stat()
    if status.st_mode & 0o077 and status.st_uid == os.geteuid():
        os.chmod(file, PRIVATE_FILE)
    return file


def lock_holder() -> str:
    """What a lock file says about the process holding it: ``pid <pid>: <program>``. The
    program is the basename of ``argv[0]`` (``analyst``, ``langgraph``), never the arguments."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
    return f"pid {os.getpid()}: {(program or Path(sys.executable).name)[:64]}"


def flock_held(path: Path) -> bool | None:
    """Whether a process (or another descriptor in this one) holds a ``flock`` on ``path``
    now, asked with an exclusive non-blocking lock let go of at once (opened read-only:
    ``flock`` needs no write access); None when there is no ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte ranges of ``fd`` that hold data (all of it when the file
    system cannot tell holes apart)."""
    if not hasattr(os, "SEEK_DATA"):
        return [(0, size)]
    extents: list[tuple[int, int]] = []
    at = 0
    while at < size:
        try:
            start = os.lseek(fd, at, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # only a hole from here to the end
                break
            if e.errno == errno.EINVAL and at == 0:  # no SEEK_DATA on this file system
                return [(0, size)]
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        extents.append((start, end))
        at = end
    return extents
