"""The write path survives ``kill -9``: an extraction job is completed exactly once.

Real processes throughout: ``analyst`` runs as its console script, and the process that dies
is a child Python process (:mod:`tests.support.memory_crash`) acting through
:class:`~agent.app.AnalystApp`, killed with ``SIGKILL`` at a chosen point, with the app still
open. Afterwards ``analyst memory worker`` must finish the work, and storage must hold every
result once: the same episodes, events, facts, candidates and summaries as a run that never
crashed. Embedded defaults (SQLite ledger and journal, Qdrant Edge).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent.app import AnalystApp
from agent.settings import Settings
from memory.facts import subject_for
from memory.recall import alist_memories
from tests.integration.conftest import Analyst
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

CHILD = Path(__file__).resolve().parents[1] / "support" / "memory_crash.py"
LEASE_SECONDS = 1.0
#: What a crashed-and-recovered run and a run that never crashed must hold alike.
COMPARED = (
    "episodes",
    "events",
    "facts",
    "candidates",
    "summaries",
    "procedures",
    "jobs",
    "results",
)


def killed_child(analyst: Analyst, *args: str) -> str:
    """Run the crash helper; it must die by SIGKILL. Returns what it printed before dying."""
    proc = subprocess.run(
        [sys.executable, str(CHILD), *args],
        env={**analyst.env, "ANALYST_EXTRACT_INLINE": "0"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def drained(env: dict[str, str]) -> list[dict[str, Any]]:
    """What ``analyst memory worker`` does, in this process."""

    async def drain() -> list[dict[str, Any]]:
        settings = Settings.from_env(env)
        async with AnalystApp.open(settings, settings.principal) as app:
            return await app.memory.drain()

    return asyncio.run(drain())


def stored(env: dict[str, str]) -> dict[str, Any]:
    """Everything the write path keeps for the environment's principal, as comparable values
    (ids and contents; no wall-clock stamps and no random ledger ids)."""

    async def read() -> dict[str, Any]:
        settings = Settings.from_env(env)
        async with AnalystApp.open(settings, settings.principal) as app:
            learner = await app.memory.learner()
            journal = learner.journal
            subject = subject_for(app.principal)
            facts = {
                name: await learner.facts.history(subject, name)
                for name in await _attributes(learner)
            }
            memory_ids = {
                r.memory_id: (r.attribute, r.valid_from) for h in facts.values() for r in h
            }
            memories = await alist_memories(await app.tiers.store(), app.principal, limit=1000)
            jobs = await journal.jobs(limit=1000)
            return {
                "episodes": [(e.episode_id, e.kind, e.text) for e in await journal.list_episodes()],
                "events": sorted(
                    (m.key, m.kind, m.text, tuple(m.metadata.get("episode_ids") or []))
                    for m in memories
                ),
                "facts": {
                    name: [
                        (
                            r.value,
                            r.source,
                            r.valid_from,
                            r.valid_to,
                            r.source_episode_id,
                            r.restated_in,
                            r.withdrawn_at is None,
                        )
                        for r in history
                    ]
                    for name, history in facts.items()
                },
                "candidates": sorted(
                    (c.candidate_id, c.kind, c.status, c.quote, c.episode_ids, c.job_id)
                    for c in await journal.candidates(limit=1000)
                ),
                "summaries": [
                    (
                        s.session_id,
                        s.topic,
                        s.summary,
                        s.open_items,
                        s.episode_ids,
                        tuple(memory_ids.get(i, i) for i in s.facts_learned),
                    )
                    for s in await journal.summaries(limit=100)
                ],
                "procedures": await journal.procedures(status=None),
                "jobs": sorted((j.job_id, j.kind, j.status, j.episode_ids) for j in jobs),
                "results": {j.job_id: _comparable(j.result, memory_ids) for j in jobs},
                "attempts": {j.job_id: j.attempts for j in jobs},
                "state": {j.job_id: (j.kind, j.status, j.attempts, j.leased_until) for j in jobs},
            }

    return asyncio.run(read())


async def _attributes(learner: Any) -> list[str]:
    profile = await learner.facts.profile(subject_for(learner.principal))
    return sorted(profile)


def _comparable(result: Any, memory_ids: dict[str, Any]) -> Any:
    """A job's result with ledger memory ids (random per record) replaced by what they name."""
    if isinstance(result, dict):
        return {k: _comparable(v, memory_ids) for k, v in result.items()}
    if isinstance(result, list):
        return [_comparable(v, memory_ids) for v in result]
    return memory_ids.get(result, result) if isinstance(result, str) else result


def assert_nothing_twice(layers: dict[str, Any]) -> None:
    """No episode, event, candidate, summary or job id appears twice; no fact was restated
    by a replay (a job re-reading an episode finds the fact it stored, same episode)."""
    for name in ("episodes", "events", "candidates", "summaries", "jobs"):
        ids = Counter(item[0] for item in layers[name])
        assert [i for i, n in ids.items() if n > 1] == [], (name, layers[name])
    for name, history in layers["facts"].items():
        starts = Counter((repr(value), valid_from) for value, _, valid_from, *_ in history)
        assert [k for k, n in starts.items() if n > 1] == [], (name, history)
        assert all(restated == () for *_, restated, _ in history), (name, history)


