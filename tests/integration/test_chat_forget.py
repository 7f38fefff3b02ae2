"""``/forget`` in the chat, driven like a person would, in a pseudo-terminal (the real
console script over the embedded defaults): the plan first, then the question; no keeps
everything, yes (or the listed ids) deletes, and ``/memories`` no longer shows it. On the
model path (the fake OpenAI server) the chat answers the model's forget proposal the same way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.integration.test_chat import PROMPT, spawn_chat
from tests.support.fake_openai import Reply, tool_calls
from tests.support.model_script import ScriptedAnalyst, fake_model, with_model

pytestmark = pytest.mark.integration

TSLA = "I follow TSLA deliveries closely"
NEIGHBOUR = "I like dividend stocks"


def remember(child: pexpect.spawn, text: str) -> str:
    child.sendline(f"/remember {text}")
    child.expect(rf"preference (mem-[0-9a-f]+): '{re.escape(text)}' \(episode (ep-[0-9a-f]+)\)")
    key = child.match.group(1)
    child.expect_exact(PROMPT)
    return str(key)


def memories(child: pexpect.spawn) -> str:
    """What ``/memories`` printed."""
    child.sendline("/memories")
    child.expect_exact("What the analyst remembers about you")
    child.expect_exact(PROMPT)
    return str(child.before)


def test_chat_forget_shows_the_plan_asks_and_only_yes_deletes(analyst: Any) -> None:
    child = spawn_chat(analyst)
    try:
        child.sendline("/help")
        child.expect_exact("/forget WHAT")
        child.expect_exact(PROMPT)
        key = remember(child, TSLA)
        neighbour = remember(child, NEIGHBOUR)

        # The plan, then the question; no deletes nothing.
        child.sendline("/forget topic TSLA deliveries")
        child.expect(r"Found episodes (ep-[0-9a-f]+): " + re.escape(TSLA))
        child.expect_exact(f"Found store memories/{key}: {TSLA}")
        child.expect_exact("Would delete 1 episodes")
        child.expect_exact("Forget these? [y]es (every keyword match)")
        child.sendline("n")
        child.expect_exact("Nothing was forgotten.")
        child.expect_exact(PROMPT)
        assert TSLA in memories(child)

        # Yes deletes every keyword match, with what was derived; the neighbour stays.
        child.sendline("/forget topic TSLA deliveries")
        child.expect_exact("Forget these? [y]es")
        child.sendline("y")
        child.expect_exact("Deleted 1 episodes")
        child.expect_exact(f"Deleted 1 store: memories/{key}")
        child.expect_exact(PROMPT)
        shown = memories(child)
        assert TSLA not in shown and NEIGHBOUR in shown

        # Bad input: a usage line, or the date that is wrong; nothing asked.
        child.sendline("/forget")
        child.expect_exact("Usage: /forget ID [ID ...] | /forget topic TEXT")
        child.expect_exact(PROMPT)
        child.sendline("/forget from 2026-13-01 to 2026-12-31")
        child.expect_exact("error: from '2026-13-01' is not a date like 2026-09-30.")
        child.expect_exact(PROMPT)
        child.sendline("/forget mem-nothing")
        child.expect_exact("error: Nothing of yours has the id mem-nothing")
        child.expect_exact(PROMPT)

        # Words said in this conversation: forgetting them deletes its thread, and says so.
        child.sendline("Analyze NVDA")
        child.expect(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA")
        thread_id = child.match.group(1)
        child.expect_exact(PROMPT)
        child.sendline("/forget topic analyze nvda")
        child.expect_exact(f"Would delete 1 threads: {thread_id}")
        child.expect_exact("Forget these?")
        child.sendline("y")
        child.expect_exact(f"Thread {thread_id} has a pending NVDA draft")
        child.sendline("y")
        child.expect_exact(f"Deleted 1 threads: {thread_id}")
        child.expect_exact(f"This conversation's thread {thread_id} was deleted")
        child.expect_exact(PROMPT)

        # By id: a yes/no question.
        child.sendline(f"/forget {neighbour}")
        child.expect_exact("Forget these? [y/N]")
        child.sendline("y")
        child.expect_exact(f"Deleted 1 store: memories/{neighbour}")
        child.expect_exact(PROMPT)

        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before

    listed = analyst.json("memory", "list")["items"]
    assert not [r for r in listed if r["text"] in (TSLA, NEIGHBOUR)]
    assert thread_id not in [t["thread_id"] for t in analyst.json("threads")]


def test_chat_answers_the_models_forget_proposal(
    analyst: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the model path the model's ``forget`` only proposes: after the answer the chat
    shows the items and asks; n keeps them, y deletes them."""
    script = ScriptedAnalyst()
    script.overrides["memory_lookup"] = proposes_forget("TSLA deliveries")
    with fake_model(monkeypatch) as server:
        server.respond_with(script)
        child = spawn_chat(with_model(analyst, server))
        try:
            remember(child, TSLA)
            for answer, then in (("n", "Nothing was forgotten."), ("y", "Deleted 1 episodes")):
                child.sendline("Analyze NVDA")
                child.expect_exact("awaiting approval")
                child.expect_exact(PROMPT)
                child.sendline("/approve")
                child.expect_exact("awaiting confirmation")
                child.expect_exact("analyst: You asked me to forget these.")
                child.expect(r"episodes ep-[0-9a-f]+: " + re.escape(TSLA))
                child.expect_exact("Forget these? [y]es")
                child.sendline(answer)
                child.expect_exact(then)
                child.expect_exact(PROMPT)
                assert (TSLA in memories(child)) is (answer == "n")
            child.sendline("/quit")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    assert child.exitstatus == 0, child.before


