"""One contract, both backends: the memory journal on SQLite and on Postgres.

Each test gets its own database: a fresh SQLite file, or a fresh Postgres database set up by
a non-superuser owner and used through an application role (NOSUPERUSER, NOBYPASSRLS), the
way a deployment runs it. The clock is a test clock the tests move by hand, so leases,
backoff and idleness are exact.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg_errors

from memory.errors import (
    CandidateNotFoundError,
    EpisodeConflictError,
    FactLedgerSchemaError,
    InvalidPrincipalError,
    JournalError,
    JournalUnavailableError,
)
from memory.facts import open_fact_store, setup_fact_store
from memory.facts.migrations import LATEST_VERSION
from memory.identity import Principal
from memory.journal import (
    JOB_BACKOFF_BASE,
    JOB_BACKOFF_CAP,
    MAX_JOB_ATTEMPTS,
    Candidate,
    Episode,
    Journal,
    Procedure,
    Related,
    SessionSummary,
    job_id_for,
    open_journal,
    stable_id,
)
from tests.support.servers import PgLedger, postgres_ledger

pytestmark = pytest.mark.integration

ALICE = Principal("acme", "alice")
BOB = Principal("acme", "bob")  # same tenant, another user
GLOBEX_ALICE = Principal("globex", "alice")  # same user name, another tenant
T0 = datetime(2026, 6, 1, 9, tzinfo=UTC)
TABLES = ("episodes", "extraction_jobs", "memory_candidates", "session_summaries", "procedures")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> datetime:
        self.now += delta
        return self.now


@dataclass(frozen=True)
class Backend:
    name: str
    url: str
    #: Postgres only: the owner, superuser and application-role URLs.
    ledger: PgLedger | None = None

    @property
    def path(self) -> Path:
        assert self.name == "sqlite"
        return Path(self.url.removeprefix("sqlite:///"))


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", f"sqlite:///{tmp_path / 'ledger.sqlite'}")
        return
    with postgres_ledger() as ledger:
        yield Backend("postgres", ledger.app_url, ledger)


@pytest.fixture
def clock() -> Clock:
    return Clock()


OpenJournal = Callable[..., AbstractAsyncContextManager[Journal]]


@pytest.fixture
def open_(backend: Backend, clock: Clock) -> OpenJournal:
    """``open_(principal=ALICE)``: the journal under test on the test clock."""

    @asynccontextmanager
    async def opener(principal: Principal | None = ALICE) -> AsyncIterator[Journal]:
        async with open_journal(backend.url, principal, clock=clock) as journal:
            yield journal

    return opener


def _act_as(conn: psycopg.Connection[Any], principal: Principal) -> None:
    """What the journal runs first in every transaction (local to the transaction)."""
    conn.execute(
        "SELECT set_config('app.tenant_id', %s, true), set_config('app.user_id', %s, true)",
        (principal.tenant_id, principal.user_id),
    )


# -- records -----------------------------------------------------------------------------------


def episode(
    n: int,
    *,
    principal: Principal = ALICE,
    thread: str = "t1",
    at: datetime | None = None,
    text: str | None = None,
    **fields: Any,
) -> Episode:
    return Episode(
        tenant_id=principal.tenant_id,
        episode_id=f"ep-{principal.user_id}-{n}",
        user_id=principal.user_id,
        thread_id=thread,
        at=at or T0 + timedelta(minutes=n),
        role="user",
        kind="message",
        text=f"turn {n}" if text is None else text,
        **fields,
    )


def candidate(n: int, *, principal: Principal = ALICE, **fields: Any) -> Candidate:
    values: dict[str, Any] = {
        "tenant_id": principal.tenant_id,
        "candidate_id": f"cand-{principal.user_id}-{n}",
        "user_id": principal.user_id,
        "kind": "preference",
        "payload": {"attribute": "horizon", "value": n},
        "quote": f"quote {n}",
        "episode_ids": (f"ep-{principal.user_id}-{n}",),
        "status": "pending",
        "reason": "inferred",
        "created_at": T0 + timedelta(minutes=n),
        **fields,
    }
    return Candidate(**values)


def summary(n: int, *, principal: Principal = ALICE, **fields: Any) -> SessionSummary:
    values: dict[str, Any] = {
        "tenant_id": principal.tenant_id,
        "session_id": f"s-{principal.user_id}-{n}",
        "user_id": principal.user_id,
        "thread_id": f"s-{principal.user_id}-{n}",
        "started": T0 + timedelta(hours=n),
        "ended": T0 + timedelta(hours=n, minutes=30),
        "topic": f"topic {n}",
        "summary": f"summary {n}",
        **fields,
    }
    return SessionSummary(**values)


def procedure(n: int, *, principal: Principal = ALICE, **fields: Any) -> Procedure:
    values: dict[str, Any] = {
        "tenant_id": principal.tenant_id,
        "procedure_id": f"proc-{principal.user_id}-{n}",
        "user_id": principal.user_id,
        "text": f"never cover ticker {n}",
        "rule": {"exclude_ticker": f"T{n}"},
        "status": "active",
        "confirmed_at": T0 + timedelta(minutes=n),
        "review_at": T0 + timedelta(days=90),
        **fields,
    }
    return Procedure(**values)


# -- episodes ----------------------------------------------------------------------------------


async def test_episodes_are_idempotent_and_never_rewritten(open_: OpenJournal) -> None:
    async with open_() as journal:
        first = [episode(1), episode(2, meta={"ticker": "NVDA"})]
        assert await journal.add_episodes(first) == first
        # The same ids and texts again: a no-op that returns what is stored (even if the
        # caller's copy differs elsewhere).
        again = [replace(first[0], at=T0 + timedelta(days=1)), first[1]]
        assert await journal.add_episodes(again) == first

        with pytest.raises(EpisodeConflictError, match=r"ep-alice-1.*immutable"):
            await journal.add_episodes([episode(1, text="something else")])
        # One transaction per batch: a conflict anywhere stores none of it.
        with pytest.raises(EpisodeConflictError):
            await journal.add_episodes([episode(3), episode(2, text="rewritten")])
        assert [e.episode_id for e in await journal.list_episodes()] == [
            "ep-alice-1",
            "ep-alice-2",
        ]
        assert await journal.add_episodes([]) == []


async def test_episodes_must_belong_to_the_journals_principal(open_: OpenJournal) -> None:
    async with open_() as journal:
        for foreign in (episode(1, principal=BOB), episode(1, principal=GLOBEX_ALICE)):
            with pytest.raises(JournalError, match="with_principal"):
                await journal.add_episodes([episode(9), foreign])
        assert await journal.list_episodes() == []
        # Ids are unique per tenant: Bob cannot reuse an id Alice holds.
        await journal.add_episodes([episode(1)])
        taken = replace(episode(1, principal=BOB), episode_id="ep-alice-1")
        with pytest.raises(JournalError, match="in use by another user"):
            await journal.with_principal(BOB).add_episodes([taken])
        # Another tenant may use the same id: it is another namespace.
        twin = replace(episode(1, principal=GLOBEX_ALICE), episode_id="ep-alice-1")
        assert await journal.with_principal(GLOBEX_ALICE).add_episodes([twin]) == [twin]


async def test_a_journal_opened_for_no_principal_refuses_calls(open_: OpenJournal) -> None:
    async with open_(None) as journal:
        with pytest.raises(InvalidPrincipalError, match="with_principal"):
            await journal.list_episodes()
        with pytest.raises(InvalidPrincipalError, match="empty user_id"):
            journal.with_principal(Principal("acme", " "))
        assert await journal.with_principal(ALICE).list_episodes() == []


async def test_episodes_are_read_in_time_order_and_in_utc(open_: OpenJournal) -> None:
    cest = timezone(timedelta(hours=2))
    async with open_() as journal:
        await journal.add_episodes(
            [
                episode(3, thread="t2"),
                episode(1, at=(T0 + timedelta(minutes=1)).astimezone(cest)),
                episode(2),
                episode(4, thread="t2"),
            ]
        )
        everything = await journal.list_episodes()
        assert [e.episode_id for e in everything] == [f"ep-alice-{n}" for n in (1, 2, 3, 4)]
        assert all(e.at.tzinfo == UTC for e in everything)
        assert everything[0].at == T0 + timedelta(minutes=1)

        t2 = await journal.list_episodes(thread_id="t2")
        assert [e.episode_id for e in t2] == ["ep-alice-3", "ep-alice-4"]
        window = await journal.list_episodes(
            since=T0 + timedelta(minutes=2), until=T0 + timedelta(minutes=4)
        )
        assert [e.episode_id for e in window] == ["ep-alice-2", "ep-alice-3"]  # [since, until)
        assert len(await journal.list_episodes(limit=3)) == 3

        picked = await journal.episodes(["ep-alice-4", "nope", "ep-alice-1"])
        assert [e.episode_id for e in picked] == ["ep-alice-1", "ep-alice-4"]
        with pytest.raises(JournalError, match="no time zone"):
            await journal.list_episodes(since=datetime(2026, 6, 1))


async def test_episodes_are_immutable_in_storage(backend: Backend, open_: OpenJournal) -> None:
    async with open_() as journal:
        await journal.add_episodes([episode(1)])
    update = "UPDATE {table} SET text = 'rewritten' WHERE episode_id = 'ep-alice-1'"
    if backend.name == "sqlite":
        conn = sqlite3.connect(backend.path)
        try:
            with pytest.raises(sqlite3.IntegrityError, match="episodes are immutable"):
                conn.execute(update.format(table="episodes"))
        finally:
            conn.close()
    else:
        assert backend.ledger is not None
        table = "analyst_facts.episodes"
        # The application role has no UPDATE on episodes at all ...
        with psycopg.connect(backend.ledger.app_url) as conn:
            _act_as(conn, ALICE)
            with pytest.raises(pg_errors.InsufficientPrivilege):
                conn.execute(update.format(table=table))
        # ... and the owner, who has (and sees the row as Alice), is stopped by the trigger.
        with psycopg.connect(backend.ledger.owner_url) as conn:
            _act_as(conn, ALICE)
            with pytest.raises(pg_errors.IntegrityConstraintViolation, match="immutable"):
                conn.execute(update.format(table=table))
    async with open_() as journal:
        assert [e.text for e in await journal.list_episodes()] == ["turn 1"]


# -- extraction jobs ---------------------------------------------------------------------------


async def test_enqueue_is_idempotent_by_kind_and_episodes(open_: OpenJournal, clock: Clock) -> None:
    async with open_() as journal:
        job = await journal.enqueue("decision", "t1", ["ep-2", "ep-1", "ep-2"])
        assert job.job_id == job_id_for("acme", "alice", "decision", ["ep-1", "ep-2"])
        assert (job.status, job.attempts, job.episode_ids) == ("pending", 0, ("ep-2", "ep-1"))
        assert job.created_at == job.next_attempt_at == T0

        clock.advance(timedelta(minutes=1))
        claimed = await journal.claim()
        assert claimed is not None
        # Enqueueing the same episodes again (any order) is the same job, unchanged.
        assert await journal.enqueue("decision", "t1", ["ep-1", "ep-2"]) == claimed
        other = await journal.enqueue("session_end", "t1", ["ep-1", "ep-2"])
        assert other.job_id != job.job_id

        with pytest.raises(JournalError, match="job kind 'summary'"):
            await journal.enqueue("summary", "t1", ["ep-1"])  # type: ignore[arg-type]
        with pytest.raises(JournalError, match="at least one episode"):
            await journal.enqueue("decision", "t1", [])


async def test_claim_leases_the_oldest_due_job_and_a_dead_workers_job_comes_back(
    open_: OpenJournal, clock: Clock
) -> None:
    lease = timedelta(minutes=5)
    async with open_() as journal:
        first = await journal.enqueue("decision", "t1", ["ep-1"])
        clock.advance(timedelta(seconds=1))
        second = await journal.enqueue("decision", "t1", ["ep-2"])

        taken = await journal.claim(lease=lease)
        assert taken is not None and taken.job_id == first.job_id
        assert (taken.status, taken.attempts, taken.leased_until) == (
            "running",
            1,
            clock.now + lease,
        )
        again = await journal.claim(lease=lease)
        assert again is not None and again.job_id == second.job_id
        assert await journal.claim(lease=lease) is None  # both leased

        # The first worker dies (kill -9): once its lease expires the job is due again.
        clock.advance(lease)
        retaken = await journal.claim(lease=lease)
        assert retaken is not None and retaken.job_id == first.job_id
        assert retaken.attempts == 2 and "lease" in (retaken.last_error or "")

        done = await journal.complete(first.job_id, {"facts": ["f-1"], "candidates": 0})
        assert (done.status, done.leased_until, done.finished_at) == ("done", None, clock.now)
        assert done.result == {"facts": ["f-1"], "candidates": 0}
        # Completing again (a late worker) changes nothing.
        clock.advance(timedelta(minutes=1))
        assert await journal.complete(first.job_id, {"other": 1}) == done
        assert await journal.fail(first.job_id, "late failure") == done

        assert [j.job_id for j in await journal.jobs(status="done")] == [first.job_id]
        assert [j.job_id for j in await journal.jobs()] == [second.job_id, first.job_id]
        with pytest.raises(JournalError, match="No extraction job 'job-nope'"):
            await journal.complete("job-nope", {})
        with pytest.raises(JournalError, match="positive"):
            await journal.claim(lease=timedelta(0))


async def test_concurrent_workers_never_take_the_same_job(open_: OpenJournal) -> None:
    """Two openers (two connections, as two worker processes would have) drain one queue."""
    async with open_() as first, open_() as second:
        queued = {(await first.enqueue("decision", "t1", [f"ep-{n}"])).job_id for n in range(20)}

        async def drain(journal: Journal) -> list[str]:
            taken: list[str] = []
            while (job := await journal.claim()) is not None:
                taken.append(job.job_id)
            return taken

        a, b = await asyncio.gather(drain(first), drain(second))
        assert sorted(a + b) == sorted(queued)  # every job once, none twice


async def test_failures_back_off_exponentially_then_fail_for_good(
    open_: OpenJournal, clock: Clock
) -> None:
    async with open_() as journal:
        job = await journal.enqueue("session_end", "t1", ["ep-1"])
        for attempt in range(1, MAX_JOB_ATTEMPTS + 1):
            taken = await journal.claim()
            assert taken is not None and taken.attempts == attempt
            failed = await journal.fail(job.job_id, f"model timeout {attempt}")
            assert failed.last_error == f"model timeout {attempt}"
            if attempt == MAX_JOB_ATTEMPTS:
                assert (failed.status, failed.finished_at) == ("failed", clock.now)
                break
            wait = min(JOB_BACKOFF_BASE * 2 ** (attempt - 1), JOB_BACKOFF_CAP)
            assert (failed.status, failed.next_attempt_at) == ("pending", clock.now + wait)
            assert failed.leased_until is None
            clock.advance(wait - timedelta(microseconds=1))
            assert await journal.claim() is None  # not due yet
            clock.advance(timedelta(microseconds=1))
        clock.advance(timedelta(days=1))
        assert await journal.claim() is None
        assert [j.status for j in await journal.jobs(kind="session_end")] == ["failed"]


async def test_a_job_whose_last_attempt_lost_its_lease_fails(
    open_: OpenJournal, clock: Clock
) -> None:
    """A job that kills its worker every time must not loop forever."""
    lease = timedelta(minutes=1)
    async with open_() as journal:
        poison = await journal.enqueue("decision", "t1", ["ep-poison"])
        for _ in range(MAX_JOB_ATTEMPTS):
            assert await journal.claim(lease=lease) is not None
            clock.advance(lease)  # the worker dies each time
        healthy = await journal.enqueue("decision", "t1", ["ep-ok"])
        taken = await journal.claim(lease=lease)
        assert taken is not None and taken.job_id == healthy.job_id
        (gone,) = await journal.jobs(status="failed")
        assert gone.job_id == poison.job_id and gone.attempts == MAX_JOB_ATTEMPTS
        assert "lost its lease" in (gone.last_error or "")


# -- candidates, summaries, procedures ---------------------------------------------------------


async def test_candidates_are_decided_once_from_pending(open_: OpenJournal, clock: Clock) -> None:
    async with open_() as journal:
        stored = await journal.add_candidates(
            [candidate(1), candidate(2), candidate(3, kind="fact", status="ungrounded")]
        )
        assert [c.candidate_id for c in stored] == ["cand-alice-1", "cand-alice-2", "cand-alice-3"]
        # Idempotent by id: an existing candidate is returned unchanged.
        assert await journal.add_candidates([replace(candidate(1), quote="edited")]) == [stored[0]]
        assert [c.candidate_id for c in await journal.candidates(status="pending")] == [
            "cand-alice-1",
            "cand-alice-2",
        ]
        assert [c.candidate_id for c in await journal.candidates(kind="fact")] == ["cand-alice-3"]

        clock.advance(timedelta(hours=1))
        confirmed = await journal.decide("cand-alice-1", "confirmed", "user said yes")
        assert (confirmed.status, confirmed.reason, confirmed.decided_at) == (
            "confirmed",
            "user said yes",
            clock.now,
        )
        rejected = await journal.decide("cand-alice-2", "rejected")
        assert rejected.reason == "inferred"  # an empty reason keeps the old one
        with pytest.raises(JournalError, match="is confirmed already"):
            await journal.decide("cand-alice-1", "rejected")
        with pytest.raises(JournalError, match="is ungrounded already"):
            await journal.decide("cand-alice-3", "confirmed")
        with pytest.raises(JournalError, match="as 'pending'"):
            await journal.decide("cand-alice-1", "pending")
        with pytest.raises(CandidateNotFoundError, match="No candidate 'cand-nope'"):
            await journal.decide("cand-nope", "confirmed")
        # Another user's journal does not see Alice's candidate at all.
        with pytest.raises(CandidateNotFoundError):
            await journal.with_principal(BOB).decide("cand-alice-2", "confirmed")
        assert await journal.candidates(status="pending") == []


async def test_summaries_newest_first_and_replaced_by_session(open_: OpenJournal) -> None:
    async with open_() as journal:
        for n in (2, 1, 3):
            await journal.put_summary(summary(n))
        assert [s.session_id for s in await journal.summaries()] == [
            "s-alice-3",
            "s-alice-2",
            "s-alice-1",
        ]
        assert [s.session_id for s in await journal.summaries(limit=1)] == ["s-alice-3"]
        # Storing a session's summary again replaces it.
        longer = summary(1, ended=T0 + timedelta(hours=9), facts_learned=("f-1",))
        assert await journal.put_summary(longer) == longer
        newest = await journal.summaries(limit=5)
        assert newest[0] == longer and len(newest) == 3
        with pytest.raises(JournalError, match="before it starts"):
            await journal.put_summary(summary(4, ended=T0))
        with pytest.raises(JournalError, match="in use by another user"):
            await journal.with_principal(BOB).put_summary(
                replace(summary(1, principal=BOB), session_id="s-alice-1")
            )


async def test_procedures_stay_active_until_retired(open_: OpenJournal, clock: Clock) -> None:
    async with open_() as journal:
        first = await journal.put_procedure(procedure(1))
        await journal.put_procedure(procedure(2))
        assert await journal.put_procedure(replace(procedure(1), text="edited")) == first
        clock.advance(timedelta(days=1))
        retired = await journal.retire_procedure("proc-alice-1")
        assert (retired.status, retired.retired_at) == ("retired", clock.now)
        clock.advance(timedelta(days=1))
        assert await journal.retire_procedure("proc-alice-1") == retired  # no-op
        assert [p.procedure_id for p in await journal.procedures()] == ["proc-alice-2"]
        assert [p.procedure_id for p in await journal.procedures(status=None)] == [
            "proc-alice-1",
            "proc-alice-2",
        ]
        assert [p.procedure_id for p in await journal.procedures(status="retired")] == [
            "proc-alice-1"
        ]
        with pytest.raises(CandidateNotFoundError, match="No procedure 'proc-nope'"):
            await journal.retire_procedure("proc-nope")


async def test_idle_threads_are_those_with_uncovered_episodes(open_: OpenJournal) -> None:
    idle_since = T0 + timedelta(hours=1)
    async with open_() as journal:
        await journal.add_episodes(
            [
                episode(1, thread="open"),  # idle, nothing covers it
                episode(2, thread="open"),
                episode(3, thread="closed"),  # idle, a session_end job covers it
                episode(4, thread="partly"),  # idle, one episode covered, one not
                episode(5, thread="partly"),
                episode(6, thread="decided"),  # idle, only a decision job covers it
                episode(7, thread="busy"),  # old episode, but the newest one is recent
                episode(8, thread="busy", at=idle_since),
            ]
        )
        await journal.enqueue("session_end", "closed", ["ep-alice-3"])
        await journal.enqueue("session_end", "partly", ["ep-alice-4"])
        await journal.enqueue("decision", "decided", ["ep-alice-6"])
        assert await journal.idle_threads(idle_since) == ["open", "partly", "decided"]
        await journal.enqueue("session_end", "open", ["ep-alice-1", "ep-alice-2"])
        assert await journal.idle_threads(idle_since) == ["partly", "decided"]
        assert await journal.idle_threads(T0) == []
        assert await journal.with_principal(BOB).idle_threads(idle_since) == []


# -- tenancy -----------------------------------------------------------------------------------

PRINCIPALS = (ALICE, BOB, GLOBEX_ALICE, Principal("globex", "carol"))


@dataclass
class Written:
    """What one principal wrote, to compare with what its reads return."""

    episodes: list[Episode]
    jobs: set[str]
    candidates: list[Candidate]
    summaries: list[SessionSummary]
    procedures: list[Procedure]


async def _write_randomly(journal: Journal, principal: Principal, rng: random.Random) -> Written:
    mine = journal.with_principal(principal)
    user = f"{principal.tenant_id}/{principal.user_id}"
    threads = [f"thread-{user}-{k}" for k in range(rng.randint(1, 3))]
    episodes = [
        # Ids are per tenant: the same user name in two tenants reuses them on purpose.
        replace(
            episode(n, principal=principal, thread=rng.choice(threads)),
            episode_id=stable_id("ep", principal.user_id, n),
            at=T0 + timedelta(minutes=rng.randint(0, 600), microseconds=n),
        )
        for n in range(rng.randint(3, 12))
    ]
    await mine.add_episodes(episodes)
    jobs: set[str] = set()
    for _ in range(rng.randint(1, 4)):
        ids = [e.episode_id for e in rng.sample(episodes, rng.randint(1, len(episodes)))]
        kind = rng.choice(["decision", "session_end"])
        jobs.add((await mine.enqueue(kind, rng.choice(threads), ids)).job_id)
    candidates = await mine.add_candidates(
        [candidate(n, principal=principal) for n in range(rng.randint(1, 5))]
    )
    summaries = [
        await mine.put_summary(summary(n, principal=principal)) for n in range(rng.randint(1, 4))
    ]
    procedures = [
        await mine.put_procedure(procedure(n, principal=principal))
        for n in range(rng.randint(1, 3))
    ]
    return Written(episodes, jobs, candidates, summaries, procedures)


async def test_erase_deletes_only_the_named_rows_and_tombstones_hold_no_text(
    backend: Backend, open_: OpenJournal
) -> None:
    """Forget (one item): ``erase`` deletes the principal's named rows, by tier, and no other
    user's with the same ids; tombstones are per user, keyed hashes, matched after
    normalising (case, spacing, trailing punctuation), and never hold the text."""
    async with open_() as alice, open_(BOB) as bob:
        await alice.add_episodes([episode(1), episode(2)])
        await bob.add_episodes([episode(1, principal=BOB)])
        await alice.add_candidates([candidate(1), candidate(2)])
        erased = await alice.erase(
            {"episodes": ["ep-alice-1", "ep-bob-1"], "candidates": ["cand-alice-2"]},
            reason="forgotten",
        )
        assert erased["episodes"] == ["ep-alice-1"] and erased["candidates"] == ["cand-alice-2"]
        assert erased["summaries"] == [] and erased["procedures"] == []
        assert [e.episode_id for e in await alice.list_episodes()] == ["ep-alice-2"]
        assert [e.episode_id for e in await bob.list_episodes()] == ["ep-bob-1"]
        assert [c.candidate_id for c in await alice.candidates()] == ["cand-alice-1"]

        hashes = await alice.add_tombstones(["My name is Zorvendix.", "  "], reason="forgotten")
        assert len(hashes) == 1 and len(hashes[0]) == 64
        assert await alice.add_tombstones(["my name is  ZORVENDIX"], reason="again") == hashes
        said = ["MY NAME IS Zorvendix!", "my name is someone else"]
        assert await alice.tombstoned(said) == {"MY NAME IS Zorvendix!"}
        assert await bob.tombstoned(said) == set()
        assert await alice.tombstoned([]) == set()
        deletes = [e for e in await alice.audit_log() if e.action == "delete"]
        assert {e.tier for e in deletes} == {"episodes", "candidates"}
    if backend.name == "sqlite":
        with sqlite3.connect(backend.path) as conn:
            rows = conn.execute("SELECT * FROM memory_tombstones").fetchall()
        conn.close()
    else:
        assert backend.ledger is not None
        with psycopg.connect(backend.ledger.admin_url) as admin:
            rows = admin.execute("SELECT * FROM analyst_facts.memory_tombstones").fetchall()
        with psycopg.connect(backend.url) as as_bob:  # row security: none of alice's
            _act_as(as_bob, BOB)
            seen = as_bob.execute("SELECT count(*) FROM analyst_facts.memory_tombstones")
            assert seen.fetchone() == (0,)
    assert len(rows) == 1 and "zorvendix" not in repr(rows).lower()


async def test_related_reads_what_a_forget_of_ids_can_touch_and_nothing_else(
    open_: OpenJournal,
) -> None:
    """A forget of some ids reads by id, not the whole journal: the episodes named, the
    candidates, summaries and procedures named or citing one of them, the jobs citing one;
    another user's rows with the same ids or citing the same episode ids never come back."""
    async with open_() as alice, open_(BOB) as bob:
        await alice.add_episodes([episode(n) for n in (1, 2, 3)])
        await bob.add_episodes([episode(1, principal=BOB)])
        await alice.add_candidates([candidate(1), candidate(2), candidate(3)])
        await bob.add_candidates([candidate(1, principal=BOB, episode_ids=("ep-alice-1",))])
        cites_one = summary(1, episode_ids=("ep-alice-1", "ep-alice-2"))
        await alice.put_summary(cites_one)
        await alice.put_summary(summary(2, episode_ids=("ep-alice-3",)))
        await alice.put_procedure(procedure(1, episode_ids=("ep-alice-3",)))
        await alice.put_procedure(procedure(2, episode_ids=("ep-alice-1",)))
        job = await alice.enqueue("session_end", "t1", ["ep-alice-1"])
        await alice.enqueue("session_end", "t2", ["ep-alice-2"])

        found = await alice.related(["ep-alice-1", "cand-alice-3", "s-alice-2", "nope"])
        assert [e.episode_id for e in found.episodes] == ["ep-alice-1"]
        assert [c.candidate_id for c in found.candidates] == ["cand-alice-1", "cand-alice-3"]
        assert [s.session_id for s in found.summaries] == ["s-alice-1", "s-alice-2"]
        assert [p.procedure_id for p in found.procedures] == ["proc-alice-2"]
        assert [j.job_id for j in found.jobs] == [job.job_id]
        assert found.summaries[0] == (await alice.summaries(limit=10))[-1]  # whole records

        theirs = await bob.related(["ep-alice-1", "ep-bob-1", "cand-alice-1"])
        assert [e.episode_id for e in theirs.episodes] == ["ep-bob-1"]
        assert theirs.candidates == () and theirs.summaries == () and theirs.jobs == ()
        assert await alice.related([]) == Related()


