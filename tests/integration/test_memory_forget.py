"""Forget one thing, a topic or a time range, with the ledger and journal
in the embedded SQLite file and on Postgres (the ``backend`` fixture).

Real parts throughout: the compiled graph, SQLite checkpoints and thread index, the ledger and
journal SQLite file, Qdrant Edge with MiniLM and the embedding cache file. Each test checks
that exactly what was chosen goes, with what was derived from it (facts, summaries,
candidates, memories and their vectors, jobs, the thread), that a neighbouring memory of the
same user and the same memory of another user survive, that the receipt says what was kept
and why, and that a tombstone stops extraction learning it again.
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.app import AnalystApp
from memory.errors import InvalidMemoryError
from memory.facts import subject_for
from tests.support.raw_bytes import raw_hits, table_rows
from tests.support.servers import PgLedger
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

START = datetime(2026, 9, 2, 9, tzinfo=UTC)
CANARIES = {"mira": ("Zorvendix", "Qualtrobe"), "noor": ("Yblimora", "Kestraveld")}
OPTIONS = "I am interested in options trading on semiconductor stocks."
NEIGHBOUR = "I prefer companies with low debt and steady cash flow."


def pg_text(ledger: PgLedger | None) -> str:
    """Every row of every table of the ledger's schema, as text, read by a superuser."""
    return "" if ledger is None else repr(table_rows(ledger.admin_url, "analyst_facts"))


def session(user: str, *, day: int = 0) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(START + timedelta(days=day), user)


async def fill(user: str) -> None:
    """A name said in a thread (a fact, a summary), a topic memory and a neighbour memory."""
    first, last = CANARIES[user]
    async with session(user) as app:
        said = await app.start(
            f"My name is {first} {last}.", thread_id=f"{user}-1", keep_session=True
        )
        assert [f["attribute"] for f in said.learned] == ["full_name"]
        await app.memory.end_session(f"{user}-1")
        await app.memory.remember(OPTIONS, as_="preference")
        await app.memory.remember(NEIGHBOUR, as_="preference")


async def texts(app: AnalystApp) -> list[str]:
    return [m.text for m in await app.memory.memories()]


