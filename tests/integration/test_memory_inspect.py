"""Seed 003's user-initiated controls, on the real app and stores: ``analyst memory show``
(what the agent remembers about you, each item with a command that works), ``why`` (exactly
what the last plan used, read from the thread), ``remember`` (as a fact, a preference or a
procedure, each citing an episode), ``list`` and ``export`` (everything of the principal and
nothing of anyone else), and the chat's /memories, /why and /remember.

In-process tests drive :class:`AnalystApp` with a ticking clock (as the write-path replay
does); CLI tests run the installed console script; the chat runs in a pseudo-terminal.
"""

from __future__ import annotations

import json
import shlex
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agent.app import AnalystApp
from agent.errors import ThreadNotFoundError
from memory.errors import InvalidMemoryError
from tests.integration.test_chat import PROMPT, spawn_chat
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

START = datetime(2026, 9, 1, 10, tzinfo=UTC)


def session(user: str = "mira", *, day: int = 0) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(START + timedelta(days=day), user)


async def converse(app: AnalystApp) -> dict[str, Any]:
    """A first conversation (a stated horizon, a report approved, the session ended) and a
    second one asking for research, planned with what the first taught."""
    await app.start("My investment horizon is 10 years.", thread_id="s1", keep_session=True)
    draft = await app.start("Analyze NVDA", thread_id="s1", keep_session=True)
    assert draft.status == "awaiting_approval"
    decision = {"action": "approve", "approver": "mira", "draft_hash": draft.draft_hash}
    await app.decide("s1", decision, keep_session=True)
    await app.memory.end_session("s1")
    remembered = await app.memory.remember("I prefer companies with low debt")
    planned = await app.start("Analyze NVDA", thread_id="s2", keep_session=True)
    assert planned.status == "awaiting_approval" and planned.plan
    return {"preference": remembered["stored"][0]["id"], "view": planned}


async def test_show_lists_every_layer_with_its_commands(isolated_env: Path) -> None:
    async with session() as app:
        done = await converse(app)
        rule = await app.memory.remember("Never analyse TSLA from now on.", as_="procedure")
        asked = await app.start(
            "Never analyse META from now on.", thread_id="s3", keep_session=True
        )
        assert asked.status == "awaiting_confirmation"
        await app.answer_confirmation("s3", {})  # later: it stays a pending candidate
        seen = await app.memory.show()

    (horizon,) = seen["profile"]
    assert (horizon["attribute"], horizon["value"], horizon["source"]) == (
        "horizon_years",
        10,
        "stated",
    )
    assert horizon["episode_ids"] and horizon["since"].startswith("2026-09-01")
    assert horizon["edit"] == "analyst facts record me horizon_years 10"
    assert horizon["delete"] == "analyst facts retract me horizon_years"
    (procedure,) = seen["procedures"]
    assert procedure["procedure_id"] == rule["stored"][0]["id"]
    assert procedure["delete"] == f"analyst memory procedures --retire {rule['stored'][0]['id']}"
    (summary,) = [s for s in seen["sessions"] if s["thread_id"] == "s1"]
    assert summary["summary"] and summary["episode_ids"]
    (preference,) = seen["preferences"]
    assert preference["key"] == done["preference"]
    assert preference["delete"] == f"analyst memory forget --key {done['preference']}"
    (event,) = seen["events"]
    assert event["kind"] == "decision" and event["delete"].endswith(event["key"])
    (candidate,) = seen["candidates"]
    assert candidate["kind"] == "procedure" and "META" in candidate["quote"]
    assert candidate["confirm"] == f"analyst memory confirm {candidate['candidate_id']}"
    assert candidate["reject"] == f"analyst memory reject {candidate['candidate_id']}"

    # The same storage seen by another user holds nothing of mira's.
    async with session("noor") as other:
        theirs = await other.memory.show()
        exported = await other.memory.export()
        with pytest.raises(ThreadNotFoundError):
            await other.memory.why("s2")
    assert all(not theirs[k] for k in ("profile", "procedures", "sessions", "preferences"))
    assert not theirs["events"] and not theirs["memories"] and not theirs["candidates"]
    assert all(
        not exported[k]
        for k in ("episodes", "facts", "candidates", "procedures", "sessions", "jobs", "memories")
    )


