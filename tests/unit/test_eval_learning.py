"""The learning evaluation's scorer (scripts/eval_learning.py): numbers within 1%, lists as
sets, strings without case or punctuation; a third party's claim handled right only as a
pending candidate; a correction right only when the revised value holds and no withdrawn one
remains; the frozen split's failures listed without their words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.eval_learning import (
    Outcome,
    choose,
    correction_right,
    equal,
    load_outcomes,
    model_settings,
    render,
    report,
    score,
    sessions,
    summarise,
    third_party_right,
)


def _scored(
    case: dict, facts: dict, candidates: dict | None = None, split: str = "develop"
) -> Outcome:
    outcome = Outcome({"id": "x1", "turns": ["..."], **case}, split=split)
    outcome.facts, outcome.candidates = facts, candidates or {}
    score(outcome)
    return outcome


def test_numbers_are_equal_within_one_percent_of_the_expected_value() -> None:
    assert equal(20.19, 20) and equal(33.3, 33.33) and equal(1.5, 1.5)
    assert not equal(20.3, 20) and not equal(0.8, 0.75)


def test_lists_are_sets_without_case_and_strings_lose_case_and_punctuation() -> None:
    assert equal(["msft", "AAPL"], ["AAPL", "MSFT"])
    assert not equal(["AAPL", "MSFT", "TSLA"], ["AAPL", "MSFT"])
    assert not equal(["AAPL"], ["AAPL", "MSFT"])
    assert equal("margaret oneill", "Margaret O'Neill")
    assert not equal("Jon Smiht", "Jon Smith")


def test_a_wrong_value_is_one_false_positive_and_one_false_negative() -> None:
    outcome = _scored(
        {"expect": {"max_drawdown_pct": 20, "age": 40}}, {"max_drawdown_pct": 40, "age": 40}
    )
    assert outcome.tp == ["age"]
    assert outcome.fp == [("max_drawdown_pct", 40)]
    assert outcome.fn == [("max_drawdown_pct", 20)]


def test_a_third_party_claim_is_right_only_as_a_pending_candidate() -> None:
    case = {
        "kind": "third_party",
        "expect": {},
        "expect_candidates": ["risk_tolerance"],
        "forbid": ["risk_tolerance"],
    }
    held = _scored(case, {}, {"risk_tolerance": ["aggressive"]})
    stored = _scored(case, {"risk_tolerance": "aggressive"}, {})
    lost = _scored(case, {}, {})
    assert third_party_right(held)
    assert not third_party_right(stored) and not third_party_right(lost)
    unforbidden = {"kind": "third_party", "expect": {}, "expect_candidates": ["goal"]}
    assert not third_party_right(_scored(unforbidden, {"goal": "income"}, {"goal": ["income"]}))
    figures = summarise([held, stored, lost])["third_party"]
    assert figures["right"] == 1 and figures["cases"] == 3
    assert figures["claims_held_as_candidates"] == 1 and figures["claims_stored_as_facts"] == 1


def test_an_adopted_claim_must_be_a_fact_and_a_third_partys_own_fact_must_not() -> None:
    adopted = {"kind": "third_party", "expect": {"risk_tolerance": "moderate"}}
    assert third_party_right(_scored(adopted, {"risk_tolerance": "moderate"}))
    assert not third_party_right(_scored(adopted, {}, {"risk_tolerance": ["moderate"]}))
    their_own = {"kind": "third_party", "expect": {}, "forbid": ["holdings"]}
    assert third_party_right(_scored(their_own, {}))
    assert not third_party_right(_scored(their_own, {"holdings": ["NVDA"]}))


def test_a_correction_is_right_only_when_no_withdrawn_value_remains() -> None:
    case = {"kind": "correction", "expect": {"holdings": ["AAPL", "MSFT"]}}
    assert correction_right(_scored(case, {"holdings": ["MSFT", "AAPL"]}))
    assert not correction_right(_scored(case, {"holdings": ["AAPL", "MSFT", "TSLA"]}))
    retracted = {"kind": "correction", "expect": {}, "forbid": ["age"]}
    assert correction_right(_scored(retracted, {}))
    assert not correction_right(_scored(retracted, {"age": 40}))
    figures = summarise(
        [_scored(case, {"holdings": ["AAPL", "MSFT"]}), _scored(retracted, {"age": 40})]
    )
    assert figures["corrections"] == {"cases": 2, "right": 1, "share": 0.5}


def test_splits_are_columns_and_the_frozen_splits_failures_show_no_words() -> None:
    case = {"kind": "statement", "expect": {"age": 41}, "turns": ["a secret sentence"]}
    develop = _scored(case, {"age": 14}, split="develop")
    frozen = _scored(case, {"age": 14}, split="frozen")
    result = report([frozen, develop])
    assert result["columns"] == ["develop", "frozen"]
    text = render(result)
    assert text.count("a secret sentence") == 2  # develop's FP and FN, not frozen's
    assert "FN [frozen] x1 age" in text and "FP [frozen] x1 age" in text
    assert "turns" not in json.dumps(result["splits"]["frozen"])


def test_saved_outcomes_are_scored_again_on_load(tmp_path: Path) -> None:
    outcome = _scored({"kind": "correction", "expect": {"age": 55}}, {"age": 55})
    saved = tmp_path / "outcomes.jsonl"
    saved.write_text(json.dumps(outcome.raw()) + "\n")
    (loaded,) = load_outcomes(saved)
    assert loaded.tp == ["age"] and loaded.split == "develop" and loaded.path == "offline"


def test_model_settings_come_from_the_environment_or_the_local_server() -> None:
    given = model_settings({"OPENAI_BASE_URL": "http://h/v1", "ANALYST_MODEL": "openai:m"})
    assert (
        given["OPENAI_BASE_URL"] == "http://h/v1"
        and given["ANALYST_STRUCTURED_OUTPUT"] == "json_schema"
    )
    local = model_settings({"ANALYST_REAL_MODEL_URL": "http://l/v1", "ANALYST_REAL_MODEL": "smol"})
    assert local["ANALYST_MODEL"] == "openai:smol"
    with pytest.raises(ValueError, match="ANALYST_MODEL=openai:"):
        model_settings({"OPENAI_BASE_URL": "http://h/v1", "ANALYST_MODEL": "offline"})


def test_an_unknown_case_id_or_a_missing_corpus_is_an_error(tmp_path: Path) -> None:
    corpus = tmp_path / "mine.jsonl"
    corpus.write_text(json.dumps({"id": "m1", "turns": ["hi"], "expect": {}}) + "\n")
    assert [(s, c["id"]) for s, c in choose("all", corpus, set())] == [("mine", "m1")]
    with pytest.raises(ValueError, match="unknown case ids: m2"):
        choose("all", corpus, {"m2"})
    with pytest.raises(ValueError, match="no corpus at"):
        choose("all", tmp_path / "absent.jsonl", set())


def test_a_quit_turn_starts_a_new_session_of_the_same_case() -> None:
    assert sessions(["I own Apple.", "/quit", "Sold the Apple."]) == [
        ["I own Apple."],
        ["Sold the Apple."],
    ]
    assert sessions(["I own Apple."]) == [["I own Apple."]]
