"""Thread index: which threads a principal owns, for listing and ownership checks.

Checkpoints hold a thread's state; this small SQLite table records who started each thread,
with what request, and which process is running it now. Thread ids are per owner: a row is
keyed by (tenant_id, user_id, thread_id), so bob's ``t1`` and alice's ``t1`` are two threads,
and an id someone else uses behaves for everyone else exactly as an unused one. Each row
names its ``storage_id``, the id its checkpoints, lock and draft charts are kept under: the
thread id itself (every thread from before ids were per owner, and any id no one else had),
or, for an id another owner had first, the id with a suffix derived from the owner
(:func:`storage_id_for`). With ``ANALYST_MEMORY_KEY`` the request text is stored sealed
(:mod:`memory.sealing`); ids, owners and times stay in clear.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.config import PRIVATE_FILE, flock_held, lock_holder, private_file, private_folder
from memory.errors import ThreadBusyError
from memory.health import guarded
from memory.identity import Principal
from memory.sealing import PLAIN, MemoryCipher
from memory.sql.user_version import Migrations, migrate

#: Ids per statement when many threads are deleted at once (under SQLite's 999 variables).
_CHUNK = 500

MIGRATIONS: Migrations = (
    (
        """CREATE TABLE IF NOT EXISTS threads (
            thread_id  TEXT PRIMARY KEY,
            tenant_id  TEXT NOT NULL,
            user_id    TEXT NOT NULL,
            query      TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            runner_pid INTEGER
        )""",
        "CREATE INDEX IF NOT EXISTS threads_owner ON threads (tenant_id, user_id, created_at)",
    ),
    (
        # Ids per owner: every existing thread keeps its id as its storage id.
        """CREATE TABLE threads_by_owner (
            tenant_id  TEXT NOT NULL,
            user_id    TEXT NOT NULL,
            thread_id  TEXT NOT NULL,
            storage_id TEXT NOT NULL UNIQUE,
            query      TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            runner_pid INTEGER,
            PRIMARY KEY (tenant_id, user_id, thread_id)
        )""",
        """INSERT INTO threads_by_owner (tenant_id, user_id, thread_id, storage_id, query,
                created_at, updated_at, runner_pid)
            SELECT tenant_id, user_id, thread_id, thread_id, query, created_at, updated_at,
                runner_pid FROM threads""",
        "DROP TABLE threads",
        "ALTER TABLE threads_by_owner RENAME TO threads",
        "CREATE INDEX threads_owner ON threads (tenant_id, user_id, created_at)",
    ),
)

_COLUMNS = "thread_id, tenant_id, user_id, query, created_at, updated_at, runner_pid, storage_id"


def storage_id_for(who: Principal, thread_id: str, attempt: int = 0) -> str:
    """The storage id of ``who``'s ``thread_id`` when another owner's thread is stored under
    ``thread_id`` (``attempt`` > 0: when this one is taken too): the id, ``~`` and a digest
    of the owner (so the id stays readable and the name stays one per owner)."""
    owner = f"{who.tenant_id}/{who.user_id}/{thread_id}/{attempt}".encode()
    return f"{thread_id}~{hashlib.sha256(owner).hexdigest()[:16]}"


@dataclass(frozen=True)
class ThreadRecord:
    thread_id: str
    tenant_id: str
    user_id: str
    query: str
    created_at: str
    updated_at: str
    runner_pid: int | None
    #: Where the thread's checkpoints, lock and draft charts are kept (see the module).
    storage_id: str = ""


class ThreadIndex:
    def __init__(self, path: Path, cipher: MemoryCipher = PLAIN) -> None:
        self.path = Path(path)
        self.cipher = cipher
        self._ready = False  # this instance has seen the schema up to date

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection in a transaction; a damaged file, a read-only folder or a full disk
        is one :class:`~memory.errors.StorageError` naming the file."""
        with guarded("thread index", self.path):
            private_file(self.path)
            conn = sqlite3.connect(self.path, timeout=30)
            # A deleted row's bytes are overwritten with zeros, not left in free space.
            conn.execute("PRAGMA secure_delete=ON")
            try:
                with conn:
                    yield conn
            finally:
                conn.close()

    def setup(self) -> None:
        """Apply pending migrations, one process at a time (:func:`memory.sql.user_version.migrate`):
        a second process waits for the first one's schema instead of reading a bare file."""
        with self._connect() as conn:
            migrate(conn, MIGRATIONS)
        self._ready = True

    def _readable(self) -> bool:
        """Whether there is an index to read. A file another process has only just created
        (SQLite creates it empty on connect) is brought up to date first."""
        if not self.path.exists():
            return False
        if not self._ready:
            self.setup()
        return True

    def free_storage_id(self, who: Principal, thread_id: str) -> str:
        """The storage id a new thread ``thread_id`` of ``who`` would get now: the id itself
        unless another thread is kept under it (:func:`storage_id_for`)."""
        candidate, attempt = thread_id, 0
        while self.stored(candidate):
            candidate, attempt = storage_id_for(who, thread_id, attempt), attempt + 1
        return candidate

    def register(
        self, who: Principal, thread_id: str, query: str, storage_id: str | None = None
    ) -> ThreadRecord:
        """Record ``who``'s new thread ``thread_id`` (which ``who`` must not have yet) under
        ``storage_id`` (default: :meth:`free_storage_id`); its record. ``sqlite3.IntegrityError``
        if ``who`` has the thread already, or the storage id was taken meanwhile."""
        if not self._ready:
            self.setup()
        storage = storage_id or self.free_storage_id(who, thread_id)
        now = _now()
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO threads (thread_id, tenant_id, user_id, query, created_at,"
                " updated_at, storage_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (thread_id, who.tenant_id, who.user_id, self.cipher.seal(query), now, now, storage),
            )
        return ThreadRecord(thread_id, who.tenant_id, who.user_id, query, now, now, None, storage)

    def get(self, who: Principal, thread_id: str) -> ThreadRecord | None:
        if not self._readable():
            return None
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM threads"
                " WHERE thread_id = ? AND tenant_id = ? AND user_id = ?",
                (thread_id, who.tenant_id, who.user_id),
            ).fetchone()
        return self._record(row) if row else None

    def stored(self, storage_id: str) -> bool:
        """Whether a thread (anyone's) is kept under ``storage_id`` (a restore never writes
        checkpoints over another thread's)."""
        if not self._readable():
            return False
        with self._connect() as conn:
            found = conn.execute("SELECT 1 FROM threads WHERE storage_id = ?", (storage_id,))
            return found.fetchone() is not None

    def delete_many(self, who: Principal, thread_ids: Iterable[str]) -> list[str]:
        """Forget each of ``thread_ids`` that ``who`` owns, in one transaction; answer those
        removed (sorted)."""
        wanted = sorted(set(thread_ids))
        if not wanted or not self._readable():
            return []
        removed: list[str] = []
        with self._connect() as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"DELETE FROM threads WHERE tenant_id = ? AND user_id = ?"
                    f" AND thread_id IN ({marks}) RETURNING thread_id",
                    (who.tenant_id, who.user_id, *chunk),
                ).fetchall()
                removed += [str(r[0]) for r in rows]
        return sorted(removed)

    def list(self, who: Principal, limit: int = 100) -> list[ThreadRecord]:
        if not self._readable():
            return []
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM threads"
                " WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC LIMIT ?",
                (who.tenant_id, who.user_id, limit),
            ).fetchall()
        return [self._record(r) for r in rows]

    def _record(self, row: tuple[Any, ...]) -> ThreadRecord:
        return ThreadRecord(row[0], row[1], row[2], self.cipher.open(row[3]), *row[4:])

    def delete(self, who: Principal, thread_id: str) -> bool:
        """Forget ``thread_id`` if ``who`` owns it; True when a row was removed."""
        if not self._readable():
            return False
        with self._connect() as conn:
            cur = conn.execute(
                "DELETE FROM threads WHERE thread_id = ? AND tenant_id = ? AND user_id = ?",
                (thread_id, who.tenant_id, who.user_id),
            )
            return cur.rowcount > 0

    def set_runner(self, storage_id: str, pid: int | None) -> None:
        """Note which process runs the thread kept under ``storage_id`` (None: none)."""
        with self._connect() as conn:
            conn.execute(
                "UPDATE threads SET runner_pid = ?, updated_at = ? WHERE storage_id = ?",
                (pid, _now(), storage_id),
            )


