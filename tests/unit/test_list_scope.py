"""A list cue takes the names of its own clause: one message that says what the user holds and
what to watch keeps the two lists apart, and a conjunction inside a list of names does not cut
it (agent.learning.scope)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.learning.extraction import hot_path_facts


def facts(text: str) -> dict[str, Any]:
    return {f.attribute: f.value for f in hot_path_facts(text, "e") if not f.quoted_source}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I already hold Apple and Microsoft, and I'd like you to keep an eye on Amazon.",
            {"holdings": ["AAPL", "MSFT"], "watchlist": ["AMZN"]},
        ),
        (
            "i hold aapl and msft, and please watch amzn",
            {"holdings": ["AAPL", "MSFT"], "watchlist": ["AMZN"]},
        ),
        (
            "Currently I own Nvidia; I'm tracking Tesla",
            {"holdings": ["NVDA"], "watchlist": ["TSLA"]},
        ),
        ("I own NVDA and also AMD.", {"holdings": ["NVDA", "AMD"]}),
        ("AAPL and MSFT are on my watchlist.", {"watchlist": ["AAPL", "MSFT"]}),
        ("I still own Nvidia and Tesla", {"holdings": ["NVDA", "TSLA"]}),
        ("My brother watches TSLA and I hold NVDA.", {"holdings": ["NVDA"]}),
    ],
)
def test_each_list_takes_the_names_of_its_own_clause(text: str, expected: dict[str, Any]) -> None:
    found = facts(text)
    assert {k: found.get(k) for k in ("holdings", "watchlist") if k in found} == expected, found
