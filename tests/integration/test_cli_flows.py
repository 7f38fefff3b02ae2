"""End-to-end flows through the real ``analyst`` CLI, one process per command.

Each command is a separate process sharing only the test's SQLite files and document folder,
as a user's shell session would: run, then approve / reject / edit later; crash (SIGKILL) or
Ctrl+C mid-run, then resume; bad input and other users' threads refused with nothing written.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.state import Context
from tests.support.reference import ref_key_metrics, section, table_rows

pytestmark = pytest.mark.integration

PLAN = ["returns:NVDA", "risk:NVDA", "trend:NVDA", "beta:NVDA", "peers:NVDA"]


def read_note(path: Path) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a published research note."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), text[:200]
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def test_approve_in_a_new_process_publishes_exactly_once(analyst: Any) -> None:
    drafted = analyst.json("run", "Analyze NVDA", "--thread", "T")
    assert drafted["status"] == "awaiting_approval"
    assert drafted["next"] == ["approval"]
    assert drafted["plan"] == PLAN
    assert len(drafted["draft_hash"]) == 64
    assert analyst.research_notes() == []

    before = datetime.now(UTC).date()
    published = analyst.json("approve", "T", "--as", "alice")
    after = datetime.now(UTC).date()
    assert published["status"] == "published"
    [note] = analyst.research_notes()
    day = published["publication"]["approved_at"][:10]
    assert day in {before.isoformat(), after.isoformat()}
    assert note == analyst.memory_dir / "research" / f"NVDA-{day}.md"
    assert published["publication"]["path"] == str(note)

    meta, body = read_note(note)
    assert meta["thread_id"] == "T"
    assert meta["approver"] == "alice"
    assert meta["draft_hash"] == drafted["draft_hash"]
    assert meta["decision"] == "approve"
    assert meta["data_as_of"] == "2023-12-29"
    assert body == drafted["draft_markdown"]
    assert note.with_suffix(".png").read_bytes() == Path(drafted["chart_path"]).read_bytes()
    text = note.read_bytes()

    again = analyst.fail("approve", "T", "--as", "alice")
    assert "not awaiting approval" in again.err
    assert "already published" in again.err
    assert analyst.research_notes() == [note]
    assert note.read_bytes() == text


async def test_publish_retried_after_a_crash_does_not_duplicate(open_app: Any) -> None:
    async with open_app() as app:
        drafted = await app.start("Analyze NVDA", thread_id="T")
        published = await app.decide(
            "T", {"action": "approve", "draft_hash": drafted.draft_hash, "approver": "alice"}
        )
        assert published.status == "published"
        research = app.settings.memory_dir / "research"
        [note] = sorted(research.glob("*.md"))
        text = note.read_bytes()
        meta, _ = read_note(note)

        graph = await app.graph()
        config = {"configurable": {"thread_id": "T"}}
        [before_publish] = [
            s async for s in graph.aget_state_history(config) if s.next == ("publish",)
        ]
        # The crash struck after the note was written but before its chart was copied.
        chart = Path(published.publication["chart_path"])
        chart.unlink()

        retried = await graph.ainvoke(
            None, before_publish.config, context=Context(user_id="tester"), durability="sync"
        )

        assert sorted(research.glob("*.md")) == [note]
        assert note.read_bytes() == text
        assert read_note(note)[0] == meta
        assert retried["publication"] == published.publication
        assert chart.is_file(), "the publish node did not run again from the checkpoint"
        assert (await app.view("T")).status == "published"


def test_rejections_revise_the_draft_until_the_limit_of_three(analyst: Any) -> None:
    first = analyst.json("run", "Analyze NVDA", "--thread", "T")
    revised = analyst.json("reject", "T", "--feedback", "add more on risk", "--as", "bob")
    assert revised["status"] == "awaiting_approval"
    assert revised["revision"] == 1
    assert revised["draft_hash"] != first["draft_hash"]
    notes = section(revised["draft_markdown"], "Revision notes")
    assert '1. Reviewer feedback: "add more on risk"' in notes
    assert "Addressed: more on risk" in notes
    assert "### Drawdown" in section(revised["draft_markdown"], "Analysis")
    assert "### Drawdown" not in section(first["draft_markdown"], "Analysis")
    assert "## Revision notes" not in first["draft_markdown"]

    feedback = ["add more on risk", "compare with peers", "explain the trend"]
    current = revised
    for revision, note in enumerate(feedback[1:], start=2):
        current = analyst.json("reject", "T", "--feedback", note, "--draft", current["draft_hash"])
        assert current["status"] == "awaiting_approval"
        assert current["revision"] == revision
    assert len({first["draft_hash"], revised["draft_hash"], current["draft_hash"]}) == 3
    notes = section(current["draft_markdown"], "Revision notes")
    for n, note in enumerate(feedback, start=1):
        assert f'{n}. Reviewer feedback: "{note}"' in notes

    closed = analyst.json("reject", "T", "--feedback", "still no", "--draft", current["draft_hash"])
    assert closed["status"] == "rejected"
    assert "limit is 3 revisions" in closed["stop_reason"]
    assert closed["publication"] is None
    assert closed["next"] == []

    refused = analyst.fail("approve", "T")
    assert "not awaiting approval" in refused.err
    assert analyst.research_notes() == []
    assert not (analyst.memory_dir / "research").exists()


def test_edit_publishes_the_edited_text_exactly(analyst: Any, tmp_path: Path) -> None:
    analyst.json("run", "Analyze NVDA", "--thread", "T")
    text = (
        "# NVDA: my own take\n\n"
        "Prices rose — “a lot”. Ünïcödé survives.\n\n"
        "---\n\n"
        "| Metric | Value |\n| --- | --- |\n| Beta | about one |\n\n"
        "Trailing spaces stay.   \n"
    )
    edited = tmp_path / "mine.md"
    edited.write_text(text, encoding="utf-8")

    published = analyst.json("edit", "T", "--file", str(edited), "--as", "alice")

    assert published["status"] == "published"
    [note] = analyst.research_notes()
    meta, body = read_note(note)
    assert body == text
    assert meta["decision"] == "edit"
    assert meta["approver"] == "alice"
    assert meta["draft_hash"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert published["publication"]["action"] == "edit"


def test_a_decision_on_a_stale_draft_is_refused(analyst: Any) -> None:
    old = analyst.json("run", "Analyze NVDA", "--thread", "T")["draft_hash"]
    new = analyst.json("reject", "T", "--feedback", "add more on risk")["draft_hash"]

    stale = analyst.fail("approve", "T", "--draft", old)

    assert stale.code == 3
    assert f"Decision is for draft {old[:12]}" in stale.err
    assert new[:12] in stale.err
    assert "Nothing was published" in stale.err
    assert analyst.research_notes() == []
    shown = analyst.json("show", "T")
    assert shown["status"] == "awaiting_approval"
    assert shown["draft_hash"] == new
    assert shown["revision"] == 1

    # The current draft, named by a prefix, is accepted.
    assert analyst.json("approve", "T", "--draft", new[:12])["status"] == "published"
    assert len(analyst.research_notes()) == 1


def test_a_killed_run_resumes_from_its_last_checkpoint(analyst: Any) -> None:
    proc = analyst.popen("run", "Analyze NVDA", "--thread", "T", "--json", step_delay=1.0)
    try:
        steps = analyst.wait_for_executor_step(proc, "T")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()  # reap it, so its pid no longer looks alive
    assert proc.returncode == -signal.SIGKILL
    assert 1 <= steps < len(PLAN)

    [listed] = analyst.json("threads")
    assert listed["thread_id"] == "T"
    assert listed["status"] == "interrupted"

    resumed = analyst.json("resume", "T")
    assert resumed["status"] == "awaiting_approval"
    assert resumed["plan"] == PLAN
    state = analyst.state("T")
    assert sorted(state["results"]) == sorted(PLAN)
    assert dict(table_rows(section(resumed["draft_markdown"], "Key metrics"))) == (
        ref_key_metrics("NVDA")
    )
    ran = [node for c in analyst.history("T") for node in c.ran]
    assert ran.count("router") == 1, "resume started the run over instead of continuing it"
    assert ran.count("executor") == len(PLAN)

    assert analyst.json("approve", "T")["status"] == "published"
    assert len(analyst.research_notes()) == 1


def start_with_sigint(analyst: Any, disposition: Any, *args: str) -> subprocess.Popen[str]:
    """Start the CLI with SIGINT inherited as ``disposition``, whatever this test process has:
    a shell starts background jobs (``nohup ... &``) with SIGINT ignored, a terminal does not,
    and CI may do either."""
    return subprocess.Popen(
        [str(analyst.exe), *args],
        env=analyst.environ(step_delay=1.0),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, disposition),
    )


@pytest.mark.parametrize(
    "inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"]
)
def test_ctrl_c_stops_the_run_and_says_how_to_resume(analyst: Any, inherited: Any) -> None:
    proc = start_with_sigint(analyst, inherited, "run", "Analyze NVDA", "--thread", "T")
    try:
        analyst.wait_for_executor_step(proc, "T")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "analyst resume T" in err
    assert "Traceback" not in err

    [listed] = analyst.json("threads")
    assert listed["status"] == "interrupted"
    resumed = analyst.json("resume", "T")
    assert resumed["status"] == "awaiting_approval"
    assert sorted(analyst.state("T")["results"]) == sorted(PLAN)


def test_sigterm_stops_the_run_with_143_and_says_how_to_resume(analyst: Any) -> None:
    proc = analyst.popen("run", "Analyze NVDA", "--thread", "T", step_delay=1.0)
    try:
        analyst.wait_for_executor_step(proc, "T")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    last = err.strip().splitlines()[-1]
    assert last == "error: Terminated. Thread T is saved; continue it with: analyst resume T", err
    assert "Traceback" not in err

    [listed] = analyst.json("threads")
    assert listed["status"] == "interrupted"
    assert analyst.json("resume", "T")["status"] == "awaiting_approval"


def test_bad_requests_on_a_fresh_install_create_nothing(analyst: Any) -> None:
    unknown, empty, blank, no_ticker, approve, show, resume, history = analyst.many(
        ["run", "Analyze XYZQ", "--json"],
        ["run", "", "--json"],
        ["run", "   "],
        ["run", "analyze the thing"],
        ["approve", "nope"],
        ["show", "nope"],
        ["resume", "nope"],
        ["history", "nope"],
    )
    for run in (unknown, empty, blank, no_ticker, approve, show, resume, history):
        assert run.refused, str(run)
    assert "Unknown ticker XYZQ" in unknown.err
    assert "Available tickers: AAPL, AMZN, GOOGL, META, MSFT, NVDA, TSLA" in unknown.err
    assert "query is empty" in empty.err
    assert "query is empty" in blank.err
    assert "No ticker found" in no_ticker.err
    for run in (approve, show, resume, history):
        assert "No thread 'nope'" in run.err, str(run)
    assert not analyst.data_dir.exists()
    assert not analyst.memory_dir.exists()


def test_bad_requests_on_existing_threads_change_nothing(analyst: Any) -> None:
    analyst.json("run", "Analyze NVDA", "--thread", "T")
    analyst.json("approve", "T")
    threads = analyst.json("threads")
    [note] = analyst.research_notes()
    text = note.read_bytes()

    approve, show, resume, history, again, reject, unknown = analyst.many(
        ["approve", "nope"],
        ["show", "nope"],
        ["resume", "nope"],
        ["history", "nope"],
        ["approve", "T"],
        ["reject", "T", "--feedback", "more"],
        ["run", "Analyze XYZQ", "--thread", "U"],
    )
    for run in (approve, show, resume, history):
        assert run.refused, str(run)
        assert "No thread 'nope'" in run.err, str(run)
    for run in (again, reject):
        assert run.refused, str(run)
        assert "Thread 'T' is not awaiting approval: it is already published" in run.err
    assert unknown.refused, str(unknown)
    assert "Unknown ticker XYZQ" in unknown.err

    assert analyst.json("threads") == threads
    assert analyst.research_notes() == [note]
    assert note.read_bytes() == text


def test_a_thread_belongs_to_the_user_who_started_it(analyst: Any) -> None:
    """Another user's thread id is, for every command, an id bob never used: the same
    output (ids aside) and exit code, no question asked before that; and bob's run on it
    starts his own thread of that id, alice's untouched."""
    alice = analyst.json("run", "Analyze NVDA", "--thread", "T", "--user", "alice")
    assert alice["status"] == "awaiting_approval"
    mine = analyst.data_dir.parent / "mine.md"
    mine.write_text("# Mine\n")

    def as_bob(thread: str) -> list[list[str]]:
        return [
            ["approve", thread],
            ["reject", thread, "--feedback", "Shorter please."],
            ["edit", thread, "--file", str(mine)],
            ["show", thread],
            ["show", thread, "--json"],
            ["resume", thread],
            ["history", thread],
            ["threads", "delete", thread],
            ["threads", "delete", thread, "--yes"],
            ["memory", "end", thread],
            ["memory", "why", thread],
        ]

    commands = [[*c, "--user", "bob"] for c in as_bob("T") + as_bob("NEVER-USED")]
    runs = analyst.many(*commands)
    half = len(runs) // 2
    for theirs, unused in zip(runs[:half], runs[half:], strict=True):
        assert theirs.code == unused.code == 3, (str(theirs), str(unused))
        assert theirs.out == unused.out == "", (str(theirs), str(unused))
        assert theirs.err == unused.err.replace("NEVER-USED", "T"), (str(theirs), str(unused))
        assert "No thread 'T' for this user" in theirs.err
    # Asked on a terminal, the delete still does not ask first (the answer would be "y").
    for thread in ("T", "NEVER-USED"):
        asked = analyst("threads", "delete", thread, "--user", "bob", input="y\n")
        assert asked.code == 3 and "Delete thread" not in asked.out + asked.err, str(asked)

    # bob's "T" is his own thread, like any new id; alice's "T" is as it was.
    ran = analyst.many(
        ["run", "Analyze TSLA", "--thread", "T", "--user", "bob", "--json"],
        ["run", "Analyze TSLA", "--thread", "U", "--user", "bob", "--json"],
    )
    bob_t, bob_u = (r.json() for r in ran)
    assert bob_t["thread_id"] == "T" and bob_u["thread_id"] == "U"
    assert bob_t["status"] == bob_u["status"] == "awaiting_approval"
    assert bob_t["ticker"] == bob_u["ticker"] == "TSLA"
    listing = analyst.json("threads", "--user", "bob")
    assert sorted(t["thread_id"] for t in listing) == ["T", "U"]
    [hers] = analyst.json("threads", "--user", "alice")
    assert hers["thread_id"] == "T"
    assert hers["status"] == "awaiting_approval"
    assert hers["draft_hash"] == alice["draft_hash"]
    assert analyst.research_notes() == []
    # A message on bob's paused "T" is answered beside his draft, in his thread's episodes.
    beside = analyst.json("run", "My horizon is 5 years", "--thread", "T", "--user", "bob")
    assert beside["thread_id"] == "T" and beside["pending"]["ticker"] == "TSLA", beside
    episodes = analyst.json("memory", "episodes", "--thread", "T", "--user", "bob")["episodes"]
    assert any("horizon is 5 years" in e["text"] for e in episodes), episodes
    hers = analyst.json("memory", "episodes", "--thread", "T", "--user", "alice")["episodes"]
    assert not any("horizon" in e["text"] for e in hers), hers
    # Each approves their own "T": two notes, one per ticker, each naming its approver.
    assert analyst.json("approve", "T", "--user", "bob")["status"] == "published"
    assert analyst.json("approve", "T", "--user", "alice")["status"] == "published"
    notes = {p.name.split("-")[0]: p.read_text() for p in analyst.research_notes()}
    assert "approver: alice" in notes["NVDA"] and "approver: bob" in notes["TSLA"]
    assert [t["thread_id"] for t in analyst.json("threads", "--user", "alice")] == ["T"]
    # bob deleting his "T" deletes his thread only: alice's "T" still shows and has history.
    assert analyst("threads", "delete", "T", "--yes", "--user", "bob").code == 0
    assert sorted(t["thread_id"] for t in analyst.json("threads", "--user", "bob")) == ["U"]
    assert analyst.json("show", "T", "--user", "alice")["status"] == "published"
    assert analyst.json("history", "T", "--user", "alice")


def test_racing_approvals_publish_once_and_credit_the_winner(analyst: Any) -> None:
    """Three reviewers approve the same pause at once: one wins, the others are refused."""
    analyst.json("run", "Analyze NVDA", "--thread", "R")
    runs = analyst.many(
        *(("approve", "R", "--as", name, "--json") for name in ("alice", "bob", "carol"))
    )
    winners = [r for r in runs if r.code == 0]
    assert len(winners) == 1, [str(r) for r in runs]
    for loser in runs:
        if loser.code != 0:
            assert loser.refused, str(loser)
            assert (
                "being run by another process" in loser.err or "not awaiting approval" in loser.err
            ), loser.err
    [note] = analyst.research_notes()
    winner = winners[0].json()["publication"]["approver"]
    assert read_note(note)[0]["approver"] == winner


async def test_a_thread_that_died_before_its_first_checkpoint_restarts(open_app: Any) -> None:
    async with open_app() as app:
        await app.graph()
        app.index.register(app.principal, "N", "Analyze MSFT")  # then the process "died"
        assert (await app.view("N")).status == "new"
        resumed = await app.resume("N")
        assert resumed.status == "awaiting_approval"
        assert resumed.ticker == "MSFT"
