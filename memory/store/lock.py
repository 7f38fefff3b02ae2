"""The folder lock of an embedded store: one process at a time opens a Qdrant Edge shard.

``<folder>.lock`` is held with ``flock`` (released by the kernel when its holder dies) and,
while held, names its holder by pid and program name, never by command line.

A process that has to wait for it says so: it holds a shared ``flock`` on ``<folder>.wait``
while it waits (:func:`others_waiting` is how the holder asks). The shared-access store keeps
its lease past :data:`memory.store.edge.MAX_LEASE` when nobody waits (a reload costs a second
at 100k memories and drops the page cache of the shard's files), and gives it up at once when
someone does. The holder tests with a non-blocking exclusive ``flock`` it lets go of at once,
so a waiter announcing itself is held up for that instant only.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import IO

from memory.config import flock_held
from memory.errors import StoreLockedError


def _holder(lock_path: Path) -> str:
    try:
        text = lock_path.read_text(encoding="utf-8", errors="replace").strip()[:100]
    except OSError:
        return "another process"
    return "".join(c for c in text if c.isprintable()) or "another process"


def process_name() -> str:
    """The running program's name (``analyst``, ``langgraph``, ``python3``): what a lock file
    may say about its holder. Never the arguments, which can hold what a user typed."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
    return (program or Path(sys.executable).name)[:64]


@contextmanager
def folder_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold ``<path>.lock`` (``flock``), waiting up to ``timeout`` seconds.

    The lock file is private to the user (0600, also when an older version left it readable)
    and, while held, says ``pid <pid>: <process name>`` so that a waiting process can name the
    holder; it never holds the command line, which can carry a memory being added, and it
    still says only that after the holder is killed."""
    lock_path = path.with_name(path.name + ".lock")
    if not os.access(lock_path.parent, os.W_OK) and path.exists():
        # A read-only folder (mount): nothing can be written here, so no holder is named; a
        # shared lock still waits for a writer holding the folder through another mount.
        with _shared_lock(path, lock_path, timeout):
            yield
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    handle: IO[str] = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        os.fchmod(fd, 0o600)
        _take(fd, fcntl.LOCK_EX, path, timeout, lambda: _holder(lock_path), create=True)
        _make_wait_file(path)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}: {process_name()}")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        handle.close()


def _take(
    fd: int, mode: int, path: Path, timeout: float, holder: Callable[[], str], *, create: bool
) -> None:
    """``flock(fd, mode)``, waiting up to ``timeout`` seconds; from the first miss on, holding
    ``<path>.wait`` shared (:func:`_announced`) so that the holder knows someone waits."""
    deadline = time.monotonic() + timeout
    with ExitStack() as waiting:
        announced = False
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(f"{path} (held by {holder()})", timeout) from None
                if not announced:  # the first miss: tell the holder someone waits
                    waiting.enter_context(_announced(path, create=create))
                    announced = True
                time.sleep(0.01)


def wait_path(path: Path) -> Path:
    """``<path>.wait``: held shared by every process waiting for ``<path>.lock``."""
    return path.with_name(path.name + ".wait")


@contextmanager
def _announced(path: Path, *, create: bool) -> Iterator[None]:
    """Hold ``<path>.wait`` shared while waiting for the folder lock. ``create``: make the
    file (0600) when missing; a reader of a read-only folder cannot, and announces itself
    only when a writer already made it (a holder that cannot tell gives its lease up at
    :data:`~memory.store.edge.MAX_LEASE` as before: :func:`others_waiting`)."""
    flags = os.O_RDONLY | (os.O_CREAT if create else 0)
    try:
        fd = os.open(wait_path(path), flags, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # blocks only for a holder's instant test
        yield
    finally:
        os.close(fd)  # the flock goes with the descriptor


def _make_wait_file(path: Path) -> None:
    """Make ``<path>.wait`` (0600) for the waiters to come: the holder of a writable folder
    makes it, so a reader of a read-only mount of the folder finds it to announce itself."""
    with suppress(OSError):  # else others_waiting() answers True: the lease ends as before
        os.close(os.open(wait_path(path), os.O_RDONLY | os.O_CREAT, 0o600))


def others_waiting(path: Path) -> bool:
    """Whether another process (or another store in this one) waits for ``<path>.lock``
    now; ``True`` when that cannot be told (no ``.wait`` file), so the caller gives its
    lease up as it would without asking."""
    try:
        return flock_held(wait_path(path)) is not False
    except OSError:  # unreadable: cannot be told either
        return True


__all__ = ["folder_lock", "others_waiting", "process_name", "wait_path"]


@contextmanager
def _shared_lock(path: Path, lock_path: Path, timeout: float) -> Iterator[None]:
    """``flock(LOCK_SH)`` on the lock file opened read-only, waiting up to ``timeout``
    seconds (no lock file: nobody to wait for)."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        yield
        return
    try:
        _take(fd, fcntl.LOCK_SH, path, timeout, lambda: "a writer", create=False)
        yield
    finally:
        os.close(fd)
