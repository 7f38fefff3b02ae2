"""Explicit user constraints: split off a message, merged, and turned into rules the code enforces.

These run on the hot path before any model sees the request, so they are pinned down exactly:
which sentences count as constraints, which tickers a constraint excludes, and which mode it
forces.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.research.constraints import (
    clauses,
    excluded_tickers,
    forced_mode,
    merge,
    split_constraints,
)

KNOWN = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")


@pytest.mark.parametrize(
    ("message", "constraints", "request_text"),
    [
        ("Never include TSLA in any analysis.", ["Never include TSLA in any analysis."], ""),
        ("Analyze NVDA. Never include TSLA.", ["Never include TSLA."], "Analyze NVDA."),
        ("Never include TSLA. Analyze NVDA", ["Never include TSLA."], "Analyze NVDA"),
        ("Do not mention AMZN; analyze MSFT", ["Do not mention AMZN;"], "analyze MSFT"),
        (
            "From now on only quick snapshots.\nQuick look at AAPL",
            ["From now on only quick snapshots."],
            "Quick look at AAPL",
        ),
        (
            "Going forward, always mention the data date!",
            ["Going forward, always mention the data date!"],
            "",
        ),
        ("don't use TSLA as a peer", ["don't use TSLA as a peer"], ""),
        ("Analyze NVDA", [], "Analyze NVDA"),
        ("Compare NVDA and MSFT. Focus on risk.", [], "Compare NVDA and MSFT. Focus on risk."),
        ("", [], ""),
        ("   ", [], ""),
    ],
)
def test_split_constraints(message: str, constraints: list[str], request_text: str) -> None:
    assert split_constraints(message) == (constraints, request_text)


@given(st.text(max_size=200))
def test_split_never_invents_text(message: str) -> None:
    constraints, rest = split_constraints(message)
    for sentence in [*constraints, *rest.split(" ")]:
        assert " ".join(sentence.split()) in " ".join(message.split())


def test_merge_keeps_order_and_drops_case_insensitive_duplicates() -> None:
    existing = ["Never include TSLA.", "Always mention the data date."]
    merged = merge(existing, ["never include tsla.", "Avoid AMZN.", "Avoid AMZN."])
    assert merged == ["Never include TSLA.", "Always mention the data date.", "Avoid AMZN."]
    assert existing == ["Never include TSLA.", "Always mention the data date."]  # not mutated
    assert merge([], []) == []


@pytest.mark.parametrize(
    ("constraints", "excluded"),
    [
        (["Never include TSLA in any analysis."], {"TSLA"}),
        (["never include tsla"], {"TSLA"}),
        (["Avoid Tesla and $AMZN."], {"TSLA", "AMZN"}),
        (["Exclude Facebook."], {"META"}),
        (["No more Google please"], {"GOOGL"}),
        (["Do not use MSFT or NVDA as peers"], {"MSFT", "NVDA"}),
        (["Always include NVDA"], set()),  # not a negative constraint
        (["Always mention the data date."], set()),
        (["Never include ZZZZ"], set()),  # not a known ticker
        ([], set()),
    ],
)
def test_excluded_tickers(constraints: list[str], excluded: set[str]) -> None:
    found = excluded_tickers(constraints, KNOWN)
    assert set(found) == excluded
    for symbol, rule in found.items():
        assert rule in constraints
        assert symbol in KNOWN


def test_the_first_constraint_naming_a_ticker_is_the_one_cited() -> None:
    rules = ["Never include TSLA.", "Avoid Tesla, seriously."]
    assert excluded_tickers(rules, KNOWN) == {"TSLA": "Never include TSLA."}


def test_only_known_tickers_can_be_excluded() -> None:
    assert excluded_tickers(["Never include TSLA."], ("NVDA", "AAPL")) == {}


@pytest.mark.parametrize(
    ("constraints", "mode"),
    [
        (["From now on only quick snapshots."], "flash"),
        (["Only brief answers please."], "flash"),
        (["Always do deep research."], "deep"),
        (["Always give me a full report."], "deep"),
        (["From now on only quick snapshots.", "Always do deep research."], "deep"),
        (["Always do deep research.", "Only quick snapshots from now on."], "flash"),
        (["Always mention the data date."], None),
        (["Never include TSLA."], None),
        (["Quick snapshots are fine."], None),  # no 'only' / 'always': not a rule
        ([], None),
    ],
)
def test_forced_mode(constraints: list[str], mode: str | None) -> None:
    assert forced_mode(constraints) == mode


@pytest.mark.parametrize(
    ("message", "constraints", "request_text", "excluded"),
    [
        ("Don't forget the beta for NVDA.", [], "Don't forget the beta for NVDA.", set()),
        ("I never owned TSLA, analyze it", [], "I never owned TSLA, analyze it", set()),
        ("Analyze NVDA, never mind TSLA", [], "Analyze NVDA, never mind TSLA", set()),
        (
            "Analyze NVDA, but never include TSLA",
            ["but never include TSLA"],
            "Analyze NVDA",
            {"TSLA"},
        ),
    ],
)
def test_idioms_and_mixed_messages_do_not_over_exclude(
    message: str, constraints: list[str], request_text: str, excluded: set[str]
) -> None:
    found, rest = split_constraints(message)
    assert (found, rest) == (constraints, request_text)
    assert set(excluded_tickers(found, KNOWN)) == excluded


def test_clauses_are_verbatim_spans_of_the_text() -> None:
    """A rule kept together with the rule before it keeps its comma as written, so a quote
    of the clause is found in the message again (grounding depends on it)."""
    text = "Compare NVDA,never include META Compare NVDA,never include META"
    found = clauses(text)
    assert found == ["Compare NVDA", "never include META Compare NVDA,never include META"]
    assert all(clause in text for clause in found)
    assert clauses("Going forward,  always include the peer table") == [
        "Going forward,  always include the peer table"
    ]
