"""Hot memory: open a LangGraph checkpointer from a URL.

``open_checkpointer(url)`` is an async context manager that owns the connection's lifetime
and yields a ready ``BaseCheckpointSaver`` (schema set up explicitly, once, on entry).

Supported URLs:

- ``sqlite:///relative/path.sqlite`` or ``sqlite:////absolute/path.sqlite`` — the embedded
  default, an async SQLite saver over one file (WAL mode, shared safely by processes).
- ``memory://`` — LangGraph's in-process ``InMemorySaver`` (tests, throwaway runs).

Postgres and Redis savers plug in here under their own schemes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver

from agent.errors import ConfigurationError, UnsupportedBackendError

SCHEMES = ("sqlite:///PATH", "memory://")


def parse_sqlite_path(url: str) -> Path:
    """``sqlite:///a/b.db`` → ``a/b.db``; ``sqlite:////tmp/b.db`` → ``/tmp/b.db``."""
    rest = url[len("sqlite:///") :]
    if not rest:
        raise ConfigurationError(
            f"Checkpointer URL '{url}' has no file path; use sqlite:///.data/checkpoints.sqlite"
        )
    return Path(rest)


@asynccontextmanager
async def open_checkpointer(url: str) -> AsyncIterator[BaseCheckpointSaver]:
    if url.startswith("sqlite:///"):
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = parse_sqlite_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A generous busy timeout: the CLI, scripts and a second approver may share the file.
        async with aiosqlite.connect(str(path), timeout=30) as conn:
            saver = AsyncSqliteSaver(conn)
            await saver.setup()
            yield saver
        return
    if url in ("memory://", "memory:"):
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    raise UnsupportedBackendError("checkpointer", url, SCHEMES)