class ThreadLocks:
    """One exclusive, cross-process lock per thread (``flock`` on a file in the data dir).

    Whoever runs a thread (start, resume, a decision) holds its lock, so two approvals racing
    on the same pause cannot both resume it: the second is refused at once. The OS releases a
    lock when its process dies, so a killed run never leaves a thread locked. Lock files are
    private (0600, in a 0700 folder) and, while held, say ``pid <pid>: <program>``
    (:func:`memory.config.lock_holder`), never the command line.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._mine: set[str] = set()

    def _path(self, thread_id: str) -> Path:
        digest = hashlib.sha256(thread_id.encode()).hexdigest()[:32]
        return self.folder / f"{digest}.lock"

    @contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        with guarded("thread lock folder", self.folder):
            private_folder(self.folder)
            fd = os.open(self._path(thread_id), os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ThreadBusyError(thread_id) from None
            os.fchmod(fd, PRIVATE_FILE)  # a lock file an older version left readable
            _say(fd, lock_holder())
            self._mine.add(thread_id)
            try:
                yield
            finally:
                self._mine.discard(thread_id)
                _say(fd, "")
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def busy(self, thread_id: str) -> bool:
        """Whether another process (or another holder here) is running the thread now."""
        if thread_id in self._mine:
            return False
        return bool(flock_held(self._path(thread_id)))  # no lock file: nobody runs it


def _say(fd: int, text: str) -> None:
    """Replace the lock file's content with ``text`` (the holder, or nothing on release)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
