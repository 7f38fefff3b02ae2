"""Open the ledger's SQLite file the same way whichever tier opens it first.

:func:`ledger_path` reads the file's path from the ledger's ``sqlite:`` URL;
:func:`prepare_folder` refuses a folder where the file should be and creates its parents;
:func:`connect` opens an autocommit connection (explicit transactions, full sync, a large page
cache and memory map, ``secure_delete``; a file in a read-only folder opens immutable,
read-only);
:func:`enable_wal` switches a file to WAL even while another connection converts it;
:func:`truncate_wal` empties the WAL into the file (what makes a deletion final on disk);
:func:`prepare` switches it to WAL and runs the caller's migrations, retrying briefly while
another connection converts a fresh file; :class:`WriterTurns` queues the file's writers in
every process in the kernel (a ``flock``) instead of SQLite's sleeping busy wait. Errors are
``OSError`` / ``sqlite3.Error``: each tier words them for its own user (a WAL another
process keeps from :func:`truncate_wal` is a :class:`~memory.errors.StorageError`).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from memory import urls
from memory.config import private_folder
from memory.errors import StorageError

#: Seconds a connection waits for another writer's lock before "database is locked".
BUSY_TIMEOUT = 30.0
#: Page cache per connection (KiB) and memory-mapped window (bytes).
CACHE_KIB = 65536
MMAP_BYTES = 1 << 30

#: Applies pending migrations on an autocommit connection; returns the versions applied.
Migrate = Callable[..., list[int]]


def ledger_path(url: str) -> str:
    """The file of the ledger's ``sqlite:`` URL (shared by the ledger and the journal):
    ``sqlite:///a/b.sqlite`` -> ``a/b.sqlite``; ``sqlite:////tmp/b.sqlite`` -> ``/tmp/b.sqlite``."""
    return str(urls.sqlite_path(url, tier="fact ledger", default_name="facts.sqlite"))


def is_locked(error: BaseException) -> bool:
    """``error`` is SQLite's "database is locked" / "busy" (another writer holds the file)."""
    message = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in message or "busy" in message
    )


def prepare_folder(path: Path) -> None:
    """Refuse a folder where the file should be; create the file's parent folders, private to
    the user (:func:`memory.config.private_folder`)."""
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder")
    private_folder(path.parent)


def connect(where: str, *, timeout: float = BUSY_TIMEOUT) -> sqlite3.Connection:
    """An autocommit connection to ``where`` (a path or ``:memory:``), usable from any thread."""
    target, uri = where, False
    if where != ":memory:" and Path(where).exists() and not os.access(Path(where).parent, os.W_OK):
        # A read-only folder: SQLite cannot create the WAL index beside the file, so it is
        # opened immutable (nobody can write it here); reads work, a write is refused.
        target, uri = f"file:{where}?mode=ro&immutable=1", True
    conn = sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )
    conn.execute("PRAGMA synchronous=FULL")
    # A deleted row's bytes (and a freed page's) are overwritten with zeros in the file, so
    # a forget leaves nothing once the WAL is checkpointed (truncate_wal), without a VACUUM.
    conn.execute("PRAGMA secure_delete=ON")
    # A million facts are a few hundred MB: keep the upper index levels cached and read
    # through a memory map instead of a system call per page.
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    return conn


def enable_wal(conn: sqlite3.Connection) -> None:
    """Switch ``conn``'s file to WAL mode, surviving another connection's concurrent switch.

    Two processes opening a new file at once both try the switch; SQLite refuses one of them
    at once with "database is locked" instead of waiting on the busy timeout (waiting could
    deadlock). The refused one then waits for the other's switch through the busy timeout
    (``BEGIN IMMEDIATE``) and finds the file in WAL mode already. The async twin for
    aiosqlite is :func:`memory.checkpoint.sqlite.enable_wal`.
    """
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as e:
        if not is_locked(e):
            raise
        conn.execute("BEGIN IMMEDIATE")  # waits while the other connection switches
        conn.execute("ROLLBACK")
        conn.execute("PRAGMA journal_mode=WAL")


