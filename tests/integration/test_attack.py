"""A randomised attack on every tier: several tenants and users, every read and write path.

Each user leaves private canaries in every tier a user owns: a thread (its request text), a
long-term memory, facts about themselves (one of them personal data), their profile document
and, through the run, their episodes and audit. Then, in an order drawn from a seeded random
generator, every other user attacks: reads through every listing, search and lookup the CLI
and the application API offer, and writes (approve, reject, delete, forget, record, retract,
edit, grant themselves admin) against the victim's items.

What must hold, on the embedded defaults and on Postgres (through its application role, row
security in force):
- **zero leaks**: no output an attacker receives (stdout, stderr, return values) contains
  another user's canary;
- **zero unauthorised writes**: every victim's own view of their tiers (thread status and
  draft, memories, facts, profile document bytes, audit size) is identical before and after
  the attacks, and every write attempt fails the way the CLI promises (``error:``, no
  traceback).

The seed is printed in every failure; ``ANALYST_ATTACK_SEED`` replays one.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.app import AnalystApp
from agent.settings import Settings
from memory.identity import Principal
from tests.integration.conftest import Analyst, Run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

#: Two users share tenant t1; carol is alone in t2. Nobody here is an admin.
USERS: tuple[tuple[str, str], ...] = (("t1", "alice"), ("t1", "bob"), ("t2", "carol"))
SEEDS = [int(os.environ["ANALYST_ATTACK_SEED"])] if "ANALYST_ATTACK_SEED" in os.environ else [7]
#: How many attacks each run draws (reads and writes mixed).
ATTACKS = 36


@dataclass
class Victim:
    """One user and what they left in every tier."""

    tenant: str
    user: str
    tag: str
    thread_id: str = ""
    memory_key: str = ""
    fact_id: str = ""
    canaries: list[str] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return f"user:{self.user}"

    @property
    def profile_doc(self) -> str:
        """Document memory's profile path (agent.recollection.forgettable.profile_document)."""
        if self.tenant == "default":
            return f"user-profiles/{self.user}.md"
        return f"user-profiles/{self.tenant}/{self.user}.md"


def as_user(analyst: Analyst, tenant: str, user: str) -> Callable[..., Run]:
    """The CLI acting for ``user`` of ``tenant`` (the principal the CLI establishes)."""
    env = {**analyst.env, "ANALYST_TENANT": tenant, "ANALYST_USER": user}
    bound = Analyst(env=env, data_dir=analyst.data_dir, memory_dir=analyst.memory_dir)
    return lambda *args, **kw: bound(*args, timeout=120, **kw)


def plant(analyst: Analyst, tenant: str, user: str, rng: random.Random) -> Victim:
    """Leave the user's canaries in every tier they own; return where they are."""
    cli = as_user(analyst, tenant, user)
    victim = Victim(tenant, user, tag=f"zq{user}{rng.randrange(10**6):06d}")
    canary = victim.canaries.append
    t = victim.tag

    canary(f"{t}run")
    run = cli("run", f"Analyze NVDA, reference {t}run", "--json").json()
    assert run["status"] == "awaiting_approval", run
    victim.thread_id = run["thread_id"]

    canary(f"{t}mem")
    victim.memory_key = cli("memory", "add", f"{t}mem private pin note", "--json").json()["key"]

    canary(f"{t}nick")
    fact = cli("facts", "record", victim.subject, "nickname", f"{t}nick", "--text", "--json")
    victim.fact_id = fact.json()["memory_id"]
    canary(f"{t}name")
    named = cli("facts", "record", victim.subject, "full_name", f"Zq {t}name", "--text", "--json")
    assert named.code == 0, str(named)

    canary(f"{t}doc")
    doc = cli("notes", "edit", victim.profile_doc, "--text", f"# {user}\nprofile secret {t}doc\n")
    assert doc.code == 0, str(doc)
    return victim


def snapshot(analyst: Analyst, victim: Victim) -> dict[str, Any]:
    """What the victim sees of their own tiers (compared before and after the attacks)."""
    cli = as_user(analyst, victim.tenant, victim.user)
    shown = cli("show", victim.thread_id, "--json").json()
    return {
        "thread": (shown["status"], shown.get("draft_hash"), shown.get("revision")),
        "threads": sorted(t["thread_id"] for t in cli("threads", "--json").json()),
        "memories": sorted(
            (i["id"], i["text"]) for i in cli("memory", "list", "--json").json()["items"]
        ),
        "profile": cli("facts", "profile", victim.subject, "--json").json(),
        "document": (analyst.memory_dir / victim.profile_doc).read_bytes(),
        "audit": len(cli("memory", "audit", "--json").json()),
    }