def proposes_forget(topic: str) -> Any:
    """A ``memory_lookup`` override: the model calls ``forget(topic)`` once per look-up."""

    def answer(request: dict[str, Any]) -> Reply | None:
        if any(m["role"] == "tool" for m in request["messages"]):
            return None
        return tool_calls(("forget", {"topic": topic}))

    return answer


def test_saying_forget_in_the_chat_proposes_and_asks_offline(analyst: Any) -> None:
    """ "Forget that ..." said as a message (offline): nothing is learned from it, what it
    names is listed and asked about; n keeps everything, y forgets it with the thread that
    holds the words, and a neighbouring memory stays."""
    child = spawn_chat(analyst)
    try:
        key = remember(child, TSLA)
        remember(child, NEIGHBOUR)
        child.sendline("Forget about my crypto trades")
        child.expect_exact('I found nothing of yours about "my crypto trades"')
        child.expect_exact(PROMPT)
        for answer, then in (("n", "Nothing was forgotten."), ("y", "Deleted 1 store")):
            child.sendline("Forget that I follow TSLA deliveries")
            child.expect_exact('about "I follow TSLA deliveries". Nothing is forgotten until')
            child.expect_exact(f"store memories/{key}: {TSLA}")
            child.expect_exact("Forget these? [y]es")
            child.sendline(answer)
            child.expect_exact(then)
            child.expect_exact(PROMPT)
            assert (TSLA in memories(child)) is (answer == "n")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    listed = [r["text"] for r in analyst.json("memory", "list")["items"]]
    assert NEIGHBOUR in listed and TSLA not in listed
    # Nothing was learned from the requests to forget, and nothing of them is kept: the yes
    # took every episode naming it (the requests too) and the thread that held them.
    kept = json.dumps(analyst.json("memory", "export"))
    assert "TSLA deliveries" not in kept and NEIGHBOUR in kept


#: Canaries: a list element (a ticker-like symbol) and a scalar value (an employer).
TICKER = "ZQXV"
EMPLOYER = "Quibblesoft Dynamics"


def know(child: pexpect.spawn) -> str:
    """What "what do you know about me?" answered."""
    child.sendline("what do you know about me?")
    child.expect_exact("Here is what I know about you")
    child.expect_exact(PROMPT)
    return str(child.before)


def forget_said(child: pexpect.spawn, line: str, *listed: str, drafts: str | None = None) -> str:
    """Say a request to forget, expect the ``listed`` rows, answer yes (and ``drafts`` to a
    pending draft's question), and return what the receipt printed."""
    child.sendline(line)
    for text in listed:
        child.expect_exact(text)
    child.expect_exact("Forget these? [y]es")
    child.sendline("y")
    if drafts is not None:
        child.expect_exact("delete the thread and its draft too? [y/N]")
        child.sendline(drafts)
    child.expect_exact(PROMPT)
    return str(child.before)


def stated(analyst: Any, *lines: str) -> None:
    """A first conversation states ``lines``; leaving it writes its session summary."""
    child = spawn_chat(analyst)
    try:
        for line in lines:
            child.sendline(line)
            child.expect_exact("Noted.")
            child.expect_exact(PROMPT)
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    sessions = analyst.json("memory", "show")["sessions"]
    assert any(TICKER in s["summary"] for s in sessions), sessions


