"""Concurrent writers on one key, on both backends: one open fact, no overlap, nothing lost.

Writers run as coroutines over several stores (separate SQLite connections; separate Postgres
pools) and as separate ``analyst facts record`` processes, which also race to create and
migrate a fresh ledger file. The CLI round trip at the end checks what those processes print.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agent.errors import FactConflictError, FactNotFoundError, FactWriteContentionError
from memory.facts import FactRecord, FactStore, MemoryDelta, open_fact_store
from memory.identity import Principal
from tests.support.waiting import until

pytestmark = pytest.mark.integration

PRINCIPAL = Principal("acme", "mira")
BASE = datetime(2026, 1, 1, tzinfo=UTC)
EXE = Path(sys.executable).with_name("analyst")


def assert_one_timeline(records: list[FactRecord]) -> list[FactRecord]:
    """Active records never overlap and at most one is open; returns them by start."""
    active = sorted((r for r in records if r.active), key=lambda r: r.valid_from)
    assert sum(r.is_open for r in active) <= 1, active
    for r in active:
        assert r.valid_to is None or r.valid_from < r.valid_to
    for a, b in pairwise(active):
        assert a.valid_to is not None and a.valid_to <= b.valid_from
    return active


async def _stores(stack: AsyncExitStack, url: str, count: int) -> list[FactStore]:
    return [
        await stack.enter_async_context(open_fact_store(url, PRINCIPAL, max_attempts=20))
        for _ in range(count)
    ]


def _delta(value: Any, start: datetime, subject: str = "user:mira") -> MemoryDelta:
    return MemoryDelta(
        subject=subject,
        attribute="horizon",
        value=value,
        valid_from=start,
        source_episode_id=f"e{value}",
    )


# -- coroutines over several connections -------------------------------------------------------


async def test_concurrent_writers_end_with_exactly_one_open_fact(ledger_url: str) -> None:
    writers = 40
    order = list(range(writers))
    random.Random(7).shuffle(order)  # arrival order unrelated to valid_from
    async with AsyncExitStack() as stack:
        stores = await _stores(stack, ledger_url, 4)
        results = await asyncio.gather(
            *(
                stores[n % len(stores)].record(_delta(i, BASE + timedelta(hours=i)))
                for n, i in enumerate(order)
            )
        )
        assert len({r.memory_id for r in results}) == writers
        history = await stores[0].history("user:mira", "horizon")

    active = assert_one_timeline(history)
    assert [r.value for r in active] == list(range(writers))
    assert [r.is_open for r in active] == [False] * (writers - 1) + [True]
    for a, b in pairwise(active):
        assert a.valid_to == b.valid_from  # no gaps: every write closed or bounded correctly


async def test_racing_writers_with_the_same_start_one_wins(ledger_url: str) -> None:
    start = BASE + timedelta(days=3)
    async with AsyncExitStack() as stack:
        stores = await _stores(stack, ledger_url, 4)
        await stores[0].record(_delta("before", BASE))
        outcomes = await asyncio.gather(
            *(stores[i % 4].record(_delta(f"v{i}", start)) for i in range(16)),
            return_exceptions=True,
        )
        history = await stores[0].history("user:mira", "horizon")

    won = [o for o in outcomes if isinstance(o, FactRecord)]
    lost = [o for o in outcomes if isinstance(o, FactConflictError)]
    assert len(won) == 1 and len(lost) == 15, outcomes
    active = assert_one_timeline(history)
    assert [r.value for r in active] == ["before", won[0].value]
    assert active[-1].is_open and active[-1].supersedes_memory_id == active[0].memory_id


async def test_mixed_records_and_retractions_keep_one_timeline(ledger_url: str) -> None:
    rng = random.Random(11)
    async with AsyncExitStack() as stack:
        stores = await _stores(stack, ledger_url, 4)
        await stores[0].record(_delta("seed", BASE))

        async def one(n: int) -> None:
            store = stores[n % len(stores)]
            when = BASE + timedelta(hours=rng.randrange(1, 200))
            try:
                if n % 3 == 2:
                    await store.retract("user:mira", "horizon", at=when)
                else:
                    await store.record(_delta(f"v{n}", when))
            except (FactConflictError, FactNotFoundError):
                pass

        await asyncio.gather(*(one(n) for n in range(60)))
        history = await stores[0].history("user:mira", "horizon")
        for hour in range(0, 201, 5):
            when = BASE + timedelta(hours=hour)
            holding = [r for r in history if r.holds_at(when)]
            found = await stores[1].as_of("user:mira", "horizon", when)
            assert [r.memory_id for r in holding] == ([] if found is None else [found.memory_id])
    assert_one_timeline(history)


# -- separate processes through the CLI --------------------------------------------------------


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "facts", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def cli_env(ledger_url: str, isolated_env: Path) -> dict[str, str]:
    assert EXE.is_file(), f"the analyst console script is not installed next to {sys.executable}"
    return {
        **os.environ,
        "ANALYST_FACTS": ledger_url,
        "ANALYST_TENANT": "acme",
        "ANALYST_USER": "mira",
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }


@pytest.mark.slow
def test_processes_recording_at_once_leave_one_open_fact(cli_env: dict[str, str]) -> None:
    starts = [f"2026-06-{day:02d}T09:00:00Z" for day in range(1, 9)]
    with ThreadPoolExecutor(max_workers=len(starts)) as pool:
        runs = list(
            pool.map(
                lambda s: _cli(
                    cli_env, "record", "me", "horizon", s[:10], "--valid-from", s, "--json"
                ),
                reversed(starts),
            )
        )
    for run in runs:
        assert run.returncode == 0, run.stderr
    history = json.loads(_cli(cli_env, "history", "me", "horizon", "--json").stdout)
    active = [r for r in history if r["status"] != "withdrawn"]
    assert [r["value"] for r in active] == [s[:10] for s in starts]
    assert [r["status"] for r in active] == ["superseded"] * 7 + ["open"]
    assert [r["valid_to"] for r in active[:-1]] == [r["valid_from"] for r in active[1:]]


def _start_together(procs: list[subprocess.Popen[str]]) -> None:
    """Wait until every writer process has opened its store ("ready"), let them all write at
    once ("go"), and wait for each to finish cleanly."""
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err


@pytest.mark.slow
def test_cli_round_trip_of_the_passport_trace(cli_env: dict[str, str]) -> None:
    def ok(*args: str) -> Any:
        run = _cli(cli_env, *args, "--json")
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    ok(
        "record",
        "me",
        "passport_deadline",
        "2026-07-15",
        "--valid-from",
        "2026-06-01T09:00Z",
        "--source-episode",
        "e1",
    )
    ok(
        "record",
        "me",
        "passport_deadline",
        "2026-06-30",
        "--valid-from",
        "2026-06-03T10:00Z",
        "--source-episode",
        "e2",
    )
    ok(
        "record",
        "me",
        "passport_deadline",
        "2026-08-01",
        "--valid-from",
        "2026-05-30T08:00Z",
        "--source-episode",
        "e0",
    )

    current = ok("current", "user:mira", "passport_deadline")
    assert (current["value"], current["source_episode_id"], current["status"]) == (
        "2026-06-30",
        "e2",
        "open",
    )
    june_2 = ok("as-of", "me", "passport_deadline", "2026-06-02")
    assert (june_2["value"], june_2["source_episode_id"]) == ("2026-07-15", "e1")
    assert ok("as-of", "me", "passport_deadline", "2026-05-01") is None
    history = ok("history", "me", "passport_deadline")
    assert [r["source_episode_id"] for r in history] == ["e0", "e1", "e2"]
    assert history[2]["supersedes_memory_id"] == history[1]["memory_id"]
    assert ok("record", "me", "risk", "3", "--type", "profile")["value"] == 3
    assert ok("record", "me", "note", "3", "--text")["value"] == "3"
    profile = ok("profile", "me")
    assert {name: r["value"] for name, r in profile.items()} == {
        "passport_deadline": "2026-06-30",
        "risk": 3,
        "note": "3",
    }
    assert (
        ok("profile", "me", "--as-of", "2026-06-02")["passport_deadline"]["value"] == "2026-07-15"
    )

    # Human output names the value, its interval and its provenance.
    shown = _cli(cli_env, "history", "me", "passport_deadline")
    assert shown.returncode == 0 and "episode e2" in shown.stdout and "replaces" in shown.stdout

    # Errors: one line on stderr, the error's exit code, nothing on stdout.
    conflict = _cli(
        cli_env, "record", "me", "passport_deadline", "x", "--valid-from", "2026-06-03T10:00Z"
    )
    assert conflict.returncode == 3 and conflict.stdout == ""
    assert conflict.stderr.startswith("error:") and "conflict" in conflict.stderr
    assert "Traceback" not in conflict.stderr
    bad_time = _cli(cli_env, "as-of", "me", "passport_deadline", "yesterday-ish")
    assert bad_time.returncode == 2 and "ISO-8601" in bad_time.stderr
    bad_source = _cli(cli_env, "record", "me", "x", "1", "--source", "rumour")
    assert bad_source.returncode == 2 and "source" in bad_source.stderr
    nothing = _cli(cli_env, "retract", "me", "never_set")
    assert nothing.returncode == 3 and "nothing to retract" in nothing.stderr

    closed = ok("retract", "me", "passport_deadline", "--source-episode", "e9")
    assert (closed["status"], closed["retraction_episode_id"]) == ("retracted", "e9")
    assert ok("current", "me", "passport_deadline") is None
    # Another tenant sees none of it.
    assert (
        _cli(
            cli_env, "current", "user:mira", "passport_deadline", "--tenant", "globex", "--json"
        ).stdout.strip()
        == "null"
    )


async def test_a_writer_blocked_by_a_stuck_transaction_gives_up_clearly(
    ledger_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction that never ends must not hang writers forever; they fail and say why."""
    sqlite = ledger_url.startswith("sqlite:///")
    if sqlite:
        import memory.facts.sqlite as sqlite_backend

        monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT", 0.05)
    else:
        import memory.facts.postgres as postgres_backend

        monkeypatch.setattr(postgres_backend, "LOCK_TIMEOUT", "50ms")

    async with open_fact_store(ledger_url, PRINCIPAL, max_attempts=3) as facts:
        await facts.record(_delta("seed", BASE))
        if sqlite:  # SQLite has one writer at a time: the whole file is locked
            blocker: Any = sqlite3.connect(ledger_url[len("sqlite:///") :], isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")
        else:  # Postgres serialises writers per key: only this key is locked
            blocker = psycopg.connect(ledger_url)
            blocker.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                ("\x1f".join(("acme", "user:mira", "horizon")),),
            )
        try:
            with pytest.raises(FactWriteContentionError, match="collided with concurrent writers"):
                await facts.record(_delta("late", BASE + timedelta(days=1)))
            if not sqlite:
                other_user = facts.with_principal(Principal("acme", "other"))
                other = await other_user.record(_delta("free", BASE, subject="user:other"))
                assert other.is_open
        finally:
            blocker.close()
        late = await facts.record(_delta("late", BASE + timedelta(days=1)))
        assert late.supersedes_memory_id is not None
        current = await facts.as_of("user:mira", "horizon", BASE + timedelta(days=2))
        assert current is not None and current.value == "late"