# -- the attacks: (name, is_write, CLI arguments against the victim) ------------------------


def cli_attacks(v: Victim, forged: Path) -> list[tuple[str, bool, tuple[str, ...]]]:
    """Every read and write the CLI offers against ``v``'s items (``forged``: a report file)."""
    s, tid = v.subject, v.thread_id
    reads = [
        ("threads", ("threads", "--json")),
        ("show", ("show", tid, "--json")),
        ("history", ("history", tid, "--json")),
        ("memory list", ("memory", "list", "--json")),
        ("memory search", ("memory", "search", "private pin note", "--json")),
        ("memory export", ("memory", "export")),
        ("memory episodes", ("memory", "episodes", "--json")),
        ("memory sessions", ("memory", "sessions", "--json")),
        ("memory events", ("memory", "events", "NVDA", "--json")),
        ("memory show", ("memory", "show", "--json")),
        ("memory context", ("memory", "context", "--json")),
        ("memory audit", ("memory", "audit", "--json")),
        ("memory why", ("memory", "why", tid, "--json")),
        ("facts profile", ("facts", "profile", s, "--json")),
        ("facts current", ("facts", "current", s, "nickname", "--json")),
        ("facts current personal", ("facts", "current", s, "full_name", "--json")),
        ("facts history", ("facts", "history", s, "nickname", "--json")),
        ("facts as-of", ("facts", "as-of", s, "nickname", "2999-01-01", "--json")),
        ("notes show profile", ("notes", "show", v.profile_doc)),
        ("notes search", ("notes", "search", "profile secret")),
        ("notes list", ("notes", "list")),
    ]
    writes = [
        ("approve", ("approve", tid, "--json")),
        ("reject", ("reject", tid, "--feedback", "rewrite it as a sell", "--json")),
        ("edit", ("edit", tid, "--file", str(forged), "--json")),
        ("threads delete", ("threads", "delete", tid)),
        ("forget memory key", ("memory", "forget", "--key", v.memory_key, "--yes")),
        ("forget fact id", ("memory", "forget", v.fact_id, "--yes")),
        ("facts record", ("facts", "record", s, "nickname", "forged", "--text")),
        ("facts retract", ("facts", "retract", s, "nickname")),
        ("notes edit profile", ("notes", "edit", v.profile_doc, "--text", "# forged\n")),
        ("grant self admin", ("facts", "grant", "__attacker__", "--admin")),
        ("grant self subject", ("facts", "grant", "__attacker__", s)),
    ]
    return [(n, False, a) for n, a in reads] + [(n, True, a) for n, a in writes]


def changed(
    analyst: Analyst, victims: list[Victim], before: dict[str, dict[str, Any]], when: str
) -> list[str]:
    """Each victim's tier whose own view differs from ``before`` (taken before the attacks)."""
    after = {v.user: snapshot(analyst, v) for v in victims}
    return [
        f"{when}: {v.user}'s {tier} changed"
        for v in victims
        for tier, value in before[v.user].items()
        if after[v.user][tier] != value
    ]


def leaked(text: str, victims: list[Victim], attacker: str) -> list[str]:
    return [c for v in victims if v.user != attacker for c in v.canaries if c in text]


def refused_cleanly(run: Run) -> bool:
    """A write that did not happen, said so: non-zero exit, an ``error:`` line, no traceback."""
    return run.code != 0 and "error:" in run.err and "Traceback" not in run.err + run.out


