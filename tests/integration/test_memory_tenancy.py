"""Another user or tenant never sees a principal's sessions, events, facts or procedures.

A seeded random conversation: several principals -- two tenants, two users of one tenant, the
same user name in both tenants, and ids with dots next to the same ids spelled with ``-`` and
``_`` (``%`` and the like are refused by memory.identity) -- take turns saying random statements,
asking for research, approving or rejecting drafts, ending sessions and confirming candidates,
all through :class:`~agent.app.AnalystApp` on one shared storage. Then every read path of the
write path is asked, for every principal, and must return only what that principal wrote:
``review``, ``jobs``, ``session_context``, ``procedures``, ``sessions``, ``episodes``,
``memories``, what the planner used in a new run (``facts_used``, ``recalled``,
``procedures``, ``context_loaded``) and the ``analyst memory ... --json`` commands.

What a principal wrote is known independently of the read paths: the texts it said and the
decisions it made, per thread. Its episodes must be exactly those; every other item must be
its own (tenant and user) and cite only its own episodes. Both backends: the embedded SQLite
ledger, and Postgres through a non-superuser application role, where a raw connection acting
as one principal must see none of the others' journal rows.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agent.app import AnalystApp
from agent.learning.profile import REGISTRY
from agent.settings import Settings
from memory.facts import subject_for
from memory.identity import Principal
from tests.integration.conftest import Analyst
from tests.support.servers import PgLedger, postgres_ledger

pytestmark = pytest.mark.integration

SEED = 14
PRINCIPALS = (
    Principal("acme", "alice"),
    Principal("acme", "bob"),  # same tenant, another user
    Principal("acme.eu", "alice.b"),  # another tenant; dots (escaped in store namespaces)
    Principal("acme-eu", "alice_b"),  # the ids above with the dots spelled otherwise
)
TICKERS = ("NVDA", "MSFT", "AAPL", "TSLA", "AMZN")
JOURNAL = ("episodes", "extraction_jobs", "memory_candidates", "session_summaries", "procedures")

Say = Callable[[random.Random], str]
STATEMENTS: tuple[Say, ...] = (
    lambda r: f"My investment horizon is {r.randint(1, 30)} years.",
    lambda r: f"Actually my horizon is {r.randint(1, 5)} years, not {r.randint(10, 20)}.",
    lambda r: f"I'm a {r.choice(['conservative', 'moderate', 'aggressive'])} investor.",
    lambda r: f"My base currency is {r.choice(['EUR', 'CHF', 'GBP'])}.",
    lambda r: f"Add {r.choice(TICKERS)} to my watchlist.",
    lambda r: f"Never analyse {r.choice(TICKERS)} from now on.",
    lambda r: f"I prefer companies with {r.choice(['low debt', 'big moats', 'buybacks'])}.",
    lambda r: f"Remind me to revisit the {r.choice(['chip', 'cloud', 'auto'])} sector soon.",
    lambda r: "Maybe I'll try options some day.",
)


@dataclass
class Wrote:
    """What one principal said and did, per thread, as the test drove it."""

    principal: Principal
    threads: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def said(self, thread: str, kind: str, text: str = "") -> None:
        self.threads.setdefault(thread, []).append((kind, text))


@dataclass(frozen=True)
class Backend:
    name: str
    env: dict[str, str]
    ledger: PgLedger | None = None


@pytest.fixture(params=["sqlite", "postgres"])
def backend(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", {})
        return
    with postgres_ledger() as ledger:  # set up by its owner for the application role
        monkeypatch.setenv("ANALYST_FACTS", ledger.app_url)
        yield Backend("postgres", {"ANALYST_FACTS": ledger.app_url}, ledger)


def app_for(principal: Principal) -> Any:
    return AnalystApp.open(Settings.from_env(), principal)


# -- the conversation ---------------------------------------------------------------------


async def session(app: AnalystApp, wrote: Wrote, thread: str, rng: random.Random) -> None:
    """A few random statements, usually a research request decided at random, the end."""
    for say in rng.sample(STATEMENTS, rng.randint(1, 3)):
        text = say(rng)
        await app.start(text, thread_id=thread, keep_session=True)
        wrote.said(thread, "message", text)
    if rng.random() < 0.3:
        await app.memory.end_session(thread)
        return
    request = f"Analyze {rng.choice(TICKERS)}"
    view = await app.start(request, thread_id=thread, keep_session=True)
    wrote.said(thread, "message", request)
    for action in rng.choice([["approve"], ["reject", "approve"], ["reject"]]):
        if view.status != "awaiting_approval":
            break
        decision: dict[str, Any] = {"action": action, "approver": app.principal.user_id}
        decision |= {"draft_hash": view.draft_hash, "feedback": f"More on {rng.random():.3f}."}
        view = await app.decide(thread, decision, keep_session=True)
        wrote.said(thread, action)
    await app.memory.end_session(thread)


async def converse(rng: random.Random) -> dict[Principal, Wrote]:
    wrote = {p: Wrote(p) for p in PRINCIPALS}
    order = list(PRINCIPALS)
    for round_ in range(2):
        rng.shuffle(order)
        for principal in order:
            number = PRINCIPALS.index(principal)
            async with app_for(principal) as app:
                await session(app, wrote[principal], f"p{number}-{round_}", rng)
                confirmable = [
                    c
                    for c in await app.memory.review()
                    if c["kind"] in ("procedure", "fact", "preference", "behaviour")
                ]
                if confirmable:
                    await app.memory.confirm(rng.choice(confirmable)["candidate_id"])
    return wrote


# -- what a principal may see ---------------------------------------------------------------


@dataclass
class Own:
    """A principal's own ids, established from what it wrote."""

    principal: Principal
    threads: set[str]
    episodes: set[str]
    facts: set[str] = field(default_factory=set)
    candidates: set[str] = field(default_factory=set)
    procedures: set[str] = field(default_factory=set)

    def owns(self, row: dict[str, Any], what: str) -> None:
        assert (row["tenant_id"], row["user_id"]) == (
            self.principal.tenant_id,
            self.principal.user_id,
        ), (self.principal, what, row)

    def cites(self, episode_ids: Sequence[str], what: str, item: Any) -> None:
        foreign = set(episode_ids) - self.episodes
        assert not foreign, (self.principal, what, foreign, item)


