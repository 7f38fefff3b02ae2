"""Retention: the sweep deletes exactly what the policy says, across tiers.

Real parts throughout: the compiled graph and SQLite checkpoints (one run per user, so each
has a thread), the ledger and journal (embedded SQLite, then Postgres through its app role),
Qdrant Edge with MiniLM. The services clock is injected: items are written at chosen ages
before the sweep time ``T``; threads carry the wall clock in their checkpoints, so ``T`` is
100 days from now and each run's thread is idle for 100 days at ``T``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.app import AnalystApp
from agent.errors import ConfigurationError
from agent.nodes.services import Services
from agent.settings import Settings
from memory.facts import MemoryDelta, subject_for
from memory.identity import Principal
from memory.journal.records import Candidate, Procedure, SessionSummary
from memory.recall import aremember
from memory.retention import RetentionPolicy
from tests.integration.conftest import Analyst, OpenApp
from tests.support.servers import PgLedger

pytestmark = pytest.mark.integration

T = datetime.now(UTC).replace(microsecond=0) + timedelta(days=100)
ALL = 1_000_000


class Clock:
    """The services clock, set by the test."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def ago(days: float) -> datetime:
    return T - timedelta(days=days)


@asynccontextmanager
async def opened(user: str, clock: Clock, *, sweep: bool = False) -> AsyncIterator[AnalystApp]:
    settings = replace(Settings.from_env(), sweep_on_start=sweep)
    services = replace(Services.from_settings(settings), clock=clock)
    async with AnalystApp.open(settings, Principal("default", user), services) as app:
        yield app


async def fill(user: str) -> dict[str, Any]:
    """One item of every type older than its age, one younger, and the high-importance ones;
    returns their ids by name."""
    clock = Clock(ago(10))
    ids: dict[str, Any] = {}
    async with opened(user, clock) as app:
        await app.start("Analyse NVDA", thread_id=f"{user}-t")
        learner = await app.memory.learner()
        journal, p = learner.journal, app.principal
        old = await learner.record(f"{user}-a", "message", "Bonds bore me.", turn="1", at=ago(400))
        new = await learner.record(f"{user}-b", "message", "Gold shines.", turn="1", at=ago(10))
        ids.update(old_episode=old.episode_id, new_episode=new.episode_id)

        def summary(name: str, ended: datetime, cites: str) -> SessionSummary:
            return SessionSummary(
                p.tenant_id,
                f"{user}-{name}",
                p.user_id,
                f"{user}-b",
                ended,
                ended,
                name,
                name,
                episode_ids=(cites,),
            )

        for name, ended, cites in (
            ("s_old", ago(100), new.episode_id),
            ("s_derived", ago(10), old.episode_id),
            ("s_new", ago(10), new.episode_id),
        ):
            await journal.put_summary(summary(name, ended, cites))
            ids[name] = f"{user}-{name}"
        candidates = [
            Candidate(
                p.tenant_id,
                f"{user}-{name}",
                p.user_id,
                "preference",
                {"text": name},
                name,
                (cites,),
                "pending",
                "",
                created,
            )
            for name, created, cites in (
                ("c_old", ago(100), new.episode_id),
                ("c_derived", ago(10), old.episode_id),
                ("c_new", ago(10), new.episode_id),
            )
        ]
        await journal.add_candidates(candidates)
        ids.update({c.quote: c.candidate_id for c in candidates})

        clock.at = ago(40)
        for name, kind, cites in (
            ("j_old", "decision", new.episode_id),
            ("j_covering", "session_end", new.episode_id),
        ):
            job = await journal.enqueue(kind, f"{user}-b", [cites])  # type: ignore[arg-type]
            claimed = await journal.claim()
            assert claimed is not None and claimed.job_id == job.job_id
            await journal.complete(job.job_id, {})
            ids[name] = job.job_id
        ids["j_derived"] = (
            await journal.enqueue("session_end", f"{user}-a", [old.episode_id])
        ).job_id

        clock.at = ago(400)
        for name, review in (("p_retired", ago(300)), ("p_due", ago(5))):
            await journal.put_procedure(
                Procedure(
                    p.tenant_id,
                    f"{user}-{name}",
                    p.user_id,
                    f"never analyse {name}",
                    {"exclude_ticker": "TSLA"},
                    "active",
                    ago(500),
                    review,
                    episode_ids=(old.episode_id,),
                )
            )
            ids[name] = f"{user}-{name}"
        await journal.retire_procedure(ids["p_retired"])

        subject = subject_for(p)
        for value, since in (("conservative", ago(500)), ("aggressive", ago(400))):
            record = await learner.facts.record(
                MemoryDelta(
                    subject=subject, attribute="risk_tolerance", value=value, valid_from=since
                )
            )
            ids[f"fact_{value}"] = record.memory_id

        store = await app.tiers.store()
        memories: list[tuple[str, str, int, datetime, list[str] | None]] = [
            ("ev_old", "decision", 6, ago(200), None),
            ("ev_new", "decision", 6, ago(10), None),
            ("mem_old", "note", 5, ago(400), None),
            ("mem_new", "note", 5, ago(10), None),
            ("mem_high", "note", 9, ago(400), None),
            ("mem_derived", "note", 5, ago(10), [old.episode_id]),
        ]
        for name, kind, importance, at, sources in memories:
            ids[name] = await aremember(
                store,
                p,
                f"{user} {name} memory about {kind}",
                kind=kind,
                importance=importance,
                at=at,
                episode_ids=sources,
            )
    return ids


