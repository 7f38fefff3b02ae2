"""The canary: a unique string said in a conversation flows into every
tier -- episode, fact, event memory, session summary, vector, embedding cache, checkpoint,
profile document -- and after it is forgotten no byte of any database file, Qdrant folder,
Postgres table or Redis key holds it; extraction over the remaining history does not bring it
back; backup -> forget -> restore leaves it gone; the audit shows every step and holds no
canary. On the embedded defaults, and on Postgres (ledger and journal, through the app role)
with Redis Stack checkpoints, and with the long-term store in Postgres with pgvector.

A second test restores a backup into empty storage (disaster recovery): everything comes
back, and the thread waiting for approval still resumes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent.app import AnalystApp
from memory.embeddings import text_hash
from memory.facts import subject_for
from tests.support.pgvector_server import fresh_database, pgvector_server
from tests.support.raw_bytes import raw_hits, table_rows
from tests.support.servers import (
    PgLedger,
    fresh_redis_prefix,
    postgres_ledger,
    redis_checkpointer_url,
    redis_client,
)
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

START = datetime(2026, 11, 2, 9, tzinfo=UTC)
CANARY = ("Zorvendix", "Qualtrobe")
OTHER = ("Yblimora", "Kestraveld")
NEIGHBOUR = "I prefer companies with low debt and steady cash flow."


@dataclass
class Stack:
    """Where memory lives for the test, and how to read every raw byte of it."""

    root: Path
    ledger: PgLedger | None = None
    redis_token: str | None = None
    store_url: str | None = None  # a pgvector store's database

    def hits(self, needle: str) -> list[str]:
        found = [f"file {p}" for p in raw_hits(self.root / "data", needle)]
        found += [f"document {p}" for p in raw_hits(self.root / "memory", needle)]
        low = needle.lower()
        databases = [(self.ledger.admin_url, "analyst_facts")] if self.ledger else []
        databases += [(self.store_url, "public")] if self.store_url else []
        for url, schema in databases:
            for table, rows in table_rows(url, schema).items():
                if any(low in row.lower() for row in rows):
                    found.append(f"postgres {schema}.{table}")
        if self.redis_token is not None:
            client = redis_client()
            for key in client.scan_iter(match=f"*{self.redis_token}*", count=1000):  # type: ignore[attr-defined]
                dumped = client.dump(key) or b""  # type: ignore[attr-defined]
                if needle.encode() in dumped or low.encode() in dumped.lower():
                    found.append(f"redis {key!r}")
        return found


@pytest.fixture(params=["embedded", "postgres+redis", "pgvector"])
def stack(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> Iterator[Stack]:
    if request.param == "embedded":
        yield Stack(isolated_env)
        return
    if request.param == "pgvector":  # the long-term store in Postgres 18 with pgvector
        with pgvector_server() as admin, fresh_database(admin) as url:
            monkeypatch.setenv("ANALYST_STORE", url)
            yield Stack(isolated_env, store_url=url)
        return
    with ExitStack() as stack:
        ledger = stack.enter_context(postgres_ledger())
        token = stack.enter_context(fresh_redis_prefix())
        monkeypatch.setenv("ANALYST_FACTS", ledger.app_url)
        monkeypatch.setenv("ANALYST_CHECKPOINTER", redis_checkpointer_url(token))
        yield Stack(isolated_env, ledger, token)


def session(user: str, *, day: int = 0) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(START + timedelta(days=day), user)


async def fill(user: str, first: str, last: str) -> None:
    """The canary said in a conversation; it reaches every tier."""
    async with session(user) as app:
        said = await app.start(
            f"My name is {first} {last}.", thread_id=f"{user}-1", keep_session=True
        )
        assert [f["attribute"] for f in said.learned] == ["full_name"]
        draft = await app.start("Analyze NVDA", thread_id=f"{user}-1", keep_session=True)
        feedback = f"Too little on valuation; {first} wants peers compared."
        decision = {"approver": user, "draft_hash": draft.draft_hash, "action": "reject"}
        await app.decide(f"{user}-1", {**decision, "feedback": feedback}, keep_session=True)
        await app.memory.end_session(f"{user}-1")
        await app.memory.remember(f"I prefer companies {first} can explain.", as_="preference")
        await app.memory.remember(NEIGHBOUR, as_="preference")
        app.tiers.documents.write(
            f"user-profiles/{user}.md",
            f"# {user}\n\nCall me {first}.\nI like long reports with charts.\n",
        )
        # Every tier holds the canary.
        learner = await app.memory.learner()
        assert any(first in e.text for e in await learner.journal.list_episodes())
        assert await learner.facts.current(subject_for(app.principal), "full_name") is not None
        assert any(first in s.summary for s in await learner.journal.summaries())
        memories = [m.text for m in await app.memory.memories()]
        assert any(first in t for t in memories) and NEIGHBOUR in memories


def cached(root: Path, text: str) -> bool:
    with sqlite3.connect(root / "data" / "embeddings.sqlite") as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
            for column in columns:
                sql = f"SELECT 1 FROM {table} WHERE {column} = ?"
                if conn.execute(sql, (text_hash(text),)).fetchone():
                    return True
    return False


async def test_a_forgotten_canary_is_in_no_byte_and_a_restore_does_not_bring_it_back(
    stack: Stack, tmp_path: Path
) -> None:
    first, last = CANARY
    await fill("mira", first, last)
    await fill("noor", *OTHER)
    preference = f"I prefer companies {first} can explain."
    assert cached(stack.root, preference)  # the vector of a text holding it is cached
    where = stack.hits(first)
    assert any("checkpoint" in place for place in where), where  # the thread's checkpoints
    assert any("user-profiles" in place for place in where), where
    if stack.store_url is not None:  # the memory's value, in the pgvector store's table
        assert any(place.startswith("postgres public.") for place in where), where
    backup = tmp_path / "backups" / "mira.json"

    async with session("mira", day=1) as app:
        made = await app.memory.backup(backup)
        assert made["counts"]["threads"] == 1 and made["counts"]["documents"] == 1
        plan = await app.memory.forget(topic=first)
        assert plan["confirmed"] is False and stack.hits(first)
        tiers = {row["tier"] for row in plan["found"]}
        assert {"episodes", "facts", "summaries", "store", "documents"} <= tiers
        # The thread's revised draft awaits a decision: it goes only when asked to.
        assert [d["thread_id"] for d in plan["drafts"]] == ["mira-1"]
        receipt = await app.memory.forget(topic=first, confirm=True, drafts=True)
        assert receipt["deleted"]["threads"]["ids"] == ["mira-1"]
        assert receipt["deleted"]["documents"]["count"] == 1

    assert stack.hits(first) == [] and stack.hits(last) == []
    assert not cached(stack.root, preference)
    profile = (stack.root / "memory" / "user-profiles" / "mira.md").read_text()
    assert "long reports" in profile  # the neighbouring line stays

    async with session("mira", day=2) as app:
        learner = await app.memory.learner()
        # Extraction over the remaining history does not bring it back.
        for thread in {e.thread_id for e in await learner.journal.list_episodes()}:
            episodes = await learner.journal.list_episodes(thread_id=thread)
            await learner.journal.enqueue("session_end", thread, [e.episode_id for e in episodes])
        await learner.drain()
        assert await learner.facts.current(subject_for(app.principal), "full_name") is None
        # Backup -> forget -> restore: the forgotten stays forgotten, the rest is kept.
        restored = await app.memory.restore(backup)
        assert restored["skipped"]["threads"]["ids"] == ["mira-1"]
        assert restored["skipped"]["episodes"]["count"] >= 1
        assert restored["restored"]["documents"]["count"] == 0  # it exists: never overwritten
        assert await learner.facts.current(subject_for(app.principal), "full_name") is None
        assert NEIGHBOUR in [m.text for m in await app.memory.memories()]
        entries = await app.memory.audit()

    assert stack.hits(first) == [] and stack.hits(last) == []
    # The audit shows each step, and holds ids and hashes only.
    actions = {(e["action"], e["tier"]) for e in entries}
    assert {("delete", "episodes"), ("delete", "facts"), ("delete", "store")} <= actions
    assert ("write", "tombstones") in actions
    assert first.lower() not in repr(entries).lower()
    # The other user's same memories are untouched.
    assert stack.hits(OTHER[0])
    async with session("noor", day=2) as app:
        learner = await app.memory.learner()
        name = await learner.facts.current(subject_for(app.principal), "full_name")
        assert name is not None and OTHER[0] in str(name.value)


async def test_a_backup_restores_every_tier_into_empty_storage(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, last = CANARY
    await fill("mira", first, last)
    backup = tmp_path / "mira.json"
    async with session("mira") as app:
        await app.start("Analyze MSFT", thread_id="mira-2")  # waits for approval
        before = await app.memory.export()
        await app.memory.backup(backup)
        with pytest.raises(Exception, match="exists"):
            await app.memory.backup(backup)
    async with session("noor") as app:
        with pytest.raises(Exception, match="restore it as that user"):
            await app.memory.restore(backup)

    monkeypatch.setenv("ANALYST_DATA_DIR", str(tmp_path / "fresh-data"))
    monkeypatch.setenv("ANALYST_MEMORY_DIR", str(tmp_path / "fresh-memory"))
    async with session("mira", day=1) as app:
        receipt = await app.memory.restore(backup)
        assert receipt["restored"]["threads"]["ids"] == ["mira-1", "mira-2"]
        after = await app.memory.export()
        for tier in ("episodes", "facts", "candidates", "procedures", "sessions", "jobs"):
            assert after[tier] == before[tier], tier
        assert sorted(m["text"] for m in after["memories"]) == sorted(
            m["text"] for m in before["memories"]
        )
        assert first in (tmp_path / "fresh-memory" / "user-profiles" / "mira.md").read_text()
        waiting = await app.view("mira-2")
        assert waiting.status == "awaiting_approval"
        payload = {"approver": "mira", "draft_hash": waiting.draft_hash, "action": "approve"}
        assert (await app.decide("mira-2", payload)).status == "published"
        # Restoring twice writes nothing new.
        again = await app.memory.restore(backup)
        assert all(found["count"] == 0 for found in again["restored"].values())


async def test_a_restore_of_the_embedded_files_forgets_again(
    isolated_env: Path, tmp_path: Path
) -> None:
    """``analyst db snapshot`` -> forget -> ``analyst db restore-snapshot``: the restored files held the
    canary; the restore keeps the tombstones and audit made since and forgets it again."""
    first, last = CANARY
    await fill("mira", first, last)
    await fill("noor", *OTHER)
    copy = tmp_path / "db-backup"
    async with session("mira") as app:
        app.storage.backup(copy)
    async with session("mira", day=1) as app:
        await app.memory.forget(topic=first, confirm=True, drafts=True)
        forgot = len(await app.memory.audit())
    assert raw_hits(isolated_env / "data", first) == []

    async with session("noor", day=2) as app:  # any user may run the restore
        restored, _ = app.storage.restore(copy)
        assert any(c.name == "facts.sqlite" for c in restored)
        again = await app.storage.reapply_forgets()
    assert set(again) == {"default/mira"} and again["default/mira"]["threads"] == 1
    live = isolated_env / "data"
    assert [h for h in raw_hits(live, first) if not h.startswith("backups/")] == []
    assert [h for h in raw_hits(live, last) if not h.startswith("backups/")] == []
    async with session("mira", day=2) as app:
        learner = await app.memory.learner()
        assert await learner.facts.current(subject_for(app.principal), "full_name") is None
        assert NEIGHBOUR in [m.text for m in await app.memory.memories()]
        assert len(await app.memory.audit()) > forgot  # nothing of the audit was lost
    async with session("noor", day=2) as app:
        learner = await app.memory.learner()
        assert await learner.facts.current(subject_for(app.principal), "full_name") is not None


async def test_a_backup_of_encrypted_memory_is_sealed_with_the_same_key(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.errors import MemoryKeyError

    monkeypatch.setenv("ANALYST_MEMORY_KEY", "k" * 32)
    first, last = CANARY
    await fill("mira", first, last)
    backup = tmp_path / "mira.json"
    async with session("mira") as app:
        await app.memory.backup(backup)
    assert first.encode() not in backup.read_bytes()
    monkeypatch.setenv("ANALYST_DATA_DIR", str(tmp_path / "fresh-data"))
    monkeypatch.setenv("ANALYST_MEMORY_DIR", str(tmp_path / "fresh-memory"))
    monkeypatch.delenv("ANALYST_MEMORY_KEY")
    async with session("mira", day=1) as app:
        with pytest.raises(MemoryKeyError, match="ANALYST_MEMORY_KEY"):
            await app.memory.restore(backup)
    monkeypatch.setenv("ANALYST_MEMORY_KEY", "k" * 32)
    async with session("mira", day=1) as app:
        receipt = await app.memory.restore(backup)
        assert receipt["restored"]["episodes"]["count"] >= 2
        name = await (await app.memory.learner()).facts.current(
            subject_for(app.principal), "full_name"
        )
        assert name is not None and first in str(name.value)


async def test_account_deletion_leaves_no_byte_of_the_user_in_any_backend(stack: Stack) -> None:
    """Everything of a user -- rows, vectors, Redis keys, the profile document -- on every
    stack; the other user keeps all of theirs."""
    first, last = CANARY
    await fill("mira", first, last)
    await fill("noor", *OTHER)
    async with session("mira", day=1) as app:
        receipt = await app.memory.forget_account(confirm=True)
    assert receipt["deleted"]["threads"]["ids"] == ["mira-1"]
    assert receipt["deleted"]["documents"]["ids"] == ["user-profiles/mira.md"]
    assert stack.hits(first) == [] and stack.hits(last) == []
    if stack.redis_token is not None:
        client = redis_client()
        keys = [k.decode() for k in client.scan_iter(match=f"*{stack.redis_token}*")]  # type: ignore[attr-defined]
        assert not any("mira-1" in k for k in keys), keys
        assert any("noor-1" in k for k in keys)
    kept = stack.hits(OTHER[0])
    assert any("checkpoint" in place for place in kept) and any("user-profiles" in p for p in kept)
    async with session("noor", day=1) as app:
        assert NEIGHBOUR in [m.text for m in await app.memory.memories()]


async def test_facts_forgotten_by_description_are_in_no_byte_and_the_rest_is_kept(
    stack: Stack,
) -> None:
    """ "that I own ZQXV" (an element of the holdings), "where I work" and "my address"
    (scalars), each found by attribute and value and forgotten with the cascade: the
    versions, the words, the session summary, the conversation whose answer named them --
    no byte of any backend holds them; AAPL stays in the holdings, the horizon stays."""
    ticker, employer, street = "ZQXV", "Quibblesoft Dynamics", "Zarquon"
    async with session("mira") as app:
        for line in (
            f"I own {ticker} and AAPL.",
            f"I work at {employer}.",
            f"I live at 12 {street} Lane, Frobville.",
            "My horizon is 7 years.",
        ):
            said = await app.start(line, thread_id="mira-1", keep_session=True)
            assert said.learned, line
        await app.memory.end_session("mira-1")
        asked = await app.start("what do you know about me?", thread_id="mira-2")
        assert ticker in asked.reply and employer in asked.reply
    for canary in (ticker, "Quibblesoft", street):
        assert stack.hits(canary), canary

    async with session("mira", day=1) as app:
        for about, listed in (
            (f"that I own {ticker}", f"holdings:{ticker}"),
            ("where I work", "employer"),
            ("my address", "address"),
        ):
            plan = await app.memory.forget(about=about)
            assert plan["confirmed"] is False
            assert any(listed in f"{r['id']} {r['text']}" for r in plan["found"]), plan["found"]
            await app.memory.forget(about=about, confirm=True)
        profile = await (await app.memory.learner()).profile()
        assert profile["holdings"]["value"] == ["AAPL"]
        assert profile["horizon_years"]["value"] == 7
        assert "employer" not in profile and "address" not in profile
        asked = await app.start("what do you know about me?", thread_id="mira-3")
        assert "AAPL" in asked.reply and ticker not in asked.reply
        assert employer not in asked.reply
    for canary in (ticker, "Quibblesoft", street):
        assert stack.hits(canary) == [], canary