async def own_ids(app: AnalystApp, wrote: Wrote) -> Own:
    """The principal's episodes (they must be exactly what it said) and ledger facts."""
    episodes = await app.memory.episodes()
    got: dict[str, list[tuple[str, str]]] = {}
    for e in episodes:
        got.setdefault(e["thread_id"], []).append(
            (e["kind"], e["text"] if e["kind"] == "message" else "")
        )
    assert got == wrote.threads, app.principal
    own = Own(app.principal, set(got), {e["episode_id"] for e in episodes})
    for e in episodes:
        own.owns(e, "episode")
    learner = await app.memory.learner()
    for name in REGISTRY:
        for record in await learner.facts.history(subject_for(app.principal), name):
            own.facts.add(record.memory_id)
            own.cites(
                [i for i in (record.source_episode_id, *record.restated_in) if i], "fact", record
            )
    return own


def check_context(own: Own, loaded: dict[str, Any], what: str) -> None:
    for name, fact in (loaded.get("profile") or {}).items():
        assert fact["memory_id"] in own.facts, (own.principal, what, name, fact)
        own.cites(fact["episode_ids"], what, fact)
    for p in loaded.get("procedures") or []:
        own.owns(p, what)
        assert p["procedure_id"] in own.procedures, (own.principal, what, p)
    for s in loaded.get("sessions") or []:
        assert s["session_id"].split("/")[0] in own.threads, (own.principal, what, s)
        own.cites(s["episode_ids"], what, s)
    for item in loaded.get("open_items") or []:
        assert item["session_id"].split("/")[0] in own.threads, (own.principal, what, item)


async def read_paths(app: AnalystApp, own: Own) -> dict[str, Any]:
    """Every read path of the write path, checked against ``own``; returns what it read."""
    candidates = await app.memory.review(status=None)
    for c in candidates:
        own.owns(c, "candidate")
        own.cites(c["episode_ids"], "candidate", c)
    own.candidates = {c["candidate_id"] for c in candidates}
    procedures = await app.memory.procedures(status=None)
    for p in procedures:
        own.owns(p, "procedure")
        own.cites(p["episode_ids"], "procedure", p)
        assert p["candidate_id"] in own.candidates, (own.principal, p)
    own.procedures = {p["procedure_id"] for p in procedures}
    jobs = await app.memory.jobs()
    for j in jobs:
        own.owns(j, "job")
        own.cites(j["episode_ids"], "job", j)
        assert j["thread_id"] in own.threads, (own.principal, j)
    sessions = await app.memory.sessions()
    for s in sessions:
        own.owns(s, "session")
        own.cites(s["episode_ids"], "session", s)
        assert s["thread_id"] in own.threads and set(s["facts_learned"]) <= own.facts, s
    memories = await app.memory.memories(limit=1000)
    for m in memories:
        own.cites(m.metadata.get("episode_ids") or [], "memory", m)
    context = await app.memory.context()
    check_context(own, context, "session_context")
    return {
        "candidates": candidates,
        "procedures": procedures,
        "jobs": jobs,
        "sessions": sessions,
        "context": context,
        "memories": [m.key for m in memories],
    }


