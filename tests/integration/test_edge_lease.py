"""The shared lease of a Qdrant Edge shard past ``MAX_LEASE`` in use or ``LINGER`` idle: kept
while nobody waits for the folder (no reload: Qdrant drops the page cache of a shard it loads,
and the sentence views read after a reload come from disk), given up at once to a process that
waits; given up after ``KEEP_IDLE`` idle in any case.

The lease's clock is the test's own (``EdgeStore.monotonic``), so "past MAX_LEASE" is a value
set, not a time slept; the waiter is real (another store taking the folder lock in a thread).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory.embeddings import HashingEmbedder
from memory.store.edge import KEEP_IDLE, LINGER, MAX_LEASE, EdgeStore
from memory.store.factory import index_config
from memory.store.lock import others_waiting, wait_path
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def _store(folder: Path, now: list[float] | None = None) -> EdgeStore:
    """A shared-access store; ``now``: its lease's clock (else the real one, as a waiter's)."""
    store = EdgeStore(folder, index=index_config(HashingEmbedder(dims=8)), lock_timeout=60)
    if now is not None:
        store.monotonic = lambda: now[0]
    return store


class _Waiter:
    """Another store asking for the folder's ``("x",), "k"`` in a thread, started and seen
    announcing itself as waiting (``<folder>.wait``)."""

    def __init__(self, folder: Path) -> None:
        self.store = _store(folder)
        self._got: list[object] = []
        self._thread = threading.Thread(
            target=lambda: self._got.append(self.store.get(("x",), "k"))
        )
        self._thread.start()
        wait_until(lambda: others_waiting(folder), "the waiter announcing itself")

    def got(self) -> object:
        """What the waiter read, once it has taken the folder (then its store is closed)."""
        self._thread.join(timeout=60)
        assert not self._thread.is_alive() and self._got
        self.store.close()
        return self._got[0]


@contextmanager
def _holding(folder: Path) -> Iterator[tuple[EdgeStore, list[float]]]:
    """A store on its own lease clock (``now[0]``), set up with one item written, holding the
    folder; closed at the end."""
    now = [0.0]
    store = _store(folder, now)
    store.setup()
    try:
        store.put(("x",), "k", {"text": "hi"})
        yield store, now
    finally:
        store.close()


def test_a_lease_nobody_waits_for_goes_on_past_max_lease(tmp_path: Path) -> None:
    with _holding(tmp_path / "s") as (store, now):
        opened = store._shard
        assert opened is not None
        now[0] = 10 * MAX_LEASE  # in continuous use (never idle for LINGER) all that time
        assert store.get(("x",), "k") is not None
        assert store._shard is opened  # not closed and loaded again
        assert store.search(("x",), query="hi", limit=1)[0].key == "k"
        assert store._shard is opened


def test_a_lease_past_max_lease_is_given_up_to_a_waiting_process(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with _holding(folder) as (holder, now):
        assert not others_waiting(folder)
        waiter = _Waiter(folder)
        assert wait_path(folder).exists()
        # In use for 10 × MAX_LEASE, never idle (so the lease's idle timer keeps it).
        holder._leased_at = now[0] - 10 * MAX_LEASE
        holder.get(("x",), "k")  # the first operation past MAX_LEASE gives the lease up
        assert holder._shard is None
        assert waiter.got() is not None
        assert not others_waiting(folder)  # the waiter took the lock, no longer waits


def test_within_max_lease_a_waiter_waits_for_the_holder_to_go_idle(tmp_path: Path) -> None:
    """Before ``MAX_LEASE`` a waiter does not interrupt the holder's burst: it gets the folder
    when the holder has been idle for ``LINGER`` (here: when the holder closes)."""
    folder = tmp_path / "s"
    with _holding(folder) as (holder, now):
        waiter = _Waiter(folder)
        now[0] = MAX_LEASE / 2
        opened = holder._shard
        holder.get(("x",), "k")
        assert holder._shard is opened is not None
    assert waiter.got() is not None


def test_an_idle_lease_nobody_waits_for_stays_open_until_keep_idle(tmp_path: Path) -> None:
    """The lease's idle check (its timer's, called here at a clock the test sets)."""
    with _holding(tmp_path / "s") as (store, now):
        opened = store._shard
        now[0] = 10 * LINGER
        store._release_when_idle()
        assert store._shard is opened is not None
        now[0] = KEEP_IDLE
        store._release_when_idle()
        assert store._shard is None
        assert store.get(("x",), "k") is not None  # taken again on the next operation


def test_an_idle_lease_is_given_up_to_a_waiting_process(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with _holding(folder) as (holder, now):
        waiter = _Waiter(folder)
        now[0] = LINGER / 2
        holder._release_when_idle()
        assert holder._shard is not None  # not idle long enough yet
        now[0] = LINGER
        holder._release_when_idle()
        assert holder._shard is None
        assert waiter.got() is not None