# -- separate writer processes taking turns (SQLite) -------------------------------------------

_WRITER = """
import asyncio, sys
from datetime import datetime, timedelta
from memory.facts import MemoryDelta, open_fact_store
from memory.identity import Principal

async def main(url, n, hours):
    async with open_fact_store(url, Principal("acme", "mira")) as facts:
        print("ready", flush=True)
        sys.stdin.readline()
        base = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
        for h in hours:
            when = base + timedelta(hours=h)
            await facts.record(MemoryDelta(subject="user:mira", attribute="horizon", value=h,
                                           valid_from=when, source_episode_id=f"e{h}"))
            await facts.record(MemoryDelta(subject="user:mira", attribute=f"own{n}", value=h,
                                           valid_from=when, source_episode_id=f"e{h}"))

url, n, hours = sys.argv[1], int(sys.argv[2]), [int(h) for h in sys.argv[3].split(",")]
asyncio.run(main(url, n, hours))
"""


@pytest.mark.slow
async def test_writer_processes_taking_turns_lose_nothing(tmp_path: Path) -> None:
    """8 processes write one key (and one each of their own) at once, one fact per commit:
    every write lands, the shared key keeps one gapless timeline, each own key its order."""
    url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
    async with open_fact_store(url, PRINCIPAL) as facts:
        await facts.record(_delta("seed", BASE - timedelta(days=1)))
    hours = list(range(48))
    random.Random(5).shuffle(hours)
    parts = [hours[n::8] for n in range(8)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, str(n), ",".join(map(str, part))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        for n, part in enumerate(parts)
    ]
    _start_together(procs)

    async with open_fact_store(url, PRINCIPAL) as facts:
        active = assert_one_timeline(await facts.history("user:mira", "horizon"))
        assert [r.value for r in active] == ["seed", *range(48)]
        for a, b in pairwise(active):
            assert a.valid_to == b.valid_from  # no gaps, whatever the arrival order
        for n, part in enumerate(parts):
            own = assert_one_timeline(await facts.history("user:mira", f"own{n}"))
            assert [r.value for r in own] == sorted(part)


