"""An import's batch written straight into the SQLite ledger records what the staged
statements and the rules record.

:class:`memory.facts.sqlite_imports.SqliteImports` writes a batch of appends by writers with
write authority without staging its writes. Each test imports the same writes three ways --
straight (where the batch qualifies), through the staged statements
(:class:`memory.facts.sqlite_appends.SqliteAppends`) and row by row under the rules -- and
compares the import's counts and every key's history (memory ids compared by the fact they
name). Batches that do not qualify (a write before its key's latest, two writes on a key out
of order, a candidate) go the other ways, and still record the same.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

import memory.facts.sqlite as sqlite_backend
import memory.facts.sqlite_imports as sqlite_imports
from memory.facts import MemoryDelta, open_fact_store
from memory.facts.sqlite_appends import SqliteAppends
from memory.identity import Principal
from tests.support.fact_deltas import MIRA, NOW, delta

pytestmark = pytest.mark.integration

CARL = Principal("acme", "carl")
MEMORY_ID = re.compile(r"[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}")


def _run(
    folder: Path, first: list[MemoryDelta], batch: list[MemoryDelta], principal: Principal
) -> tuple[Any, list[Any]]:
    """``first`` recorded by mira (who administers acme), then ``batch`` imported by
    ``principal`` in one batch; the import's counts and every key's history, each fact's
    memory id (and the one it supersedes) replaced by the fact's key, start and value."""
    url = f"sqlite:///{folder / 'facts.sqlite'}"
    folder.mkdir(parents=True)

    async def run() -> tuple[Any, list[Any]]:
        async with open_fact_store(url, MIRA, clock=lambda: NOW) as facts:
            await facts.bootstrap_admin(MIRA.user_id)
            if first:
                await facts.record_many(first)
            report = await facts.with_principal(principal).import_facts(batch)
            keys = sorted({(d.subject, d.attribute) for d in first + batch})
            rows = [r for key in keys for r in await facts.history(*key)]
        names = {r.memory_id: (r.subject, r.attribute, r.valid_from, r.value) for r in rows}
        assert all(MEMORY_ID.fullmatch(r.memory_id) for r in rows)
        histories = [
            {
                **vars(r),
                "memory_id": names[r.memory_id],
                "supersedes_memory_id": names.get(r.supersedes_memory_id or ""),
            }
            for r in rows
        ]
        return {**report.to_json(), "seconds": None}, histories

    return asyncio.run(run())


def _three_ways(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first: list[MemoryDelta],
    batch: list[MemoryDelta],
    principal: Principal = MIRA,
) -> int:
    """The batch imported straight, staged and row by row: the same each way. Returns how
    many writes went straight."""
    straight: list[int] = []
    rows_of = sqlite_imports.SqliteImports._columns

    def counted(self: Any, writes: list[Any], *more: Any) -> Any:
        straight.append(len(writes))
        return rows_of(self, writes, *more)

    with monkeypatch.context() as patch:
        patch.setattr(sqlite_imports.SqliteImports, "_columns", counted)
        found = _run(tmp_path / "straight", first, batch, principal)
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_imports.SqliteImports, "appendable", SqliteAppends.appendable)
        patch.setattr(sqlite_imports.SqliteImports, "append_all", SqliteAppends.append_all)
        assert _run(tmp_path / "staged", first, batch, principal) == found
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_backend, "plannable", lambda group: False)
        assert _run(tmp_path / "row-by-row", first, batch, principal) == found
    return sum(straight)


def _versions(subject: str, attribute: str, days: range, tag: str = "") -> list[MemoryDelta]:
    return [
        delta(subject, attribute, f"{attribute}-{d}{tag}", d, source_episode_id=f"e{d}")
        for d in days
    ]


def test_a_batch_of_appends_goes_straight_and_records_what_the_rules_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _versions("team:a", "risk", range(0, 3)) + _versions("team:b", "style", range(1, 2))
    batch = [
        d
        for day in range(5, 12)
        for d in (
            delta("team:a", "risk", {"level": day, "note": "é"}, day),
            delta("team:b", "style", day * 1.5, day, confidence=0.5, source="observed"),
            delta("team:c", "horizon", None, day, memory_type="procedural"),
            delta("user:mira", "age", day, day, retention_policy="short"),
        )
    ]
    assert _three_ways(tmp_path, monkeypatch, first, batch) == len(batch)


def test_batches_that_do_not_qualify_record_what_the_rules_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _versions("team:a", "risk", range(0, 10, 3))
    before_latest = _versions("team:b", "risk", range(0, 5)) + _versions("team:a", "risk", [5])
    out_of_order = _versions("team:b", "risk", [8, 6]) + _versions("team:c", "risk", [1, 2])
    for i, batch in enumerate([before_latest, out_of_order]):
        assert _three_ways(tmp_path / str(i), monkeypatch, first, batch) == 0
    candidates = _versions("user:mira", "risk", range(20, 24)) + _versions("user:carl", "risk", [1])
    assert _three_ways(tmp_path / "carl", monkeypatch, [], candidates, CARL) == 0
