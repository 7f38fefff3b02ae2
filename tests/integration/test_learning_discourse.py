"""What a conversation revises and whose statement each claim is, through the chat path with a
real ledger: a revision (in one message, in a later turn, in a later session) supersedes the
value it replaces and the ledger's history keeps both with their episodes; a list edit ends
with the list the user named; someone else's claim is a pending candidate attributed to them
until the user adopts it; a question or a hypothetical is neither.

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

import itertools
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.app import AnalystApp
from memory.facts import subject_for
from tests.support.sessions import app_at, chat, current

pytestmark = pytest.mark.integration


def session(day: int, user: str = "dora") -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 10, day, 9, tzinfo=UTC), user)


async def fact_candidates(app: AnalystApp) -> list[dict[str, Any]]:
    return [c for c in await app.memory.review(status=None) if c["kind"] == "fact"]


async def test_a_revision_in_one_message_keeps_the_revised_value() -> None:
    async with session(1) as app:
        await chat(app, "r1", "my max drawdown is 40%, no, 20%")
        await chat(app, "r2", "risk: aggressive - scratch that, moderate")
        await chat(app, "r3", "my horizon is 5 years, I meant 15")
        assert await current(app, "max_drawdown_pct") == 20
        assert await current(app, "risk_tolerance") == "moderate"
        assert await current(app, "horizon_years") == 15


async def test_each_retraction_marker_revises_the_value_before_it() -> None:
    chats = {
        "scratch that": ("my base currency is USD", "scratch that, EUR"),
        "no wait": ("my max drawdown is 30%", "no wait, 25%"),
        "I misspoke": ("I'm 40", "I misspoke, 44"),
        "let me revise": ("I can stomach a 40% drop", "let me revise: 20% max"),
        "actually": ("my horizon is 3 years", "actually 8"),
        "I meant": ("I'm an aggressive investor", "I meant conservative"),
    }
    expected = {
        "scratch that": ("base_currency", "EUR"),
        "no wait": ("max_drawdown_pct", 25),
        "I misspoke": ("age", 44),
        "let me revise": ("max_drawdown_pct", 20),
        "actually": ("horizon_years", 8),
        "I meant": ("risk_tolerance", "conservative"),
    }
    for day, (marker, turns) in enumerate(chats.items(), start=2):
        async with session(day, user=f"m{day}") as app:
            await chat(app, f"m{day}", *turns)
            attribute, value = expected[marker]
            assert await current(app, attribute) == value, marker


async def test_a_revision_in_a_later_session_supersedes_and_history_keeps_both() -> None:
    async with session(9, user="hist") as app:
        await chat(app, "s1", "I can stomach a 40% drop")
        assert await current(app, "max_drawdown_pct") == 40
    async with session(10, user="hist") as app:
        await chat(app, "s2", "let me revise my max drawdown: 20% max")
        assert await current(app, "max_drawdown_pct") == 20
        learner = await app.memory.learner()
        history = await learner.facts.history(subject_for(app.principal), "max_drawdown_pct")
        episodes = {e.episode_id: e.text for e in await learner.journal.list_episodes()}
    assert [r.value for r in history] == [40, 20]
    cited = [episodes[r.source_episode_id or ""] for r in history]
    assert cited == ["I can stomach a 40% drop", "let me revise my max drawdown: 20% max"]
    assert history[0].valid_to == history[1].valid_from


async def test_a_list_edit_ends_with_the_list_the_user_named() -> None:
    async with session(11, user="lists") as app:
        await chat(app, "l1", "I hold TSLA", "I sold my TSLA, just NVDA now")
        assert await current(app, "holdings") == ["NVDA"]
        await chat(app, "l2", "add AMZN and GOOGL to my watchlist", "swap AMZN for MSFT")
        assert sorted(await current(app, "watchlist")) == ["GOOGL", "MSFT"]
        await chat(app, "l3", "put Meta on my watchlist too", "also add AAPL")
        assert sorted(await current(app, "watchlist")) == ["AAPL", "GOOGL", "META", "MSFT"]
        await chat(app, "l4", "drop Meta from my watchlist")
        assert sorted(await current(app, "watchlist")) == ["AAPL", "GOOGL", "MSFT"]
    async with session(12, user="lists") as app:
        await chat(app, "l5", "I own Apple and AMZN now")
        assert sorted(await current(app, "holdings")) == ["AAPL", "AMZN", "NVDA"]
    async with session(13, user="lists") as app:
        await chat(app, "l6", "I no longer hold Apple")
        assert sorted(await current(app, "holdings")) == ["AMZN", "NVDA"]
        await chat(app, "l7", "instead of GOOGL, watch TSLA")
        assert sorted(await current(app, "watchlist")) == ["AAPL", "MSFT", "TSLA"]


async def test_a_currency_revised_with_a_reason_and_a_name_corrected_next_turn() -> None:
    async with session(14, user="moved") as app:
        await chat(app, "c1", "my base currency is GBP")
        await chat(app, "c2", "I report everything in USD these days")
        assert await current(app, "base_currency") == "USD"
    async with session(15, user="moved") as app:
        await chat(app, "c3", "moved back to the UK, so GBP again")
        assert await current(app, "base_currency") == "GBP"
        await chat(app, "c4", "my name is Jonh Smith", "sorry, John Smith, typo")
        assert await current(app, "full_name") == "John Smith"


async def test_someone_elses_claim_is_their_candidate_until_the_user_adopts_it() -> None:
    async with session(16, user="voices") as app:
        await chat(app, "v1", "my wife thinks I'm an aggressive investor")
        await chat(app, "v2", "my colleague holds NVDA and he is all in on crypto")
        await chat(app, "v3", "The risk quiz in my banking app says my max drawdown is 15%")
        await chat(app, "v4", "what if my adviser said my horizon is 30 years?")
        assert await current(app, "risk_tolerance") is None
        assert await current(app, "holdings") is None
        assert await current(app, "max_drawdown_pct") is None
        assert await current(app, "horizon_years") is None
        pending = await fact_candidates(app)
        by_attribute = {c["payload"]["attribute"]: c for c in pending}
        assert set(by_attribute) == {"risk_tolerance", "max_drawdown_pct"}
        assert by_attribute["risk_tolerance"]["payload"]["source"] == "wife"
        assert "your wife" in by_attribute["risk_tolerance"]["reason"]
        assert by_attribute["max_drawdown_pct"]["payload"]["source"] == "risk quiz"
        await chat(app, "v5", "My planner says my horizon is 12 years. And I agree, that's me too")
        assert await current(app, "horizon_years") == 12
        await chat(app, "v6", "my dad reckons I'm a conservative investor", "he's right")
        assert await current(app, "risk_tolerance") == "conservative"
        settled = {c["payload"]["value"]: c["status"] for c in await fact_candidates(app)}
    assert settled["conservative"] == "confirmed"
    assert settled["aggressive"] == "pending"


async def test_a_value_withdrawn_without_a_new_one_is_closed() -> None:
    async with session(17, user="unsure") as app:
        await chat(
            app, "w1", "horizon 6 years", "scratch that, I honestly don't know my horizon yet"
        )
        assert await current(app, "horizon_years") is None
        learner = await app.memory.learner()
        (record,) = await learner.facts.history(subject_for(app.principal), "horizon_years")
    assert record.value == 6 and record.valid_to is not None


async def test_a_revision_naming_only_its_new_value_replaces_what_the_turn_before_named() -> None:
    async with session(18, user="pronoun") as app:
        await chat(app, "p1", "follow META for me", "replace it with GOOGL")
        assert await current(app, "watchlist") == ["GOOGL"]
        await chat(app, "p2", "please watch Amazon for me", "change that to Meta")
        assert sorted(await current(app, "watchlist")) == ["GOOGL", "META"]
        learner = await app.memory.learner()
        history = await learner.facts.history(subject_for(app.principal), "watchlist")
        episodes = {e.episode_id: e.text for e in await learner.journal.list_episodes()}
    cited = [episodes[r.source_episode_id or ""] for r in history]
    assert cited == [
        "follow META for me",
        "replace it with GOOGL",
        "please watch Amazon for me",
        "change that to Meta",
    ]
    assert all(a.valid_to == b.valid_from for a, b in itertools.pairwise(history))


async def test_a_value_the_user_takes_back_to_keep_private_is_closed() -> None:
    async with session(19, user="private") as app:
        await chat(app, "k1", "I'm 30", "actually, forget I said my age, I'd rather not share it")
        assert await current(app, "age") is None
        await chat(app, "k2", "my horizon is about 7 years", "hmm no, 17 - I typed it wrong")
        assert await current(app, "horizon_years") == 17


async def test_a_claim_stays_theirs_until_the_user_states_it_in_a_later_session() -> None:
    async with session(20, user="later") as app:
        await chat(app, "q1", "The questionnaire from my broker said my tolerance is moderate")
        await chat(app, "q2", "my husband says my horizon is 10 years, but for me it's 20 years")
        await chat(app, "q3", "The thought of retiring early is nice, but my age is 41")
        assert await current(app, "risk_tolerance") is None
        assert await current(app, "horizon_years") == 20
        assert await current(app, "age") == 41
        (claim,) = await fact_candidates(app)
        assert claim["payload"] == {
            "attribute": "risk_tolerance",
            "value": "moderate",
            "source": "questionnaire",
        }
    async with session(21, user="later") as app:
        await chat(app, "q4", "my risk tolerance is moderate")
        assert await current(app, "risk_tolerance") == "moderate"
        (claim,) = await fact_candidates(app)
    assert claim["status"] == "confirmed"


async def test_someone_else_as_the_subject_of_what_the_user_is_makes_a_claim_whatever_the_verb() -> (
    None
):
    async with session(22, user="verbs") as app:
        await chat(app, "g1", "My sister presumes I'm saving for a house")
        await chat(app, "g2", "my uncle is certain that I can't take a loss over 15%")
        await chat(app, "g3", "some guy at the gym told me my horizon should be 30 years")
        await chat(app, "g4", "The planner I saw in May put my goal down as retirement")
        await chat(app, "g5", "Per my accountant, my horizon is 7 years")
        await chat(app, "g6", "My mentor's convinced I'm aggressive")
        for attribute in ("goal", "max_drawdown_pct", "horizon_years", "risk_tolerance"):
            assert await current(app, attribute) is None
        claims = {
            (c["payload"]["attribute"], c["payload"]["value"], c["payload"]["source"])
            for c in await fact_candidates(app)
            if c["status"] == "pending"
        }
    assert claims == {
        ("goal", "home_purchase", "sister"),
        ("max_drawdown_pct", 15, "uncle"),
        ("horizon_years", 30, "some guy"),
        ("goal", "retirement", "planner"),
        ("horizon_years", 7, "accountant"),
        ("risk_tolerance", "aggressive", "mentor"),
    }


async def test_another_persons_value_named_by_its_noun_stays_theirs_and_mine_is_the_users() -> None:
    async with session(23, user="mine") as app:
        await chat(app, "n1", "my partner's horizon is 10 years, mine's 30")
        await chat(app, "n2", "my husband's risk tolerance is aggressive, mine is conservative")
        assert await current(app, "horizon_years") == 30
        assert await current(app, "risk_tolerance") == "conservative"
        assert await fact_candidates(app) == []


async def test_a_claim_conceded_is_adopted_in_the_next_turn_or_the_same_sentence() -> None:
    async with session(24, user="concede") as app:
        await chat(
            app, "a1", "my planner reckons I'm moderate", "fair point, can't argue with that"
        )
        assert await current(app, "risk_tolerance") == "moderate"
        await chat(app, "a2", "my coach says my horizon is 12 years and I agree with her")
        assert await current(app, "horizon_years") == 12


async def test_revision_markers_as_a_class_replace_the_value_before() -> None:
    chats = {
        "starred": (("I'm aggressive", "*conservative"), "risk_tolerance", "conservative"),
        "not X but Y": (("my goal is growth", "not growth but income"), "goal", "income"),
        "I said X but": (
            ("horizon 8 years", "I said eight but it's eighteen years, my mistake"),
            "horizon_years",
            18,
        ),
        "dash sorry": (("I'm 61 - sorry, 62 as of this month",), "age", 62),
        "er": (("I'm 45, er 46",), "age", 46),
        "should read": (
            ("horizon 21 years", "that should read 12 years, not 21"),
            "horizon_years",
            12,
        ),
        "lower that to": (
            ("my max drawdown is 40%", "let me lower that to a quarter"),
            "max_drawdown_pct",
            25,
        ),
    }
    for day, (name, (turns, attribute, value)) in enumerate(chats.items(), start=1):
        async with app_at(datetime(2026, 11, day, 9, tzinfo=UTC), f"mark{day}") as app:
            await chat(app, f"k{day}", *turns)
            assert await current(app, attribute) == value, name


async def test_list_edits_said_in_more_ways_end_with_the_list_the_user_has() -> None:
    async with session(25, user="edits") as app:
        await chat(app, "e1", "I hold AAPL, TSLA and MSFT", "cut Tesla to zero")
        assert sorted(await current(app, "holdings")) == ["AAPL", "MSFT"]
        await chat(app, "e2", "Microsoft's gone from my portfolio", "picked up some Amazon")
        assert sorted(await current(app, "holdings")) == ["AAPL", "AMZN"]
        await chat(app, "e3", "my shares are Apple, Meta - not Meta, Nvidia")
        assert sorted(await current(app, "holdings")) == ["AAPL", "AMZN", "NVDA"]
        await chat(app, "e4", "watch META and GOOGL", "follow Tesla insted of Google")
        assert sorted(await current(app, "watchlist")) == ["META", "TSLA"]
    async with session(26, user="edits") as app:
        await chat(app, "e5", "I'm interested in software and energy")
        await chat(app, "e6", "replace energy with utilities")
        assert sorted(await current(app, "sectors_of_interest")) == ["software", "utilities"]
        await chat(app, "e7", "would swapping Apple for Tesla be smarter?")
        assert sorted(await current(app, "holdings")) == ["AAPL", "AMZN", "NVDA"]


async def test_an_employer_left_stays_in_its_own_clause() -> None:
    async with session(27, user="jobs") as app:
        await chat(app, "j1", "I work at Google", "sorry - I quit Google in May, I'm at Nvidia now")
        assert await current(app, "employer") == "Nvidia"