def everywhere(analyst: Any, needle: str, tmp_path: Path) -> list[str]:
    """Where ``needle`` still is: any byte of the data and memory folders, the answers of
    ``memory show`` and ``memory export``, and a fresh backup."""
    from tests.support.raw_bytes import raw_hits

    found = [f"data/{p}" for p in raw_hits(analyst.data_dir, needle)]
    found += [f"memory/{p}" for p in raw_hits(analyst.memory_dir, needle)]
    for command in (("memory", "show"), ("memory", "export")):
        if needle.lower() in json.dumps(analyst.json(*command)).lower():
            found.append(" ".join(command))
    backup = tmp_path / f"backup-{needle.split()[0]}.json"
    assert analyst("memory", "backup", str(backup)).code == 0
    if needle.lower().encode() in backup.read_bytes().lower():
        found.append("backup")
    backup.unlink()
    return found


def test_forget_that_i_own_a_value_takes_it_from_every_byte_and_keeps_the_rest(
    analyst: Any, tmp_path: Path
) -> None:
    """ "forget that I own ZQXV": found by attribute and element (not by the literal words),
    listed, asked, and forgotten with the cascade: the element from every version of the
    holdings (AAPL kept as a new version), the words that stated it, the session summary
    and the conversation whose answer named it; no byte of the data folder, no answer, no
    summary, no export or backup holds it."""
    stated(analyst, f"I own {TICKER} and AAPL.", f"I work at {EMPLOYER}.")
    child = spawn_chat(analyst)
    try:
        assert TICKER in know(child)
        said = forget_said(
            child,
            f"forget that I hold {TICKER}",
            f"values holdings:{TICKER}: {TICKER} from holdings",
            "a new version keeps AAPL",
            f"I own {TICKER} and AAPL.",
        )
        assert "Deleted 2 episodes" in said and "Wrote 1 new versions of facts" in said, said
        shown = know(child)
        assert TICKER not in shown and "AAPL" in shown and EMPLOYER in shown, shown
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert everywhere(analyst, TICKER, tmp_path) == []
    profile = analyst.json("memory", "show")["profile"]
    holdings = [p["value"] for p in profile if p["attribute"] == "holdings"]
    assert holdings == [["AAPL"]], profile
    assert EMPLOYER in json.dumps(profile)


def test_stop_remembering_where_i_work_forgets_the_employer_everywhere(
    analyst: Any, tmp_path: Path
) -> None:
    """A scalar by its attribute's words ("where I work"): the fact with its history, the
    words, the summary that named it and the answers built from it; the rest is kept."""
    stated(analyst, f"I own {TICKER} and AAPL.", f"I work at {EMPLOYER}.")
    child = spawn_chat(analyst)
    try:
        assert EMPLOYER in know(child)
        forget_said(
            child,
            "stop remembering where I work",
            "facts ",
            f"employer = '{EMPLOYER}'",
            f"I work at {EMPLOYER}.",
        )
        shown = know(child)
        assert EMPLOYER not in shown and "AAPL" in shown, shown
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert everywhere(analyst, "Quibblesoft", tmp_path) == []
    profile = analyst.json("memory", "show")["profile"]
    assert "employer" not in [p["attribute"] for p in profile]


def test_a_topic_forget_asks_apart_before_taking_a_thread_with_a_pending_draft(
    analyst: Any,
) -> None:
    """A forget that would take a thread whose draft awaits a decision says so and asks
    apart, naming the thread and its draft: no keeps the thread (the draft can still be
    approved) and forgets the rest; the thread goes only with its own yes."""
    child = spawn_chat(analyst)
    try:
        child.sendline("Analyze NVDA")
        child.expect(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA")
        thread_id = child.match.group(1)
        child.expect_exact(PROMPT)
        child.sendline("/forget topic analyze nvda")
        child.expect_exact(f"Would delete 1 threads: {thread_id}")
        child.expect_exact("Forget these?")
        child.sendline("y")
        child.expect(rf"Thread {thread_id} has a pending NVDA draft \([0-9a-f]{{12}}\): delete")
        child.sendline("n")
        child.expect_exact("Kept the threads with pending drafts; forgetting the rest.")
        child.expect_exact("Deleted 0 threads: -")
        child.expect_exact("Deleted 1 episodes")
        child.expect_exact(f"Kept thread {thread_id} and its pending NVDA draft")
        child.expect_exact(PROMPT)
        listed = {t["thread_id"]: t for t in analyst.json("threads")}
        assert listed[thread_id]["status"] == "awaiting_approval"

        # By its id, the thread goes only when its draft's question is answered yes too.
        child.sendline(f"/forget {thread_id}")
        child.expect_exact("Forget these? [y/N]")
        child.sendline("y")
        child.expect_exact(f"Thread {thread_id} has a pending NVDA draft")
        child.sendline("y")
        child.expect_exact(f"Deleted 1 threads: {thread_id}")
        child.expect_exact(PROMPT)
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert thread_id not in [t["thread_id"] for t in analyst.json("threads")]
