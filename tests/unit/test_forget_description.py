"""Forgetting by what it is, without storage: which profile attributes a request's words
name, what a request to forget is, and how a summary is rewritten without a forgotten value."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent.app.forget_values import FORGOTTEN, rewrite_text, value_targets
from agent.recollection.forgettable import Remembered, Target, named_attributes, targets
from agent.research.routing import forget_topic


@pytest.mark.parametrize(
    ("said", "topic", "names"),
    [
        ("forget that I own NVDA", "I own NVDA", {"holdings"}),
        ("forget that I hold NVDA", "I hold NVDA", {"holdings"}),
        ("please forget my NVDA holdings", "my NVDA holdings", {"holdings"}),
        ("forget my horizon", "my horizon", {"horizon_years"}),
        ("stop remembering where I work", "where I work", {"employer"}),
        ("forget my address", "my address", {"address"}),
        (
            "delete what you know about my risk tolerance",
            "my risk tolerance",
            {"risk_tolerance"},
        ),
    ],
)
def test_a_request_to_forget_names_its_attribute(said: str, topic: str, names: set[str]) -> None:
    assert forget_topic(said) == topic
    assert named_attributes(topic) == names


def test_words_that_merely_contain_an_alias_name_nothing() -> None:
    assert forget_topic("forgetful people") is None
    assert named_attributes("my crypto trades") == set()
    assert named_attributes("the homework") == set()  # "home" only as a word


SUMMARY = (
    "Topic: ZQXV, AAPL. Learned: holdings ZQXV, AAPL; employer Quibblesoft Dynamics; "
    "horizon years 5."
)


def test_a_rewritten_summary_drops_the_element_and_keeps_the_rest() -> None:
    out = rewrite_text(SUMMARY, [("holdings", "ZQXV", ["ZQXV"])])
    assert out == (
        "Topic: AAPL. Learned: holdings AAPL; employer Quibblesoft Dynamics; horizon years 5."
    )


def test_a_rewritten_summary_drops_a_whole_attribute_clause() -> None:
    out = rewrite_text(SUMMARY, [("employer", None, ["Quibblesoft Dynamics"])])
    assert "Quibblesoft" not in out and "employer" not in out
    assert out.endswith("holdings ZQXV, AAPL; horizon years 5.")
    # A mention outside a clause is marked, never kept.
    said = rewrite_text("Quibblesoft Dynamics came up.", [("employer", None, ["Quibblesoft"])])
    assert said == f"{FORGOTTEN} Dynamics came up."


def test_element_ids_name_a_registered_attribute() -> None:
    assert value_targets(["holdings:NVDA", "ep-1", "nothing:X", "01ab"]) == [
        Target("holdings", "NVDA")
    ]
    assert Target("holdings", "nvda").holds(["AAPL", "NVDA"])
    assert not Target("holdings", "NVDA").holds("NVDA")


def _remembered() -> Remembered:
    """Stored facts (stand-ins with a fact row's fields a description reads)."""
    rows = [
        ("holdings", ["ZQXV", "AAPL"]),
        ("watchlist", ["ZQXV"]),
        ("employer", "Quibblesoft Dynamics"),
        ("horizon_years", 10),
        ("risk_tolerance", "aggressive"),
    ]
    facts = [
        SimpleNamespace(memory_id=f"m{n}", attribute=a, value=v, status="open")
        for n, (a, v) in enumerate(rows)
    ]
    return Remembered([], [], [], [], facts, [])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("said", "found"),
    [
        ("I own ZQXV", [Target("holdings", "ZQXV")]),
        ("my zqxv holdings", [Target("holdings", "ZQXV")]),
        ("ZQXV", [Target("holdings", "ZQXV"), Target("watchlist", "ZQXV")]),
        ("my holdings", [Target("holdings")]),
        ("I own MSFT", []),  # not held: nothing, not the whole list
        ("where I work", [Target("employer")]),
        ("that I work at Acme", []),  # another employer: not the stored one
        ("quibblesoft dynamics", [Target("employer")]),  # its value, any case
        ("my horizon is 10 years", [Target("horizon_years")]),
        ("my risk tolerance", [Target("risk_tolerance")]),
        ("that I am aggressive", [Target("risk_tolerance")]),
        ("my crypto trades", []),
    ],
)
def test_a_description_finds_the_fact_by_attribute_and_value(
    said: str, found: list[Target]
) -> None:
    assert targets(_remembered(), said) == found