async def test_why_lists_exactly_what_the_last_plan_used(isolated_env: Path) -> None:
    async with session() as app:
        done = await converse(app)
        used = await app.memory.why("s2")
        view = await app.view("s2")
    assert view.facts_used and view.recalled  # the comparison below is not vacuous
    assert {
        f["attribute"]: {k: v for k, v in f.items() if k != "attribute"} for f in used["facts"]
    } == view.facts_used
    assert used["facts"][0]["memory_id"] and used["facts"][0]["episode_ids"]
    assert [{k: v for k, v in m.items() if k != "cited"} for m in used["recalled"]] == view.recalled
    assert done["preference"] in [m["key"] for m in used["recalled"]]
    for m in used["recalled"]:
        assert set(m["score"]) == {"recency", "importance", "relevance", "view", "total"}
        assert m["cited"] == (m["key"] in view.memories_used)
    assert used["procedures"] == view.procedures
    assert used["plan"] == [step["id"] for step in view.plan] and used["planned"]
    assert used["context_loaded"] == view.context_loaded
    assert [s["session_id"] for s in used["context_loaded"]["sessions"]]  # s1's summary


async def test_remember_stores_each_kind_with_an_episode(isolated_env: Path) -> None:
    async with session() as app:
        fact = await app.memory.remember("My base currency is EUR.", as_="fact")
        preference = await app.memory.remember("I prefer companies with low debt")
        procedure = await app.memory.remember("Never analyse TSLA from now on.", as_="procedure")
        before = await app.memory.episodes()
        for text, kind in (("hello there", "fact"), ("always mention the data date", "procedure")):
            with pytest.raises(InvalidMemoryError, match="nothing was stored"):
                await app.memory.remember(text, as_=kind)  # type: ignore[arg-type]
        after = await app.memory.episodes()
        learner = await app.memory.learner()
        currency = await learner.facts.current(learner.subject, "base_currency")
        memories = {m.key: m for m in await app.memory.memories()}
        procedures = await app.memory.procedures()
        # The worker finds nothing to extract again from what was remembered.
        assert await app.memory.drain() == []
        assert await app.memory.review() == []

    assert after == before  # a refusal stores nothing, not even the episode
    episodes = {e["episode_id"]: e for e in before}
    for done in (fact, preference, procedure):
        assert episodes[done["episode_id"]]["text"] in (
            "My base currency is EUR.",
            "I prefer companies with low debt",
            "Never analyse TSLA from now on.",
        )
        assert done["scope"].startswith("user:mira")
        assert all(item["episode_ids"] == [done["episode_id"]] for item in done["stored"])

    (stored,) = fact["stored"]
    assert currency is not None and currency.memory_id == stored["id"]
    assert (currency.value, currency.source) == ("EUR", "confirmed")
    assert currency.source_episode_id == fact["episode_id"]
    assert stored["remove"] == "analyst facts retract me base_currency"

    (kept,) = preference["stored"]
    m = memories[kept["id"]]
    assert (m.kind, m.importance, m.text) == ("preference", 7, "I prefer companies with low debt")
    assert list(m.metadata["episode_ids"]) == [preference["episode_id"]]

    (rule,) = procedure["stored"]
    (active,) = procedures
    assert active["procedure_id"] == rule["id"] and active["rule"] == {"exclude_ticker": "TSLA"}
    assert active["episode_ids"] == [procedure["episode_id"]]


async def test_export_holds_every_item_and_nothing_of_another_user(isolated_env: Path) -> None:
    async with session("noor", day=-1) as other:
        await other.memory.remember("My horizon is 3 years.", as_="fact")
        await other.memory.remember("I prefer utilities")
    async with session() as app:
        done = await converse(app)
        await app.memory.remember("Never analyse TSLA from now on.", as_="procedure")
        await app.memory.end_session("s2")
        exported = await app.memory.export()
        episodes = await app.memory.episodes()
        listing = await app.memory.listing()
        memories = await app.memory.memories()
        sessions = await app.memory.sessions()
    assert list(exported) == [
        "format",
        "version",
        "exported_at",
        "tenant_id",
        "user_id",
        "subject",
        "episodes",
        "facts",
        "candidates",
        "procedures",
        "sessions",
        "jobs",
        "memories",
    ]
    assert exported["user_id"] == "mira" and exported["subject"] == "user:mira"
    assert [e["episode_id"] for e in exported["episodes"]] == [e["episode_id"] for e in episodes]
    assert [r["value"] for r in exported["facts"]["horizon_years"]] == [10]
    assert {m["key"] for m in exported["memories"]} == {m.key for m in memories}
    assert done["preference"] in {m["key"] for m in exported["memories"]}
    assert {s["session_id"] for s in exported["sessions"]} == {s["session_id"] for s in sessions}
    assert len(exported["procedures"]) == 1 and exported["jobs"]
    text = json.dumps(exported)
    assert "noor" not in text and "utilities" not in text and "3 years" not in text
    # ``list``: one row per remembered item across the layers, each with its id.
    ids = {r["id"] for r in listing}
    assert {m.key for m in memories} <= ids
    assert {s["session_id"] for s in sessions} <= ids
    assert {r["layer"] for r in listing} >= {
        "fact",
        "procedure",
        "preference",
        "decision",
        "session",
    }


