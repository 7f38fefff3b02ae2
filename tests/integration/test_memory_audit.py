"""The memory audit, on real databases: the embedded SQLite file and a fresh
Postgres ledger used through its non-superuser application role.

A scripted conversation goes through the real app and graph (Qdrant Edge with MiniLM, SQLite
checkpoints). Afterwards the audit holds every kind of operation with the ids it touched; a
canary the user said (their name, a personal attribute) is nowhere in the audit's rows; the
database refuses to change or delete audit rows; and one user never sees another's entries
unless it is an admin of the tenant.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agent.app import AnalystApp
from memory.errors import AuditAccessError
from memory.journal.audit import keyed_hash
from memory.recall import NAMESPACE
from tests.support.servers import PgLedger
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

#: Said once, as the user's name (a personal attribute): it must never reach the audit.
CANARY_FIRST, CANARY_LAST = "Zorblax", "Quintavelle"
CANARY = f"{CANARY_FIRST} {CANARY_LAST}"
START = datetime(2026, 11, 2, 9, tzinfo=UTC)


def session(user: str = "mira", *, day: int = 0) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(START + timedelta(days=day), user)


def audit_rows(ledger: PgLedger | None, data_dir: Path) -> list[tuple[Any, ...]]:
    """Every row of the audit table, every column, read around the application."""
    if ledger is None:
        with sqlite3.connect(data_dir / "facts.sqlite") as conn:
            return conn.execute("SELECT * FROM memory_audit").fetchall()
    with psycopg.connect(ledger.admin_url) as admin:  # a superuser: row security not applied
        return admin.execute("SELECT * FROM analyst_facts.memory_audit").fetchall()


async def test_a_session_is_audited_by_ids_and_hashes_only(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    async with session() as app:
        noted = await app.start(f"My name is {CANARY}.", thread_id="s1", keep_session=True)
        assert [f["attribute"] for f in noted.learned] == ["full_name"]
        await app.start("My investment horizon is 10 years.", thread_id="s1", keep_session=True)
        await app.start("Never analyse TSLA from now on.", thread_id="s1", keep_session=True)
        draft = await app.start("Analyze NVDA", thread_id="s1", keep_session=True)
        assert draft.status == "awaiting_approval"
        payload = {"approver": "mira", "draft_hash": draft.draft_hash, "action": "approve"}
        await app.decide("s1", payload, keep_session=True)
        await app.memory.end_session("s1")
        (standing,) = [c for c in await app.memory.review() if c["kind"] == "procedure"]
        confirmed = await app.memory.confirm(standing["candidate_id"])
        procedure_id = confirmed["procedure"]["procedure_id"]
        await app.memory.retire_procedure(procedure_id)
        key = await app.memory.add_memory("Check the semiconductor cycle before buying.")
        await app.memory.forget_memory(key)
    async with session(day=1) as app:
        # A new conversation loads the profile and the last session into its context.
        await app.start("Analyze MSFT", thread_id="s2", keep_session=True)
        await app.delete_thread("s2")
        entries = await app.memory.audit()
        episodes = await app.memory.episodes()

    done = {(e["action"], e["tier"]) for e in entries}
    assert {
        ("write", "episodes"),
        ("write", "facts"),
        ("write", "candidates"),
        ("write", "events"),
        ("write", "summaries"),
        ("confirm", "candidates"),
        ("write", "procedures"),
        ("retire", "procedures"),
        ("read", "facts"),
        ("read", "context"),
        ("delete", "store"),
        ("delete", "threads"),
    } <= done, sorted(done)
    assert all(e["user_id"] == e["subject_user"] == "mira" for e in entries)
    assert [e["at"] for e in entries] == sorted(e["at"] for e in entries)  # oldest first
    # Ids, batched: every stored turn is in a write of episodes, once.
    audited_episodes = [
        i
        for e in entries
        if (e["action"], e["tier"]) == ("write", "episodes")
        for i in e["item_ids"]
    ]
    assert sorted(audited_episodes) == sorted(e["episode_id"] for e in episodes)
    by = {(e["action"], e["tier"]): e for e in entries}
    assert by["retire", "procedures"]["item_ids"] == [procedure_id]
    assert by["confirm", "candidates"]["item_ids"] == [standing["candidate_id"]]
    assert by["delete", "store"]["item_ids"] == ["/".join((*NAMESPACE, key))]  # as forgets name it
    assert by["delete", "threads"]["item_ids"] == ["s2"]
    planner_read = [e for e in entries if (e["action"], e["tier"]) == ("read", "facts")]
    assert all(len(e["item_ids"]) == 2 for e in planner_read)  # name and horizon, one entry
    # The first episode (the canary) is hashed, never stored: only a keyed hash of it.
    first = next(e for e in entries if (e["action"], e["tier"]) == ("write", "episodes"))
    assert first["content_hash"] and len(first["content_hash"]) == 64

    rows = audit_rows(backend, isolated_env / "data")
    assert len(rows) == len(entries)
    raw = repr(rows).lower()
    for word in (CANARY_FIRST, CANARY_LAST, "semiconductor"):
        assert word.lower() not in raw
    assert CANARY.lower() not in raw


async def test_the_audit_cannot_be_changed_or_deleted(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    async with session() as app:
        await app.start("My investment horizon is 10 years.", thread_id="s1", keep_session=True)
        assert await app.memory.audit()
    if backend is None:
        with sqlite3.connect(isolated_env / "data" / "facts.sqlite") as conn:
            for statement in (
                "UPDATE memory_audit SET reason = 'x'",
                "DELETE FROM memory_audit",
                "UPDATE memory_secrets SET secret = hex(randomblob(32))",
                "DELETE FROM memory_secrets",
            ):
                with pytest.raises(sqlite3.DatabaseError, match=r"append-only|never changes"):
                    conn.execute(statement)
            assert conn.execute("SELECT count(*) FROM memory_audit").fetchone()[0] > 0
        return
    with psycopg.connect(backend.app_url, autocommit=True) as conn:
        conn.execute("SELECT set_config('app.tenant_id', 'default', false)")
        conn.execute("SELECT set_config('app.user_id', 'mira', false)")
        assert conn.execute("SELECT count(*) FROM analyst_facts.memory_audit").fetchone()[0] > 0
        for statement in (
            "UPDATE analyst_facts.memory_audit SET reason = 'x'",
            "DELETE FROM analyst_facts.memory_audit",
            "TRUNCATE analyst_facts.memory_audit",
            "UPDATE analyst_facts.memory_secrets SET secret = secret",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        # An entry in another user's name is refused by row security.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO analyst_facts.memory_audit (tenant_id, audit_id, user_id,"
                " subject_user, at, action, tier) VALUES ('default', 'audit-x', 'bob', 'bob',"
                " now(), 'read', 'facts')"
            )
    # The owner and even a superuser are stopped by the triggers.
    with psycopg.connect(backend.admin_url, autocommit=True) as admin:
        for statement in (
            "UPDATE analyst_facts.memory_audit SET reason = 'x'",
            "DELETE FROM analyst_facts.memory_audit",
            "TRUNCATE analyst_facts.memory_audit",
            "DELETE FROM analyst_facts.memory_secrets",
        ):
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
                admin.execute(statement)


async def test_another_users_audit_is_invisible_but_to_the_tenants_admin(
    backend: PgLedger | None,
) -> None:
    async with session("mira") as mira:
        await mira.start("My investment horizon is 10 years.", thread_id="m1", keep_session=True)
        mine = await mira.memory.audit()
        assert mine
    async with session("bob") as bob:
        assert await bob.memory.audit() == []
        with pytest.raises(AuditAccessError, match="may not read the audit of user 'mira'"):
            await bob.memory.audit(user="mira")
        journal = (await bob.memory.learner()).journal
        with pytest.raises(AuditAccessError, match="may not write to the audit of user 'mira'"):
            await journal.audit("read", "facts", ["f-1"], subject_user="mira")
    # Bob becomes the tenant's admin: only the ledger's owner makes one (SQLite: the data
    # folder's owner, this process; Postgres: the owner's connection).
    if backend is None:
        async with session("bob") as bob:
            assert await (await bob.tiers.facts()).bootstrap_admin("bob")
    else:
        with psycopg.connect(backend.owner_url, autocommit=True) as owner:
            owner.execute(
                "INSERT INTO analyst_facts.grants (tenant_id, user_id, role, subject)"
                " VALUES ('default', 'bob', 'admin', '*')"
            )
    async with session("bob") as bob:
        theirs = await bob.memory.audit(user="mira")
        assert [e["audit_id"] for e in theirs] == [e["audit_id"] for e in mine]
        assert await bob.memory.audit() == []  # bob's own audit is still bob's alone
        since = await bob.memory.audit(user="mira", since="2099-01-01")
        assert since == []


async def test_an_explicit_audit_key_hashes_with_it(
    backend: PgLedger | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_AUDIT_KEY", "k" * 32)
    async with session() as app:
        journal = (await app.memory.learner()).journal
        entry = await journal.audit("read", "facts", ["f-1"], reason="test", content="Zorblax")
    assert entry.content_hash == keyed_hash(b"k" * 32, "Zorblax")
    assert entry.item_ids == ("f-1",)


def test_memory_audit_on_the_command_line(analyst: Any) -> None:
    analyst("run", "My investment horizon is 10 years.", "--json").json()
    entries = analyst("memory", "audit", "--json").json()["audit"]
    assert ("write", "episodes") in {(e["action"], e["tier"]) for e in entries}
    assert analyst("memory", "audit", "--since", "2099-01-01", "--json").json()["audit"] == []
    refused = analyst("memory", "audit", "--of", "someone-else")
    assert refused.refused and refused.code == 3
    assert "admin" in refused.err
    bad = analyst("memory", "audit", "--since", "yesterday-ish")
    assert bad.code == 2 and "--since" in bad.err
    table = analyst("memory", "audit")
    assert table.code == 0 and "episodes" in table.out
