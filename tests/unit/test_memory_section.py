"""The critic checks a report's "Memory context" section through the conventions, like every
other section: allowed where the conventions list it, and each bullet must cite its source."""

from __future__ import annotations

from datetime import date

from agent.market import SampleDataProvider
from agent.research.conventions import (
    Conventions,
    default_conventions,
    parse_analysis_format,
)
from agent.research.critic import critique, memory_problems
from agent.research.planning import deep_plan
from agent.research.report import REQUIRED_SECTIONS, compose_report
from agent.research.routing import route_query
from agent.research.steps import run_step
from agent.research.suitability import Profile, profile_notes
from agent.state import Draft

CITED = "Your horizon years: 2 (stated since 2026-09-01; fact f1; episodes e1)."


def draft(*personal: str) -> Draft:
    market = SampleDataProvider()
    route = route_query("Analyze NVDA", market.available_tickers())
    results = {s["id"]: dict(run_step(s, market)) for s in deep_plan(route)}
    return compose_report(ticker="NVDA", mode="deep", results=results, personal=personal)


def messages(d: Draft, conventions: Conventions | None = None) -> list[str]:
    found = critique(d, today=date(2024, 1, 5), conventions=conventions)
    return [f["message"] for f in found["findings"]]


def test_a_cited_memory_section_passes_the_conventions() -> None:
    assert not [m for m in messages(draft(CITED)) if "Memory context" in m]


def test_a_bullet_without_a_source_is_flagged() -> None:
    assert memory_problems(draft(CITED, "You like chips.")["markdown"]) == [
        "Memory context states 'You like chips.' without citing its source (a fact, procedure "
        "or memory id)."
    ]


def test_conventions_that_do_not_list_the_section_flag_it() -> None:
    listed = "\n".join(f"{n}. {name}" for n, name in enumerate(REQUIRED_SECTIONS, start=1))
    report, _ = parse_analysis_format(f"## Required sections\n\n{listed}\n")
    assert report is not None
    strict = Conventions(report, default_conventions().data_sources)
    assert any("Unexpected section 'Memory context'" in m for m in messages(draft(CITED), strict))


def test_an_income_goal_adds_an_honest_note() -> None:
    profile = Profile.of({"income_preference": {"value": "dividends", "memory_id": "f9"}})
    assert profile_notes("MSFT", profile) == [
        "Income: you look for income, the fact income_preference='dividends' (fact f9); this "
        "analysis uses prices only, so dividends and yield are not measured here."
    ]
