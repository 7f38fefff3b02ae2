"""Reading ordinary phrasing: what a message states about its author, and what it does not.

The offline rules are pinned down on varied wording per attribute (casual, formal, typos,
numbers in words, units), on messages that state two facts or one fact inside a long
ramble, on corrections within a message and across turns, and on everything that must state
no fact: hedges, questions, hypotheticals, sarcasm, talk about the market, another person's
traits. Someone else's view of the user is read, but marked reported (a candidate).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent.learning.extraction import OfflineExtractor, hot_path_facts
from agent.learning.grounding import ground
from agent.learning.understanding import read
from memory.journal.records import Episode

T0 = datetime(2026, 5, 14, 10, 30, tzinfo=UTC)


def episode(n: int, text: str) -> Episode:
    return Episode(
        tenant_id="acme",
        episode_id=f"ep-{n}",
        user_id="alice",
        thread_id="T",
        at=T0 + timedelta(minutes=n),
        role="user",
        kind="message",
        text=text,
    )


def facts(text: str, *recent: str) -> dict[str, Any]:
    return {
        f.attribute: f.value
        for f in hot_path_facts(text, "e", recent=recent)
        if not f.quoted_source
    }


def reported(text: str) -> dict[str, Any]:
    return {f.attribute: f.value for f in hot_path_facts(text, "e") if f.quoted_source}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # risk tolerance
        ("Risk tolerance: low", {"risk_tolerance": "conservative"}),
        ("as an investor I'm very conservative", {"risk_tolerance": "conservative"}),
        ("I'm fairly aggressive when it comes to investing", {"risk_tolerance": "aggressive"}),
        ("i'd describe my risk profile as balanced", {"risk_tolerance": "moderate"}),
        ("I'm comfortable with high risk", {"risk_tolerance": "aggressive"}),
        ("I like to play it safe.", {"risk_tolerance": "conservative"}),
        ("I'm a pretty risk-averse person", {"risk_tolerance": "conservative"}),
        # horizon, with numbers in words and units
        ("I'll need the money in about 7 years", {"horizon_years": 7}),
        ("time horizon of about fifteen years", {"horizon_years": 15}),
        ("I plan to hold for eight years", {"horizon_years": 8}),
        ("my timeframe is a decade and a half", {"horizon_years": 15}),
        ("horizon: 42 months", {"horizon_years": 3.5}),
        ("I'm in it for the next two decades", {"horizon_years": 20}),
        ("I'm 5 years away from retirement", {"horizon_years": 5}),
        # age
        ("I just turned 40", {"age": 40}),
        ("I'm a 52 year old teacher", {"age": 52}),
        # the condition after the clause limits only itself: the age stands
        ("I am forty-four, if that matters to you.", {"age": 44}),
        ("Age: 37", {"age": 37}),
        # drawdown
        ("I can stomach a 30 percent drop", {"max_drawdown_pct": 30}),
        ("losing more than a quarter would be too much for me", {"max_drawdown_pct": 25}),
        ("I'd sell everything if my portfolio fell more than 15%", {"max_drawdown_pct": 15}),
        ("my max drawdown tolerance is ten percent", {"max_drawdown_pct": 10}),
        # goal and income
        ("I'm saving up for a house", {"goal": "home_purchase"}),
        ("The money is for my kids' college", {"goal": "education"}),
        ("It's basically my retirement fund", {"goal": "retirement"}),
        ("Main objective: capital preservation", {"goal": "preservation"}),
        ("I prefer dividend-paying stocks", {"income_preference": "dividends"}),
        ("growth over dividends for me", {"income_preference": "growth"}),
        ("I like a mix of income and growth stocks", {"income_preference": "balanced"}),
        # report style
        ("Keep it short please", {"report_style": "brief"}),
        ("long reports are fine, I read everything", {"report_style": "detailed"}),
        ("I want reports in detail", {"report_style": "detailed"}),
        # tickers
        ("keep an eye on Tesla for me", {"watchlist": ["TSLA"]}),
        ("I'd like to follow Microsoft and $AMD", {"watchlist": ["MSFT", "AMD"]}),
        ("I own a few Tesla shares", {"holdings": ["TSLA"]}),
        ("Currently holding MSFT and GOOGL", {"holdings": ["MSFT", "GOOGL"]}),
        ("I'm heavily invested in Apple", {"holdings": ["AAPL"]}),
        # employer, currency, sectors
        ("I'm a software engineer at Google", {"employer": "Google"}),
        ("I work for Siemens in Munich", {"employer": "Siemens"}),
        ("Report everything in GBP please", {"base_currency": "GBP"}),
        ("All my money is in Canadian dollars", {"base_currency": "CAD"}),
        ("base currency = Swiss francs", {"base_currency": "CHF"}),
        ("I'm really into healthcare and biotech", {"sectors_of_interest": ["healthcare"]}),
        (
            "Semis and software are my focus",
            {"sectors_of_interest": ["semiconductors", "software"]},
        ),
        ("No crypto, ever.", {"excluded_sectors": ["crypto"]}),
        ("I won't invest in gambling or tobacco", {"excluded_sectors": ["gambling", "tobacco"]}),
        ("Keep oil companies out of my recommendations", {"excluded_sectors": ["fossil_fuels"]}),
        ("my appetite for risk is pretty high", {"risk_tolerance": "aggressive"}),
        ("I hate losing money, so I keep things low-risk", {"risk_tolerance": "conservative"}),
        ("I won't touch this money for at least 10 years", {"horizon_years": 10}),
        ("Anything over 25% down and I'd lose sleep", {"max_drawdown_pct": 25}),
        ("A 40% crash would wipe me out, I'd say 15% max", {"max_drawdown_pct": 15}),
        (
            "This is for a down payment on a flat in 3 years",
            {"goal": "home_purchase", "horizon_years": 3},
        ),
        ("I'm a dividend guy", {"income_preference": "dividends"}),
        ("Just the highlights please, no long reports", {"report_style": "brief"}),
        ("My positions: AAPL, MSFT", {"holdings": ["AAPL", "MSFT"]}),
        ("Microsoft is my employer", {"employer": "Microsoft"}),
        ("He is aggressive, I'm moderate", {"risk_tolerance": "moderate"}),
        ("my wife is 45 and I'm 47", {"age": 47}),
        (
            "I'm not sure about my horizon but I'm definitely aggressive",
            {"risk_tolerance": "aggressive"},
        ),
        ("I'd love to retire early, in 15 years", {"goal": "retirement", "horizon_years": 15}),
        ("Make the reports shorter", {"report_style": "brief"}),
        # personal data
        ("Hi, I'm Jane Doe.", {"full_name": "Jane Doe"}),
        ("My name is Ana María López", {"full_name": "Ana María López"}),
        ("I live at 221B Baker Street, London", {"address": "221B Baker Street, London"}),
    ],
)
def test_ordinary_phrasing_states_a_fact(text: str, expected: dict[str, Any]) -> None:
    assert facts(text) == expected


def test_two_facts_in_one_message_and_one_fact_in_a_long_one() -> None:
    assert facts("I'm 35 and my horizon is twenty years.") == {"age": 35, "horizon_years": 20}
    ramble = (
        "Good morning! I have been reading about markets for a while and my cousin keeps "
        "sending me articles, which is nice but a lot. Anyway, what I wanted to say is that I "
        "keep everything in Norwegian kroner. Thanks for listening."
    )
    assert facts(ramble) == {"base_currency": "NOK"}


@pytest.mark.parametrize(
    "text",
    [
        "I might switch to brief reports at some point",
        "Should I be more aggressive?",
        "What if I retired in 10 years",
        "Tesla's risk is high right now",
        "Semiconductors look overbought, high risk at these prices",
        "Bonds are for conservative investors",
        "My brother is a conservative investor",
        "oh sure, I'm a patient long-term holder, I sell at the first dip lol yeah right",
        "my horizon is 5-7 years, hard to say",
        "I have been investing for 12 years",
        "I used to work at Amazon",
        "I sold all my Apple shares",
        "I'm cautious about NVDA right now.",
        "NVDA fell 20% last week",
        "I'm not aggressive",
        "perhaps dividends, perhaps not",
        "Sure, I'm super conservative, that's why I bought crypto lol",
        "I'm 30 years into my career",
        "tell me whether a 10 year horizon is long",
        "My son is saving for college",
        "My husband works at Google",
        "I was a conservative investor in my twenties",
        "My portfolio is down 30% this year",
    ],
)
def test_no_fact_from_hedges_questions_market_talk_sarcasm_or_others(text: str) -> None:
    assert facts(text) == {}


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("My accountant told me my horizon should be 10 years", "horizon_years", 10),
        ("The advisor put me down as aggressive", "risk_tolerance", "aggressive"),
        ("According to my planner, I'm a moderate investor", "risk_tolerance", "moderate"),
        ("my dad thinks my base currency should be dollars", "base_currency", "USD"),
        ("The questionnaire rated me aggressive", "risk_tolerance", "aggressive"),
        ("my mum wants me to save for a house", "goal", "home_purchase"),
    ],
)
def test_someone_elses_view_of_the_user_is_reported(text: str, attribute: str, value: Any) -> None:
    assert reported(text) == {attribute: value}
    assert facts(text) == {}


def test_the_users_own_word_wins_over_someone_elses_in_the_same_message() -> None:
    text = "My planner says conservative but really aggressive suits me"
    assert facts(text) == {"risk_tolerance": "aggressive"}
    assert reported(text) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("short reports, no wait, make them detailed ones", {"report_style": "detailed"}),
        ("My horizon is 8 years. Sorry, I meant 18.", {"horizon_years": 18}),
        ("base currency EUR -- scratch that, GBP", {"base_currency": "GBP"}),
        ("I'm 41, correction: 42", {"age": 42}),
        ("I'm 40. No, 41.", {"age": 41}),
    ],
)
def test_a_correction_within_a_message_keeps_the_later_value(
    text: str, expected: dict[str, Any]
) -> None:
    found = hot_path_facts(text, "e")
    assert {f.attribute: f.value for f in found} == expected
    assert all(f.correction for f in found)


@pytest.mark.parametrize(
    ("before", "after", "attribute", "value"),
    [
        ("my horizon is 6 years", "oops, 16. fat fingers", "horizon_years", 16),
        ("max drawdown 30%", "wait no, make it twenty percent", "max_drawdown_pct", 20),
        ("I report in CAD", "I misspoke: AUD", "base_currency", "AUD"),
        (
            "I'm conservative",
            "actually no, I'm more aggressive than that",
            "risk_tolerance",
            "aggressive",
        ),
        ("I own AAPL", "sorry, not AAPL, I meant AMZN", "holdings", ["AMZN"]),
        ("my horizon is 4 years", "no, 14 not 4", "horizon_years", 14),
    ],
)
def test_a_bare_correction_refers_to_the_attribute_stated_before(
    before: str, after: str, attribute: str, value: Any
) -> None:
    (fact,) = hot_path_facts(after, "e", recent=[before])
    assert (fact.attribute, fact.value) == (attribute, value)
    if isinstance(value, list):  # the one item set aside is taken out, the rest of the list kept
        assert not fact.correction and fact.removed == ["AAPL"]
    else:
        assert fact.correction
    assert hot_path_facts(after, "e") == [] or attribute == "risk_tolerance"


def test_the_session_end_reads_corrections_across_turns_and_grounds_every_fact() -> None:
    episodes = [
        episode(1, "horizon roughly 9 years"),
        episode(2, "no sorry, 19"),
        episode(3, "I'm thirty three"),
        episode(4, "my wife says I should be retiring soon"),
    ]
    extraction = OfflineExtractor().extract_now(episodes)
    stated = [(f.attribute, f.value, f.correction) for f in extraction.new_facts]
    assert stated == [("horizon_years", 9, False), ("horizon_years", 19, True), ("age", 33, False)]
    assert ground(extraction, episodes).rejected == []


def test_every_reading_quotes_a_sentence_that_states_its_value() -> None:
    text = "Hi there. I'm 29. My paycheck comes from Nvidia, and I keep my savings in yen."
    readings = read(text)
    assert [(r.attribute, r.value) for r in readings] == [
        ("age", 29),
        ("employer", "Nvidia"),
        ("base_currency", "JPY"),
    ]
    assert all(r.quote in text for r in readings)


@pytest.mark.parametrize("after", ["sorry, one more thing", "sorry I have 2 questions", "no idea"])
def test_a_marker_without_a_standalone_value_corrects_nothing(after: str) -> None:
    assert hot_path_facts(after, "e", recent=["my horizon is 4 years", "I'm 50"]) == []