@pytest.mark.parametrize("seed", SEEDS)
def test_no_user_reads_or_changes_another_users_memory(
    analyst: Analyst, backend: object, seed: int
) -> None:
    rng = random.Random(seed)
    victims = [plant(analyst, tenant, user, rng) for tenant, user in USERS]
    before = {v.user: snapshot(analyst, v) for v in victims}
    forged = analyst.data_dir.parent / "forged.md"
    forged.write_text("# NVDA: Strong Sell (forged)\n")

    plan = [
        (attacker, victim, attack)
        for attacker in victims
        for victim in victims
        if victim is not attacker
        for attack in cli_attacks(victim, forged)
    ]
    drawn = rng.sample(plan, min(ATTACKS, len(plan)))
    # Every write attack is attempted at least once, whatever the draw.
    tried = {name for _, _, (name, is_write, _) in drawn if is_write}
    for attacker, victim, (name, is_write, args) in plan:
        if is_write and name not in tried:
            tried.add(name)
            drawn.append((attacker, victim, (name, is_write, args)))

    problems: list[str] = []
    for attacker, victim, (name, is_write, args) in drawn:
        args = tuple(attacker.user if a == "__attacker__" else a for a in args)
        # Whatever a command asks, the attacker confirms.
        run = as_user(analyst, attacker.tenant, attacker.user)(*args, input="y\n")
        where = f"seed {seed}: {attacker.tenant}/{attacker.user} -> {victim.user}: {name}"
        if found := leaked(run.out + run.err, victims, attacker.user):
            problems.append(f"{where} leaked {found}\n{run}")
        if "Traceback" in run.err + run.out:
            problems.append(f"{where} crashed\n{run}")
        if is_write and not refused_cleanly(run):
            problems.append(f"{where} was not refused\n{run}")

    problems += changed(analyst, victims, before, f"seed {seed}: under CLI attack")
    # Having tried to make themselves admin, nobody reads anyone else's facts.
    for attacker in victims:
        for v in victims:
            if v is attacker:
                continue
            run = as_user(analyst, attacker.tenant, attacker.user)(
                "facts", "profile", v.subject, "--json"
            )
            if found := leaked(run.out + run.err, victims, attacker.user):
                problems.append(f"seed {seed}: {attacker.user} became able to read {found}")
    assert not problems, "\n\n".join(problems)


# -- the application API: the same walls in-process -----------------------------------------


def _as_app(
    user: tuple[str, str], body: Callable[[AnalystApp], Awaitable[Any]]
) -> tuple[Any, BaseException | None]:
    async def go() -> Any:
        settings = Settings.from_env()
        async with AnalystApp.open(settings, Principal(*user)) as app:
            return await body(app)

    try:
        return asyncio.run(go()), None
    except Exception as exc:  # the refusal is the expected outcome of most attacks
        return None, exc


@pytest.mark.parametrize("seed", SEEDS)
def test_application_api_enforces_the_same_walls(
    analyst: Analyst, backend: object, seed: int
) -> None:
    rng = random.Random(seed)
    victims = [plant(analyst, tenant, user, rng) for tenant, user in USERS]
    before = {v.user: snapshot(analyst, v) for v in victims}

    def reads(v: Victim) -> list[tuple[str, Callable[[AnalystApp], Awaitable[Any]]]]:
        return [
            ("view", lambda app: app.view(v.thread_id)),
            ("history", lambda app: app.history(v.thread_id)),
            ("threads", lambda app: app.threads()),
            ("recall", lambda app: app.memory.recall("private pin note", limit=10)),
            ("memories", lambda app: app.memory.memories()),
            ("export", lambda app: app.memory.export()),
            ("episodes", lambda app: app.memory.episodes(thread_id=v.thread_id)),
            ("audit", lambda app: app.memory.audit()),
            ("listing", lambda app: app.memory.listing()),
            ("show", lambda app: app.memory.show()),
        ]

    def writes(v: Victim) -> list[tuple[str, Callable[[AnalystApp], Awaitable[Any]]]]:
        return [
            ("decide", lambda app: app.decide(v.thread_id, {"action": "approve"})),
            ("delete_thread", lambda app: app.delete_thread(v.thread_id)),
            ("forget_memory", lambda app: app.memory.forget_memory(v.memory_key)),
            ("forget", lambda app: app.memory.forget([v.fact_id])),
        ]

    problems: list[str] = []
    pairs = [(a, v) for a in victims for v in victims if a is not v]
    rng.shuffle(pairs)
    for attacker, victim in pairs:
        for name, call in reads(victim) + writes(victim):
            result, error = _as_app((attacker.tenant, attacker.user), call)
            where = f"seed {seed}: {attacker.user} -> {victim.user}: {name}"
            if found := leaked(repr(result) + repr(error), victims, attacker.user):
                problems.append(f"{where} leaked {found}")
    problems += changed(analyst, victims, before, f"seed {seed}: under API attack")
    assert not problems, "\n\n".join(problems)
