"""A rejection's feedback changes the revision a user reads, and its notes claim only what
the revision visibly changed.

Through the real ``analyst`` CLI (run, then reject with feedback, each a new process) and, for
the model path, the application over a scripted model server. The checks read the revision's
length and sections; the notes are only checked never to claim what was not done.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.research.revision import word_count
from tests.support.reference import section, table_rows
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

FEEDBACK = (
    "This is far too long for me. Please skip the technicals - I don't need RSI or moving "
    "averages, just tell me about the risk."
)
#: How RSI and moving averages show in a report's text.
TECHNICAL = re.compile(r"\bRSI\b|moving[- ]average|\b(?:50|200)-day\b|crossover|\btrend\b", re.I)


def body(markdown: str) -> str:
    """The report without its revision notes."""
    return markdown.split("\n## Revision notes", 1)[0]


def technical_lines(markdown: str) -> list[str]:
    """Lines of the stock's sections naming RSI or moving averages (the line saying they were
    left out, and the Sources' list of computations, do not count)."""
    text = body(markdown).split("\n## Sources", 1)[0]
    return [
        line
        for line in text.splitlines()
        if TECHNICAL.search(line) and "left out at your request" not in line.lower()
    ]


def addressed(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if "Addressed" in line]


def test_too_long_skip_the_technicals_more_on_risk_is_what_the_revision_does(
    analyst: Any,
) -> None:
    first = analyst.json("run", "Analyze NVDA", "--thread", "T")
    revised = analyst.json("reject", "T", "--feedback", FEEDBACK)
    assert revised["status"] == "awaiting_approval" and revised["revision"] == 1
    before, after = body(first["draft_markdown"]), body(revised["draft_markdown"])

    # Shorter: a brief report, well under the length of the one rejected.
    assert word_count(after) < 0.75 * word_count(before), (word_count(before), word_count(after))
    assert "*A brief report, as your feedback asks (revision note 1).*" in after
    assert "A detailed report" not in after and "A standard report" not in after

    # No technicals: no RSI or moving-average row, column, section or sentence.
    assert technical_lines(first["draft_markdown"])
    assert technical_lines(revised["draft_markdown"]) == []
    labels = [row[0] for row in table_rows(section(after, "Key metrics"))]
    assert labels and not [label for label in labels if TECHNICAL.search(label)]
    assert "### Trend" not in after and "### Momentum" not in after
    assert "Left out at your request: moving averages, RSI." in section(after, "Key metrics")

    # More on risk: every measured risk factor and the drawdown detail, even in a brief report.
    assert len(section(after, "Risk factors").strip().splitlines()) >= len(
        section(before, "Risk factors").strip().splitlines()
    )
    assert "### Drawdown" in section(after, "Analysis")
    assert "### Drawdown" not in section(before, "Analysis")

    # The critic finds nothing wrong with the notes, and a repeated run gives the same draft.
    assert not [f for f in revised["findings"] if f["severity"] == "error"], revised["findings"]


def test_a_note_never_claims_a_change_the_revision_does_not_show(analyst: Any) -> None:
    first = analyst.json("run", "Analyze NVDA", "--thread", "T")
    shorter = analyst.json("reject", "T", "--feedback", "Too long, keep it short please.")
    assert word_count(body(shorter["draft_markdown"])) < word_count(first["draft_markdown"])
    assert len(addressed(shorter["draft_markdown"])) == 1

    # Valuation data do not exist here: the revision is the same report, and says so.
    asked = "Please add the P/E ratio and the latest earnings."
    valuation = analyst.json("reject", "T", "--feedback", asked)
    same = body(valuation["draft_markdown"]).replace("**Revision:** 2", "**Revision:** 1")
    assert same == body(shorter["draft_markdown"])
    notes = section(valuation["draft_markdown"], "Revision notes")
    assert f'2. Reviewer feedback: "{asked}"' in notes
    assert "Not possible: more on valuation: the analyst has daily prices only" in notes
    assert notes.count("Addressed") == 1  # note 1's, still shown
    assert "Addressed in revision 1: shorter." in notes

    # Shorter again, when the report is already brief: not claimed.
    again = analyst.json("reject", "T", "--feedback", "Still too long.")
    assert word_count(body(again["draft_markdown"])) == word_count(
        body(valuation["draft_markdown"])
    )
    notes = section(again["draft_markdown"], "Revision notes")
    assert "Not done: shorter: this is already a brief report" in notes
    assert notes.count("Addressed") == 1
    assert not [f for f in again["findings"] if f["severity"] == "error"], again["findings"]


def test_a_request_the_runs_results_cannot_meet_is_said_to_be_not_possible(analyst: Any) -> None:
    """A brief plan runs no peer step: the peer table cannot be added by a revision."""
    assert analyst.json("run", "I prefer brief reports", "--thread", "P")["status"] == "noted"
    first = analyst.json("run", "Analyze MSFT", "--thread", "T")
    assert "| Ticker |" not in first["draft_markdown"]
    revised = analyst.json("reject", "T", "--feedback", "Include the peer table.")
    assert "| Ticker |" not in revised["draft_markdown"]
    notes = section(revised["draft_markdown"], "Revision notes")
    assert "Not possible: more on peers: this run computed no peer comparison" in notes
    assert "Addressed" not in notes


def test_feedback_that_names_nothing_concrete_changes_nothing_and_says_so(analyst: Any) -> None:
    first = analyst.json("run", "Analyze NVDA", "--thread", "T")
    vague = analyst.json("reject", "T", "--feedback", "Not convinced, try again.")
    same = body(vague["draft_markdown"]).replace("**Revision:** 1", "**Revision:** 0")
    assert same == body(first["draft_markdown"])
    notes = section(vague["draft_markdown"], "Revision notes")
    assert "Noted: no change recognised" in notes and "Addressed" not in notes


async def test_on_the_model_path_the_models_revision_is_edited_and_checked_by_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scripted model writes "Momentum and trend are both positive." whatever it is asked;
    the revision leaves that sentence out, and the model was told what the reviewer asked."""
    from tests.support.model_script import ScriptedAnalyst, fake_model, first_user, of_kind

    with fake_model(monkeypatch) as server:
        server.respond_with(ScriptedAnalyst())
        async with app_at(datetime(2026, 9, 1, 10, tzinfo=UTC), "mia") as app:
            first = await app.start("Analyze NVDA", thread_id="m1")
            assert first.draft_markdown and "trend are both positive" in first.draft_markdown
            payload = {"action": "reject", "draft_hash": first.draft_hash, "approver": "mia"}
            payload["feedback"] = FEEDBACK
            revised = await app.decide("m1", payload)
        [_, again] = of_kind(server.chat_requests(), "ReportNarrative")
    assert revised.draft_markdown is not None
    assert technical_lines(revised.draft_markdown) == []
    assert word_count(body(revised.draft_markdown)) < 0.75 * word_count(first.draft_markdown)
    assert "*A brief report, as your feedback asks" in revised.draft_markdown
    assert "### Drawdown" in section(revised.draft_markdown, "Analysis")
    assert not [f for f in revised.findings if f["severity"] == "error"], revised.findings
    ask = first_user(again)
    assert "leave out RSI and moving averages" in ask or "leave out technicals" in ask
