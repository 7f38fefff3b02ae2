"""Group commit: concurrent ledger writes handed over in one turn of the event loop share one
transaction and one durable commit.

A write queues a :class:`PendingWrite` and waits; one flush, started on the next turn of the
loop, takes everything queued and hands it to the backend (:func:`commit_with_retries` around
the store's ``_run_group``). A write returns only after the commit that holds it (or raises:
its own refusal, or the group's failure); a write cancelled before its group is taken is not
written.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.errors import FactLedgerError, FactWriteContentionError
from memory.facts.records import MemoryDelta
from memory.facts.rules import Key, Rules

#: Runs one group in one transaction (a savepoint per write) and commits once.
Commit = Callable[[list["PendingWrite"]], Awaitable[None]]


@dataclass(slots=True)
class PendingWrite:
    """One write waiting for (or inside) a group transaction.

    ``rules`` makes a fresh generator for each attempt (a group that collides is retried as a
    whole); the group sets ``result`` or ``error`` for each write it ran. An import makes tens
    of thousands at once: slots, and no closure per write (each closure's cells are objects the
    garbage collector walks again and again while they live -- about 10 us a write).
    """

    key: Key
    rules: Callable[[], Rules[Any]]
    #: The acting user: Postgres sets it for the write (``app.user_id``) so RLS can check it.
    user_id: str = ""
    #: Set on a record write: its rules' only seek is ``neighbours(key, starts)``, so a group
    #: of such writes can be run set-wise (:mod:`memory.facts.batch`).
    starts: datetime | None = None
    #: Set on a record write: what it records, and the store's clock, for a group of appends
    #: written without running its rules (:meth:`memory.facts.batch.Plan._appends`).
    delta: MemoryDelta | None = None
    now: Callable[[], datetime] | None = None
    #: False for an import's write, which counts outcomes: a backend writing it set-wise may
    #: then set ``result`` to its outcome alone (``"recorded"``) instead of the record.
    returns_record: bool = True
    done: asyncio.Future[Any] | None = None
    result: Any = None
    error: BaseException | None = None


class GroupCommit:
    """The queue of one opened ledger, shared by every principal view of it."""

    def __init__(self) -> None:
        self.queued: list[PendingWrite] = []
        self.flush: asyncio.Task[None] | None = None
        self.flushing: set[asyncio.Task[None]] = set()
        #: Held while a group commits: writes arriving meanwhile gather for the next group.
        self.committing: asyncio.Lock | None = None

    async def submit(self, writes: list[PendingWrite], commit: Commit) -> None:
        """Queue ``writes`` for the next group and wait for its commit (by ``commit``)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for write in writes:
            write.done = done
        self.queued.extend(writes)
        if self.flush is None:
            self.flush = flush = asyncio.create_task(self._flush(commit))
            # The loop keeps only weak references to tasks; hold each flush until it ends.
            self.flushing.add(flush)
            flush.add_done_callback(self.flushing.discard)
        await done

    async def _flush(self, commit: Commit) -> None:
        taken: list[PendingWrite] = []
        if self.committing is None:
            self.committing = asyncio.Lock()
        try:
            # The flush runs after every callback ready when it was created: writes handed
            # over in that turn of the loop join the group, and so do those arriving while
            # the previous group commits.
            async with self.committing:
                # Callers cancelled while waiting are dropped: their writes are not made.
                taken = [w for w in self.queued if w.done is not None and not w.done.done()]
                self.queued, self.flush = [], None
                if taken:
                    await commit(taken)
        except BaseException as e:
            if not taken:
                taken, self.queued, self.flush = self.queued, [], None
            for write in taken:
                if write.done is None or write.done.done():
                    continue
                if isinstance(e, asyncio.CancelledError):
                    write.done.cancel()
                else:
                    write.done.set_exception(e)
            if not isinstance(e, Exception):
                raise
        else:
            for write in taken:
                if write.done is not None and not write.done.done():
                    write.done.set_result(None)


async def commit_with_retries(
    writes: list[PendingWrite],
    run_group: Commit,
    is_transient: Callable[[BaseException], bool],
    max_attempts: int,
) -> None:
    """Run the group; on a collision (``is_transient``) retry the whole transaction with
    backoff, at most ``max_attempts`` times, then :class:`FactWriteContentionError`."""
    delay = 0.005
    for attempt in range(1, max_attempts + 1):
        for write in writes:
            write.result, write.error = None, None
        try:
            await run_group(writes)
            return
        except FactLedgerError:
            raise
        except Exception as e:
            if not is_transient(e):
                raise
            if attempt == max_attempts:
                keys = sorted({f"{w.key[1]}.{w.key[2]}" for w in writes})
                shown = ", ".join(keys[:3]) + (
                    f" and {len(keys) - 3} more" if len(keys) > 3 else ""
                )
                raise FactWriteContentionError(
                    f"Writing {shown} collided with concurrent writers {attempt} times "
                    f"(last: {e}). Retry later, or reduce concurrent writers on this key."
                ) from e
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 0.5)
