"""What a bulk import holds off while it runs, and gives back when it ends: the collector's
full collections (:mod:`memory.facts.collector`) and, on SQLite, the writer's automatic WAL
checkpoint (:meth:`memory.facts.sqlite.SqliteFactStore._importing`), which it then runs
once. Writes after the import are as before it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.facts import MemoryDelta, open_fact_store
from memory.facts.collector import HELD_THRESHOLD
from memory.facts.sqlite import CHECKPOINT_PAGES, IMPORT_CHECKPOINT_PAGES
from memory.identity import Principal

pytestmark = pytest.mark.integration

MIRA = Principal("acme", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def default_thresholds() -> Iterator[None]:
    found = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*found)


def _delta(day: int) -> MemoryDelta:
    return MemoryDelta(
        subject="user:mira",
        attribute="risk",
        value=f"v{day}",
        valid_from=BASE + timedelta(days=day),
    )


async def test_an_import_holds_full_collections_and_checkpoints_until_it_ends(
    tmp_path: Path, default_thresholds: None
) -> None:
    url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    seen: list[int] = []
    statements: list[str] = []

    def deltas() -> Iterator[MemoryDelta]:
        for day in range(6):
            seen.append(gc.get_threshold()[2])
            yield _delta(day)

    async with open_fact_store(url, MIRA) as store:
        store._connection.writer.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        report = await store.import_facts(deltas(), batch_size=2)
        assert (report.recorded, report.refused) == (6, ())
        assert seen == [HELD_THRESHOLD] * 6
        assert gc.get_threshold()[2] == 10
        checkpoints = [s for s in statements if "checkpoint" in s]
        assert checkpoints == [
            f"PRAGMA wal_autocheckpoint = {IMPORT_CHECKPOINT_PAGES}",
            f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}",
            "PRAGMA wal_checkpoint(PASSIVE)",
        ]
        statements.clear()
        await store.record(_delta(9))  # a write after the import: checkpoints as usual
        assert not [s for s in statements if "checkpoint" in s]
        store._connection.writer.set_trace_callback(None)  # type: ignore[attr-defined]
        history = await store.history("user:mira", "risk")
    assert [r.value for r in history] == [f"v{day}" for day in (*range(6), 9)]


async def test_a_failed_import_gives_back_what_it_held(
    tmp_path: Path, default_thresholds: None
) -> None:
    def deltas() -> Iterator[MemoryDelta]:
        yield from (_delta(0), _delta(1), _delta(2))
        raise OSError("the file went away")

    url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    async with open_fact_store(url, MIRA) as store:
        with pytest.raises(OSError, match="went away"):
            await store.import_facts(deltas(), batch_size=2)
        assert gc.get_threshold()[2] == 10
        assert store._connection.imports == 0  # type: ignore[attr-defined]
        pages = store._connection.writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0]  # type: ignore[attr-defined]
        assert pages == CHECKPOINT_PAGES
