"""The discourse layer offline: what a message revises against what was said and stored, which
list edits it makes, and whose words a claim is (no services)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.learning.discourse import adopts, removal_stated, source_of
from agent.learning.extraction import ExtractedFact, Extraction, hot_path_facts
from agent.learning.grounding import ground
from memory.journal.records import Episode

HELD: dict[str, Any] = {"holdings": ["AAPL", "TSLA", "NVDA"], "watchlist": ["AMZN", "META"]}


def edits(text: str, recent: tuple[str, ...] = ()) -> list[tuple[str, Any, list[str], bool]]:
    return [
        (f.attribute, f.value, f.removed, f.whole)
        for f in hot_path_facts(text, "e", recent=list(recent), held=HELD)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I dumped my Tesla shares last week", [("holdings", [], ["TSLA"], False)]),
        ("took META off my watchlist", [("watchlist", [], ["META"], False)]),
        ("I don't own Apple anymore", [("holdings", [], ["AAPL"], False)]),
        ("sold AAPL and bought MSFT", [("holdings", ["MSFT"], ["AAPL"], False)]),
        ("swap AMZN for MSFT on my watchlist", [("watchlist", ["MSFT"], ["AMZN"], False)]),
        ("instead of META, watch GOOGL", [("watchlist", ["GOOGL"], ["META"], False)]),
        ("I sold my TSLA, just NVDA now", [("holdings", ["NVDA"], ["TSLA"], True)]),
        ("I only hold NVDA now", [("holdings", ["NVDA"], [], True)]),
        ("also add GOOGL", [("watchlist", ["GOOGL"], [], False)]),
    ],
)
def test_a_list_edit_names_what_goes_and_what_comes(text: str, expected: list[Any]) -> None:
    assert edits(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "should I sell TSLA?",
        "I might sell TSLA",
        "if I sold TSLA what would happen",
        "I haven't sold TSLA",
        "I'm thinking of dropping META from my watchlist",
        "sold half my NVDA",
        "my husband sold his TSLA",
        "add a peer comparison for NVDA",
        "I sold all my Microsoft shares",  # not held: nothing to take out
    ],
)
def test_no_edit_from_questions_hedges_partial_sales_others_or_what_is_not_held(
    text: str,
) -> None:
    assert edits(text) == []


@pytest.mark.parametrize(
    ("text", "recent", "attribute", "value"),
    [
        ("let me revise: 20% max", ("I can stomach a 40% drop",), "max_drawdown_pct", 20),
        ("no, let me take that back. moderate.", (), "risk_tolerance", "moderate"),
        ("horizon ten years... actually make it twelve", (), "horizon_years", 12),
        ("I'm 36 actually, not 38, don't age me", ("I'm 38",), "age", 36),
        (
            "I'm aggressive - well, moderate if I'm honest with myself",
            (),
            "risk_tolerance",
            "moderate",
        ),
        ("sorry, John Smith, typo", ("my name is Jonh Smith",), "full_name", "John Smith"),
        ("Please report in USD, er, I mean GBP, I moved to Leeds.", (), "base_currency", "GBP"),
        ("I work for Google - sorry, I used to, I'm at Meta now", (), "employer", "Meta"),
        (
            "I moved! new address is 48 Mill Road, Cambridge CB1 2AD",
            (),
            "address",
            "48 Mill Road, Cambridge CB1 2AD",
        ),
    ],
)
def test_the_revised_value_wins(
    text: str, recent: tuple[str, ...], attribute: str, value: Any
) -> None:
    found = [(f.attribute, f.value) for f in hot_path_facts(text, "e", recent=list(recent))]
    assert found == [(attribute, value)]


def test_a_revision_without_a_marker_names_only_an_unmistakable_stored_value() -> None:
    held = {"base_currency": "USD", "employer": "Boston", "horizon_years": 5}
    (fact,) = hot_path_facts("moved back to the UK, so GBP again", "e", held=held)
    assert (fact.attribute, fact.value) == ("base_currency", "GBP")
    assert hot_path_facts("I'm back to 7 again", "e", held=held) == []


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("my wife thinks I'm an aggressive investor", "wife"),
        ("The risk quiz in my banking app says my max drawdown is 15%", "risk quiz"),
        ("mum always says I'm too cautious for my age", "mum"),
        ("The robo-advisor set my horizon to 20 years", "robo-advisor"),
        ("My partner keeps telling me I can't handle more than a 10% drop", "partner"),
    ],
)
def test_someone_elses_claim_is_reported_with_its_source(text: str, source: str) -> None:
    (fact,) = hot_path_facts(text, "e")
    assert fact.quoted_source and fact.source == source
    assert source_of(text) == source


def test_an_adoption_makes_the_claim_the_users_own() -> None:
    (fact,) = hot_path_facts(
        "My planner says my horizon is 12 years. And I agree, that's me too", "e"
    )
    assert (fact.value, fact.quoted_source) == (12, False)
    (fact,) = hot_path_facts(
        "he's right",
        "e2",
        recent=["my dad reckons I'm a conservative investor"],
        recent_ids=["e1"],
    )
    assert (fact.value, fact.quoted_source, fact.episode_ids) == (
        "conservative",
        False,
        ["e2", "e1"],
    )
    assert adopts("she's probably right")
    assert not adopts("I don't agree") and not adopts("she's not right")


def test_a_removal_is_grounded_only_by_a_quote_naming_the_ticker_with_its_cue() -> None:
    from datetime import UTC, datetime

    said = Episode(
        tenant_id="t",
        episode_id="e",
        user_id="u",
        thread_id="th",
        at=datetime(2026, 1, 1, tzinfo=UTC),
        role="user",
        kind="message",
        text="I sold my TSLA. I like NVDA.",
    )
    facts = [
        ExtractedFact(
            quote="I sold my TSLA.",
            episode_ids=["e"],
            attribute="holdings",
            value=[],
            removed=["TSLA"],
        ),
        ExtractedFact(
            quote="I like NVDA.",
            episode_ids=["e"],
            attribute="holdings",
            value=[],
            removed=["NVDA"],
        ),
        ExtractedFact(
            quote="I sold my TSLA.",
            episode_ids=["e"],
            attribute="holdings",
            value=["TSLA"],
            whole=True,
        ),
    ]
    grounded = ground(Extraction(topic="", summary="", new_facts=facts), [said])
    assert [f.removed for f in grounded.accepted.new_facts] == [["TSLA"]]
    assert len(grounded.rejected) == 2
    assert removal_stated(["TSLA"], "swap TSLA for NVDA") and not removal_stated(["TSLA"], "TSLA")


def test_a_sector_taken_out_goes_and_the_one_added_comes() -> None:
    held = {"sectors_of_interest": ["software", "healthcare"]}
    (fact,) = hot_path_facts(
        "actually drop healthcare, add semiconductors",
        "e",
        recent=["I'm interested in software and healthcare"],
        held=held,
    )
    assert (fact.value, fact.removed) == (["semiconductors"], ["healthcare"])
    (fact,) = hot_path_facts("no more tobacco or weapons", "e")
    assert fact.attribute == "excluded_sectors" and fact.removed == []