def test_a_process_killed_after_an_approval_leaves_its_extraction_to_the_worker(
    analyst: Analyst,
) -> None:
    draft = analyst.json("run", "My investment horizon is 10 years. Analyze NVDA", "--thread", "T")
    assert draft["status"] == "awaiting_approval"

    said = killed_child(analyst, "decide", "T")
    assert '"status": "published"' in said and '"memory_jobs": []' in said, said

    # The approval is on record; its extraction is queued, not run.
    queued = analyst.json("memory", "jobs")["jobs"]
    assert sorted((j["kind"], j["status"], j["attempts"]) for j in queued) == [
        ("decision", "pending", 0),
        # The run ended its session before dying: the session's summary is queued too.
        ("session_end", "pending", 0),
    ]
    ran = analyst.json("memory", "worker")["jobs"]
    assert sorted((j["kind"], j["status"], j["attempts"]) for j in ran) == [
        ("decision", "done", 1),
        ("session_end", "done", 1),
    ]
    assert analyst.json("memory", "worker") == {"jobs": []}

    layers = stored(analyst.env)
    assert_nothing_twice(layers)
    (request, approval) = layers["episodes"]
    assert (request[1], approval[1]) == ("message", "approve")
    (decision,) = [j for j in queued if j["kind"] == "decision"]
    assert decision["episode_ids"] == [request[0], approval[0]]
    # One decision event, though two jobs (decision, session end) extracted it.
    (event,) = [e for e in layers["events"] if e[1] == "decision"]
    assert event[3] == (approval[0],)
    (horizon,) = layers["facts"]["horizon_years"]
    assert horizon[:2] == (10, "stated") and horizon[4] == request[0]
    (summary,) = layers["summaries"]
    assert summary[4] == (request[0], approval[0])
    assert [c for c in layers["candidates"] if c[2] == "pending"] == []


def test_a_worker_killed_mid_job_is_replaced_and_the_results_exist_once(
    analyst: Analyst, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_EXTRACT_INLINE", "0")

    async def converse() -> None:
        settings = Settings.from_env()
        async with AnalystApp.open(settings, settings.principal) as app:
            for text in (
                "My investment horizon is 10 years.",
                "Actually my horizon is 2 years, not 10.",
                "Add NVDA to my watchlist.",
                "Add MSFT to my watchlist.",
                "Never analyse TSLA from now on.",
                "I prefer companies with strong balance sheets.",
                "Remind me to revisit the chip makers after earnings.",
            ):
                await app.start(text, thread_id="conv", keep_session=True)
            draft = await app.start("Analyze NVDA", thread_id="conv", keep_session=True)
            decision = {"action": "approve", "approver": "tester", "draft_hash": draft.draft_hash}
            await app.decide("conv", decision, keep_session=True)
            await app.memory.end_session("conv")

    asyncio.run(converse())
    queued = stored(analyst.env)["state"]
    assert sorted((kind, status) for kind, status, *_ in queued.values()) == [
        ("decision", "pending"),
        ("session_end", "pending"),
    ]
    # A twin of this storage, drained by a worker that never crashes: the reference.
    clean = analyst.data_dir.with_name("clean")
    shutil.copytree(analyst.data_dir, clean / "data")
    shutil.copytree(analyst.memory_dir, clean / "memory")
    clean_env = {
        **analyst.env,
        "ANALYST_DATA_DIR": str(clean / "data"),
        "ANALYST_MEMORY_DIR": str(clean / "memory"),
    }

    said = killed_child(analyst, "drain", str(LEASE_SECONDS))
    assert '"died_in": "session_end"' in said, said
    partial = stored(analyst.env)
    (lost,) = [i for i, (kind, *_) in partial["state"].items() if kind == "session_end"]
    _, status, attempts, leased_until = partial["state"][lost]
    assert (status, attempts) == ("running", 1) and leased_until is not None
    assert partial["summaries"] == []  # it died before the summary: a partial application
    assert any(job_id == lost for *_, job_id in partial["candidates"]), partial["candidates"]

    # The next worker takes the job once its lease has expired (seconds, not minutes).
    wait_until(lambda: datetime.now(UTC) > leased_until, "the lease's expiry", interval=0.05)
    (redone,) = analyst.json("memory", "worker")["jobs"]
    assert (redone["job_id"], redone["status"], redone["attempts"]) == (lost, "done", 2)
    assert "lost its lease" in (redone["last_error"] or "")

    assert sorted(j["kind"] for j in drained(clean_env)) == ["decision", "session_end"]
    crashed, never = stored(analyst.env), stored(clean_env)
    assert_nothing_twice(crashed)
    assert crashed["attempts"] == {**never["attempts"], lost: 2}
    for layer in COMPARED:
        assert crashed[layer] == never[layer], layer
    # The replay found what the dead worker had stored; the summary is there once.
    assert len(crashed["summaries"]) == 1
    assert set(partial["candidates"]) <= set(crashed["candidates"])
    assert set(partial["events"]) <= set(crashed["events"])
    # Statements the hot path applied are found, not doubted: no fact waits for review.
    assert [c for c in crashed["candidates"] if c[1] == "fact"] == []
    assert [h[0] for h in crashed["facts"]["watchlist"]] == [["NVDA"], ["NVDA", "MSFT"]]
    assert [h[0] for h in crashed["facts"]["horizon_years"]] == [10, 2]
