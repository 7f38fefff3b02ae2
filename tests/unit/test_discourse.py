"""The discourse layer offline: what a message revises against what was said and stored, which
list edits it makes, and whose words a claim is (no services)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.learning.discourse import (
    adopts,
    removal_stated,
    replacement_stated,
    replaces,
    source_of,
    withdrawn,
)
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


@pytest.mark.parametrize(
    ("text", "recent", "attribute", "value"),
    [
        ("no 14 yeras, sorry fat fingers", ("horizon 4 yaers",), "horizon_years", 14),
        ("hmm no, 17 - I typed it wrong", ("my horizon is 7 years",), "horizon_years", 17),
        (
            "take META off again, and put AMZN on instead",
            ("watch AAPL and META",),
            "watchlist",
            ["AMZN"],
        ),
    ],
)
def test_a_revision_reads_past_typos_dashes_and_apologies(
    text: str, recent: tuple[str, ...], attribute: str, value: Any
) -> None:
    found = [(f.attribute, f.value) for f in hot_path_facts(text, "e", recent=list(recent))]
    assert found == [(attribute, value)]


def test_a_revision_naming_only_the_new_value_takes_out_what_the_turn_before_named() -> None:
    (fact,) = hot_path_facts(
        "replace it with GOOGL", "e2", recent=["follow META for me"], recent_ids=["e1"]
    )
    assert (fact.value, fact.removed, fact.episode_ids) == (["GOOGL"], ["META"], ["e2", "e1"])
    # Adding is no replacing, and a message naming what it replaces needs no earlier one.
    (fact,) = hot_path_facts("oh, also GOOGL", "e2", recent=["follow META"], recent_ids=["e1"])
    assert fact.removed == []
    assert replaces("change that to Meta") and not replaces("also add AAPL too")
    assert replacement_stated(["META"], "replace it with GOOGL", ["follow META for me"])
    assert not replacement_stated(["META"], "replace it with GOOGL", ["follow AAPL"])


def test_the_pair_of_episodes_grounds_a_revision_naming_only_its_new_value() -> None:
    from datetime import UTC, datetime

    def said(episode_id: str, text: str) -> Episode:
        return Episode(
            tenant_id="t",
            episode_id=episode_id,
            user_id="u",
            thread_id="th",
            at=datetime(2026, 1, 1, tzinfo=UTC),
            role="user",
            kind="message",
            text=text,
        )

    episodes = [said("e1", "follow META for me"), said("e2", "replace it with GOOGL")]
    revision = ExtractedFact(
        quote="replace it with GOOGL",
        episode_ids=["e2", "e1"],
        attribute="watchlist",
        value=["GOOGL"],
        removed=["META"],
        correction=True,
    )
    unsaid = revision.model_copy(update={"episode_ids": ["e2"]})
    grounded = ground(Extraction(topic="", summary="", new_facts=[revision, unsaid]), episodes)
    assert [f.episode_ids for f in grounded.accepted.new_facts] == [["e2", "e1"]]
    assert "does not take" in grounded.rejected[0].reason


@pytest.mark.parametrize(
    ("text", "attribute"),
    [
        ("actually, forget I said my age, I'd rather not share it", "age"),
        ("please delete that, I don't want my address stored", "address"),
        ("on second thought, don't keep my address", "address"),
        ("scratch that, I honestly don't know my horizon yet", "horizon_years"),
        ("delete that, my horizon is 5", None),
        ("I'd rather not take risks with my horizon", None),
    ],
)
def test_a_value_is_withdrawn_when_the_user_takes_it_back_and_gives_none(
    text: str, attribute: str | None
) -> None:
    assert withdrawn(text) == attribute


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("The questionnaire from my broker said my tolerance is moderate", "questionnaire"),
        ("Vanguard's online questionnaire put me down as conservative", "online questionnaire"),
        ("My dad says I should be conservative", "dad"),
        ("my financial planner noted my max drawdown as 20%", "financial planner"),
    ],
)
def test_a_claim_naming_the_attribute_or_how_the_user_should_be_is_reported(
    text: str, source: str
) -> None:
    (fact,) = hot_path_facts(text, "e")
    assert fact.quoted_source and source in fact.source


def test_the_users_own_words_are_no_report_and_win_over_a_claim() -> None:
    (fact,) = hot_path_facts(
        "The thought of retiring early is nice, but my horizon is 25 years", "e"
    )
    assert (fact.attribute, fact.value, fact.quoted_source) == ("horizon_years", 25, False)
    (fact,) = hot_path_facts(
        "my husband says my horizon is 10 years, but for me it's 20 years", "e"
    )
    assert (fact.value, fact.quoted_source) == (20, False)
    (fact,) = hot_path_facts(
        "my broker says my max drawdown is 20%, but he's been wrong for 10 years",
        "e",
        recent=["my horizon is 12 years"],
    )
    assert (fact.attribute, fact.quoted_source) == ("max_drawdown_pct", True)
