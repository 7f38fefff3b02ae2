"""``analyst chat`` driven like a person would: through a pseudo-terminal, and through a pipe.

Each session is the real console script; the terminal is 200 columns wide with ``TERM=dumb``
so rich prints plain, unwrapped text that the expectations below can match.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pexpect
import pytest
import yaml

pytestmark = pytest.mark.integration

PROMPT = "you> "


def spawn_chat(analyst: Any) -> pexpect.spawn:
    child = pexpect.spawn(
        str(analyst.exe),
        ["chat"],
        env=analyst.environ(),
        encoding="utf-8",
        timeout=180,  # each expected text's deadline: a turn on a loaded machine is slow
        dimensions=(50, 200),
    )
    child.expect_exact("analyst chat · user tester · tenant default")
    child.expect_exact(PROMPT)
    return child


def say(child: pexpect.spawn, line: str, *expected: str) -> None:
    """Type ``line``, expect each text in order, then the next prompt."""
    child.sendline(line)
    for text in expected:
        child.expect_exact(text)
    child.expect_exact(PROMPT)


def note_meta(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text[4:].split("\n---\n", 1)[0])


def test_analyze_approve_list_and_quit_in_a_terminal(analyst: Any) -> None:
    child = spawn_chat(analyst)
    try:
        child.sendline("Analyze NVDA")
        child.expect(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA")
        thread_id = child.match.group(1)
        child.expect(r"Draft ([0-9a-f]{12})")
        shown = child.match.group(1)
        for text in ("Key metrics", "Peer comparison", "Recommendation", "Sources"):
            child.expect_exact(text)
        child.expect_exact(f"Awaiting your decision on draft {shown}")
        child.expect_exact("Reply with /approve, /reject <feedback> or /edit <file>.")
        child.expect_exact(PROMPT)

        child.sendline("/approve")
        child.expect(rf"Thread {thread_id} · published")
        child.expect(r"Published (\S+\.md) ")
        note = Path(child.match.group(1))
        child.expect_exact(PROMPT)

        say(child, "/threads", thread_id, "published", "NVDA")

        child.sendline("/quit")
        child.expect_exact(f"Bye. This conversation is thread {thread_id}.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before

    assert analyst.research_notes() == [note]
    meta = note_meta(note)
    assert meta["thread_id"] == thread_id
    assert meta["draft_hash"].startswith(shown)
    assert meta["approver"] == "tester"


def test_usage_and_errors_keep_the_session_going(analyst: Any) -> None:
    child = spawn_chat(analyst)
    try:
        say(child, "/reject", "Usage: /reject <what the next revision must change>")
        say(child, "Analyze XYZQ", "error: Unknown ticker XYZQ. Available tickers: AAPL")
        assert not analyst.data_dir.exists()
        say(child, "/approve", "error: No thread in this conversation yet")

        child.sendline("quick snapshot of AAPL")
        child.expect(r"Thread (t-[0-9a-f]+) · awaiting approval · AAPL")
        thread_id = child.match.group(1)
        child.expect_exact(PROMPT)
        say(child, "/reject   ", "Usage: /reject <what the next revision must change>")
        say(child, "/frobnicate", "Unknown command /frobnicate. /help lists the commands.")

        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before

    # The refused /reject sent nothing: the first draft still awaits a decision.
    shown = analyst.json("show", thread_id)
    assert shown["status"] == "awaiting_approval"
    assert shown["revision"] == 0
    assert shown["mode"] == "flash"
    assert analyst.research_notes() == []


def test_a_piped_session(analyst: Any) -> None:
    run = analyst("chat", input="Analyze NVDA\n/approve\n/threads\n/quit\n")

    assert run.code == 0, str(run)
    assert "Traceback" not in run.err
    drafted = re.search(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA", run.out)
    assert drafted, run.out
    thread_id = drafted.group(1)
    assert "Awaiting your decision on draft" in run.out
    published = re.search(r"Published (\S+\.md) ", run.out)
    assert published, run.out
    note = Path(published.group(1))
    assert analyst.research_notes() == [note]
    assert note_meta(note)["thread_id"] == thread_id
    listing = run.out[published.end() :]
    assert re.search(rf"^{thread_id}\s+published\s+NVDA\b", listing, re.M), listing
    assert run.out.rstrip().endswith(f"Bye. This conversation is thread {thread_id}.")


def test_sigterm_ends_a_chat_with_143_and_the_thread_to_resume(analyst: Any) -> None:
    child = spawn_chat(analyst)
    try:
        child.sendline("quick snapshot of AAPL")
        child.expect(r"Thread (t-[0-9a-f]+) · awaiting approval · AAPL")
        thread_id = child.match.group(1)
        child.expect_exact(PROMPT)
        child.kill(signal.SIGTERM)
        child.expect_exact(
            f"error: Terminated. Thread {thread_id} is saved; continue it with: "
            f"analyst resume {thread_id}"
        )
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 143, child.before
    assert analyst.json("show", thread_id)["status"] == "awaiting_approval"


def test_a_standing_instruction_is_confirmed_at_the_pause_and_holds_in_a_new_thread(
    analyst: Any,
) -> None:
    child = spawn_chat(analyst)
    try:
        child.sendline("Never analyse TSLA from now on.")
        child.expect_exact("Shall I remember these from now on, in every conversation?")
        child.expect_exact("[procedure] 'Never analyse TSLA from now on.'")
        child.expect_exact("remember it? [y]es / [n]o / [l]ater: ")
        child.sendline("y")
        child.expect_exact("Confirmed 1.")
        child.expect_exact(PROMPT)
        say(child, "/new", "New conversation")
        child.sendline("Analyze TSLA")
        child.expect(r"I won't analyse TSLA: your procedure (proc-[0-9a-f]+)")
        child.expect_exact(PROMPT)
        child.sendline("/quit")
        child.expect_exact("Bye.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    procedures = analyst("memory", "procedures", "--json").json()["procedures"]
    assert [p["rule"] for p in procedures] == [{"exclude_ticker": "TSLA"}]
    assert analyst("memory", "review", "--json").json()["candidates"] == []
