"""Account deletion, on the embedded defaults and
with the ledger and journal on Postgres (a fresh database used through its non-superuser
application role).

Real parts throughout: the compiled graph, SQLite checkpoints and thread index, the ledger and
journal (the SQLite file, or Postgres), Qdrant Edge with MiniLM and the embedding cache file. A canary
(the user's name, said in a chat; repeated in a rejection's feedback and in a remembered
preference) reaches every tier: an episode, a fact (``full_name``), a session summary's
source, an event, a store memory and its vectors, the embedding cache and the thread's
checkpoints. After ``forget_account(confirm=True)`` the raw bytes of every file in the data
folder (SQLite files with their WAL, the Qdrant Edge folder) and the text of every row of
every table of the ledger's Postgres schema (read by a superuser) hold the canary nowhere, no row,
vector, key or file of the user is left, another user with the same kind of data is untouched,
and the receipt lists the published research note as a kept business record.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agent.app import AnalystApp
from memory.embedding_cache import SqliteEmbeddingCache, embedding_cache_path
from memory.embeddings import text_hash
from memory.facts import MemoryDelta, subject_for
from memory.recall import alist_memories
from tests.support.raw_bytes import raw_hits, table_rows
from tests.support.servers import PgLedger, postgres_ledger
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

START = datetime(2026, 11, 2, 9, tzinfo=UTC)
CANARIES = {"mira": ("Zorvendix", "Qualtrobe"), "noor": ("Yblimora", "Kestraveld")}


def pg_rows(ledger: PgLedger | None) -> dict[str, list[str]]:
    """Every row of every table of the ledger's schema as text, by table (a superuser's read)."""
    return {} if ledger is None else table_rows(ledger.admin_url, "analyst_facts")


def session(user: str, *, day: int = 0) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(START + timedelta(days=day), user)


async def fill(user: str) -> None:
    """A conversation whose canary reaches every tier, and a published research note."""
    first, last = CANARIES[user]
    async with session(user) as app:
        noted = await app.start(
            f"My name is {first} {last}.", thread_id=f"{user}-1", keep_session=True
        )
        assert [f["attribute"] for f in noted.learned] == ["full_name"]
        draft = await app.start("Analyze NVDA", thread_id=f"{user}-1", keep_session=True)
        feedback = f"Too little on valuation; {first} wants peers compared."
        payload = {"approver": user, "draft_hash": draft.draft_hash, "action": "reject"}
        await app.decide(f"{user}-1", {**payload, "feedback": feedback}, keep_session=True)
        await app.memory.end_session(f"{user}-1")
        await app.memory.remember(f"I prefer companies {first} can explain.", as_="preference")
        published = await app.start("Analyze MSFT", thread_id=f"{user}-2", keep_session=True)
        approve = {"approver": user, "draft_hash": published.draft_hash, "action": "approve"}
        assert (await app.decide(f"{user}-2", approve)).status == "published"
        await app.memory.end_session(f"{user}-2")
        # Every tier holds the canary (or, for the cache, the vectors of texts that hold it).
        learner = await app.memory.learner()
        assert any(first in e.text for e in await learner.journal.list_episodes())
        assert (await learner.facts.current(subject_for(app.principal), "full_name")) is not None
        assert await learner.journal.summaries()
        texts = [m.text for m in await alist_memories(await app.tiers.store(), app.principal)]
        assert any(first in t for t in texts) and len(texts) >= 2
        state = await app.view(f"{user}-1")
        assert state.thread_id == f"{user}-1"


def user_rows(data: Path, user: str, ledger: PgLedger | None) -> dict[str, int]:
    """Rows of ``user`` left in the SQLite files and the ledger, by table (audit excepted)."""
    left: dict[str, int] = {}
    if ledger is not None:
        with psycopg.connect(ledger.admin_url) as admin:
            tables = admin.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'analyst_facts' AND column_name = 'user_id'"
            ).fetchall()
            for (table,) in tables:
                if table != "memory_audit":
                    sql = f"SELECT count(*) FROM analyst_facts.{table} WHERE user_id = %s"
                    left[table] = admin.execute(sql, (user,)).fetchone()[0]  # type: ignore[index]
            sql = "SELECT count(*) FROM analyst_facts.facts WHERE subject = %s"
            left["facts"] = admin.execute(sql, (f"user:{user}",)).fetchone()[0]  # type: ignore[index]
    else:
        with sqlite3.connect(data / "facts.sqlite") as conn:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
                if "user_id" in columns and table != "memory_audit":
                    sql = f"SELECT count(*) FROM {table} WHERE user_id = ?"
                    left[table] = conn.execute(sql, (user,)).fetchone()[0]
            sql = "SELECT count(*) FROM facts WHERE subject = ?"
            left["facts"] = conn.execute(sql, (f"user:{user}",)).fetchone()[0]
    with sqlite3.connect(data / "threads.sqlite") as conn:
        sql = "SELECT count(*) FROM threads WHERE user_id = ?"
        left["threads"] = conn.execute(sql, (user,)).fetchone()[0]
    with sqlite3.connect(data / "checkpoints.sqlite") as conn:
        for table in ("checkpoints", "writes"):
            sql = f"SELECT count(*) FROM {table} WHERE thread_id LIKE ?"
            left[f"checkpoints.{table}"] = conn.execute(sql, (f"{user}-%",)).fetchone()[0]
    return left


async def test_account_deletion_erases_every_tier_and_keeps_other_users(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    data = isolated_env / "data"
    await fill("mira")
    await fill("noor")
    mira, noor = CANARIES["mira"][0], CANARIES["noor"][0]
    assert raw_hits(data, mira) and raw_hits(data, noor)
    if backend is not None:
        assert mira in repr(pg_rows(backend)) and noor in repr(pg_rows(backend))

    async with session("mira", day=1) as app:
        plan = await app.memory.forget_account(confirm=False)
        assert plan["confirmed"] is False
        assert plan["deleted"]["threads"]["ids"] == ["mira-1", "mira-2"]
        assert raw_hits(data, mira), "an unconfirmed forget deletes nothing"
        receipt = await app.memory.forget_account(confirm=True)
        entries = await app.memory.audit()

    deleted = receipt["deleted"]
    assert receipt["confirmed"] is True
    for tier in ("threads", "episodes", "extraction_jobs", "summaries", "facts", "store"):
        assert deleted[tier]["count"] == len(deleted[tier]["ids"]) > 0, tier
    assert deleted["embedding_cache"]["count"] > 0
    (notes,) = [k for k in receipt["kept"] if k["tier"] == "documents"]
    assert len(notes["paths"]) == 1 and notes["paths"][0].startswith("research/MSFT-")
    assert "business records" in notes["why"]
    assert any(k["tier"] == "audit" for k in receipt["kept"])
    assert any(k["tier"] == "tombstones" for k in receipt["kept"])
    assert "backup" in receipt["backups"] and str(data / "backups") in receipt["backups"]
    # The deletion is audited by ids only.
    erased = {e["tier"] for e in entries if e["action"] == "delete"}
    assert {"threads", "episodes", "facts", "store", "embedding_cache"} <= erased
    assert mira.lower() not in repr(entries).lower()

    # The canary is in no byte of any database file, WAL or Qdrant Edge segment.
    assert raw_hits(data, mira) == []
    assert raw_hits(data, CANARIES["mira"][1]) == []
    # ... nor in any row of any table of the Postgres ledger.
    rows = repr(pg_rows(backend)).lower()
    assert mira.lower() not in rows and CANARIES["mira"][1].lower() not in rows
    # No row, vector, key or file of the user is left.
    left = user_rows(data, "mira", backend)
    assert all(count == 0 for count in left.values()), left
    with sqlite3.connect(data / "embeddings.sqlite") as conn:
        hashes = deleted["embedding_cache"]["ids"]
        marks = ",".join("?" * len(hashes))
        sql = f"SELECT count(*) FROM embeddings WHERE hash IN ({marks})"
        assert conn.execute(sql, hashes).fetchone()[0] == 0
    assert not list((data / "artifacts").glob("mira-*")) if (data / "artifacts").exists() else True
    async with session("mira", day=2) as app:
        assert await app.threads() == []
        assert await app.memory.memories() == []
        assert await app.memory.episodes() == []
        again = await app.memory.forget_account(confirm=False)
        assert all(t["count"] == 0 for t in again["deleted"].values()), again["deleted"]

    # The other user is untouched and still readable.
    assert raw_hits(data, noor)
    if backend is not None:
        assert noor in repr(pg_rows(backend))
    async with session("noor", day=2) as app:
        learner = await app.memory.learner()
        name = await learner.facts.current(subject_for(app.principal), "full_name")
        assert name is not None and noor in str(name.value)
        assert any(noor in e.text for e in await learner.journal.list_episodes())
        assert [t.thread_id for t in await app.threads()] == ["noor-2", "noor-1"] or sorted(
            t.thread_id for t in await app.threads()
        ) == ["noor-1", "noor-2"]
        assert any(noor in m.text for m in await app.memory.memories())
        assert (await app.view("noor-1")).thread_id == "noor-1"
        hits = await app.memory.recall(f"companies {noor} can explain")
        assert hits and noor in hits[0].text


async def test_account_deletion_takes_the_cache_rows_of_facts_no_longer_current(
    isolated_env: Path,
) -> None:
    """An attribute whose fact was retracted has no current fact, so the plan's read of the
    current facts' histories does not see it; its rows are deleted all the same, and so must
    be the cache rows of their values (the cache is keyed by text: the value's vector is
    there if the text was ever embedded)."""
    retracted, kept = "Vexmoor Capital", "Orbelline Partners"
    async with session("mira") as app:
        learner = await app.memory.learner()
        subject = subject_for(app.principal)
        for attribute, value in (("employer", retracted), ("team", kept)):
            await learner.facts.record(
                MemoryDelta(subject=subject, attribute=attribute, value=value, valid_from=START)
            )
        await learner.facts.retract(subject, "employer", at=START + timedelta(hours=1))
        assert await learner.facts.current(subject, "employer") is None
        cache = SqliteEmbeddingCache(embedding_cache_path(app.tiers.settings))
        cache.setup()
        hashes = {text_hash(retracted), text_hash(kept)}
        cache.put_many("test-model", {h: [0.5, 0.25] for h in hashes})  # embedded once
    async with session("mira", day=1) as app:
        receipt = await app.memory.forget_account(confirm=True)
    assert receipt["deleted"]["facts"]["count"] == 2  # the retracted fact's row too
    assert hashes <= set(receipt["deleted"]["embedding_cache"]["ids"])
    assert SqliteEmbeddingCache(embedding_cache_path(app.tiers.settings)).count("test-model") == 0


def test_cli_forget_everything_asks_for_yes_then_deletes(isolated_env: Path, analyst: Any) -> None:
    first, last = CANARIES["mira"]
    said = analyst("run", f"My name is {first} {last}.", "--user", "mira", "--json")
    assert said.code == 0, str(said)
    asked = analyst("memory", "forget", "--everything", "--user", "mira", "--json")
    assert asked.code == 2, str(asked)
    assert '"confirmed": false' in asked.out
    done = analyst("memory", "forget", "--everything", "--yes", "--user", "mira", "--json")
    receipt = done.json()
    assert receipt["confirmed"] is True and receipt["deleted"]["facts"]["count"] == 1
    assert raw_hits(isolated_env / "data", first) == []


@pytest.fixture
def pg_ledger(monkeypatch: pytest.MonkeyPatch, isolated_env: Path) -> Iterator[PgLedger]:
    with postgres_ledger() as ledger:
        monkeypatch.setenv("ANALYST_FACTS", ledger.app_url)
        yield ledger


async def test_postgres_lets_a_user_delete_only_its_own_facts_and_grants(
    pg_ledger: PgLedger,
) -> None:
    """Migration 7's row security: the app role deletes the facts about its own user and the
    grants that user holds, never another user's facts."""
    ledger = pg_ledger
    for user, (first, last) in CANARIES.items():
        async with session(user) as app:
            said = await app.start(
                f"My name is {first} {last}.", thread_id=f"{user}-1", keep_session=True
            )
            assert said.status == "noted"
    with psycopg.connect(ledger.admin_url) as admin:  # the owner bootstraps a grant
        admin.execute(
            "INSERT INTO analyst_facts.grants (tenant_id, user_id, role, subject)"
            " VALUES ('default', 'mira', 'writer', 'team:research')"
        )
    with psycopg.connect(ledger.app_url) as conn:
        conn.execute(
            "SELECT set_config('app.tenant_id', 'default', true),"
            " set_config('app.user_id', 'mira', true)"
        )
        theirs = conn.execute(
            "DELETE FROM analyst_facts.facts WHERE subject = 'user:noor'"
        ).rowcount
        conn.rollback()
    assert theirs == 0
    async with session("mira", day=1) as app:
        receipt = await app.memory.forget_account(confirm=True)
    assert receipt["deleted"]["grants"]["ids"] == ["writer:team:research"]
    assert receipt["deleted"]["facts"]["count"] == 1
    assert any("dead tuples" in note for note in receipt["notes"])
    async with session("noor", day=1) as app:
        learner = await app.memory.learner()
        name = await learner.facts.current(subject_for(app.principal), "full_name")
        assert name is not None and CANARIES["noor"][0] in str(name.value)
