"""Who reads which facts, on SQLite (the store checks) and Postgres (row security checks too).

A user reads its own subject (``user:<id>``) whole; the shared subjects (``team:...``,
``ticker:...``) one of its grants covers; and, as the tenant's admin, every subject -- but
another user's personal attributes (``full_name``, ``address``, ``age``) only when asking
explicitly, through a store with an auditor, which writes the read to the owner's audit.

The randomised test builds several tenants, users, subjects, grants and fact histories from a
seed, then asks every read API (current, as_of, history, profile; async and sync) as every
user about every key, and compares each answer with a model written here: exactly the
authorised facts come back, and every other read is refused. On Postgres the same model is
checked against raw SQL that omits every filter, as the application role: row security alone
returns exactly the authorised rows.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from memory.errors import FactAuthorityError
from memory.facts import PERSONAL_ATTRIBUTES, FactStore, MemoryDelta, open_fact_store
from memory.facts.rules import NOT_READ
from memory.identity import Principal
from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = BASE + timedelta(days=60)
USERS = ("ann", "bo", "cy", "di", "ed")
SHARED = ("team:research", "team:desk", "ticker:NVDA")
SUBJECTS = (*(f"user:{u}" for u in USERS), *SHARED)
ATTRIBUTES = ("horizon", "risk_tolerance", *sorted(PERSONAL_ATTRIBUTES))
PATTERNS = ("team:research", "team:*", "ticker:NVDA", "ticker:*", "user:ann", "user:*")


@dataclass(frozen=True)
class Ledger:
    backend: str
    url: str
    owner_url: str
    app_url: str = ""


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
        yield Ledger("sqlite", url, url)
        return
    with postgres_ledger() as pg:
        yield Ledger("postgres", pg.app_url, pg.owner_url, pg.app_url)


# -- the world and the model -------------------------------------------------------------------


@dataclass
class World:
    """What a seed wrote: per (tenant, subject, attribute) the values in time order, per
    tenant its admins, per (tenant, user) its grant patterns."""

    tenants: tuple[str, ...]
    admins: dict[str, set[str]] = field(default_factory=dict)
    grants: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: The read-only grants (``--read-only``): they read, never write.
    readers: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    values: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def authority(self, tenant: str, user: str, subject: str) -> str | None:
        """The rule, written independently of memory.facts.rules."""
        if subject == f"user:{user}":
            return "own"
        if user in self.admins[tenant]:
            return "admin"
        if subject.startswith("user:"):
            return None
        held = self.grants.get((tenant, user), set()) | self.readers.get((tenant, user), set())
        for pattern in held:
            if subject == pattern or (pattern.endswith("*") and subject.startswith(pattern[:-1])):
                return "granted"
        return None

    def visible(
        self, tenant: str, user: str, subject: str, attribute: str, personal: bool = False
    ) -> bool:
        who = self.authority(tenant, user, subject)
        if who is None:
            return False
        hidden = subject.startswith("user:") and attribute in PERSONAL_ATTRIBUTES
        return who == "own" or not hidden or (who == "admin" and personal)


def _world(seed: int, suffix: str) -> World:
    rng = random.Random(seed)
    world = World(tuple(f"t{i}-{suffix}" for i in range(3)))
    for tenant in world.tenants:
        world.admins[tenant] = set(rng.sample(USERS, rng.randint(1, 2)))
        for user in USERS:
            world.grants[(tenant, user)] = set(rng.sample(PATTERNS, rng.randint(0, 3)))
            world.readers[(tenant, user)] = set(rng.sample(PATTERNS, rng.randint(0, 2)))
        for subject in SUBJECTS:
            for attribute in rng.sample(ATTRIBUTES, rng.randint(1, len(ATTRIBUTES))):
                n = rng.randint(1, 3)
                # The tenant is in every value: a leak across tenants cannot look right.
                world.values[(tenant, subject, attribute)] = [
                    f"{tenant}/{subject}/{attribute}/{i}" for i in range(n)
                ]
    return world


async def _populate(ledger: Ledger, world: World) -> None:
    """Admins made by the owner; grants by an admin; each user's facts by that user, shared
    facts by an admin (history: one value per day)."""
    async with open_fact_store(ledger.owner_url, Principal(world.tenants[0], "owner")) as own:
        for tenant in world.tenants:
            for name in sorted(world.admins[tenant]):
                assert await own.with_principal(Principal(tenant, name)).bootstrap_admin(name)
    async with open_fact_store(ledger.url, Principal(world.tenants[0], "x")) as facts:
        for tenant in world.tenants:
            admin = facts.with_principal(Principal(tenant, min(world.admins[tenant])))
            for (t, user), patterns in world.grants.items():
                if t == tenant:
                    for pattern in sorted(patterns):
                        await admin.grant(user, pattern)
                    for pattern in sorted(world.readers[(t, user)]):
                        await admin.grant(user, pattern, read_only=True)
            for (t, subject, attribute), values in sorted(world.values.items()):
                if t != tenant:
                    continue
                writer = (
                    facts.with_principal(Principal(tenant, subject.removeprefix("user:")))
                    if subject.startswith("user:")
                    else admin
                )
                await writer.record_many(
                    MemoryDelta(
                        subject=subject,
                        attribute=attribute,
                        value=value,
                        valid_from=BASE + timedelta(days=i),
                    )
                    for i, value in enumerate(values)
                )


# -- the reads --------------------------------------------------------------------------------


async def _check_reader(facts: FactStore, world: World, tenant: str, user: str) -> int:
    """Every read API, as ``user`` of ``tenant``, about every key; returns the reads checked."""
    me = facts.with_principal(Principal(tenant, user))
    checked = 0
    for subject in SUBJECTS:
        authority = world.authority(tenant, user, subject)
        if authority is None:
            for read in (
                me.current(subject, "horizon"),
                me.as_of(subject, "horizon", NOW),
                me.history(subject, "horizon"),
                me.profile(subject),
            ):
                with pytest.raises(FactAuthorityError, match="may not read"):
                    await read
            with pytest.raises(FactAuthorityError, match="may not read"):
                me.sync.current(subject, "horizon")
            with pytest.raises(FactAuthorityError, match="may not read"):
                me.sync.history(subject, "horizon")
            with pytest.raises(FactAuthorityError, match="may not read"):
                me.sync.profile(subject)
            checked += 7
            continue
        expected_profile = {
            attribute: values[-1]
            for (t, s, attribute), values in world.values.items()
            if (t, s) == (tenant, subject) and world.visible(tenant, user, subject, attribute)
        }
        profile = await me.profile(subject)
        assert {a: r.value for a, r in profile.items()} == expected_profile, (user, subject)
        assert {a: r.value for a, r in me.sync.profile(subject).items()} == expected_profile
        checked += 2
        for attribute in ATTRIBUTES:
            values = world.values.get((tenant, subject, attribute), [])
            if not world.visible(tenant, user, subject, attribute):
                with pytest.raises(FactAuthorityError, match="personal data"):
                    await me.current(subject, attribute)
                with pytest.raises(FactAuthorityError, match="personal data"):
                    me.sync.history(subject, attribute)
                checked += 2
                continue
            last = values[-1] if values else None
            first = values[0] if values else None
            current = await me.current(subject, attribute)
            assert (current and current.value) == last, (user, subject, attribute)
            sync_current = me.sync.current(subject, attribute)
            assert (sync_current and sync_current.value) == last
            then = await me.as_of(subject, attribute, BASE + timedelta(hours=1))
            assert (then and then.value) == first
            sync_then = me.sync.as_of(subject, attribute, BASE + timedelta(hours=1))
            assert (sync_then and sync_then.value) == first
            history = await me.history(subject, attribute)
            assert [r.value for r in history] == values
            assert [r.value for r in me.sync.history(subject, attribute)] == values
            checked += 6
    return checked


async def _check_personal(facts: FactStore, world: World, tenant: str) -> None:
    """An admin asks for another user's personal facts: only with an auditor, and every such
    read reaches the auditor with the owner and the ids; a non-admin asking is refused."""
    admin = min(world.admins[tenant])
    owner = next(u for u in USERS if u != admin)
    subject = f"user:{owner}"
    as_admin = facts.with_principal(Principal(tenant, admin))
    with pytest.raises(FactAuthorityError, match="without an auditor"):
        await as_admin.profile(subject, include_personal=True)
    audited: list[tuple[str, list[str]]] = []

    async def auditor(user: str, ids: list[str]) -> None:
        audited.append((user, ids))

    seen = await as_admin.with_auditor(auditor).profile(subject, include_personal=True)
    personal = {a: r for a, r in seen.items() if a in PERSONAL_ATTRIBUTES}
    stored = {a: v[-1] for (t, s, a), v in world.values.items() if (t, s) == (tenant, subject)}
    assert {a: r.value for a, r in seen.items()} == stored
    assert audited == (
        [(owner, sorted(r.memory_id for r in personal.values()))] if personal else []
    )
    for attribute in sorted(PERSONAL_ATTRIBUTES):
        audited.clear()
        history = await as_admin.with_auditor(auditor).history(
            subject, attribute, include_personal=True
        )
        assert [r.value for r in history] == world.values.get((tenant, subject, attribute), [])
        assert audited == ([(owner, sorted(r.memory_id for r in history))] if history else [])
    outsider = next((u for u in USERS if u not in world.admins[tenant] and u != owner), None)
    if outsider is not None:
        with pytest.raises(FactAuthorityError, match="may not read"):
            await (
                facts.with_principal(Principal(tenant, outsider))
                .with_auditor(auditor)
                .profile(subject, include_personal=True)
            )


def _check_rows_postgres(ledger: Ledger, world: World, tenant: str, user: str) -> None:
    """Raw SQL without any filter, as the app role acting for ``user``: row security returns
    exactly the rows the model authorises (personal ones only for an admin who asked)."""
    with psycopg.connect(ledger.app_url) as conn:
        for personal in (False, True):
            conn.execute(
                "SELECT set_config('app.tenant_id', %s, true),"
                " set_config('app.user_id', %s, true),"
                " set_config('app.include_personal', %s, true)",
                (tenant, user, "on" if personal else "off"),
            )
            rows = conn.execute(
                "SELECT tenant_id, subject, attribute, value #>> '{}' FROM analyst_facts.facts"
            ).fetchall()
            conn.rollback()
            expected = sorted(
                (t, s, a, v)
                for (t, s, a), values in world.values.items()
                if t == tenant and world.visible(t, user, s, a, personal)
                for v in values
            )
            assert sorted(rows) == expected, (tenant, user, personal)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_every_read_returns_exactly_the_authorised_facts(ledger: Ledger, seed: int) -> None:
    suffix = os.urandom(4).hex()
    world = _world(seed, suffix)
    await _populate(ledger, world)
    checked = 0
    async with open_fact_store(
        ledger.url, Principal(world.tenants[0], "x"), clock=lambda: NOW
    ) as f:
        for tenant in world.tenants:
            for user in (*USERS, "zed"):  # zed: a user of no grant and no facts
                checked += await _check_reader(f, world, tenant, user)
                if ledger.backend == "postgres":
                    _check_rows_postgres(ledger, world, tenant, user)
            await _check_personal(f, world, tenant)
    assert checked > 500  # the loops ran


async def test_a_read_only_grant_reads_and_never_writes(ledger: Ledger) -> None:
    async with open_fact_store(ledger.owner_url, Principal("acme", "root")) as owner:
        await owner.bootstrap_admin("root")
    async with open_fact_store(ledger.url, Principal("acme", "root"), clock=lambda: NOW) as f:
        fact = MemoryDelta(subject="ticker:NVDA", attribute="rating", value="buy", valid_from=BASE)
        await f.record(fact)
        assert await f.grant("bob", "ticker:*", read_only=True)
        bob = f.with_principal(Principal("acme", "bob"))
        found = await bob.current("ticker:NVDA", "rating")
        assert found is not None and found.value == "buy"
        with pytest.raises(FactAuthorityError, match="may not write facts about ticker:NVDA"):
            await bob.record(fact.model_copy(update={"value": "sell"}))
        with pytest.raises(FactAuthorityError, match="may not retract"):
            await bob.retract("ticker:NVDA", "rating")
        assert [(g.user_id, g.role, g.subject) for g in await bob.grants()] == [
            ("bob", "reader", "ticker:*"),
            ("root", "admin", "*"),
        ]
        assert await f.revoke("bob", "ticker:*", read_only=True)
        with pytest.raises(FactAuthorityError, match="may not read"):
            await bob.current("ticker:NVDA", "rating")


async def test_a_grant_on_user_subjects_lets_one_propose_never_read(ledger: Ledger) -> None:
    """``user:*`` lets bob propose candidates about alice; it never shows him her facts."""
    async with open_fact_store(ledger.owner_url, Principal("acme", "root")) as owner:
        await owner.bootstrap_admin("root")
    async with open_fact_store(ledger.url, Principal("acme", "alice"), clock=lambda: NOW) as f:
        await f.record(
            MemoryDelta(subject="user:alice", attribute="horizon", value="long", valid_from=BASE)
        )
        await f.with_principal(Principal("acme", "root")).grant("bob", "user:*")
        bob = f.with_principal(Principal("acme", "bob"))
        candidate = await bob.record(
            MemoryDelta(
                subject="user:alice",
                attribute="horizon",
                value="short",
                valid_from=BASE + timedelta(days=1),
            )
        )
        assert candidate.candidate
        with pytest.raises(FactAuthorityError, match="read by alice and the tenant's admin"):
            await bob.history("user:alice", "horizon")
        assert [r.value for r in await f.history("user:alice", "horizon")] == ["long", "short"]


async def test_another_subjects_read_asks_its_grants_and_first_seek_together(
    ledger: Ledger,
) -> None:
    """On Postgres a read of another subject is one statement: the reader's grants beside the
    read's first seek, which row security limits (the answer is dropped if the grants refuse
    the read). Each answer equals the two statements' answers; an admin's audited read of
    personal data, and every read on SQLite (no row security), read the grants alone first."""
    async with open_fact_store(ledger.owner_url, Principal("acme", "root")) as owner:
        await owner.bootstrap_admin("root")
    async with open_fact_store(ledger.url, Principal("acme", "root"), clock=lambda: NOW) as f:
        for day, value in enumerate(("hold", "buy", "sell")):
            await f.record(
                MemoryDelta(
                    subject="ticker:NVDA",
                    attribute="rating",
                    value=value,
                    valid_from=BASE + timedelta(days=day),
                )
            )
        await f.grant("bob", "ticker:*", read_only=True)
        key = ("acme", "ticker:NVDA", "rating")
        requests = [
            ("open_fact", (key,)),
            ("last_from", (key, BASE + timedelta(days=1))),  # at a start: "from", not "before"
            ("last_from", (("acme", "ticker:NVDA", "none"), NOW)),
            ("history", (key,)),
            ("profile", ("acme", "ticker:NVDA", NOW)),
        ]
        for user in ("root", "bob", "zed"):  # an admin, a reader, a user of no grant
            reads = f.with_principal(Principal("acme", user))._sync_ops(False)
            for name, args in requests:
                grants, answer = reads.grants_and("acme", user, (name, args))
                assert grants == reads.grants("acme", user)
                if ledger.backend == "sqlite":
                    assert answer is NOT_READ
                    continue
                assert answer is not NOT_READ, name
                expected = getattr(reads, name)(*args) if user != "zed" else answer
                assert answer == expected, (user, name)
                if user == "zed":  # row security already hid the rows the grants refuse
                    assert answer in (None, []), name
        personal = f._sync_ops(True)
        assert personal.grants_and("acme", "root", requests[0])[1] is NOT_READ


# -- the CLI ----------------------------------------------------------------------------------

EXE = Path(sys.executable).with_name("analyst")


def _cli(env: dict[str, str], user: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args],
        env={**env, "ANALYST_USER": user},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_personal_data_reaches_only_its_owner_and_an_admin_who_asks(
    isolated_env: Path,
) -> None:
    """The issue's finding: bob printed frank's full_name. Now bob is refused; the admin sees
    it only with --include-personal, and frank's audit says who read it."""
    import json

    env = {**os.environ, "ANALYST_TENANT": "acme", "COLUMNS": "200", "NO_COLOR": "1"}
    set_name = _cli(env, "frank", "facts", "record", "me", "full_name", "Frank Oduya", "--text")
    assert set_name.returncode == 0, set_name.stderr
    assert _cli(env, "frank", "facts", "record", "me", "horizon", "long").returncode == 0
    assert _cli(env, "root", "db", "init", "--admin", "root").returncode == 0

    for args in (
        ("facts", "profile", "user:frank"),
        ("facts", "current", "user:frank", "full_name"),
        ("facts", "history", "user:frank", "horizon"),
    ):
        refused = _cli(env, "bob", *args)
        assert refused.returncode == 3, refused.stdout
        assert "may not read facts about user:frank" in refused.stderr
        assert "Oduya" not in refused.stdout + refused.stderr

    plain = _cli(env, "root", "facts", "profile", "user:frank", "--json")
    assert plain.returncode == 0, plain.stderr
    assert set(json.loads(plain.stdout)) == {"horizon"}
    asked = _cli(env, "root", "facts", "current", "user:frank", "full_name")
    assert asked.returncode == 3 and "--include-personal" in asked.stderr
    assert "Oduya" not in asked.stdout + asked.stderr

    included = _cli(env, "root", "facts", "profile", "user:frank", "--include-personal", "--json")
    assert included.returncode == 0, included.stderr
    shown = json.loads(included.stdout)
    assert shown["full_name"]["value"] == "Frank Oduya"
    audit = _cli(env, "frank", "memory", "audit", "--json")
    assert audit.returncode == 0, audit.stderr
    reads = [
        e
        for e in json.loads(audit.stdout)["audit"]
        if e["action"] == "read" and e["tier"] == "facts"
    ]
    assert [e["item_ids"] for e in reads] == [[shown["full_name"]["memory_id"]]]
    assert "Oduya" not in audit.stdout  # the audit holds ids and keyed hashes, never content

    # Frank sees his own profile whole, without asking.
    own = _cli(env, "frank", "facts", "profile", "me", "--json")
    assert json.loads(own.stdout)["full_name"]["value"] == "Frank Oduya"