async def test_every_read_returns_exactly_the_principals_own_records(
    open_: OpenJournal, clock: Clock
) -> None:
    rng = random.Random(20260601)
    async with open_(None) as journal:
        written = {p: await _write_randomly(journal, p, rng) for p in PRINCIPALS}
        every_episode_id = [e.episode_id for w in written.values() for e in w.episodes]
        clock.advance(timedelta(days=30))
        for principal, own in written.items():
            mine = journal.with_principal(principal)
            by_time = sorted(own.episodes, key=lambda e: (e.at, e.episode_id))
            assert await mine.list_episodes() == by_time
            assert await mine.episodes(every_episode_id) == by_time
            assert {j.job_id for j in await mine.jobs()} == own.jobs
            assert await mine.candidates() == own.candidates
            newest = sorted(own.summaries, key=lambda s: s.ended, reverse=True)
            assert await mine.summaries(limit=100) == newest
            assert await mine.procedures(status=None) == own.procedures
            threads = {e.thread_id for e in own.episodes}
            assert set(await mine.idle_threads(clock.now)) <= threads
            # Claiming drains the principal's own jobs and nobody else's.
            claimed = set()
            while (job := await mine.claim()) is not None:
                assert (job.tenant_id, job.user_id) == (principal.tenant_id, principal.user_id)
                claimed.add(job.job_id)
            assert claimed == own.jobs
        # Nobody reaches another principal's records by id either.
        alice, bob = journal.with_principal(ALICE), journal.with_principal(BOB)
        with pytest.raises(CandidateNotFoundError):
            await bob.decide(written[ALICE].candidates[0].candidate_id, "confirmed")
        with pytest.raises(CandidateNotFoundError):
            await bob.retire_procedure(written[ALICE].procedures[0].procedure_id)
        with pytest.raises(JournalError, match="No extraction job"):
            await bob.complete(next(iter(written[ALICE].jobs)), {})
        assert (await alice.candidates())[0].status == "pending"


