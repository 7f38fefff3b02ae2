"""Breadth per attribute: the ways people say each profile attribute beyond the plain forms.

Figures in words ("a quarter of a century", "the coming decade"), horizons said as two ages
("I'm 40 ... until I'm 65"), refusals whose object is a pronoun ("Meta gives me the creeps,
I don't want a single share of it"), employers by a role or a job verb ("a Microsoft
engineer", "I build pipelines for Amazon"), currencies after a nationality ("I'm Danish so
please use kroner"), holdings by "both", watch requests ("keep me updated on Meta"),
reactions to losses told as stories, and several facts in one clause. Each family has its
negatives beside it, and every value found is one the registry grounds in the sentence.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.learning import exclusions, profile, quantities, timeline
from agent.learning.extraction import _known, hot_path_facts

KNOWN = _known([])


def facts(text: str) -> dict[str, Any]:
    return {f.attribute: f.value for f in hot_path_facts(text, "e") if not f.quoted_source}


# -- the readers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "years"),
    [
        ("leave it alone for a quarter of a century", 25),
        ("stick with it for the coming decade", 10),
        ("for the next year or so", 1),
        ("half a century from now", 50),
        ("a decade and a half", 15),
    ],
)
def test_durations_in_words(text: str, years: float) -> None:
    assert [y for _, y in quantities.durations(text)] == [years]


def test_the_next_names_no_duration_without_a_unit() -> None:
    assert list(quantities.durations("for the next few years")) == []


@pytest.mark.parametrize(
    ("text", "horizon"),
    [
        ("I'm 40 now and I won't touch this money until I'm 65.", 25),
        ("I'm 52 and I plan to retire at 60", 8),
        ("I'm thirty-eight and hoping to stop working at fifty-five.", 17),
        ("I'm 30 and I'd like to retire by age 50", 20),
    ],
)
def test_a_horizon_is_the_years_between_two_ages(text: str, horizon: float) -> None:
    assert [y for y, _ in timeline.horizons_by_age(text)] == [horizon]
    assert profile.attribute("horizon_years").supports(horizon, text)
    assert not profile.attribute("horizon_years").supports(horizon + 1, text)


@pytest.mark.parametrize(
    "text",
    [
        "I want to retire at 60",  # no age now
        "I'm 70 and retired at 60",  # the event is past
        "my dad is 58 and retires at 65",
    ],
)
def test_no_horizon_without_the_age_now_and_a_later_one(text: str) -> None:
    assert timeline.horizons_by_age(text) == []


def test_the_age_at_an_event_is_no_age_now() -> None:
    assert [v for v, _ in timeline.ages("I won't touch it until I'm 65")] == []
    assert [v for v, _ in timeline.ages("I'm 40 and won't touch it until I'm 65")] == ["40"]


@pytest.mark.parametrize(
    ("text", "tickers"),
    [
        ("Meta gives me the creeps, I don't want a single share of it.", ["META"]),
        ("Amazon treats its staff terribly and I refuse to give them a cent.", ["AMZN"]),
        ("I'm a contractor at Nvidia, so I'm not allowed to own their stock.", ["NVDA"]),
        ("Musk's antics put me off Tesla for good.", ["TSLA"]),
        ("I'd never put a penny into Meta after the scandals.", ["META"]),
        ("Tesla is a firm no for me.", ["TSLA"]),
        ("I'm at Tesla, so owning Tesla stock would be a conflict of interest.", ["TSLA"]),
    ],
)
def test_exclusions_by_a_pronoun_a_dislike_or_a_conflict(text: str, tickers: list[str]) -> None:
    assert [f[1] for f in exclusions.excluded_tickers(text, KNOWN)] == [tickers]


@pytest.mark.parametrize(
    "text",
    [
        "Nvidia is expensive and I don't want to buy it at these levels.",
        "Apple is pricey, I won't buy it right now.",
        "I bought Tesla but I don't want to hold it forever.",
        "I sold Apple and I won't buy it back.",
        "Google and Meta both look cheap, I don't want to miss them.",
        "My brother hates Tesla and won't own it.",
    ],
)
def test_no_exclusion_from_a_view_of_price_or_someone_else(text: str) -> None:
    assert exclusions.excluded_tickers(text, KNOWN) == []


# -- what the chat path learns ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # figures in words, horizons said as ages or events
        ("the plan is to leave it alone for a quarter of a century", {"horizon_years": 25}),
        ("I'm sticking with it for the coming decade.", {"horizon_years": 10}),
        (
            "I'm 40 now and I won't touch this money until I'm 65.",
            {"age": 40, "horizon_years": 25},
        ),
        (
            "I could stomach losing twenty percent, beyond that I'd pull out",
            {"max_drawdown_pct": 20},
        ),
        # risk as reactions to losses
        (
            "When my portfolio dropped 30% in 2022 I kept adding to my positions.",
            {"risk_tolerance": "aggressive"},
        ),
        ("red days in the market make me want to throw up", {"risk_tolerance": "conservative"}),
        ("Honestly a 10% down week barely registers for me.", {"risk_tolerance": "aggressive"}),
        ("Big swings are fine by me, I'm in it for the upside.", {"risk_tolerance": "aggressive"}),
        ("Losing even a few hundred dollars makes me anxious.", {"risk_tolerance": "conservative"}),
        (
            "Cautious 63-year-old here, nothing flashy for me.",
            {"risk_tolerance": "conservative", "age": 63},
        ),
        # employers
        ("I work in the finance department at Meta.", {"employer": "Meta"}),
        ("Been with Apple's retail team for nine years now.", {"employer": "Apple"}),
        ("I build data pipelines for Amazon Web Services.", {"employer": "Amazon"}),
        ("Occupation: data analyst at Amazon.", {"employer": "Amazon"}),
        (
            "I'm a 45 year old Microsoft engineer with a 20 year horizon.",
            {"age": 45, "employer": "Microsoft", "horizon_years": 20},
        ),
        # currencies
        ("I'm Danish so please use kroner.", {"base_currency": "DKK"}),
        ("I'm Japanese, so yen is what I think in.", {"base_currency": "JPY"}),
        ("please quote prices in £, I'm in Edinburgh", {"base_currency": "GBP"}),
        # holdings and watchlist
        ("Apple and Amazon - I own both, have done for years.", {"holdings": ["AAPL", "AMZN"]}),
        ("I'm sitting on a big pile of Apple shares.", {"holdings": ["AAPL"]}),
        (
            "My brokerage account is almost all Microsoft and Google stock.",
            {"holdings": ["MSFT", "GOOGL"]},
        ),
        ("Keep me updated on Meta please.", {"watchlist": ["META"]}),
        ("Alert me if anything major happens at Nvidia.", {"watchlist": ["NVDA"]}),
        (
            "I hold Apple and Nvidia and I'm keeping an eye on Amazon.",
            {"holdings": ["AAPL", "NVDA"], "watchlist": ["AMZN"]},
        ),
        ("Put Amazon and Meta on my radar.", {"watchlist": ["AMZN", "META"]}),
        # names and addresses in passing
        (
            "By the way I'm Tomas Lindqvist, I just moved to 5 Harbour Street, Dundee DD1 3AB.",
            {"full_name": "Tomas Lindqvist", "address": "5 Harbour Street, Dundee DD1 3AB"},
        ),
        (
            "Quick intro: Aisha Bello, 41, nurse, based at 17 Park Road, Leeds LS6 1AA.",
            {"full_name": "Aisha Bello", "age": 41, "address": "17 Park Road, Leeds LS6 1AA"},
        ),
        ("Signing off for today - thanks, Ravi Menon", {"full_name": "Ravi Menon"}),
        # reactions told as a habit or an idiom, a measured amount of risk
        ("Sell-offs are when I do my shopping, honestly.", {"risk_tolerance": "aggressive"}),
        ("I thrive on the excitement of speculative stocks.", {"risk_tolerance": "aggressive"}),
        ("I'd rather sleep well than eat well.", {"risk_tolerance": "conservative"}),
        ("I get twitchy when stocks fall and sell too early.", {"risk_tolerance": "conservative"}),
        ("I'm comfortable taking a fair amount of risk.", {"risk_tolerance": "moderate"}),
        # horizons with the money as subject, or retirement some years off
        ("This money is locked away for the next fifteen years.", {"horizon_years": 15}),
        ("I'm in it for the long run, 25 years minimum.", {"horizon_years": 25}),
        ("Retirement is about twelve years away for me.", {"horizon_years": 12}),
        # a shared currency name the country qualifies
        ("We moved to Chile, so pesos from now on.", {"base_currency": "CLP"}),
        ("I'm Canadian, so dollars.", {"base_currency": "CAD"}),
        ("I'm German, so dollars.", {"base_currency": "USD"}),
        # employers by team, exclusions by guilt or "off the table"
        ("I'm on the Amazon logistics team in Seattle.", {"employer": "Amazon"}),
        (
            "I'd feel guilty holding Tesla given everything Musk says.",
            {"excluded_tickers": ["TSLA"]},
        ),
        (
            "Working at Nvidia means NVDA is off the table for me.",
            {"employer": "Nvidia", "excluded_tickers": ["NVDA"]},
        ),
        ("I'd like alerts about Apple when it reports.", {"watchlist": ["AAPL"]}),
        # several facts in one clause: the rules read some, the meaning the rest
        ("I'm 29 and my day job is at Nvidia.", {"age": 29, "employer": "Nvidia"}),
        (
            "I'm a conservative guy who has been on Amazon's payroll for years.",
            {"risk_tolerance": "conservative", "employer": "Amazon"},
        ),
    ],
)
def test_the_ways_people_say_it(text: str, expected: dict[str, Any]) -> None:
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I might end up working at Google next year, who knows.",
        "I interviewed at Google last week but didn't get the job.",
        "I left Microsoft last year and now I freelance.",
        "I write reviews for Apple products on my blog.",
        "My sister works at Meta, she loves it there.",
        "If the market fell 40% I honestly don't know whether I'd buy more or run.",
        "My brother keeps all his money in euros and panics at every dip.",
        "Would twenty percent be a reasonable stop loss for someone like me?",
        "I don't own any Tesla and I don't work there either.",
        "Is it true the yen is the safest currency to hold?",
        "My friend is Swiss, so she thinks in francs.",
        "Nvidia looks overvalued, I'd steer clear of it for now.",
        "I'm not buying Amazon right now, the price is too high.",
        "I drive a Tesla and love it.",
        "I've been investing for twenty years now.",
        "What do you think about Tesla?",
        "When did Apple last split its stock?",
        "If anything I'd say Tesla is overvalued.",
        "I'd feel bad buying Apple at this price, maybe later.",
        "My dad loves the thrill of penny stocks.",
        "Crashes are when most people panic and sell.",
        "If I were braver I'd buy more on dips.",
        "Our company uses Microsoft software.",
        "Tesla is a firm no from my advisor.",
        "Seeing my balance is the first thing I do each morning.",
        "When the market crashed in 2020, my brother sold everything.",
        "What I want to know is whether Nvidia is overvalued.",
    ],
)
def test_the_same_words_state_nothing_when_hedged_asked_denied_or_someone_elses(
    text: str,
) -> None:
    assert facts(text) == {}
