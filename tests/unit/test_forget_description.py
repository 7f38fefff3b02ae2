"""Forgetting by what it is, without storage: which profile attributes a request's words
name, what a request to forget is, and how a summary is rewritten without a forgotten value."""

from __future__ import annotations

import pytest

from agent.app.forget_values import FORGOTTEN, rewrite_text, value_targets
from agent.recollection.forgettable import Target, named_attributes
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
