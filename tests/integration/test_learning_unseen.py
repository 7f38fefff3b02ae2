"""What the write path keeps from sentences built the way people build them, not the way a
rule was written: a self-assessment that opens with "I think" or "I'd say" (a statement, not
a doubt), a statement followed by a question in the same sentence, a fact in the clause
before a condition (the condition limits only what follows it), a past fall told as a story
(its size is no limit), a holding named by a pronoun for the company the sentence before
names, refusals by distrust or by where the money goes, what the user does because of
someone else's job; and the negatives beside each: a plan after "I think", a question from
its start, a clause in the conditional mood, a sale, someone else's refusal.

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.app import AnalystApp
from memory.facts import subject_for
from tests.support.sessions import app_at, chat

pytestmark = pytest.mark.integration

ATTRIBUTES = (
    "risk_tolerance",
    "max_drawdown_pct",
    "age",
    "horizon_years",
    "holdings",
    "excluded_tickers",
    "employer",
    "full_name",
)


def session(user: str) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 11, 30, 9, tzinfo=UTC), user)


async def profile_of(app: AnalystApp) -> dict[str, Any]:
    learner = await app.memory.learner()
    subject = subject_for(app.principal)
    out: dict[str, Any] = {}
    for attribute in ATTRIBUTES:
        record = await learner.facts.current(subject, attribute)
        if record is not None:
            out[attribute] = record.value
    return out


async def learned(*turns: str) -> dict[str, Any]:
    key = hashlib.sha256("|".join(turns).encode()).hexdigest()[:12]
    async with session(f"unseen-{key}") as app:
        await chat(app, f"unseen-{key}", *turns)
        return await profile_of(app)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'd say I'm a moderate investor overall.", {"risk_tolerance": "moderate"}),
        ("I believe I'm quite conservative with money", {"risk_tolerance": "conservative"}),
        ("I think I'm going to retire in 10 years", {}),
        ("Maybe I'm aggressive, not sure", {}),
    ],
)
async def test_a_self_assessment_is_a_statement_not_a_hedge(
    text: str, expected: dict[str, Any]
) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm 41, what horizon would suit me?", {"age": 41}),
        ("Am I conservative, or should I be aggressive?", {}),
    ],
)
async def test_a_statement_before_a_question_is_still_said(
    text: str, expected: dict[str, Any]
) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I'm 45 and if stocks crash I'll buy more",
            {"age": 45, "risk_tolerance": "aggressive"},
        ),
        ("I'd be aggressive, if I were younger.", {}),
        ("My horizon is 12 years unless we buy a house", {}),
        # "let's say" names a value, it opens no clause of its own
        ("I can take a 30% drop, no, let's say 20% to be safe", {"max_drawdown_pct": 20}),
    ],
)
async def test_a_condition_limits_only_the_clause_it_opens(
    text: str, expected: dict[str, Any]
) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "In 2008 my savings dropped about 40% and I panicked and sold everything.",
            {"risk_tolerance": "conservative"},
        ),
        ("If it dropped 30% I'd sell, that's my limit.", {"max_drawdown_pct": 30}),
    ],
)
async def test_a_past_fall_is_history_not_a_limit(text: str, expected: dict[str, Any]) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (("Amazon keeps surprising me. I hold a fair bit of it.",), {"holdings": ["AMZN"]}),
        (("Tesla crashed today. Glad I don't own it.",), {}),
        (("Apple looks pricey. I sold it last year.",), {}),
    ],
)
async def test_a_holding_named_by_a_pronoun_for_the_company_before(
    turns: tuple[str, ...], expected: dict[str, Any]
) -> None:
    assert await learned(*turns) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I won't touch Nvidia, their ethics bother me.", {"excluded_tickers": ["NVDA"]}),
        ("Google tracks everyone, I don't want my savings in it.", {"excluded_tickers": ["GOOGL"]}),
        (
            "My partner is at Apple, so to be careful we avoid AAPL.",
            {"excluded_tickers": ["AAPL"]},
        ),
        ("I won't touch Meta until earnings are out", {}),
        ("My brother hates Amazon, he doesn't want his money in it", {}),
    ],
)
async def test_an_exclusion_said_as_distrust_or_because_of_someone_elses_job(
    text: str, expected: dict[str, Any]
) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm a data analyst at Accenture, on the Meta account.", {"employer": "Accenture"}),
        ("I'm a consultant working on the Google account for my agency.", {}),
        ("I'm still with Siemens after twelve years.", {"employer": "Siemens"}),
    ],
)
async def test_a_client_account_is_no_employer(text: str, expected: dict[str, Any]) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What I can live with is a 12% dip, no more.", {"max_drawdown_pct": 12}),
        (
            "A 50% drawdown would finish me, 20% is about my max.",
            {"max_drawdown_pct": 20},
        ),
        ("Whenever prices slump I tend to buy.", {"risk_tolerance": "aggressive"}),
        (
            "Years ago I panicked and sold, now I buy more when it drops.",
            {"risk_tolerance": "aggressive"},
        ),
        ("I used to lose sleep over every dip.", {}),
        (
            "I've had my ups and downs, so I'd say I'm somewhere in the middle risk-wise.",
            {"risk_tolerance": "moderate"},
        ),
    ],
)
async def test_losses_limits_and_levels_said_as_people_say_them(
    text: str, expected: dict[str, Any]
) -> None:
    assert await learned(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi, it's Sam, Sam Okoro for your records.", {"full_name": "Sam Okoro"}),
        ("im prety agresive tbh, no kids, 31yo", {"risk_tolerance": "aggressive", "age": 31}),
        (
            "Mostly ETFs but I also have Nvidia and Apple individually, nothing else.",
            {"holdings": ["NVDA", "AAPL"]},
        ),
        ("I also have a Tesla, it's blue.", {}),
    ],
)
async def test_names_ages_and_holdings_in_passing(text: str, expected: dict[str, Any]) -> None:
    assert await learned(text) == expected