@pytest.fixture
def pg() -> Iterator[PgLedger]:
    with postgres_ledger() as ledger:
        yield ledger


async def test_row_security_separates_users_in_storage(pg: PgLedger) -> None:
    """On Postgres the database itself keeps users apart, whatever a query forgets."""
    async with open_journal(pg.app_url) as journal:
        await _write_randomly(journal, ALICE, random.Random(1))
        await _write_randomly(journal, BOB, random.Random(2))

    def count(conn: psycopg.Connection[Any], table: str, where: str = "") -> int:
        row = conn.execute(f"SELECT count(*) FROM analyst_facts.{table} {where}").fetchone()
        assert row is not None
        return int(row[0])

    alices = "WHERE tenant_id = 'acme' AND user_id = 'alice'"
    with psycopg.connect(pg.app_url) as conn:
        for table in TABLES:
            assert count(conn, table) == 0  # no principal set: nothing at all
            conn.rollback()
            _act_as(conn, ALICE)
            assert count(conn, table) == count(conn, table, alices) > 0
            conn.rollback()
            # Another user of the tenant, and the same user name in another tenant.
            for other in (BOB, GLOBEX_ALICE):
                _act_as(conn, other)
                assert count(conn, table, alices) == 0
                deleted = conn.execute(f"DELETE FROM analyst_facts.{table} {alices}")
                assert deleted.rowcount == 0
                conn.rollback()
        _act_as(conn, BOB)
        with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO analyst_facts.procedures (tenant_id, procedure_id, user_id, text,"
                " status, confirmed_at, review_at)"
                " VALUES ('acme', 'planted', 'alice', 'x', 'active', now(), now())"
            )
    with psycopg.connect(pg.admin_url) as admin:
        row = admin.execute(
            "SELECT count(*) FROM analyst_facts.episodes WHERE user_id = 'alice'"
        ).fetchone()
        assert row is not None and row[0] > 0


