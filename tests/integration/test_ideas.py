"""Ideas from the profile, as two new investors would ask for them in their own words.

A cautious 62-year-old retiree (dividends, a 15% drawdown limit, no TSLA, no crypto) and an
aggressive 28-year-old (30 years, growth, semiconductors, no META) tell ``analyst chat`` about
themselves and ask what to buy; then ``analyst run`` asks again in a new thread, offline and on
the model path (the fake OpenAI server). Real parts: the console script, SQLite checkpoints,
the fact ledger and journal; the profile is what the chat's hot path recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, structured
from tests.support.model_script import ScriptedAnalyst, fake_model, kind_of, with_model

pytestmark = pytest.mark.integration

RETIREE = (
    "I am 62 and retired.",
    "I am a conservative investor.",
    "I want dividends.",
    "My drawdown limit is 15%.",
    "No crypto for me.",
    "Never include TSLA",
    "y",  # remember it in every conversation
)
RETIREE_FORBIDDEN = ("TSLA", "Tesla", "crypto")
YOUNG = (
    "I am 28.",
    "My horizon is 30 years.",
    "I am an aggressive investor.",
    "My goal is growth.",
    "I am interested in semiconductors.",
    "Never include META",
    "y",
)
YOUNG_FORBIDDEN = ("META", "Facebook")
DATA_AGE = "Data: daily prices up to 2023-12-29, the last price date of the data used"


def as_user(analyst: Any, user: str) -> Any:
    return replace(analyst, env={**analyst.env, "ANALYST_USER": user})


def chat(analyst: Any, *lines: str) -> str:
    run = analyst("chat", input="\n".join([*lines, "/quit"]) + "\n")
    assert run.code == 0 and "Traceback" not in run.err, str(run)
    return run.out


def turn(out: str, asked: str) -> str:
    """What the chat printed for the message ``asked``: from its prompt to the next one."""
    thread = out.index(f"· '{asked}'")
    return out[out.rindex("you> ", 0, thread) : out.index("you> ", thread)]


def naming(text: str, words: tuple[str, ...]) -> list[str]:
    return [w for w in words if re.search(rf"(?<![A-Za-z0-9]){w}(?![A-Za-z0-9])", text, re.I)]


def shortlist(text: str) -> list[str]:
    """The shortlist's tickers, in order."""
    return re.findall(r"^(?:analyst: .*\n)?\d\. ([A-Z]+)\b", text, re.M)


def episodes(analyst: Any) -> dict[str, str]:
    """The episode each of the user's facts and procedures came from, by attribute."""
    out = {}
    for name in ("risk_tolerance", "max_drawdown_pct", "income_preference", "excluded_sectors"):
        out[name] = cited_episode(analyst, name)
    for name in ("horizon_years", "goal", "sectors_of_interest"):
        out[name] = cited_episode(analyst, name)
    procedures = analyst.json("memory", "procedures")["procedures"]
    out["procedure"] = procedures[0]["episode_ids"][0] if procedures else ""
    return out


def cited_episode(analyst: Any, attribute: str) -> str:
    record = analyst("facts", "current", "me", attribute, "--json").json()
    return record["source_episode_id"] if record else ""


def reasons(text: str) -> list[str]:
    """The reason lines under the shortlist (indented bullets)."""
    return re.findall(r"^   - (.+)$", text, re.M)


def test_two_opposite_profiles_get_different_ideas_each_reason_citing_its_fact(
    analyst: Any,
) -> None:
    ruth, theo = as_user(analyst, "ruth"), as_user(analyst, "theo")
    careful = turn(chat(ruth, *RETIREE, "what should I buy?"), "what should I buy?")
    bold = turn(chat(theo, *YOUNG, "any ideas for me?"), "any ideas for me?")

    assert "answered" in careful and "ideas from your profile" in careful
    assert shortlist(careful) == ["MSFT"]  # the only stock within every limit she set
    assert shortlist(bold) == ["NVDA", "TSLA", "AMZN"]
    assert naming(careful, RETIREE_FORBIDDEN) == []
    assert naming(bold, YOUNG_FORBIDDEN) == []
    for text in (careful, bold):
        assert DATA_AGE in text
        assert reasons(text) and all(
            re.search(r"\[ep-[0-9a-f]+(, ep-[0-9a-f]+)*\]$", r) for r in reasons(text)
        )

    hers, his = episodes(ruth), episodes(theo)
    assert (
        "its deepest fall over the last year, -13.17%, stayed within your 15% drawdown limit "
        f"[{hers['max_drawdown_pct']}]" in careful
    )
    assert f"a conservative investor usually accepts [{hers['risk_tolerance']}]" in careful
    assert "regular quarterly dividend (since 2003); a reference fact" in careful
    assert f"as prices carry no yield [{hers['income_preference']}]" in careful
    assert (
        "AAPL (last close 192.53, 1-year return +52.75%, volatility 20.39%, max drawdown "
        "-15.05%): its deepest fall over the last year, -15.05%, is deeper than your 15% "
        f"drawdown limit [{hers['max_drawdown_pct']}]" in careful
    )
    # What her exclusions leave out is counted and cited, never named.
    assert (
        "Left out: 1 stock your exclusions rule out "
        f"[{hers['excluded_sectors']}, {hers['procedure']}]." in careful
    )
    assert f"a sector you follow [{his['sectors_of_interest']}]" in bold
    assert "your 30-year horizon gives time to ride out" in bold
    assert f"[{his['horizon_years']}]" in bold and f"[{his['goal']}]" in bold
    assert "Left out: 1 stock your exclusions rule out" in bold

    # A new thread from the command line: the same ideas, nothing excluded anywhere in it.
    again = ruth("run", "what should I buy?")
    assert again.code == 0, str(again)
    assert shortlist(again.out) == ["MSFT"] and DATA_AGE in again.out
    assert naming(again.out + again.err, RETIREE_FORBIDDEN) == [], again.out
    assert "procedure: applied (proc-" in again.out


