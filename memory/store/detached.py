"""A detached worker process on one Qdrant Edge shard: the indexer (:mod:`memory.store.indexing`)
and the eraser (:mod:`memory.store.erasing`) are each one of these.

A worker holds its own lock (``<shard>.<name>.lock``, ``fcntl.flock``) for as long as it runs,
so at most one of each kind works on a shard, and it is launched in its own session, detached
from the command that started it (which goes on and may exit), with its output appended to
``<shard>.<name>.log`` (private to the user). The launcher takes that lock before the launch
and hands it to the child (its descriptor number is the child's second argument), so the
worker counts as running from the moment it is launched: a caller that polls
:meth:`DetachedWorker.running` and starts one when none runs launches one, not one per poll
while the first is still importing.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DetachedWorker:
    """The worker ``python -m <module> <shard> <lock fd>``, locked and logged under
    ``<shard>.<name>``."""

    name: str
    module: str

    def lock(self, path: Path) -> int | None:
        """Take the worker's own lock (its file descriptor), or ``None`` when another worker
        of this kind holds it."""
        fd = os.open(path.with_name(f"{path.name}.{self.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def running(self, path: Path) -> bool:
        """Whether a worker of this kind holds the shard's lock now (or was launched and
        holds it through the descriptor it was handed)."""
        fd = self.lock(path)
        if fd is None:
            return True
        os.close(fd)
        return False

    def start(self, path: Path) -> subprocess.Popen[bytes] | None:
        """Launch the worker for the shard in ``path`` unless one runs, holding its lock
        from the launch on (the module docstring)."""
        held = self.lock(path)
        if held is None:
            return None
        try:
            log = os.open(
                path.with_name(f"{path.name}.{self.name}.log"),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o600,
            )
            try:
                return subprocess.Popen(
                    [sys.executable, "-m", self.module, str(path), str(held)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(held,),
                )
            finally:
                os.close(log)
        finally:
            os.close(held)  # the child's copy of the descriptor keeps the lock


def handed_lock(argv: list[str]) -> int | None:
    """The lock descriptor a worker was launched with (``argv[2]``, see the module
    docstring), or ``None`` when it was started by hand without one."""
    return int(argv[2]) if len(argv) > 2 else None
