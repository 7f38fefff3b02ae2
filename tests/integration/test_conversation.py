"""A long conversation on one thread: history is summarised, explicit constraints are not.

With a tiny history budget (ANALYST_HISTORY_MAX_MESSAGES=4, ANALYST_HISTORY_KEEP=2) the
conversation is summarised after a few turns. The user's explicit constraint ("Never include
TSLA in any analysis.") was said in the first message, which the summary replaces; it must
still be honoured: a later request about TSLA is declined citing it, every later model prompt
carries it, and a comparison that names TSLA keeps TSLA out of the draft entirely.

The model path runs in-process against the fake OpenAI server; the offline path runs through
``analyst chat`` with piped standard input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.model_script import (
    SUMMARY,
    ScriptedAnalyst,
    content,
    fake_model,
    first_user,
    kind_of,
    quoted,
    step_of,
    system_prompt,
)
from tests.support.reference import section, table_rows

pytestmark = pytest.mark.integration

RULE = "Never include TSLA in any analysis."
KEEP = 2
#: Requests that plan or write research: each must carry the user's constraints.
RESEARCH = ("PlanDecision", "executor", "ReportNarrative")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("ANALYST_HISTORY_MAX_MESSAGES", "4")
    monkeypatch.setenv("ANALYST_HISTORY_KEEP", str(KEEP))
    with fake_model(monkeypatch) as server:
        yield server


async def state_of(app: Any, thread_id: str) -> dict[str, Any]:
    graph = await app.graph()
    return dict((await graph.aget_state({"configurable": {"thread_id": thread_id}})).values)


def assert_tsla_kept_out(draft: dict[str, Any], results: dict[str, Any]) -> None:
    markdown = draft["markdown"]
    assert "TSLA" not in markdown
    peers = [row[0].strip("*") for row in table_rows(section(markdown, "Peer comparison"))]
    assert peers and "TSLA" not in peers and "NVDA" in peers
    assert "TSLA" not in results["beta:NVDA"]["data"]["basket"]
    assert [row["ticker"] for row in results["peers:NVDA"]["data"]["peers"]].count("TSLA") == 0


async def test_a_constraint_survives_summarisation_on_the_model_path(
    fake: FakeOpenAI, open_app: Any
) -> None:
    script = ScriptedAnalyst()
    fake.respond_with(script)
    # One conversation, as the chat holds it: the session (and its extraction) does not end
    # with each request.
    async with open_app() as app:
        asked = await app.start(RULE, thread_id="C", keep_session=True)
        # At the pause after its answer the analyst asks whether to keep the rule in every
        # conversation; "later" leaves it a candidate, and it holds in this one regardless.
        assert asked.status == "awaiting_confirmation"
        noted = await app.answer_confirmation("C", {})
        assert noted.status == "noted"
        assert noted.constraints == [RULE]
        assert RULE in noted.reply
        assert fake.requests == []  # a constraint alone needs no model

        for query in ("Quick snapshot of AAPL", "Quick snapshot of MSFT"):
            drafted = await app.start(query, thread_id="C", keep_session=True)
            assert drafted.status == "awaiting_approval", drafted
            decision = {"action": "approve", "draft_hash": drafted.draft_hash, "approver": "me"}
            assert (await app.decide("C", decision, keep_session=True)).status == "published"

        requests = fake.chat_requests()
        summarised = [i for i, r in enumerate(requests) if kind_of(r) == "ConversationSummary"]
        assert summarised, "the history budget should have forced a summary"
        # The first summary replaced the message that stated the constraint.
        assert RULE in quoted(first_user(requests[summarised[0]]), "conversation so far")

        before = len(requests)
        declined = await app.start(
            "Now give me a deep dive on Tesla", thread_id="C", keep_session=True
        )
        assert declined.status == "declined"
        assert declined.reply.startswith("I won't analyse TSLA")
        assert f'"{RULE}"' in declined.reply
        # Only the summary and routing were asked of the model; nothing was researched.
        assert [kind_of(r) for r in fake.chat_requests()[before:]] == [
            "ConversationSummary",
            "RouteDecision",
        ]

        state = await state_of(app, "C")
        assert state["constraints"] == [RULE]
        assert state["summary"] == SUMMARY
        messages = state["messages"]
        assert len(messages) <= KEEP + 2  # kept turns + this request and its reply
        assert RULE not in [m.content for m in messages if m.type == "human"]  # summarised away

        compared = await app.start("Compare NVDA and TSLA", thread_id="C", keep_session=True)
        assert compared.status == "awaiting_approval", compared
        assert compared.ticker == "NVDA"
        assert compared.constraints == [RULE]
        state = await state_of(app, "C")
    assert_tsla_kept_out(state["draft"], state["results"])

    requests = fake.chat_requests()
    later = requests[summarised[0] + 1 :]
    research = [r for r in later if kind_of(r) in RESEARCH]
    assert {kind_of(r) for r in research} == set(RESEARCH)
    for r in research:
        assert RULE in system_prompt(r), kind_of(r)
    # The planner works from the summary plus recent turns, and was never offered TSLA.
    [planner] = [r for r in requests if kind_of(r) == "PlanDecision"]
    assert first_user(planner).startswith("Plan deep research on NVDA (primary: NVDA)")
    assert quoted(first_user(planner), "conversation so far").startswith(SUMMARY)
    # No tool result the model saw for the comparison contains TSLA.
    compare_steps = [r for r in requests if kind_of(r) == "executor" and step_of(r)[1] == "NVDA"]
    assert compare_steps
    for r in compare_steps:
        for m in r["messages"]:
            if m["role"] == "tool":
                assert "TSLA" not in content(m)


def test_a_constraint_survives_summarisation_offline_in_analyst_chat(analyst: Any) -> None:
    env = {k: v for k, v in analyst.env.items() if not k.startswith("OPENAI_")}
    env.update(ANALYST_MODEL="offline", ANALYST_HISTORY_MAX_MESSAGES="4", ANALYST_HISTORY_KEEP="2")
    offline = replace(analyst, env=env)
    lines = [
        RULE,
        "later",  # the answer to "remember it in every conversation?"
        "Quick snapshot of AAPL",
        "/approve",
        "Quick snapshot of MSFT",
        "/approve",
        "Analyze TSLA",
        "Compare NVDA and TSLA",
        "/quit",
    ]
    run = offline("chat", input="\n".join(lines) + "\n", timeout=120)
    assert run.code == 0, str(run)
    assert "Traceback" not in run.err
    assert f"Noted. I will follow this from now on: {RULE}" in run.out
    assert f'I won\'t analyse TSLA: it is excluded by your constraint "{RULE}"' in run.out
    assert len(re.findall(r"Published \S+\.md", run.out)) == 2
    thread = re.search(r"Thread (t-[0-9a-f]+) · awaiting approval · NVDA", run.out)
    assert thread, run.out

    state = offline.state(thread.group(1))
    assert state["constraints"] == [RULE]
    assert state["summary"]
    assert len(state["messages"]) <= KEEP + 2
    assert_tsla_kept_out(state["draft"], state["results"])
