"""Feedback read as edits, and the critic's check that a revision note claims only what the
revision visibly changed (over real computed results for NVDA)."""

from __future__ import annotations

from datetime import date

import pytest

from agent.market import SampleDataProvider
from agent.research.critic import critique
from agent.research.planning import deep_plan
from agent.research.report import compose_report
from agent.research.revision import Request, edits_of, requests_of
from agent.research.routing import route_query
from agent.research.steps import run_step

FEEDBACK = (
    "This is far too long for me. Please skip the technicals - I don't need RSI or moving "
    "averages, just tell me about the risk."
)


@pytest.mark.parametrize(
    ("feedback", "expected"),
    [
        (
            FEEDBACK,
            [Request("shorter"), Request("drop", "technicals"), Request("more", "risk")],
        ),
        ("add more on risk", [Request("more", "risk")]),
        ("Include the peer table.", [Request("more", "peers")]),
        ("no peer table please", [Request("drop", "peers")]),
        ("less detail on the peers", [Request("drop", "peers")]),
        ("Could you go more in depth?", [Request("longer")]),
        ("Add the P/E ratio", [Request("more", "valuation")]),
        ("Not convinced, try again.", []),
        ("The risk section is fine, but the peer table is useless.", [Request("drop", "peers")]),
        ("What about the downside?", [Request("more", "risk")]),
    ],
)
def test_feedback_is_read_as_requests(feedback: str, expected: list[Request]) -> None:
    assert requests_of(feedback) == expected


def test_a_later_request_on_the_same_topic_wins() -> None:
    edits = edits_of(["drop the peers", "actually, bring back the peer comparison"])
    assert edits.more == {"peers"} and edits.drop == frozenset()
    assert edits_of(["too long", "now too short"]).length == "longer"
    # Risk is kept in every report; valuation cannot be covered: neither changes the layout.
    assert edits_of(["skip the risk section, add valuation"]).empty


def nvda() -> dict:
    market = SampleDataProvider()
    route = route_query("Analyze NVDA", market.available_tickers())
    return {s["id"]: dict(run_step(s, market)) for s in deep_plan(route)}


def errors(draft: dict) -> list[str]:
    found = critique(draft, today=date(2024, 1, 5))["findings"]
    return [f["message"] for f in found if f["severity"] == "error"]


def test_the_critic_refuses_a_note_that_claims_a_change_the_draft_does_not_show() -> None:
    results = nvda()
    first = compose_report(ticker="NVDA", mode="deep", results=results)
    revised = compose_report(
        ticker="NVDA",
        mode="deep",
        results=results,
        feedback=[FEEDBACK],
        revision=1,
        previous=first,
    )
    assert errors(revised) == []
    # The same notes over the first draft's text: nothing they claim shows.
    notes = revised["markdown"][revised["markdown"].index("## Revision notes") :]
    forged = {**revised, "markdown": first["markdown"] + "\n" + notes}
    problems = errors(forged)
    assert any("Revision note 1 says it addressed 'shorter'" in p for p in problems), problems
    assert any("leave out technicals" in p for p in problems), problems
    assert any("more on risk" in p for p in problems), problems
