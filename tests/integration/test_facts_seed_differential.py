"""Differential against the seed's reference schema: the same 1,500 writes give the same
3,000 as-of answers.

The design article the ledger grew from (``../shared/seeds/``, "a self-contained SQLite write
path") gives a reference: one ``memory_facts`` table of half-open intervals
``[valid_from, valid_to)`` with a partial unique index for one open fact per key, and
``replace_fact``, which closes the interval containing a new start and gives the new row the
end of the one it split (or the next start, for a delayed insert that precedes everything).
That code is reproduced below as the article writes it (SQL unchanged), on an in-memory SQLite
database, and it is the oracle.

The same 1,500 writes (30 keys, every start distinct within its key, written in a shuffled
order so that most keys get delayed inserts) go to the real ledger three ways: one
``record()`` per write, ``record_many`` in groups of 50 in the shuffled order (the rules per
write), and ``import_facts`` in time order (groups of appends: the set-wise SQL path on
SQLite). 3,000 instants, drawn at random over the whole span and on every boundary, are then
asked of each key through ``as_of``; value and source episode must equal the reference's,
including "nothing held then". On SQLite and on Postgres through the application role.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from memory.facts import FactStore, MemoryDelta, open_fact_store
from memory.identity import Principal

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PRINCIPAL = Principal("acme", "mira")
SUBJECT = "user:mira"
KEYS = 30
WRITES = 1_500
PROBES = 3_000
BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = BASE + timedelta(days=400)


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the seed's reference, as the article writes it ---------------------------------------------


@dataclass(frozen=True)
class MemoryFact:
    tenant_id: str
    subject: str
    attribute: str
    value: str
    valid_from: str
    source_episode_id: str


def open_db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.executescript(
        """
        create table memory_facts (
            fact_id integer primary key,
            tenant_id text not null,
            subject text not null,
            attribute text not null,
            value text not null,
            valid_from text not null,
            valid_to text,
            source_episode_id text not null,
            check (valid_to is null or valid_from < valid_to)
        );
        create unique index one_open_fact
        on memory_facts (tenant_id, subject, attribute)
        where valid_to is null;
        """
    )
    return db


def replace_fact(db: sqlite3.Connection, fact: MemoryFact) -> None:
    with db:
        exact = db.execute(
            """
            select fact_id
            from memory_facts
            where tenant_id = ? and subject = ? and attribute = ? and valid_from = ?
            """,
            (fact.tenant_id, fact.subject, fact.attribute, fact.valid_from),
        ).fetchone()
        if exact:
            raise ValueError("equal valid_from requires an application conflict policy")

        containing = db.execute(
            """
            select fact_id, valid_to
            from memory_facts
            where tenant_id = ?
              and subject = ?
              and attribute = ?
              and valid_from < ?
              and (valid_to is null or valid_to > ?)
            limit 1
            """,
            (fact.tenant_id, fact.subject, fact.attribute, fact.valid_from, fact.valid_from),
        ).fetchone()
        if containing:
            db.execute(
                "update memory_facts set valid_to = ? where fact_id = ?",
                (fact.valid_from, containing["fact_id"]),
            )
            successor_boundary = containing["valid_to"]
        else:
            successor = db.execute(
                """
                select valid_from
                from memory_facts
                where tenant_id = ? and subject = ? and attribute = ? and valid_from > ?
                order by valid_from
                limit 1
                """,
                (fact.tenant_id, fact.subject, fact.attribute, fact.valid_from),
            ).fetchone()
            successor_boundary = successor["valid_from"] if successor else None

        db.execute(
            """
            insert into memory_facts
                (tenant_id, subject, attribute, value, valid_from, valid_to, source_episode_id)
            values (?, ?, ?, ?, ?, ?, ?)
            """,
            (
                fact.tenant_id,
                fact.subject,
                fact.attribute,
                fact.value,
                fact.valid_from,
                successor_boundary,
                fact.source_episode_id,
            ),
        )


def fact_at(db: sqlite3.Connection, attribute: str, timestamp: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        """
        select value, source_episode_id
        from memory_facts
        where tenant_id = ?
          and subject = ?
          and attribute = ?
          and valid_from <= ?
          and (valid_to is null or valid_to > ?)
        limit 1
        """,
        (PRINCIPAL.tenant_id, SUBJECT, attribute, timestamp, timestamp),
    ).fetchone()
    return row


# -- the writes and the probes ------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    attribute: str
    value: str
    valid_from: datetime
    episode: str

    def delta(self) -> MemoryDelta:
        return MemoryDelta(
            subject=SUBJECT,
            attribute=self.attribute,
            value=self.value,
            valid_from=self.valid_from,
            source_episode_id=self.episode,
        )


def draw_writes(rng: random.Random) -> list[Write]:
    """1,500 writes on 30 keys, distinct whole-second starts within a key, shuffled."""
    writes: list[Write] = []
    for n in range(WRITES):
        attribute = f"seed_attr_{n % KEYS:02d}"
        writes.append(Write(attribute, f"v{rng.randrange(6)}", BASE, f"e{n:04d}"))
    starts = {
        f"seed_attr_{k:02d}": rng.sample(range(360 * 24), WRITES // KEYS) for k in range(KEYS)
    }
    placed = [
        Write(w.attribute, w.value, BASE + timedelta(hours=starts[w.attribute].pop()), w.episode)
        for w in writes
    ]
    rng.shuffle(placed)
    return placed


def draw_probes(rng: random.Random, writes: list[Write]) -> list[tuple[str, datetime]]:
    """3,000 (key, instant) pairs: every boundary of the first keys, the rest at random
    (whole seconds, some before the first start and after the last)."""
    boundaries = [(w.attribute, w.valid_from) for w in writes]
    probes = boundaries[: PROBES // 3]
    while len(probes) < PROBES:
        attribute = f"seed_attr_{rng.randrange(KEYS):02d}"
        probes.append((attribute, BASE + timedelta(seconds=rng.randrange(-86_400, 372 * 86_400))))
    return probes


async def _write(ledger: FactStore, how: str, writes: list[Write]) -> None:
    if how == "record":
        for write in writes:
            await ledger.record(write.delta())
    elif how == "record_many":
        for first in range(0, len(writes), 50):
            results = await ledger.record_many(w.delta() for w in writes[first : first + 50])
            assert not [r for r in results if isinstance(r, Exception)], results
    else:
        in_time_order = sorted(writes, key=lambda w: (w.attribute, w.valid_from))
        report = await ledger.import_facts(w.delta() for w in in_time_order)
        assert report.refused == () and report.duplicates == 0, report
        assert report.recorded + report.replaced == WRITES, report


@pytest.mark.parametrize("how", ["record", "record_many", "import_facts"])
def test_the_same_writes_give_the_seed_references_as_of_answers(ledger_url: str, how: str) -> None:
    rng = random.Random(20261207)
    writes = draw_writes(rng)
    probes = draw_probes(rng, writes)

    reference = open_db()
    for write in writes:
        replace_fact(
            reference,
            MemoryFact(
                PRINCIPAL.tenant_id,
                SUBJECT,
                write.attribute,
                write.value,
                iso(write.valid_from),
                write.episode,
            ),
        )
    expected = []
    for attribute, when in probes:
        row = fact_at(reference, attribute, iso(when))
        expected.append(None if row is None else (row["value"], row["source_episode_id"]))
    # The oracle is not vacuous: most probes find a fact and several keys were split.
    assert sum(e is not None for e in expected) > PROBES * 0.8
    assert (
        reference.execute("select count(*) from memory_facts where valid_to is null").fetchone()[0]
        == KEYS
    )

    async def run() -> list[tuple[str, str | None] | None]:
        async with open_fact_store(ledger_url, PRINCIPAL, clock=lambda: NOW) as ledger:
            await _write(ledger, how, writes)
            answers: list[tuple[str, str | None] | None] = []
            for attribute, when in probes:
                fact = await ledger.as_of(SUBJECT, attribute, when)
                answers.append(None if fact is None else (fact.value, fact.source_episode_id))
            return answers

    answers = asyncio.run(run())
    wrong = [(p, e, a) for p, e, a in zip(probes, expected, answers, strict=True) if e != a]
    assert not wrong, f"{len(wrong)} of {PROBES} as-of answers differ, first: {wrong[:3]}"