def truncate_wal(conn: sqlite3.Connection, what: str, path: object) -> None:
    """Copy every WAL frame of ``conn``'s file into it and truncate the WAL to zero bytes:
    the frames holding rows as they were before a deletion are gone (the deletion's zeros
    are in the file, with ``secure_delete``). Waits for readers through the busy timeout;
    :class:`~memory.errors.StorageError` naming the file when one still holds the WAL."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise StorageError(
            f"The {what} {path} stayed in use by another process for {BUSY_TIMEOUT:.0f} s, so "
            "its write-ahead log still holds deleted rows; run the forget again when it ends.",
            what,
            path,
        )


def prepare(
    conn: sqlite3.Connection, where: str, migrate: Migrate, attempts: int = 10
) -> list[int]:
    """Switch the file to WAL and run ``migrate(conn, where=where)``; return the versions
    applied.

    While another connection converts a fresh file to WAL, SQLite can report "database is
    locked" at once instead of waiting on the busy timeout, so this step retries briefly; any
    other ``sqlite3.Error`` (or the last lock) is raised.
    """
    for attempt in range(1, attempts + 1):
        try:
            enable_wal(conn)
            return migrate(conn, where=where)
        except sqlite3.Error as e:
            if is_locked(e) and attempt < attempts:
                time.sleep(0.02 * attempt)
                continue
            raise
    raise AssertionError("unreachable")  # pragma: no cover


class WriterTurns:
    """The writers of one SQLite file, in every process, take turns through a ``flock`` on
    ``<file>-writers``, held around each write transaction.

    SQLite's own wait for its write lock (the busy timeout) sleeps in growing steps of up to
    100 ms and never hears of the release: with separate processes each committing one write
    at a time, the lock sits free while every waiter sleeps. A waiter in ``flock`` is woken
    by the kernel the moment the lock is released, in turn. SQLite's lock still guards the
    file: a writer that does not take turns is waited for through the busy timeout as
    before.

    A contended wait runs on a helper thread so that it can end at a deadline: past it,
    :meth:`turn` raises SQLite's own "database is locked" (callers retry that as a
    collision) and the helper gives the turn back as soon as it gets it. A ``:memory:``
    database, or a folder where the lock file cannot be made (read-only: nothing can be
    written there anyway), takes no turns.
    """

    def __init__(self, where: str) -> None:
        self.path = f"{where}-writers"
        self._fd: int | None = None
        self._opened = where == ":memory:"  # nothing to open for a private database
        self._gate = threading.Lock()
        self._held = False
        #: The helper thread waiting for the lock (at most one), and whether anyone still
        #: wants what it gets.
        self._waiter: threading.Event | None = None
        self._wanted = False
        self._closed = False

    def _file(self) -> int | None:
        if not self._opened:
            self._opened = True
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                self._fd = None  # the write itself reports why the folder is unusable
        return self._fd

    @contextmanager
    def turn(self, timeout: float) -> Iterator[None]:
        """Hold the writers' turn (waiting up to ``timeout`` seconds) for the block."""
        fd = self._file()
        if fd is None:
            yield
            return
        self._acquire(fd, timeout)
        try:
            yield
        finally:
            self._release(fd)

    @contextmanager
    def turn_if_free(self) -> Iterator[bool]:
        """Hold the writers' turn for the block if nobody holds or awaits it now (``True``);
        otherwise hold nothing (``False``) and never wait: for a caller that must not block,
        such as an event loop running a short write itself."""
        fd = self._file()
        if fd is None:
            yield True
            return
        with self._gate:
            free = self._waiter is None and self._take_now(fd)
        if not free:
            yield False
            return
        try:
            yield True
        finally:
            self._release(fd)

    def _take_now(self, fd: int) -> bool:
        """Take the turn if the kernel gives it at once (the gate held)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self._held = True
        return True

    def _release(self, fd: int) -> None:
        with self._gate:
            self._held = False
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _acquire(self, fd: int, timeout: float) -> None:
        with self._gate:
            if self._waiter is None:
                if self._take_now(fd):
                    return
                self._waiter = threading.Event()
                threading.Thread(target=self._wait, args=(fd, self._waiter), daemon=True).start()
            got = self._waiter  # a helper left by an attempt that gave up is reused
            self._wanted = True
        if got.wait(timeout):
            return
        with self._gate:
            if self._held:
                return
            self._wanted = False
        raise sqlite3.OperationalError(
            f"database is locked: another process kept the writers' turn ({self.path}) "
            f"for {timeout:g} s"
        )

    def _wait(self, fd: int, got: threading.Event) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with self._gate:
            self._waiter = None
            if self._closed:
                os.close(fd)  # closing gives the lock back
            elif self._wanted:
                self._held = True
                got.set()
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the lock file (a helper still waiting closes it when its wait ends)."""
        with self._gate:
            self._closed = True
            if self._fd is not None and self._waiter is None:
                os.close(self._fd)
            self._fd = None