# -- opening ---------------------------------------------------------------------------------


async def test_opening_the_journal_first_creates_the_whole_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'ledger.sqlite'}"
    async with open_journal(url, ALICE) as journal:
        assert journal.applied_migrations == list(range(1, LATEST_VERSION + 1))  # type: ignore[attr-defined]
        await journal.add_episodes([episode(1)])
    async with open_fact_store(url, ALICE) as facts:
        assert facts.applied_migrations == []  # type: ignore[attr-defined]
        assert await facts.current("user:alice", "horizon") is None
    async with open_journal(url, ALICE) as journal:
        assert [e.episode_id for e in await journal.list_episodes()] == ["ep-alice-1"]


async def test_an_unusable_sqlite_file_is_reported_with_the_fix(tmp_path: Path) -> None:
    folder = tmp_path / "folder.sqlite"
    folder.mkdir()
    with pytest.raises(JournalUnavailableError, match=r"folder\.sqlite.*ANALYST_FACTS"):
        async with open_journal(f"sqlite:///{folder}", ALICE):
            pass
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(JournalUnavailableError, match=r"junk\.sqlite.*ANALYST_DATA_DIR"):
        async with open_journal(f"sqlite:///{junk}", ALICE):
            pass


async def test_postgres_without_the_journal_migration_asks_for_setup() -> None:
    with postgres_ledger(migrate=False) as ledger:
        await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role], target=4)
        with pytest.raises(FactLedgerSchemaError, match=r"version 4.*analyst facts setup"):
            async with open_journal(ledger.app_url, ALICE):
                pass
        applied = await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
        assert applied == list(range(5, LATEST_VERSION + 1))
        async with open_journal(ledger.app_url, ALICE) as journal:
            assert await journal.list_episodes() == []
        # A role that was never granted the journal's tables is told so.
        with psycopg.connect(ledger.owner_url, autocommit=True) as owner:
            owner.execute(f'REVOKE UPDATE ON analyst_facts.procedures FROM "{ledger.app_role}"')
        with pytest.raises(
            FactLedgerSchemaError, match=r"lacks UPDATE on analyst_facts\.procedures"
        ):
            async with open_journal(ledger.app_url, ALICE):
                pass