def test_cli_show_prints_commands_that_work(analyst: Any) -> None:
    remembered = analyst.json("memory", "remember", "my horizon is 5 years", "--as", "fact")
    assert remembered["stored"][0]["value"] == 5
    rule = analyst.json("memory", "remember", "Never analyse TSLA from now on", "--as", "procedure")
    assert analyst("memory", "remember", "I like dividend stocks").code == 0

    shown = analyst("memory", "show")
    assert shown.code == 0, str(shown)
    for line in (
        "horizon_years: 5 (confirmed since",
        "delete: analyst facts retract me horizon_years",
        f"retire: analyst memory procedures --retire {rule['stored'][0]['id']}",
        "I like dividend stocks (preference,",
    ):
        assert line in shown.out, shown.out
    seen = analyst.json("memory", "show")
    (horizon,) = seen["profile"]

    # The printed commands do what they say: edit, then delete the fact; retire the rule.
    assert analyst(*shlex.split(horizon["edit"].replace("5", "7"))[1:]).code == 0
    assert analyst.json("memory", "show")["profile"][0]["value"] == 7
    assert analyst(*shlex.split(horizon["delete"])[1:]).code == 0
    (procedure,) = seen["procedures"]
    assert analyst(*shlex.split(procedure["delete"])[1:]).code == 0
    (preference,) = seen["preferences"]
    assert analyst(*shlex.split(preference["delete"])[1:]).code == 0
    after = analyst.json("memory", "show")
    assert not after["profile"] and not after["procedures"] and not after["preferences"]

    refused = analyst.fail("memory", "remember", "hello there", "--as", "fact")
    assert "No profile attribute recognised" in refused.err
    assert analyst.fail("memory", "remember", "x", "--as", "rumour").code == 2
    listed = analyst("memory", "list")
    assert "Nothing remembered about you yet." in listed.out
    exported = json.loads(analyst("memory", "export").out)
    assert len(exported["episodes"]) == 3 and exported["user_id"] == "tester"
    assert not analyst.json("memory", "show", "--user", "someone-else")["profile"]


def test_chat_remember_why_and_memories(analyst: Any) -> None:
    child = spawn_chat(analyst)
    try:
        child.sendline("/remember my horizon is 10 years as fact")
        child.expect_exact("Remembered as fact for user:tester (tenant default)")
        child.expect(r"fact (\S+): horizon_years = 10 \(episode (ep-[0-9a-f]+)\)")
        fact_id = child.match.group(1)
        child.expect_exact("remove: analyst facts retract me horizon_years")
        child.expect_exact(PROMPT)

        child.sendline("/remember I prefer companies with low debt")
        child.expect(r"preference (mem-[0-9a-f]+): 'I prefer companies with low debt'")
        key = child.match.group(1)
        child.expect_exact(f"remove: analyst memory forget --key {key}")
        child.expect_exact(PROMPT)

        child.sendline("Analyze NVDA")
        child.expect(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA")
        thread_id = child.match.group(1)
        child.expect_exact(PROMPT)

        child.sendline("/why")
        child.expect_exact(f"Thread {thread_id} · awaiting approval")
        child.expect_exact("Plan: ")
        child.expect_exact("horizon_years: 10 (confirmed since")
        child.expect_exact(f"fact {fact_id}")
        child.expect_exact("Recalled memories:")
        child.expect_exact(f"{key} [preference] 'I prefer companies with low debt' score")
        child.expect_exact(PROMPT)

        child.sendline("/memories")
        child.expect_exact("What the analyst remembers about you (tester, tenant default):")
        child.expect_exact("delete: analyst facts retract me horizon_years")
        child.expect_exact(f"delete: analyst memory forget --key {key}")
        child.expect_exact(PROMPT)

        child.sendline("/remember hello there as fact")
        child.expect_exact("error: No profile attribute recognised in 'hello there'")
        child.expect_exact(PROMPT)

        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before

    used = analyst.json("memory", "why", thread_id)
    state = analyst.state(thread_id)
    assert [f["memory_id"] for f in used["facts"]] == [
        f["memory_id"] for f in state["facts_used"].values()
    ]
    assert [m["key"] for m in used["recalled"]] == [m["key"] for m in state["recalled"]]
    assert analyst.fail("memory", "why", thread_id, "--user", "someone-else").code != 0
