"""Thread index: which threads a principal owns, for listing and ownership checks.

Checkpoints hold a thread's state; this small SQLite table records who started each thread,
with what request, and which process is running it now. A thread id found here still grants
nothing: every lookup is scoped by (tenant_id, user_id), and a thread owned by someone else is
indistinguishable from one that does not exist.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS threads (
        thread_id  TEXT PRIMARY KEY,
        tenant_id  TEXT NOT NULL,
        user_id    TEXT NOT NULL,
        query      TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        runner_pid INTEGER
    );
    CREATE INDEX IF NOT EXISTS threads_owner ON threads (tenant_id, user_id, created_at);
    """,
)


@dataclass(frozen=True)
class Principal:
    """Who is acting: established by the CLI or the server, never by model output."""

    tenant_id: str
    user_id: str


@dataclass(frozen=True)
class ThreadRecord:
    thread_id: str
    tenant_id: str
    user_id: str
    query: str
    created_at: str
    updated_at: str
    runner_pid: int | None

    @property
    def runner_alive(self) -> bool:
        if not self.runner_pid:
            return False
        try:
            os.kill(self.runner_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class ThreadIndex:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            with conn:
                yield conn
        finally:
            conn.close()

    def setup(self) -> None:
        """Apply pending migrations (numbered by SQLite's user_version)."""
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                conn.executescript(script)
                conn.execute(f"PRAGMA user_version = {number}")

    def register(self, who: Principal, thread_id: str, query: str) -> None:
        now = _now()
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO threads (thread_id, tenant_id, user_id, query, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (thread_id, who.tenant_id, who.user_id, query, now, now),
            )

    def get(self, who: Principal, thread_id: str) -> ThreadRecord | None:
        if not self.path.exists():
            return None
        with self._connect() as conn:
            row = conn.execute(
                "SELECT thread_id, tenant_id, user_id, query, created_at, updated_at, runner_pid"
                " FROM threads WHERE thread_id = ? AND tenant_id = ? AND user_id = ?",
                (thread_id, who.tenant_id, who.user_id),
            ).fetchone()
        return ThreadRecord(*row) if row else None

    def exists(self, thread_id: str) -> bool:
        """Whether any principal owns ``thread_id`` (to refuse reusing someone else's id)."""
        if not self.path.exists():
            return False
        with self._connect() as conn:
            return (
                conn.execute("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
                is not None
            )

    def list(self, who: Principal, limit: int = 100) -> list[ThreadRecord]:
        if not self.path.exists():
            return []
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT thread_id, tenant_id, user_id, query, created_at, updated_at, runner_pid"
                " FROM threads WHERE tenant_id = ? AND user_id = ? ORDER BY created_at DESC LIMIT ?",
                (who.tenant_id, who.user_id, limit),
            ).fetchall()
        return [ThreadRecord(*r) for r in rows]

    def set_runner(self, thread_id: str, pid: int | None) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE threads SET runner_pid = ?, updated_at = ? WHERE thread_id = ?",
                (pid, _now(), thread_id),
            )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
