"""Who may write facts about whom, on both backends.

A principal writes its own subject (``user:<id>``) freely; any other subject needs a grant
(``writer`` of a subject or ``prefix*`` pattern, or ``admin`` of the tenant); a fact about
another user, even with a grant, is stored only as a candidate (source ``inferred``, outside
the timeline, the writer in ``recorded_by``) and never changes what that user's planner sees
until they record it themselves. A write without authority is refused and writes nothing.

Hypothesis draws grants, revocations and writes by random principals of two tenants and
checks every outcome against a small model, then checks every stored record: about its
writer, or authorised by a grant; never stated/confirmed about another user. On Postgres the
database refuses a raw INSERT or UPDATE without authority by itself (row-level security).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import errors as pg_errors

from agent.errors import FactAuthorityError, FactConflictError, FactNotFoundError
from memory.facts import FactRecord, FactStore, MemoryDelta, open_fact_store
from memory.identity import Principal
from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = BASE + timedelta(days=30)
USERS = ("ann", "bo", "cy", "di")
SUBJECTS = (*(f"user:{u}" for u in USERS), "team:research", "team:desk", "ticker:NVDA")
PATTERNS = ("team:research", "team:*", "ticker:NVDA", "user:ann", "user:*")
ROOT = "root"  # each tenant's admin, made by the ledger's owner (bootstrap_admin)


@dataclass(frozen=True)
class Ledger:
    backend: str
    url: str
    #: The URL that bootstraps a tenant's first admin (SQLite: the file; Postgres: the owner).
    owner_url: str


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
        yield Ledger("sqlite", url, url)
        return
    with postgres_ledger() as pg:
        yield Ledger("postgres", pg.app_url, pg.owner_url)


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as loop:
        yield loop


async def _make_admin(ledger: Ledger, tenant: str, user: str = ROOT) -> None:
    async with open_fact_store(ledger.owner_url, Principal(tenant, user)) as facts:
        assert await facts.bootstrap_admin(user)


def _delta(subject: str, value: object, days: int = 0, source: str = "stated") -> MemoryDelta:
    return MemoryDelta(
        subject=subject,
        attribute="horizon",
        value=value,  # type: ignore[arg-type]
        valid_from=BASE + timedelta(days=days),
        source=source,  # type: ignore[arg-type]
    )


# -- the model --------------------------------------------------------------------------------


def _covers(pattern: str, subject: str) -> bool:
    return subject.startswith(pattern[:-1]) if pattern.endswith("*") else subject == pattern


@dataclass
class Model:
    """Grants per (tenant, user): a set of patterns, ``*`` meaning admin."""

    grants: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: Every pattern a user ever held (a record is checked against these at the end).
    ever: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def authority(self, tenant: str, user: str, subject: str) -> str | None:
        if subject == f"user:{user}":
            return "own"
        held = self.grants.get((tenant, user), set())
        if not any(p == "*" or _covers(p, subject) for p in held):
            return None
        return "candidate" if subject.startswith("user:") else "granted"

    def change(self, tenant: str, user: str, pattern: str, revoke: bool) -> None:
        held = self.grants.setdefault((tenant, user), set())
        if revoke:
            held.discard(pattern)
        else:
            held.add(pattern)
            self.ever.setdefault((tenant, user), set()).add(pattern)


# -- the randomised test ----------------------------------------------------------------------

grant_op = st.tuples(
    st.sampled_from(("grant", "revoke")),
    st.sampled_from(USERS),
    st.sampled_from((*PATTERNS, "*")),
    st.just(""),
    st.just(0),
)
write_op = st.tuples(
    st.sampled_from(("record", "record", "record", "retract")),
    st.sampled_from(USERS),
    st.sampled_from(SUBJECTS),
    st.sampled_from(("stated", "confirmed", "observed", "inferred")),
    st.integers(min_value=0, max_value=5),
)
Program = list[tuple[int, tuple[str, str, str, str, int]]]
programs = st.lists(
    st.tuples(st.sampled_from((0, 1)), st.one_of(grant_op, write_op, write_op)), max_size=30
)


async def _stored(facts: FactStore) -> list[FactRecord]:
    return [r for s in SUBJECTS for r in await facts.history(s, "horizon")]


async def _run(opened: FactStore, tenants: tuple[str, str], program: Program) -> None:
    model = Model()
    for tenant in tenants:
        model.change(tenant, ROOT, "*", revoke=False)
    for which, (op, user, target, source, days) in program:
        tenant = tenants[which]
        me = opened.with_principal(Principal(tenant, user))
        if op in ("grant", "revoke"):
            # Only the tenant's admin changes grants; anyone else is refused.
            if "*" not in model.grants.get((tenant, user), set()):
                with pytest.raises(FactAuthorityError):
                    await me.grant(user, "team:research")
            root = opened.with_principal(Principal(tenant, ROOT))
            admin = target == "*"
            subject = None if admin else target
            if op == "grant":
                await root.grant(user, subject, admin=admin)
            else:
                await root.revoke(user, subject, admin=admin)
            model.change(tenant, user, target, revoke=op == "revoke")
            continue
        expected = model.authority(tenant, user, target)
        # Read as the tenant's admin: a writer may not read what it may not write.
        audit = opened.with_principal(Principal(tenant, ROOT))
        before = await audit.history(target, "horizon")
        if op == "retract":
            if expected in (None, "candidate"):
                with pytest.raises(FactAuthorityError, match=target):
                    await me.retract(target, "horizon", at=BASE + timedelta(days=days))
                assert await audit.history(target, "horizon") == before  # nothing written
            else:
                with contextlib.suppress(FactNotFoundError):  # nothing held then: fine
                    await me.retract(target, "horizon", at=BASE + timedelta(days=days))
            continue
        delta = _delta(target, f"{user}-{days}-{source}", days, source)
        if expected is None:
            with pytest.raises(FactAuthorityError) as refused:
                await me.record(delta)
            message = str(refused.value)
            assert target in message and user in message and "analyst facts grant" in message
            assert refused.value.exit_code in (2, 3)
            assert await audit.history(target, "horizon") == before  # nothing written
            continue
        owner = target.removeprefix("user:")
        planner_view = None
        if expected == "candidate":
            planner_view = await opened.with_principal(Principal(tenant, owner)).profile(target)
        try:
            stored = await me.record(delta)
        except FactConflictError:
            assert expected != "candidate"
            continue
        assert stored.recorded_by == user or stored.duplicate
        if expected == "candidate":
            assert stored.candidate and stored.source == "inferred" and not stored.active
            assert stored.status == "candidate"
            # What the subject's planner sees did not change.
            after = await opened.with_principal(Principal(tenant, owner)).profile(target)
            assert after == planner_view

    for tenant in tenants:
        facts = opened.with_principal(Principal(tenant, ROOT))
        for record in await _stored(facts):
            assert record.tenant_id == tenant and record.recorded_by is not None
            writer = record.recorded_by
            own = record.subject == f"user:{writer}"
            held = model.ever.get((tenant, writer), set())
            assert own or any(p == "*" or _covers(p, record.subject) for p in held), record
            if record.subject.startswith("user:") and not own:
                assert record.source not in ("stated", "confirmed"), record
                assert not record.active and record.status == "candidate", record


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=programs)
def test_random_writes_by_random_principals_respect_authority(
    ledger: Ledger, runner: asyncio.Runner, program: Program
) -> None:
    async def example() -> None:
        suffix = uuid.uuid4().hex[:8]
        tenants = (f"t1-{suffix}", f"t2-{suffix}")
        for tenant in tenants:
            await _make_admin(ledger, tenant)
        async with open_fact_store(
            ledger.url, Principal(tenants[0], ROOT), clock=lambda: NOW
        ) as opened:
            await _run(opened, tenants, program)

    runner.run(example())


# -- the rules, one by one --------------------------------------------------------------------


async def test_a_candidate_counts_only_once_its_subject_confirms_it(ledger: Ledger) -> None:
    await _make_admin(ledger, "acme")
    alice, bob = Principal("acme", "alice"), Principal("acme", "bob")
    async with open_fact_store(ledger.url, alice, clock=lambda: NOW) as facts:
        as_bob = facts.with_principal(bob)
        await facts.record(_delta("user:alice", "long"))
        with pytest.raises(FactAuthorityError, match="analyst facts grant bob user:alice"):
            await as_bob.record(_delta("user:alice", "short", 1))
        root = facts.with_principal(Principal("acme", ROOT))
        assert await root.grant("bob", "user:alice")
        candidate = await as_bob.record(_delta("user:alice", "short", 1, "confirmed"))
        assert (candidate.status, candidate.source, candidate.recorded_by) == (
            "candidate",
            "inferred",
            "bob",
        )
        current = await facts.current("user:alice", "horizon")
        assert current is not None and current.value == "long"
        with pytest.raises(FactAuthorityError, match="Only alice may retract"):
            await as_bob.retract("user:alice", "horizon")
        # Alice confirms it: recorded by her, it supersedes as usual.
        confirmed = await facts.record(_delta("user:alice", "short", 1, "confirmed"))
        assert confirmed.recorded_by == "alice" and confirmed.status == "open"
        history = await facts.history("user:alice", "horizon")
        assert [(r.value, r.status, r.recorded_by) for r in history] == [
            ("long", "superseded", "alice"),
            ("short", "candidate", "bob"),
            ("short", "open", "alice"),
        ]


async def test_shared_subjects_need_a_grant_and_only_admins_grant(ledger: Ledger) -> None:
    await _make_admin(ledger, "acme", "alice")
    alice, bob = Principal("acme", "alice"), Principal("acme", "bob")
    async with open_fact_store(ledger.url, bob, clock=lambda: NOW) as as_bob:
        with pytest.raises(FactAuthorityError, match="team:research"):
            await as_bob.record(_delta("team:research", "x"))
        with pytest.raises(FactAuthorityError, match="only the tenant's admin"):
            await as_bob.grant("bob", "team:*")
        as_alice = as_bob.with_principal(alice)
        assert await as_alice.grant("bob", "team:*")
        assert not await as_alice.grant("bob", "team:*")  # already granted
        stored = await as_bob.record(_delta("team:research", "x"))
        assert stored.status == "open" and stored.recorded_by == "bob"
        assert [(g.user_id, g.role, g.subject) for g in await as_bob.grants()] == [
            ("alice", "admin", "*"),
            ("bob", "writer", "team:*"),
        ]
        # Another tenant's admin grants nothing here.
        with pytest.raises(FactAuthorityError):
            await as_bob.with_principal(Principal("globex", "alice")).record(
                _delta("team:research", "y", 1)
            )
        assert await as_alice.revoke("bob", "team:*")
        with pytest.raises(FactAuthorityError):
            await as_bob.record(_delta("team:research", "y", 2))
        with pytest.raises(FactAuthorityError, match="may not read"):  # revoked: reads too
            await as_bob.history("team:research", "horizon")
        history = await as_alice.history("team:research", "horizon")
        assert [r.value for r in history] == ["x"]


# -- Postgres: the database itself refuses ----------------------------------------------------

FACTS = "analyst_facts.facts"
_INSERT = (
    f"INSERT INTO {FACTS} (tenant_id, memory_id, subject, attribute, value, valid_from,"
    " recorded_at, schema_version, source, withdrawn_at, recorded_by)"
    " VALUES ('acme', %s, %s, 'horizon', '\"raw\"', now(), now(), 4, %s, %s, %s)"
)


def _act(conn: psycopg.Connection, user: str) -> None:  # type: ignore[type-arg]
    conn.execute(
        "SELECT set_config('app.tenant_id', 'acme', true), set_config('app.user_id', %s, true)",
        (user,),
    )


def test_row_security_refuses_raw_writes_without_authority() -> None:
    with postgres_ledger() as pg:
        pg_ledger = Ledger("postgres", pg.app_url, pg.owner_url)
        asyncio.run(_make_admin(pg_ledger, "acme"))

        async def alice_fact() -> None:
            async with open_fact_store(pg.app_url, Principal("acme", "alice")) as facts:
                await facts.record(_delta("user:alice", "long"))

        asyncio.run(alice_fact())
        with psycopg.connect(pg.app_url) as conn:
            refused = [
                ("bob", "user:alice", "stated", None, "bob"),  # another user's subject
                ("bob", "team:research", "stated", None, "bob"),  # a shared one, no grant
                ("bob", "user:bob", "stated", None, "alice"),  # own subject, forged writer
                ("", "user:alice", "stated", None, ""),  # no acting user at all
            ]
            for user, subject, source, withdrawn, by in refused:
                _act(conn, user)
                with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
                    conn.execute(_INSERT, (uuid.uuid4().hex, subject, source, withdrawn, by))
                conn.rollback()
            # Nor may bob change alice's fact in place, or grant himself anything.
            _act(conn, "bob")
            # He cannot even see it (read authority, migration 9): the update finds no row.
            changed = conn.execute(
                f"UPDATE {FACTS} SET value = '\"short\"' WHERE subject = 'user:alice'"
            )
            assert changed.rowcount == 0
            with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(f"UPDATE {FACTS} SET value = '\"short\"'")  # reads no column
            conn.rollback()
            _act(conn, "bob")
            with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(
                    "INSERT INTO analyst_facts.grants (tenant_id, user_id, role, subject)"
                    " VALUES ('acme', 'bob', 'admin', '*')"
                )
            conn.rollback()
            # Bob writes his own subject; with a grant, a candidate about alice (and only that).
            _act(conn, "bob")
            conn.execute(_INSERT, (uuid.uuid4().hex, "user:bob", "stated", None, "bob"))
            conn.commit()
            _act(conn, ROOT)
            conn.execute(
                "INSERT INTO analyst_facts.grants (tenant_id, user_id, role, subject)"
                " VALUES ('acme', 'bob', 'writer', 'user:alice')"
            )
            conn.commit()
            _act(conn, "bob")
            with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(_INSERT, (uuid.uuid4().hex, "user:alice", "stated", None, "bob"))
            conn.rollback()
            _act(conn, "bob")
            conn.execute(_INSERT, (uuid.uuid4().hex, "user:alice", "inferred", NOW, "bob"))
            conn.commit()
        with psycopg.connect(pg.admin_url) as admin:
            rows = admin.execute(
                f"SELECT subject, source, recorded_by, withdrawn_at IS NULL FROM {FACTS}"
                " ORDER BY subject, recorded_by"
            ).fetchall()
        assert rows == [
            ("user:alice", "stated", "alice", True),
            ("user:alice", "inferred", "bob", False),
            ("user:bob", "stated", "bob", True),
        ]


# -- the CLI ----------------------------------------------------------------------------------

EXE = Path(sys.executable).with_name("analyst")


def _cli(env: dict[str, str], user: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "facts", *args, "--user", user],
        env={**env, "ANALYST_USER": user},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_grant_revoke_and_a_refused_write(isolated_env: Path) -> None:
    env = {
        **os.environ,
        "ANALYST_TENANT": "acme",
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "ANALYST_FACTS": f"sqlite:///{isolated_env / 'data' / 'facts.sqlite'}",
    }
    refused = _cli(env, "bob", "record", "user:alice", "horizon", "short", "--valid-from", "now")
    assert refused.returncode == 3, refused.stderr
    assert "user:alice" in refused.stderr and "bob" in refused.stderr
    assert "analyst facts grant bob user:alice" in refused.stderr
    assert "Traceback" not in refused.stderr

    first_come = _cli(env, "alice", "grant", "alice", "--admin")
    assert first_come.returncode == 2 and "analyst db init --admin" in first_come.stderr
    made = subprocess.run(
        [str(EXE), "db", "init", "--admin", "alice"], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0 and "alice: admin of tenant acme" in made.stdout, made.stderr
    not_admin = _cli(env, "bob", "grant", "bob", "--admin")
    assert not_admin.returncode == 2 and "only the tenant's admin" in not_admin.stderr
    granted = _cli(env, "alice", "grant", "bob", "user:alice")
    assert granted.returncode == 0 and "granted" in granted.stdout, granted.stderr
    listed = _cli(env, "bob", "grants")
    assert "bob\twriter\tuser:alice" in listed.stdout
    candidate = _cli(env, "bob", "record", "user:alice", "horizon", "short", "--valid-from", "now")
    assert candidate.returncode == 0, candidate.stderr
    assert "candidate" in candidate.stdout and "inferred" in candidate.stdout
    current = _cli(env, "alice", "current", "me", "horizon")
    assert "no value" in current.stdout
    revoked = _cli(env, "alice", "revoke", "bob", "user:alice")
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    again = _cli(env, "bob", "record", "user:alice", "horizon", "x", "--valid-from", "now")
    assert again.returncode == 3