async def test_forget_one_episode_cascades_and_is_not_learned_again(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    data = isolated_env / "data"
    await fill("mira")
    await fill("noor")
    first, last = CANARIES["mira"]
    assert raw_hits(data, first)

    async with session("mira", day=1) as app:
        learner = await app.memory.learner()
        (said,) = [e for e in await learner.journal.list_episodes() if first in e.text]
        plan = await app.memory.forget([said.episode_id])
        assert plan["confirmed"] is False and raw_hits(data, first)
        receipt = await app.memory.forget([said.episode_id], confirm=True)
        entries = await app.memory.audit()

    deleted = receipt["deleted"]
    assert deleted["episodes"]["ids"] == [said.episode_id]
    assert deleted["threads"]["ids"] == ["mira-1"]
    assert deleted["facts"]["count"] == 1
    assert deleted["summaries"]["count"] == 1
    assert deleted["extraction_jobs"]["count"] >= 1
    assert deleted["embedding_cache"]["count"] > 0
    assert receipt["tombstones"] > 0
    (notes,) = [k for k in receipt["kept"] if k["tier"] == "documents"]
    assert "business records" in notes["why"]
    assert "backup" in receipt["backups"]
    assert first.lower() not in repr(entries).lower()
    # The canary is in no byte of any database file, WAL or Qdrant Edge segment.
    assert raw_hits(data, first) == [] and raw_hits(data, last) == []
    assert first.lower() not in pg_text(backend).lower()

    async with session("mira", day=2) as app:
        learner = await app.memory.learner()
        subject = subject_for(app.principal)
        assert await learner.facts.current(subject, "full_name") is None
        assert NEIGHBOUR in await texts(app) and OPTIONS in await texts(app)
        # Re-extraction over the remaining history does not bring it back ...
        for thread in {e.thread_id for e in await learner.journal.list_episodes()}:
            await learner.journal.enqueue(
                "session_end",
                thread,
                [e.episode_id for e in await learner.journal.list_episodes(thread_id=thread)],
            )
        await learner.drain()
        # ... nor do the same words said again (the hot path and session end).
        again = await app.start(f"My name is {first} {last}.", thread_id="mira-9")
        assert again.learned == []
        await app.memory.end_session("mira-9")
        assert await learner.facts.current(subject, "full_name") is None
        quotes = [c.quote for c in await learner.journal.candidates(status=None, limit=1000)]
        assert not any(first in q for q in quotes)
        assert not any(first in t for t in await texts(app))

    # The other user's same kind of memory is untouched.
    async with session("noor", day=2) as app:
        learner = await app.memory.learner()
        name = await learner.facts.current(subject_for(app.principal), "full_name")
        assert name is not None and CANARIES["noor"][0] in str(name.value)
        assert len(await learner.journal.summaries()) == 1
    if backend is not None:
        assert CANARIES["noor"][0] in pg_text(backend)


async def test_forget_by_topic_lists_then_deletes_only_what_is_confirmed(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    await fill("mira")
    await fill("noor")
    async with session("mira", day=1) as app:
        listed = await app.memory.forget(topic="options trading")
        assert listed["confirmed"] is False
        found = {(r["tier"], r["id"]) for r in listed["found"]}
        tiers = {tier for tier, _ in found}
        assert {"episodes", "store"} <= tiers, listed["found"]
        # A memory found only by meaning is listed, never deleted by a plain confirm.
        assert all(r.get("by") == "meaning" for r in listed["found"] if "low debt" in r["text"])
        assert OPTIONS in await texts(app), "listing deletes nothing"
        (memory,) = [r["id"] for r in listed["found"] if r["tier"] == "store"]
        receipt = await app.memory.forget(topic="options trading", only=[memory])
        assert receipt["confirmed"] is True
        assert receipt["deleted"]["store"]["ids"] == [memory]
        assert receipt["deleted"]["episodes"]["count"] == 0
        assert any(k["tier"] == "episodes" for k in receipt["kept"])
        assert OPTIONS not in await texts(app) and NEIGHBOUR in await texts(app)
        rest = await app.memory.forget(topic="options trading", confirm=True)
        assert rest["deleted"]["episodes"]["count"] == 1
        learner = await app.memory.learner()
        assert not any("options" in e.text for e in await learner.journal.list_episodes())
        assert NEIGHBOUR in await texts(app), (rest["deleted"], rest["found"])
        with pytest.raises(InvalidMemoryError, match="forget"):
            await app.memory.remember(OPTIONS, as_="preference")
    async with session("noor", day=1) as app:
        assert OPTIONS in await texts(app) and NEIGHBOUR in await texts(app)


async def test_forget_by_time_range_removes_only_that_range(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    await fill("mira")
    await fill("noor")
    later = "I prefer dividend payers for the income sleeve."
    async with session("mira", day=10) as app:
        await app.memory.remember(later, as_="preference")
    async with session("noor", day=10) as app:
        await app.memory.remember(later, as_="preference")
    day = START + timedelta(days=10)
    async with session("mira", day=11) as app:
        listed = await app.memory.forget(since=day, until=day + timedelta(days=1))
        assert {r["tier"] for r in listed["found"]} == {"episodes", "store"}
        assert all("dividend" in r["text"] for r in listed["found"]), listed["found"]
        receipt = await app.memory.forget(since=day, until=day + timedelta(days=1), confirm=True)
        assert receipt["deleted"]["episodes"]["count"] == 1
        assert receipt["deleted"]["store"]["count"] == 1
        left = await texts(app)
        assert later not in left and NEIGHBOUR in left and OPTIONS in left
        learner = await app.memory.learner()
        assert await learner.facts.current(subject_for(app.principal), "full_name") is not None
    async with session("noor", day=11) as app:
        assert later in await texts(app)


def test_cli_forget_by_id_asks_for_yes(isolated_env: Path, analyst: object) -> None:
    first, last = CANARIES["mira"]
    run = analyst  # the CLI runner fixture
    said = run("run", f"My name is {first} {last}.", "--user", "mira", "--json")  # type: ignore[operator]
    assert said.code == 0, str(said)
    fact = said.json()["learned"][0]["memory_id"]
    asked = run("memory", "forget", fact, "--user", "mira", "--json")  # type: ignore[operator]
    assert asked.code == 2, str(asked)
    done = run("memory", "forget", fact, "--yes", "--user", "mira", "--json")  # type: ignore[operator]
    receipt = done.json()
    assert receipt["deleted"]["facts"]["ids"] == [fact]
    assert any(k["tier"] == "episodes" for k in receipt["kept"])
    topic = run("memory", "forget", "--topic", "name", "--user", "mira", "--json")  # type: ignore[operator]
    assert topic.code == 2 and '"found"' in topic.out


def test_cli_forget_about_a_description_lists_then_forgets_the_element(analyst: Any) -> None:
    """``analyst memory forget --about "that I hold ZQXV"``: the element of the holdings and
    the words that state it are listed (exit 2, nothing deleted); --yes forgets them and
    the holdings keep AAPL; a description that names nothing stored finds nothing."""
    said = analyst("run", "I own ZQXV and AAPL.", "--json")
    assert said.code == 0, str(said)
    about = ("memory", "forget", "--about", "that I hold ZQXV")
    asked = analyst(*about, "--json")
    assert asked.code == 2, str(asked)
    found = {(r["tier"], r["id"]) for r in json.loads(asked.out)["found"]}
    assert ("values", "holdings:ZQXV") in found
    assert any(tier == "episodes" for tier, _ in found)
    receipt = analyst(*about, "--yes", "--json").json()
    assert receipt["deleted"]["facts"]["count"] == 1
    assert receipt["rewritten"]["facts"]["count"] == 1
    profile = analyst.json("memory", "show")["profile"]
    assert [p["value"] for p in profile if p["attribute"] == "holdings"] == [["AAPL"]]
    assert "ZQXV" not in json.dumps(analyst.json("memory", "export"))
    nothing = analyst("memory", "forget", "--about", "my crypto trades", "--json")
    assert nothing.code == 2 and json.loads(nothing.out)["found"] == []
    refused = analyst.fail("memory", "forget", "--about", "x", "--topic", "y")
    assert "one of them" in refused.err


async def test_saying_forget_learns_nothing_and_asks_before_deleting(isolated_env: Path) -> None:
    """ "Forget that my horizon is 10 years": the statement inside is not recorded; the fact,
    the episode that stated it and this request are proposed; a yes deletes them."""
    async with session("mira") as app:
        stated = await app.start("My horizon is 10 years.", thread_id="h1")
        assert [f["attribute"] for f in stated.learned] == ["horizon_years"]
        asked = await app.start("Forget that my horizon is 10 years", thread_id="h2")
        assert asked.learned == [] and asked.status == "awaiting_confirmation", asked
        assert asked.confirmation is not None
        assert asked.confirmation["kind"] == "forget_confirmation"
        # The fact, found by attribute and value, and the words that state it (this request
        # too); the summary that learned it goes with its episode.
        tiers = sorted({item["tier"] for item in asked.confirmation["items"]})
        assert tiers == ["episodes", "facts"], asked.confirmation["items"]
        assert len([i for i in asked.confirmation["items"] if i["tier"] == "episodes"]) == 2
        learner = await app.memory.learner()
        subject = subject_for(app.principal)
        assert await learner.facts.current(subject, "horizon_years") is not None  # not yet
        done = await app.answer_confirmation("h2", {"forget": True})
        assert done.thread_deleted is True  # the request held the words too
        assert await learner.facts.current(subject, "horizon_years") is None
        assert await learner.journal.list_episodes() == []


async def test_a_fact_forgotten_by_id_leaves_no_summary_or_answer_naming_it(
    backend: PgLedger | None, isolated_env: Path
) -> None:
    """The words stay (only the fact is named), but the kept session summary that learned it
    is rewritten without its value (the rest of it kept), so no later answer names it; an
    element forgotten by id (``holdings:ZQXV``) erases every version that held it and keeps
    the rest of the list as a new version."""
    async with session("mira") as app:
        for line in ("I own ZQXV and AAPL.", "I work at Quibblesoft Dynamics."):
            await app.start(line, thread_id="mira-1", keep_session=True)
        await app.memory.end_session("mira-1")
        learner = await app.memory.learner()
        subject = subject_for(app.principal)
        employer = await learner.facts.current(subject, "employer")
        assert employer is not None
        (summary,) = await learner.journal.summaries()
        assert "Quibblesoft" in summary.summary and "ZQXV" in summary.summary

    async with session("mira", day=1) as app:
        receipt = await app.memory.forget([employer.memory_id], confirm=True)
        assert receipt["rewritten"]["summaries"]["ids"] == [summary.session_id]
        assert receipt["deleted"]["summaries"]["count"] == 0
        receipt = await app.memory.forget(["holdings:ZQXV"], confirm=True)
        assert receipt["rewritten"]["facts"]["count"] == 1
        learner = await app.memory.learner()
        (rewritten,) = await learner.journal.summaries()
        assert "Quibblesoft" not in rewritten.summary and "ZQXV" not in rewritten.summary
        assert "AAPL" in rewritten.summary and rewritten.topic == "AAPL"
        history = await learner.facts.history(subject_for(app.principal), "holdings")
        assert [r.value for r in history] == [["AAPL"]]
        asked = await app.start("what do you know about me?", thread_id="mira-2")
        assert "AAPL" in asked.reply
        assert "Quibblesoft" not in asked.reply and "ZQXV" not in asked.reply
        exported = await app.memory.export()
        assert "Quibblesoft" not in repr([exported["sessions"], exported["facts"]])
        assert "ZQXV" not in repr([exported["sessions"], exported["facts"]])
        with pytest.raises(InvalidMemoryError, match="holdings:MSFT"):
            await app.memory.forget(["holdings:MSFT"])


async def test_a_forget_keeps_a_thread_with_a_pending_draft_unless_told(
    isolated_env: Path,
) -> None:
    """A description forget takes the conversations holding the value; one whose draft
    awaits a decision is named in the plan's ``drafts`` and, confirmed without ``drafts``,
    kept with the reason (the rest forgotten; the draft can still be decided); named with
    ``drafts`` it goes."""
    async with session("mira") as app:
        await app.start("I work at Quibblesoft Dynamics.", thread_id="w-1")
        waiting = await app.start("Analyze NVDA", thread_id="d-1")
        assert waiting.status == "awaiting_approval"
        plan = await app.memory.forget(about="where I work")
        assert [d["thread_id"] for d in plan["drafts"]] == ["d-1"]
        assert plan["drafts"][0]["ticker"] == "NVDA"
        assert "d-1" in plan["deleted"]["threads"]["ids"]
        receipt = await app.memory.forget(about="where I work", confirm=True)
        assert "d-1" not in receipt["deleted"]["threads"]["ids"]
        assert "w-1" in receipt["deleted"]["threads"]["ids"]
        (kept,) = [k for k in receipt["kept"] if "d-1" in k["what"]]
        assert "pending NVDA draft" in kept["what"] and "say so" in kept["why"]
        assert (await app.view("d-1")).status == "awaiting_approval"
        learner = await app.memory.learner()
        assert await learner.facts.current(subject_for(app.principal), "employer") is None
        receipt = await app.memory.forget(["d-1"], confirm=True, drafts=True)
        assert receipt["deleted"]["threads"]["ids"] == ["d-1"]