def _hold_turn(ledger: Path) -> int:
    """Take the writers' turn of ``ledger`` as another process would (its own ``flock``)."""
    import fcntl

    fd = os.open(f"{ledger}-writers", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _queued_behind(ledger: Path) -> bool:
    """Whether a ``flock`` waits on the writers' turn of ``ledger`` (the kernel's lock table
    lists a blocked waiter with ``->``, by device and inode)."""
    inode = f":{os.stat(f'{ledger}-writers').st_ino}"
    with open("/proc/locks") as locks:
        return any("->" in line and any(f.endswith(inode) for f in line.split()) for line in locks)


async def test_a_writer_waits_for_its_turn_then_writes(tmp_path: Path) -> None:
    """While another process holds the writers' turn nothing is written; on its release the
    waiting write goes through (woken, not failed)."""
    path = tmp_path / "facts.sqlite"
    async with open_fact_store(f"sqlite:///{path}", PRINCIPAL) as facts:
        await facts.record(_delta("seed", BASE))
        fd = _hold_turn(path)
        try:
            waiting = asyncio.create_task(facts.record(_delta("next", BASE + timedelta(days=1))))
            # the write reaches the turn and queues behind it
            await until(lambda: _queued_behind(path), "the write queueing for its turn")
            assert not waiting.done()
            rows = sqlite3.connect(path).execute("SELECT count(*) FROM facts").fetchone()
            assert rows == (1,)
        finally:
            os.close(fd)  # releases the turn
        record = await asyncio.wait_for(waiting, timeout=60)
        assert record.value == "next" and record.supersedes_memory_id is not None


async def test_a_turn_held_too_long_fails_clearly_then_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process keeping the writers' turn past the busy timeout makes writes fail with the
    contention error; once it lets go, writes work again (the abandoned wait gave it back)."""
    import memory.facts.sqlite as sqlite_backend

    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT", 0.05)
    path = tmp_path / "facts.sqlite"
    async with open_fact_store(f"sqlite:///{path}", PRINCIPAL, max_attempts=2) as facts:
        await facts.record(_delta("seed", BASE))
        fd = _hold_turn(path)
        try:
            with pytest.raises(FactWriteContentionError, match="writers' turn"):
                await facts.record(_delta("late", BASE + timedelta(days=1)))
        finally:
            os.close(fd)
        late = await facts.record(_delta("late", BASE + timedelta(days=1)))
        again = await facts.record(_delta("later", BASE + timedelta(days=2)))
        assert again.supersedes_memory_id == late.memory_id


# -- where a SQLite write runs -------------------------------------------------------------------


def _note_thread(threads: set[int]) -> None:
    threads.add(threading.get_ident())


async def test_a_free_write_runs_on_the_loop_and_a_servers_on_the_writer_thread(
    tmp_path: Path,
) -> None:
    """Outside a server, a write nobody else holds the file for is made on the event loop
    itself (no thread hand-over); a server's store always writes on its writer thread."""
    path = tmp_path / "facts.sqlite"
    for server in (False, True):
        async with open_fact_store(f"sqlite:///{path}", PRINCIPAL, server=server) as facts:
            shared = facts._connection  # type: ignore[attr-defined]
            threads: set[int] = set()
            shared.writer.create_function("writer_thread", 0, partial(_note_thread, threads))
            shared.writer.execute(
                "CREATE TEMP TRIGGER seen AFTER INSERT ON facts BEGIN SELECT writer_thread(); END"
            )
            await facts.record(_delta(f"server={server}", BASE + timedelta(days=int(server))))
            loop_thread = threading.get_ident()
            assert threads and (loop_thread in threads) is not server, (server, threads)


async def test_a_write_on_the_loop_never_waits_in_sqlite_one_on_the_thread_does(
    tmp_path: Path,
) -> None:
    """The writer's SQLite busy wait is off while a write runs on the event loop (meeting
    another writer there must fail at once, not block the loop) and on again for the writer
    thread, which waits for the file; it is switched only when the way of writing changes."""
    import memory.facts.sqlite as sqlite_backend

    path = tmp_path / "facts.sqlite"
    async with open_fact_store(f"sqlite:///{path}", PRINCIPAL) as facts:
        writer = facts._connection.writer  # type: ignore[attr-defined]

        def busy_ms() -> int:
            return int(writer.execute("PRAGMA busy_timeout").fetchone()[0])

        await facts.record(_delta("on the loop", BASE))
        assert busy_ms() == 0
        too_many = sqlite_backend.INLINE_GROUP + 1  # a group this large goes to the thread
        await facts.record_many(
            [_delta(f"v{i}", BASE + timedelta(days=i + 1)) for i in range(too_many)]
        )
        assert busy_ms() == int(sqlite_backend.BUSY_TIMEOUT * 1000)
        await facts.record(_delta("on the loop again", BASE + timedelta(days=too_many + 1)))
        assert busy_ms() == 0
        history = await facts.history("user:mira", "horizon")
        assert len(assert_one_timeline(history)) == too_many + 2


async def test_a_write_waiting_for_another_writer_leaves_the_loop_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that meets another writer's transaction on the file (one outside the turns)
    waits on the writer thread, never on the loop: the other transaction is ended from the
    loop while the write waits (a write blocking the loop would hold it for the whole busy
    timeout, here 10 minutes), and the write then lands."""
    import memory.facts.sqlite as sqlite_backend

    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT", 600.0)
    path = tmp_path / "facts.sqlite"
    async with open_fact_store(f"sqlite:///{path}", PRINCIPAL) as facts:
        await facts.record(_delta("seed", BASE))
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            waiting = asyncio.create_task(facts.record(_delta("next", BASE + timedelta(days=1))))
            for _ in range(100):  # the write starts and meets the other transaction
                await asyncio.sleep(0)
            assert not waiting.done()
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        record = await asyncio.wait_for(waiting, timeout=60)
        assert record.value == "next" and record.supersedes_memory_id is not None


# -- separate processes writing groups (both backends) ------------------------------------------

_GROUP_WRITER = """
import asyncio, sys
from datetime import datetime, timedelta
from memory.facts import MemoryDelta, open_fact_store
from memory.identity import Principal

async def main(url, hours):
    async with open_fact_store(url, Principal("acme", "mira"), max_attempts=50) as facts:
        print("ready", flush=True)
        sys.stdin.readline()
        base = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
        for i in range(0, len(hours), 8):
            await facts.record_many([
                MemoryDelta(subject="user:mira", attribute=f"k{h // 8 % 6}", value=h,
                            valid_from=base + timedelta(hours=h), source_episode_id=f"e{h}")
                for h in hours[i : i + 8]
            ])

asyncio.run(main(sys.argv[1], [int(h) for h in sys.argv[2].split(",")]))
"""


def _whole_table(url: str) -> list[tuple[str, int, datetime, datetime | None]]:
    """Every active row of the ledger, read straight from its table: (attribute, value,
    start, end)."""
    sql = (
        "SELECT attribute, value, valid_from, valid_to FROM {facts}"
        " WHERE withdrawn_at IS NULL ORDER BY attribute, valid_from"
    )
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as file:
            rows = file.execute(sql.format(facts="facts")).fetchall()
        file.close()
        return [
            (a, json.loads(v), datetime.fromisoformat(f), t and datetime.fromisoformat(t))
            for a, v, f, t in rows
        ]
    with psycopg.connect(url, autocommit=True) as conn:  # the app role: row security on
        conn.execute("SELECT set_config('app.tenant_id', 'acme', false)")
        conn.execute("SELECT set_config('app.user_id', 'mira', false)")
        return [tuple(r) for r in conn.execute(sql.format(facts="analyst_facts.facts"))]


@pytest.mark.slow
async def test_writer_processes_writing_groups_lose_nothing_and_keep_one_open_fact(
    ledger_url: str,
) -> None:
    """8 processes write groups of 8 facts on 6 shared keys at once (each process's starts
    rising on every key, the processes' interleaved: some groups land after everything on
    their keys, some inside a timeline another process moved on). Read whole afterwards, the
    table holds every fact once, active, on one gapless timeline per key, one open fact each."""
    async with open_fact_store(ledger_url, PRINCIPAL):
        pass  # created and migrated before the race
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _GROUP_WRITER, ledger_url, ",".join(map(str, hours))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        for hours in ([h for h in range(384) if h % 8 == n] for n in range(8))
    ]
    _start_together(procs)

    rows = _whole_table(ledger_url)
    assert len(rows) == 384
    for k in range(6):
        timeline = [r for r in rows if r[0] == f"k{k}"]
        assert [r[1] for r in timeline] == [h for h in range(384) if h // 8 % 6 == k]
        assert [r[3] is None for r in timeline] == [False] * (len(timeline) - 1) + [True]
        for a, b in pairwise(timeline):
            assert a[3] == b[2]  # each ends where the next starts: no gap, no overlap