async def snapshot(app: AnalystApp) -> dict[str, set[str]]:
    """The ids of every tier of the principal, read from storage."""
    learner = await app.memory.learner()
    j = learner.journal
    subject = subject_for(app.principal)
    return {
        "episodes": {e.episode_id for e in await j.list_episodes(limit=ALL)},
        "summaries": {s.session_id for s in await j.summaries(limit=ALL)},
        "candidates": {c.candidate_id for c in await j.candidates(limit=ALL)},
        "extraction_jobs": {x.job_id for x in await j.jobs(limit=ALL)},
        "procedures": {x.procedure_id for x in await j.procedures(status=None)},
        "facts": {r.memory_id for r in await learner.facts.history(subject, "risk_tolerance")},
        "store": {m.key for m in await app.memory.memories(limit=ALL)},
        "threads": {t.thread_id for t in app.index.list(app.principal, limit=ALL)},
    }


def deleted_ids(receipt: dict[str, Any]) -> dict[str, set[str]]:
    found = {tier: set(t["ids"]) for tier, t in receipt["deleted"].items()}
    found["store"] = {key.rsplit("/", 1)[-1] for key in found["store"]}
    found.pop("embedding_cache")
    return found


async def test_sweep_deletes_exactly_what_the_policy_says(
    backend: PgLedger | None, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_REVIEW_DAYS", "30")
    mira, noor = await fill("mira"), await fill("noor")
    async with opened("noor", Clock(T)) as app:
        noor_before = await snapshot(app)

    async with opened("mira", Clock(T)) as app:
        before = await snapshot(app)
        plan = await app.memory.sweep(dry_run=True)
        assert await snapshot(app) == before  # a dry run deletes nothing
        receipt = await app.memory.sweep()
        after = await snapshot(app)
        audit = await app.memory.audit()

    expected = {
        "threads": {"mira-t"},
        "episodes": {mira["old_episode"]},
        "summaries": {mira["s_old"], mira["s_derived"]},
        "candidates": {mira["c_old"], mira["c_derived"]},
        "extraction_jobs": {mira["j_old"], mira["j_derived"]},
        "procedures": {mira["p_retired"]},
        "facts": {mira["fact_conservative"]},
        "store": {mira["ev_old"], mira["mem_old"], mira["mem_derived"]},
    }
    assert plan["confirmed"] is False and deleted_ids(plan) == expected
    assert receipt["confirmed"] is True and deleted_ids(receipt) == expected
    assert receipt["deleted"]["embedding_cache"]["count"] > 0
    # Checked in storage: exactly those went, the younger and high-importance ones stayed.
    assert after == {tier: before[tier] - expected[tier] for tier in before}
    assert {mira["new_episode"], mira["j_covering"], mira["p_due"]} <= set().union(*after.values())
    assert {mira["mem_high"], mira["ev_new"], mira["mem_new"]} <= after["store"]
    # The other user's items are untouched.
    async with opened("noor", Clock(T)) as app:
        assert await snapshot(app) == noor_before
    assert noor["old_episode"] in noor_before["episodes"]

    due = {k["id"].rsplit("/", 1)[-1]: k for k in receipt["kept"] if k.get("status")}
    assert set(due) == {mira["fact_aggressive"], mira["p_due"], mira["mem_high"]}
    assert all(k["owner"] == "mira" and k["confirm"] and k["delete"] for k in due.values())
    assert "analyst facts record me risk_tolerance" in due[mira["fact_aggressive"]]["confirm"]
    assert any(
        k["tier"] == "extraction_jobs" and "1 finished" in k["what"] for k in receipt["kept"]
    )
    assert receipt["scope"]["retention"]["summaries"] == "90d"

    # Every deletion is audited with its reason; the sweep itself once.
    reasons = {(e["tier"], e["reason"]) for e in audit if e["action"] == "delete"}
    for tier, reason in [
        ("threads", "retention: threads idle for over 90d"),
        ("episodes", "retention: episodes older than 365d"),
        ("summaries", "retention: summaries older than 90d"),
        ("summaries", "retention: derived from episodes older than 365d"),
        ("candidates", "retention: candidates older than 90d"),
        ("extraction_jobs", "retention: done and failed extraction jobs older than 30d"),
        ("extraction_jobs", "retention: derived from episodes older than 365d"),
        ("procedures", "retention: retired procedures older than 365d"),
        ("facts", "retention: fact history rows older than 365d"),
        ("store", "retention: events older than 180d"),
        ("store", "retention: memories older than 365d"),
        ("store", "retention: derived from episodes older than 365d"),
    ]:
        assert (tier, reason) in reasons, (tier, reason, sorted(reasons))
    audited = {i for e in audit if e["action"] == "delete" for i in e["item_ids"]}
    for tier, gone in expected.items():
        if tier != "store":
            assert gone <= audited, tier
    assert [e["action"] for e in audit].count("sweep") == 1


async def test_start_up_sweep_runs_once_a_day(backend: PgLedger | None, isolated_env: Path) -> None:
    mira = await fill("mira")

    async def sweeps(at: datetime) -> tuple[int, set[str]]:
        async with opened("mira", Clock(at), sweep=True) as app:
            entries = await app.memory.audit()  # opens memory: the start-up sweep runs first
            return [e["action"] for e in entries].count("sweep"), (await snapshot(app))["episodes"]

    count, episodes = await sweeps(T)
    assert count == 1 and mira["old_episode"] not in episodes
    assert (await sweeps(T + timedelta(hours=20)))[0] == 1  # the same day: not again
    assert (await sweeps(T + timedelta(hours=25)))[0] == 2  # the next day: again


def test_retention_setting_names_the_fix() -> None:
    policy = Settings.from_env({"ANALYST_RETENTION": "summaries=30d, events=26w"}).retention
    assert policy.label("summaries") == "30d" and policy.age("events") == timedelta(weeks=26)
    assert policy.label("episodes") == "365d"  # the defaults hold for the rest
    with pytest.raises(ConfigurationError, match=r"'sessions' is not a memory type.*summaries"):
        RetentionPolicy.parse("sessions=30d")
    with pytest.raises(ConfigurationError, match="summaries 'forever' is not a duration"):
        RetentionPolicy.parse("summaries=forever")
    with pytest.raises(ConfigurationError, match="type=age"):
        RetentionPolicy.parse("summaries")
    with pytest.raises(ConfigurationError, match="ANALYST_SWEEP_ON_START"):
        Settings.from_env({"ANALYST_SWEEP_ON_START": "maybe"})


def test_cli_sweep_json(analyst: Analyst, open_app: OpenApp) -> None:
    import asyncio

    async def seed() -> str:
        async with open_app() as app:
            learner = await app.memory.learner()
            at = datetime.now(UTC) - timedelta(days=400)
            old = await learner.record("cli-a", "message", "An old word.", turn="1", at=at)
            await learner.record("cli-b", "message", "A new word.", turn="1")
            return old.episode_id

    old = asyncio.run(seed())
    plan = analyst.json("memory", "sweep", "--dry-run")
    assert plan["confirmed"] is False and plan["deleted"]["episodes"]["ids"] == [old]
    done = analyst.json("memory", "sweep")
    assert done["confirmed"] is True and done["deleted"]["episodes"]["ids"] == [old]
    assert analyst.json("memory", "sweep")["deleted"]["episodes"]["ids"] == []
    text = analyst("memory", "sweep", "--dry-run")
    assert text.code == 0 and "Would delete 0 episodes" in text.out, str(text)
    bad = analyst.env | {"ANALYST_RETENTION": "summaries=soon"}
    run = Analyst(bad, analyst.data_dir, analyst.memory_dir).fail("memory", "sweep")
    assert "ANALYST_RETENTION summaries 'soon' is not a duration" in run.err
