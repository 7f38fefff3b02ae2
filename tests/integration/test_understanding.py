"""The conversation never drops a message: each is stored, understood and answered.

Failures this pins down (offline path, real graph and stores, the ``analyst`` CLI):

- statements taken as research orders ("I hold a lot of AAPL already" started research);
- capitalised words taken for tickers ("... nickname is ZEBRA-QUILL-7." refused, not stored);
- a draft awaiting approval made the thread refuse every message ("finish it first");
- questions about memory refused for naming no ticker (exit 2, empty stdout under --json).

Answers from memory cite their episodes and say so when memory does not know.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.facts import MemoryDelta

pytestmark = pytest.mark.integration

EPISODE = re.compile(r"ep-[0-9a-f]{20}")


def episodes(analyst: Any, user: str = "tester") -> list[Any]:
    async def body(app: Any) -> list[Any]:
        learner = await app.memory.learner()
        return list(await learner.journal.list_episodes())

    return analyst._in_process(user, body)


def test_statements_never_start_research(analyst: Any) -> None:
    for text in (
        "I hold a lot of AAPL already",
        "I work at Microsoft, so I'd rather not get MSFT recommendations",
    ):
        out = analyst.json("run", text)
        assert out["status"] == "noted", out
        assert out["intent"] == "statement"
        assert out["plan"] == [] and out["draft_hash"] is None and out["ticker"] is None
        assert "research" in out["reply"].lower() or "recorded" in out["reply"].lower()
    assert analyst.research_notes() == []
    said = [e.text for e in episodes(analyst)]
    assert "I hold a lot of AAPL already" in said


def test_capitalised_words_are_not_tickers_in_a_statement(analyst: Any) -> None:
    text = "Please remember that my brokerage nickname is ZEBRA-QUILL-7."
    run = analyst("run", text, "--json")
    assert run.code == 0, str(run)
    out = run.json()
    assert out["status"] == "noted" and out["intent"] == "statement"
    assert "Unknown ticker" not in run.err
    [stored] = [e for e in episodes(analyst) if e.text == text]
    assert stored.episode_id in out["reply"]
    # A research request naming an unknown symbol is still refused, writing nothing new.
    assert "Unknown ticker XYZQ" in analyst.fail("run", "Analyze XYZQ").err


def test_memory_questions_are_answered_not_refused(analyst: Any) -> None:
    empty = analyst.json("run", "What do you know about me?")
    assert empty["status"] == "answered" and empty["intent"] == "question"
    assert "I don't know anything about you yet" in empty["reply"]
    assert empty["cited"] == []

    run = analyst("run", "what is my risk tolerance?", "--json")
    assert run.code == 0 and run.json()["status"] == "answered", str(run)
    assert run.json()["reply"] == "I don't know your risk tolerance yet."

    noted = analyst.json("run", "My horizon is 2 years", "--thread", "H")
    assert noted["status"] == "noted"
    [said] = [e for e in episodes(analyst) if e.text == "My horizon is 2 years"]
    asked = analyst.json("run", "what is my horizon?", "--thread", "H")
    assert asked["status"] == "answered"
    assert "2 years" in asked["reply"] and f"[{said.episode_id}]" in asked["reply"]
    assert asked["cited"] == [said.episode_id]
    unknown = analyst.json("run", "what is my base currency?", "--thread", "H")
    assert unknown["reply"] == "I don't know your base currency yet."

    overview = analyst.json("run", "What do you know about me?")
    assert "Your horizon is 2 years" in overview["reply"]
    assert said.episode_id in overview["cited"]
    # Questions are stored as episodes, and nothing is learned from them.
    texts = [e.text for e in episodes(analyst)]
    assert "what is my horizon?" in texts and "What do you know about me?" in texts
    # A research request with no ticker that asks for no ideas is still a usage error.
    assert "No ticker found" in analyst.fail("run", "analyze the thing").err


def test_greetings_get_help_not_an_error(analyst: Any) -> None:
    out = analyst.json("run", "hello")
    assert out["status"] == "answered" and out["intent"] == "conversation"
    assert "Analyze NVDA" in out["reply"]


def test_every_message_is_answered_while_a_draft_awaits_approval(analyst: Any) -> None:
    drafted = analyst.json("run", "Analyze NVDA", "--thread", "T")
    assert drafted["status"] == "awaiting_approval"
    draft = drafted["draft_hash"]

    stated = analyst.json("run", "My risk tolerance is aggressive", "--thread", "T")
    assert stated["status"] == "noted", stated
    assert "risk tolerance" in stated["reply"] and "still awaits your decision" in stated["reply"]
    assert stated["pending"] == {
        "status": "awaiting_approval",
        "draft_hash": draft,
        "ticker": "NVDA",
    }

    asked = analyst.json("run", "what is my risk tolerance?", "--thread", "T")
    assert asked["status"] == "answered" and "aggressive" in asked["reply"]
    assert asked["cited"] and EPISODE.search(asked["reply"])

    why = analyst.json("run", "why did you recommend Hold?", "--thread", "T")
    assert why["status"] == "answered"
    assert f"draft:{draft[:12]}" in why["reply"] or "no record" in why["reply"]

    research = analyst.json("run", "Analyze MSFT", "--thread", "T")
    assert research["intent"] == "research" and research["status"] == "awaiting_approval"
    assert "Set the draft aside" in research["reply"]
    assert "analyst approve T" in research["reply"]

    forget = analyst.json("run", "forget that my risk tolerance is aggressive", "--thread", "T")
    assert forget["intent"] == "forget" and forget["forget_proposed"]
    assert "Nothing is forgotten until you confirm" in forget["reply"]

    hello = analyst.json("run", "thanks", "--thread", "T")
    assert hello["status"] == "answered"

    # The draft never moved: same hash, still approvable, and approving publishes it.
    shown = analyst.json("show", "T")
    assert shown["status"] == "awaiting_approval" and shown["draft_hash"] == draft
    assert analyst.json("approve", "T")["status"] == "published"
    assert [p.name for p in analyst.research_notes()] == [f"NVDA-{_today()}.md"]
    said = {e.text for e in episodes(analyst) if e.thread_id == "T"}
    for text in (
        "My risk tolerance is aggressive",
        "what is my risk tolerance?",
        "why did you recommend Hold?",
        "Analyze MSFT",
        "forget that my risk tolerance is aggressive",
        "thanks",
    ):
        assert text in said, text


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


async def test_answers_from_the_ledger_over_time_decisions_and_procedures(open_app: Any) -> None:
    now = datetime.now(UTC)
    march = datetime(now.year - 1, 3, 10, tzinfo=UTC)
    last_month = (now.replace(day=1) - timedelta(days=5)).replace(hour=12)
    async with open_app() as app:
        learner = await app.memory.learner()
        said = await learner.record("old", "message", "my horizon is 5 years", turn="t1", at=march)
        await learner.facts.record(
            MemoryDelta(
                subject=learner.subject,
                attribute="horizon_years",
                value=5,
                valid_from=march,
                source_episode_id=said.episode_id,
            )
        )
        decided = await learner.record(
            "old",
            "approve",
            'approve: NVDA report "NVDA: Hold" (rating Hold)',
            turn="d1",
            meta={"ticker": "NVDA", "rating": "Hold"},
            at=last_month,
        )
        await app.memory.remember("Never analyse TSLA", as_="procedure")
        shorter = await app.start("Actually my horizon is 2 years now", thread_id="Q")
        assert shorter.status == "noted"

        then = await app.start(f"what was my horizon in March {now.year - 1}?", thread_id="Q")
        assert then.status == "answered"
        assert "5 years" in then.reply and said.episode_id in then.cited

        current = await app.start("what is my horizon?", thread_id="Q")
        assert "2 years" in current.reply and said.episode_id not in current.cited

        decision = await app.start("what did we decide about NVDA last month?", thread_id="Q")
        assert decision.status == "answered"
        assert decided.episode_id in decision.cited and "Hold" in decision.reply

        why = await app.start("why did you recommend Hold?", thread_id="Q")
        assert decided.episode_id in why.cited

        nothing = await app.start("what did we decide about TSLA last month?", thread_id="Q")
        assert (
            nothing.reply
            == "I have no record of a decision or recommendation about TSLA last month."
        )
        assert nothing.cited == []

        rules = await app.start("what did I ask you to always do?", thread_id="Q")
        assert "Never analyse TSLA" in rules.reply and rules.cited


def test_the_chat_keeps_listening_while_a_draft_waits(analyst: Any) -> None:
    script = "\n".join(
        [
            "Analyze NVDA",
            "I hold a lot of AAPL already",
            "what is my horizon?",
            "quick snapshot of MSFT",
            "n",
            "/approve",
            "/quit",
        ]
    )
    run = analyst("chat", input=script + "\n")
    assert run.code == 0, str(run)
    assert "error:" not in run.out and "Traceback" not in run.err, run.out
    assert "I don't know your horizon yet." in run.out
    assert "still awaits your decision" in run.out
    assert "Set it aside and start this request in a new thread?" in run.out
    assert "Set the draft aside" in run.out  # "no": answered beside the draft
    assert [p.name.split("-")[0] for p in analyst.research_notes()] == ["NVDA"]


def test_the_chat_sets_a_draft_aside_on_yes_and_it_stays_approvable(analyst: Any) -> None:
    run = analyst("chat", input="Analyze NVDA\nquick snapshot of MSFT\ny\n/quit\n")
    assert run.code == 0, str(run)
    first = re.search(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA", run.out)
    second = re.search(r"Thread (t-[0-9a-f]+) · awaiting approval · MSFT", run.out)
    assert first and second and first.group(1) != second.group(1), run.out
    assert f"it stays approvable: analyst approve {first.group(1)}" in run.out
    assert analyst.json("approve", first.group(1))["status"] == "published"
