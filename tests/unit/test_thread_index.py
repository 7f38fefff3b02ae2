"""The thread index when several processes open a fresh data folder at once."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from memory.identity import Principal
from memory.sql.user_version import migrate
from memory.threads import MIGRATIONS, ThreadIndex, storage_id_for
from tests.support.waiting import blocked_at, wait_until

OWNER = Principal("acme", "ana")


def test_a_reader_waits_for_the_schema_another_process_is_creating(tmp_path: Path) -> None:
    """Two CLIs started together: one has created the file and is still creating the table
    when the other looks a thread up. The second waits and finds nothing, instead of failing
    with "no such table"."""
    path = tmp_path / "threads.sqlite"
    creator = sqlite3.connect(path, isolation_level=None)
    creator.execute("BEGIN IMMEDIATE")  # the file exists; its schema is not committed yet
    outcome: dict[str, object] = {}

    def look_up() -> None:
        try:
            index = ThreadIndex(path)
            outcome["get"] = index.get(OWNER, "t-1")
            outcome["stored"] = index.stored("t-1")
            outcome["list"] = index.list(OWNER)
        except Exception as e:  # the assertion below shows it
            outcome["error"] = e

    reader = threading.Thread(target=look_up)
    reader.start()
    # It reaches the schema step and waits there on the creator's lock, not failed.
    wait_until(
        lambda: blocked_at(reader, migrate, 'execute("BEGIN IMMEDIATE")') or not reader.is_alive(),
        "the reader waiting for the creator's schema",
    )
    assert reader.is_alive(), outcome
    creator.execute("COMMIT")
    creator.close()
    reader.join(timeout=10)
    assert outcome == {"get": None, "stored": False, "list": []}


def test_register_then_read_back(tmp_path: Path) -> None:
    index = ThreadIndex(tmp_path / "threads.sqlite")
    assert index.get(OWNER, "t-1") is None and index.list(OWNER) == []  # no file: nothing
    index.setup()
    index.setup()  # idempotent
    index.register(OWNER, "t-1", "Analyze NVDA")
    record = ThreadIndex(index.path).get(OWNER, "t-1")
    assert record is not None and record.query == "Analyze NVDA"
    assert ThreadIndex(index.path).get(Principal("acme", "bob"), "t-1") is None


def test_delete_many_removes_the_owners_threads_at_once_and_their_bytes(tmp_path: Path) -> None:
    index = ThreadIndex(tmp_path / "threads.sqlite")
    index.setup()
    bob = Principal("acme", "bob")
    for n in range(3):
        index.register(OWNER, f"t-{n}", f"canary-{n} Analyze NVDA")
    index.register(bob, "t-bob", "canary-bob")
    assert index.delete_many(bob, ["t-0"]) == []  # another principal's ids: nothing
    assert index.delete_many(OWNER, ["t-2", "t-0", "t-9"]) == ["t-0", "t-2"]
    assert [r.thread_id for r in index.list(OWNER)] == ["t-1"]
    assert index.get(bob, "t-bob") is not None
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("threads.sqlite*"))
    assert b"canary-0" not in raw and b"canary-2" not in raw  # zeroed, no VACUUM
    assert b"canary-1" in raw and b"canary-bob" in raw


def test_thread_ids_are_per_owner_and_a_taken_storage_id_gets_the_owners_suffix(
    tmp_path: Path,
) -> None:
    index = ThreadIndex(tmp_path / "threads.sqlite")
    bob, acme_bob = Principal("default", "bob"), Principal("acme", "bob")
    first = index.register(OWNER, "t1", "ana's request")
    assert first.storage_id == "t1"  # an id no one had: stored under itself
    second = index.register(bob, "t1", "bob's request")
    third = index.register(acme_bob, "t1", "acme bob's request")
    assert second.storage_id == storage_id_for(bob, "t1")
    assert len({first.storage_id, second.storage_id, third.storage_id}) == 3
    for who, record in ((OWNER, first), (bob, second), (acme_bob, third)):
        assert index.get(who, "t1") == record
        assert [r.thread_id for r in index.list(who)] == ["t1"]
    with pytest.raises(sqlite3.IntegrityError):  # an owner's id is one thread
        index.register(bob, "t1", "again")
    # Deleting is per owner too; the storage id is free again for the next new "t1".
    assert index.delete_many(OWNER, ["t1"]) == ["t1"]
    assert index.get(bob, "t1") == second and index.free_storage_id(OWNER, "t1") == "t1"


def test_threads_of_an_index_from_before_per_owner_ids_keep_their_ids(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    old = sqlite3.connect(path)
    migrate(old, MIGRATIONS[:1])
    old.execute(
        "INSERT INTO threads VALUES ('t1', 'acme', 'ana', 'Analyze NVDA', '2026-01-01T00:00:00',"
        " '2026-01-02T00:00:00', NULL)"
    )
    old.commit()
    old.close()
    index = ThreadIndex(path)
    record = index.get(OWNER, "t1")
    assert record is not None and record.storage_id == "t1" and record.query == "Analyze NVDA"
    assert record.updated_at == "2026-01-02T00:00:00"
    # Someone else's "t1" is a new thread of theirs, kept apart from ana's checkpoints.
    theirs = index.register(Principal("acme", "bob"), "t1", "hi")
    assert theirs.storage_id != "t1" and index.get(OWNER, "t1") == record
