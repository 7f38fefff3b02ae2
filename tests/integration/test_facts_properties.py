"""Property tests: random inserts, delayed inserts and retractions against a reference model.

Hypothesis draws sequences of operations on one key -- record a value at a time on a coarse
grid (so equal starts, delayed inserts and inserts into retracted gaps are frequent) or
retract at a time -- and runs them on a real ledger (SQLite file, Postgres through the
application role). Each example uses its own user writing its own subject, so examples share
one ledger per test.

After every operation the outcome (recorded, duplicate, conflict, not found) and the active
intervals must equal :class:`ReferenceLedger`'s; the ledger's own intervals must never overlap
and at most one may be open; at the end ``as_of`` at every grid time, and at random instants,
must give the model's value.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent.errors import FactConflictError, FactNotFoundError
from memory.facts import FactRecord, FactStore, MemoryDelta, open_fact_store
from memory.identity import Principal

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PRINCIPAL = Principal("acme", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
STEP = timedelta(hours=6)
GRID = 40  # times are BASE + k * STEP for k in 0..GRID
VALUES = ("a", "b", "c")
NOW = BASE + (GRID + 4) * STEP


def at(k: int) -> datetime:
    return BASE + k * STEP


# -- the reference model -----------------------------------------------------------------------


@dataclass
class Interval:
    start: int
    end: int | None  # None: open
    value: str

    def holds(self, k: int) -> bool:
        return self.start <= k and (self.end is None or k < self.end)


@dataclass
class ReferenceLedger:
    """The issue's rules over a plain list of intervals on the integer grid."""

    facts: list[Interval] = field(default_factory=list)

    def _holder(self, k: int) -> Interval | None:
        return next((f for f in self.facts if f.holds(k)), None)

    def record(self, k: int, value: str) -> str:
        for fact in self.facts:
            if fact.start == k:
                return "duplicate" if fact.value == value else "conflict"
        holder = self._holder(k)
        if holder is not None:
            end, holder.end = holder.end, k
        else:
            end = min((f.start for f in self.facts if f.start > k), default=None)
        self.facts.append(Interval(k, end, value))
        return "recorded"

    def retract(self, k: int) -> str:
        holder = self._holder(k)
        if holder is None:
            return "not_found"
        if holder.start == k:
            self.facts.remove(holder)
        else:
            holder.end = k
        return "retracted"

    def value_at(self, when: datetime) -> str | None:
        for f in self.facts:
            if at(f.start) <= when and (f.end is None or when < at(f.end)):
                return f.value
        return None

    def intervals(self) -> list[tuple[datetime, datetime | None, str]]:
        return sorted(
            (at(f.start), None if f.end is None else at(f.end), f.value) for f in self.facts
        )


# -- ledgers -----------------------------------------------------------------------------------


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for the whole test, so the ledger stays open across examples."""
    with asyncio.Runner() as loop:
        yield loop


@pytest.fixture
def store(ledger_url: str, runner: asyncio.Runner) -> Iterator[FactStore]:
    opened = open_fact_store(ledger_url, PRINCIPAL, clock=lambda: NOW)
    ledger = runner.run(opened.__aenter__())
    try:
        yield ledger
    finally:
        runner.run(opened.__aexit__(None, None, None))


# -- operations ----------------------------------------------------------------------------------

grid_time = st.integers(min_value=0, max_value=GRID)
record_op = st.tuples(st.just("record"), grid_time, st.sampled_from(VALUES))
retract_op = st.tuples(st.just("retract"), grid_time, st.just(""))
operations = st.lists(st.one_of(record_op, record_op, retract_op), max_size=24)
probe_times = st.lists(
    st.datetimes(
        min_value=at(-2).replace(tzinfo=None),
        max_value=at(GRID + 2).replace(tzinfo=None),
        timezones=st.just(UTC),
    ),
    max_size=8,
)


def _well_formed(records: list[FactRecord]) -> list[tuple[datetime, datetime | None, str]]:
    """The active intervals, after asserting they never overlap and at most one is open."""
    active = sorted((r.valid_from, r.valid_to, r.value) for r in records if r.active)
    assert sum(end is None for _, end, _ in active) <= 1, active
    for start, end, _ in active:
        assert end is None or start < end, active
    for (_, end, _), (next_start, _, _) in pairwise(active):
        assert end is not None and end <= next_start, active
    return active


async def _run(store: FactStore, ops: list[tuple[str, int, str]], probes: list[datetime]) -> None:
    # A fresh user per example, writing about themselves (their own subject needs no grant).
    user = uuid.uuid4().hex
    store = store.with_principal(Principal(PRINCIPAL.tenant_id, user))
    subject = f"user:{user}"
    model = ReferenceLedger()
    for op, k, value in ops:
        expected = model.record(k, value) if op == "record" else model.retract(k)
        try:
            if op == "record":
                stored = await store.record(
                    MemoryDelta(subject=subject, attribute="horizon", value=value, valid_from=at(k))
                )
                outcome = "duplicate" if stored.duplicate else "recorded"
                assert (stored.valid_from, stored.value) == (at(k), value)
            else:
                closed = await store.retract(subject, "horizon", at=at(k))
                outcome = "retracted"
                assert closed.valid_from <= at(k)
        except FactConflictError:
            outcome = "conflict"
        except FactNotFoundError:
            outcome = "not_found"
        event(expected)
        assert outcome == expected, (op, k, value)
        records = await store.history(subject, "horizon")
        assert _well_formed(records) == model.intervals(), (op, k, value)

    for when in [at(k) for k in range(-1, GRID + 2)] + probes:
        found = await store.as_of(subject, "horizon", when)
        assert (None if found is None else found.value) == model.value_at(when), when
        assert store.sync.as_of(subject, "horizon", when) == found  # the same rules, blocking
    current = await store.current(subject, "horizon")
    assert (None if current is None else current.value) == model.value_at(NOW)
    assert store.sync.current(subject, "horizon") == current
    profile = await store.profile(subject)
    assert {name: r.value for name, r in profile.items()} == (
        {} if current is None else {"horizon": current.value}
    )
    assert store.sync.profile(subject) == profile


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations, probes=probe_times)
def test_random_histories_match_the_reference_model(
    store: FactStore,
    runner: asyncio.Runner,
    ops: list[tuple[str, int, str]],
    probes: list[datetime],
) -> None:
    runner.run(_run(store, ops, probes))


def test_reference_model_follows_the_passport_trace() -> None:
    """The model itself agrees with the article's trace (so it is not vacuous)."""
    model = ReferenceLedger()
    assert model.record(4, "2026-07-15") == "recorded"
    assert model.record(8, "2026-06-30") == "recorded"
    assert model.record(1, "2026-08-01") == "recorded"
    assert model.record(8, "2026-06-29") == "conflict"
    assert model.record(8, "2026-06-30") == "duplicate"
    assert model.intervals() == [
        (at(1), at(4), "2026-08-01"),
        (at(4), at(8), "2026-07-15"),
        (at(8), None, "2026-06-30"),
    ]
    assert model.retract(10) == "retracted"
    assert model.retract(11) == "not_found"
    assert model.value_at(at(9)) == "2026-06-30" and model.value_at(at(10)) is None