def test_without_a_profile_ideas_rank_on_data_alone_and_a_ticker_still_means_research(
    analyst: Any,
) -> None:
    run = analyst("run", "suggest a few stocks")
    assert run.code == 0, str(run)
    assert "on the price data alone" in run.out
    assert '"my drawdown limit is 15%"' in run.out
    assert shortlist(run.out) == ["NVDA", "META", "AMZN"] and DATA_AGE in run.out

    # A request that is neither a ticker nor a request for ideas is refused as before.
    refused = analyst.fail("run", "analyze the thing")
    assert refused.code == 2
    assert "No ticker found in 'analyze the thing'" in refused.err
    # A named ticker is research, as before.
    research = analyst("run", "should I buy NVDA?", "--json")
    assert research.code == 0, str(research)
    view = research.json()
    assert view["plan"][0].endswith(":NVDA") and view["status"] == "awaiting_approval"


def test_ideas_are_answered_beside_a_draft_that_awaits_a_decision(analyst: Any) -> None:
    ruth = as_user(analyst, "ruth")
    out = chat(ruth, *RETIREE, "quick snapshot of NVDA", "what should I buy?", "/approve")

    # No question about setting the draft aside: ideas research nothing.
    assert "Set it aside" not in out
    beside = out[out.index("analyst: Ideas from") :]
    assert shortlist(beside) == ["MSFT"] and DATA_AGE in beside
    assert "The NVDA draft on thread" in beside and "still awaits your decision" in beside
    assert naming(beside[: beside.index("Published")], RETIREE_FORBIDDEN) == []
    assert re.search(r"Thread t-[0-9a-f]+ · published", beside), beside


# -- the model path ------------------------------------------------------------------------


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with fake_model(monkeypatch) as server:
        yield server


def ideas_requests(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [r for r in server.chat_requests() if kind_of(r) == "IdeasAnswer"]


def test_the_model_phrases_the_ranking_and_cannot_slip_an_excluded_ticker_in(
    analyst: Any, fake: FakeOpenAI
) -> None:
    ruth = as_user(analyst, "ruth")
    chat(ruth, *RETIREE)
    slipping = "1. MSFT fits. 2. TSLA: Tesla's crypto exposure is exciting [ep-x]."
    script = ScriptedAnalyst(
        overrides={
            "IdeasAnswer": lambda request: structured(
                "IdeasAnswer", {"answer": slipping, "cited": []}
            )
        }
    )
    fake.respond_with(script)
    model = with_model(ruth, fake)

    run = model("run", "what should I buy?")
    assert run.code == 0, str(run)
    # Asked, and asked again once with the problem; then the ranking's own answer.
    asked = ideas_requests(fake)
    assert len(asked) == 2
    # Code routed it: no model was asked which tickers the request means.
    assert [r for r in fake.chat_requests() if kind_of(r) == "RouteDecision"] == []
    sent = json.dumps(asked[0]["messages"])
    assert "MSFT" in sent and naming(sent, RETIREE_FORBIDDEN) == []
    assert "The model's wording failed the checks" in run.out
    assert shortlist(run.out) == ["MSFT"] and DATA_AGE in run.out
    assert naming(run.out + run.err, RETIREE_FORBIDDEN) == [], run.out

    # A clean phrasing is used as the model wrote it, with the data's age added.
    episode = cited_episode(ruth, "max_drawdown_pct")
    clean = (
        f"MSFT is the one stock that fits: its -13.17% fall stayed within your limit [{episode}]."
    )
    script.overrides["IdeasAnswer"] = lambda request: structured(
        "IdeasAnswer", {"answer": clean, "cited": [episode]}
    )
    run = model("run", "anything for a dividend investor?")
    assert run.code == 0, str(run)
    assert clean in run.out and DATA_AGE in run.out
    assert naming(run.out + run.err, RETIREE_FORBIDDEN) == []
