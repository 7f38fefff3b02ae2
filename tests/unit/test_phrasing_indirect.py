"""Values people state without naming them: how they react to losses (risk tolerance, a loss
limit), a conflict or a dislike that rules a ticker out, a currency by its symbol or by the
local currency of where they live, a name or an address given in passing.

Each family has its negatives beside it: the same words about someone else, in a question, a
hedge, a hypothetical or sarcasm, or about the market, state nothing. Every value found is
grounded: the registry's ``supports`` accepts the sentence for it and refuses another value.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.learning import profile
from agent.learning.extraction import hot_path_facts


def facts(text: str) -> dict[str, Any]:
    return {f.attribute: f.value for f in hot_path_facts(text, "e") if not f.quoted_source}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # risk tolerance from how the user reacts (or would react) to losses
        ("If the market dropped 30% tomorrow I'd buy more", {"risk_tolerance": "aggressive"}),
        ("I back up the truck whenever stocks crash", {"risk_tolerance": "aggressive"}),
        ("I see crashes as buying opportunities", {"risk_tolerance": "aggressive"}),
        ("Volatility doesn't bother me at all.", {"risk_tolerance": "aggressive"}),
        ("I slept like a baby through the 2020 crash", {"risk_tolerance": "aggressive"}),
        ("i didnt sell a single share in 2008", {"risk_tolerance": "aggressive"}),
        ("I can stomach big swings, no problem", {"risk_tolerance": "aggressive"}),
        ("I panicked and sold everything in March 2020", {"risk_tolerance": "conservative"}),
        ("I can't stomach big swings in my portfolio", {"risk_tolerance": "conservative"}),
        ("losing money keeps me up at night", {"risk_tolerance": "conservative"}),
        ("honestly I cant afford to lose any of it", {"risk_tolerance": "conservative"}),
        ("I get really nervous when the market drops", {"risk_tolerance": "conservative"}),
        ("I need to be able to sleep at night", {"risk_tolerance": "conservative"}),
        ("I can handle some ups and downs but nothing crazy", {"risk_tolerance": "moderate"}),
        ("I'm fine with a bit of volatility", {"risk_tolerance": "moderate"}),
        # a loss limit from a reaction
        ("a 30% fall and I'd bail", {"max_drawdown_pct": 30}),
        ("down twenty percent and I'm pulling out", {"max_drawdown_pct": 20}),
        ("If it ever dropped by a third I'd cash out", {"max_drawdown_pct": 33.33}),
        # tickers ruled out by a conflict or a dislike
        ("I work at the FTC so I can't own Meta", {"excluded_tickers": ["META"]}),
        ("can't stand Musk, keep Tesla out", {"excluded_tickers": ["TSLA"]}),
        ("I'm not allowed to trade AAPL because of my job", {"excluded_tickers": ["AAPL"]}),
        ("compliance won't let me hold Google", {"excluded_tickers": ["GOOGL"]}),
        ("I hate Amazon, don't want it anywhere near my money", {"excluded_tickers": ["AMZN"]}),
        ("steer clear of Nvidia and Microsoft for me", {"excluded_tickers": ["NVDA", "MSFT"]}),
        ("Tesla is off limits for me", {"excluded_tickers": ["TSLA"]}),
        # a currency by its symbol, or by the country of a local currency
        ("my money is all in yen", {"base_currency": "JPY"}),
        ("I think in pounds", {"base_currency": "GBP"}),
        ("everything in £ please", {"base_currency": "GBP"}),
        ("I'm € based", {"base_currency": "EUR"}),
        ("I'm a CHF-based investor", {"base_currency": "CHF"}),
        ("I live in Switzerland and keep everything in local currency", {"base_currency": "CHF"}),
        ("we're in Japan, so our savings are in the local currency", {"base_currency": "JPY"}),
        # a name or an address in passing
        ("I'm Dana Whitfield by the way", {"full_name": "Dana Whitfield"}),
        ("Dana Whitfield here, nice to meet you", {"full_name": "Dana Whitfield"}),
        ("Thanks for the help. Cheers, Omar Haddad", {"full_name": "Omar Haddad"}),
        ("you can call me Priya Raman", {"full_name": "Priya Raman"}),
        ("we're at 14 Elm Street, Leeds LS6 2AB", {"address": "14 Elm Street, Leeds LS6 2AB"}),
        (
            "you can reach me at 22 Baker Street, London NW1 6XE",
            {"address": "22 Baker Street, London NW1 6XE"},
        ),
        ("our flat is at 3 Rue Cler, Paris", {"address": "3 Rue Cler, Paris"}),
        (
            "we just moved into 4 Birch Close, York YO1 3AB if you need it for letters",
            {"address": "4 Birch Close, York YO1 3AB"},
        ),
        (
            "so basically: I'm Pieter de Vries, 51, retired",
            {"full_name": "Pieter de Vries", "age": 51},
        ),
        ("full name Sam Okoro if you need it", {"full_name": "Sam Okoro"}),
    ],
)
def test_an_indirect_statement_states_the_value(text: str, expected: dict[str, Any]) -> None:
    assert facts(text) == expected
    for attribute, value in expected.items():
        assert profile.attribute(attribute).supports(value, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my horzion is 7 yaers", {"horizon_years": 7}),
        ("I want to stay invested during 9 years at least", {"horizon_years": 9}),
        ("two years and a half before I touch any of it", {"horizon_years": 2.5}),
        ("I have 52 years and a grandson", {"age": 52}),
        ("seventy years young!", {"age": 70}),
        ("I'm now at Nvidia, on the hardware team", {"employer": "Nvidia"}),
        ("Detailed please.", {"report_style": "detailed"}),
        ("a deep dive every time, I have the patience", {"report_style": "detailed"}),
        ("Utilities are the areas I want to explore", {"sectors_of_interest": ["utilities"]}),
        ("ping me whenever there's news on Nvidia", {"watchlist": ["NVDA"]}),
        ("my timeframe is five years... no wait, make it eight", {"horizon_years": 8}),
        ("I'd love updates on Apple and Amazon", {"watchlist": ["AAPL", "AMZN"]}),
        ("honestly I just want to keep an eye on Tesla", {"watchlist": ["TSLA"]}),
        ("tobacco kills people, keep it out of my portfolio", {"excluded_sectors": ["tobacco"]}),
        ("I have Nvidia and Tesla", {"holdings": ["NVDA", "TSLA"]}),
        ("i have some msft, aapl & amzn.", {"holdings": ["MSFT", "AAPL", "AMZN"]}),
        ("Show me amounts in won, I'm in Seoul.", {"base_currency": "KRW"}),
        ("Currently I am holding Tesla only, nothing else.", {"holdings": ["TSLA"]}),
        ("and for now I only own some Microsoft", {"holdings": ["MSFT"]}),
        ("As a long-time Apple shareholder, I want to see their buybacks", {"holdings": ["AAPL"]}),
        ("I have money in Tesla and Nvidia", {"holdings": ["TSLA", "NVDA"]}),
        (
            "As Rahul Mehta, a long-time Apple shareholder, I want to see their buybacks.",
            {"full_name": "Rahul Mehta", "holdings": ["AAPL"]},
        ),
        ("My goal is simply not to lose what I already have.", {"goal": "preservation"}),
        ("tl;dr versions please", {"report_style": "brief"}),
        ("all figures in rupees please", {"base_currency": "INR"}),
    ],
)
def test_other_attributes_said_indirectly_or_misspelt(text: str, expected: dict[str, Any]) -> None:
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Leeds last year",
        "I have 30 years of experience in sales",
        "Now give me a deep dive on Tesla",
        "I'm at 40% cash right now",
        "let me know if Tesla is a buy",
        "This Is Great News",
        "I'm Buying Tesla Today",
        "send it to 5 people",
        "I didn't sell my car in 2020",
        "Keep Apple out of the comparison this time",
        "I can't hold NVDA any longer, selling tomorrow",
        "losing weight keeps me up at night",
        "my savings sat in the bank for like 8 years",
        "tobacco stocks are cheap, keep it in mind",
        "I have a Tesla",
        "I have Tesla questions",
        "I have Nvidia news for you",
        "the Lakers won, I'm in a good mood",
        "I won in the lottery",
        "Tesla shareholders are furious today",
        "I'm not a Tesla shareholder",
        "I have money in the bank, and Tesla keeps rising",
        "a Tesla shareholder meeting is today",
        "As usual, a Tesla shareholder complained on the call",
        "I don't want to lose sleep over this",
        "the Fed is meant to cut rates in June",
        "as an Apple shareholder meeting attendee I was bored",
    ],
)
def test_no_fact_from_look_alikes(text: str) -> None:
    assert facts(text) == {}


@pytest.mark.parametrize(
    ("attribute", "value", "text"),
    [
        ("risk_tolerance", "conservative", "If the market dropped 30% tomorrow I'd buy more"),
        ("risk_tolerance", "aggressive", "I can't stomach big swings in my portfolio"),
        ("risk_tolerance", "aggressive", "I can handle some ups and downs but nothing crazy"),
        ("base_currency", "JPY", "I live in Switzerland and keep everything in local currency"),
        ("excluded_tickers", ["AAPL"], "I work at the FTC so I can't own Meta"),
    ],
)
def test_the_words_of_a_reaction_support_only_its_own_value(
    attribute: str, value: Any, text: str
) -> None:
    assert not profile.attribute(attribute).supports(value, text)


@pytest.mark.parametrize(
    "text",
    [
        # someone else, a question, a hedge, a hypothetical about a trait, sarcasm
        "my wife can't stomach big swings",
        "my brother panicked and sold everything in 2020",
        "would you buy more if it dropped 30%?",
        "maybe I'd buy more if it dropped, not sure",
        "oh sure, a 50% crash wouldn't bother me at all lol",
        "if I were aggressive I'd buy TSLA",
        # the market, not the user
        "the market could drop 30% this year",
        "Meta had a 20% drawdown last year",
        "investors panicked and sold everything in March 2020",
        "I can't believe Tesla fell again",
        "I hate that NVDA dropped today",
        "I can't buy more Apple until payday",
        "I don't hate Tesla",
        "my friend can't own Meta because of her job",
        # living somewhere is no base currency; a currency in the news is none either
        "my friend lives in Japan",
        "I live in Japan",
        "I'm based in Switzerland",
        "the yen is weak right now",
        "is GBP a good base currency?",
        "€50 a month is what I can put in",
        # names and addresses that are not the user's
        "Dana Whitfield wrote a good article on AAPL",
        "I'm Very Happy With The Report",
        "the office is at 14 Elm Street",
        "I'm at 14% cash right now",
    ],
)
def test_no_indirect_fact_from_others_questions_hedges_or_the_market(text: str) -> None:
    assert facts(text) == {}