def check_planner(own: Own, view: dict[str, Any]) -> None:
    """What a new run's planner used: the principal's own facts, memories and procedures."""
    for name, fact in view["facts_used"].items():
        assert fact["memory_id"] in own.facts, (own.principal, name, fact)
        own.cites(fact["episode_ids"], "facts_used", fact)
    for m in view["recalled"]:
        own.cites(m["episode_ids"], "recalled", m)
    for p in view["procedures"]:
        own.owns(p, "planner procedure")
        assert p["procedure_id"] in own.procedures, (own.principal, p)
    check_context(own, view["context_loaded"], "context_loaded")


async def everyone_reads(wrote: dict[Principal, Wrote], rng: random.Random) -> dict[Principal, Any]:
    """Each principal starts a new run, then reads everything back."""
    seen: dict[Principal, Any] = {}
    for number, principal in enumerate(PRINCIPALS):
        async with app_for(principal) as app:
            thread, request = f"p{number}-new", f"Analyze {rng.choice(TICKERS)}"
            view = await app.start(request, thread_id=thread)
            wrote[principal].said(thread, "message", request)
            own = await own_ids(app, wrote[principal])
            read = await read_paths(app, own)
            check_planner(own, view.to_json())
        seen[principal] = (own, read)
    return seen


def test_no_principal_sees_another_ones_memory(backend: Backend, analyst: Analyst) -> None:
    rng = random.Random(f"{SEED}-{backend.name}")
    wrote = asyncio.run(converse(rng))
    seen = asyncio.run(everyone_reads(wrote, rng))

    # Not vacuous: each principal has its own of every layer the conversation can produce.
    for principal, (own, read) in seen.items():
        assert own.episodes and read["jobs"] and read["sessions"], principal
    assert any(read["procedures"] for _, read in seen.values())
    assert any(read["candidates"] for _, read in seen.values())
    assert any(own.facts for own, _ in seen.values())
    assert any(read["memories"] for _, read in seen.values())
    # Ids never cross: no two principals share an episode, candidate, procedure or fact.
    for layer in ("episodes", "candidates", "procedures", "facts", "threads"):
        everyone = [i for own, _ in seen.values() for i in getattr(own, layer)]
        assert len(everyone) == len(set(everyone)), layer

    if backend.ledger is not None:
        raw_rows_are_scoped(backend.ledger, seen)
        return
    # The CLI reads the same, for the principal whose ids need escaping. (Each command's
    # wiring is the same on every backend, so once is enough; each costs a process start.)
    principal = PRINCIPALS[2]
    own, read = seen[principal]
    cli = replace(analyst, env={**analyst.env, **backend.env})
    who = ("--tenant", principal.tenant_id, "--user", principal.user_id, "--json")
    runs = cli.many(
        ("memory", "review", "--all", *who),
        ("memory", "jobs", *who),
        ("memory", "sessions", *who),
        ("memory", "episodes", *who),
        ("memory", "context", *who),
        ("memory", "procedures", *who),
    )
    review, jobs, sessions, episodes, context, procedures = (run.json() for run in runs)
    assert {c["candidate_id"] for c in review["candidates"]} == own.candidates
    assert {e["episode_id"] for e in episodes["episodes"]} == own.episodes
    assert {j["job_id"] for j in jobs["jobs"]} == {j["job_id"] for j in read["jobs"]}
    assert [s["session_id"] for s in sessions["sessions"]] == [
        s["session_id"] for s in read["sessions"]
    ]
    check_context(own, context["context_loaded"], "cli context")
    assert [p["procedure_id"] for p in procedures["procedures"]] == [
        p["procedure_id"] for p in read["procedures"] if p["status"] == "active"
    ]


def raw_rows_are_scoped(ledger: PgLedger, seen: dict[Principal, Any]) -> None:
    """As the application role, acting as one principal, a query without any filter sees
    only that principal's journal rows (row security, not the application's WHERE)."""
    with psycopg.connect(ledger.admin_url) as admin:
        everyone = {
            table: admin.execute(
                f"SELECT tenant_id, user_id, count(*) FROM analyst_facts.{table}"
                " GROUP BY tenant_id, user_id"
            ).fetchall()
            for table in JOURNAL
        }
    with psycopg.connect(ledger.app_url) as conn:
        for principal in seen:
            for table in JOURNAL:
                conn.execute(
                    "SELECT set_config('app.tenant_id', %s, true),"
                    " set_config('app.user_id', %s, true)",
                    (principal.tenant_id, principal.user_id),
                )
                visible = conn.execute(
                    f"SELECT tenant_id, user_id, count(*) FROM analyst_facts.{table}"
                    " GROUP BY tenant_id, user_id"
                ).fetchall()
                mine = [
                    row
                    for row in everyone[table]
                    if row[:2] == (principal.tenant_id, principal.user_id)
                ]
                assert visible == mine, (principal, table, visible)
                conn.rollback()
    assert {row[:2] for row in everyone["episodes"]} == {
        (p.tenant_id, p.user_id) for p in seen
    }  # every principal has rows to hide
