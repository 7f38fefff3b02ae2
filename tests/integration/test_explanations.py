""" "why ..." after a run names its causes: the price signals and the profile facts that moved
the verdict or the plan, each fact citing the episode it was learned from.

Through ``analyst chat`` (piped, the real console script): the user states a cautious
profile in their own words, asks for research, and asks why.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.integration

STATED = "I'm a conservative investor, my horizon is 2 years and my max drawdown is 15%."


def profile(analyst: Any) -> tuple[dict[str, dict[str, Any]], list[Any]]:
    """The user's profile facts by attribute, and their episodes."""

    async def body(app: Any) -> tuple[dict[str, dict[str, Any]], list[Any]]:
        learner = await app.memory.learner()
        return await learner.profile(), list(await learner.journal.list_episodes())

    return analyst._in_process("tester", body)


def test_why_names_the_profile_facts_that_moved_the_verdict_and_their_episodes(
    analyst: Any,
) -> None:
    script = [STATED, "Analyze NVDA", "why did you say that?", "/quit"]
    run = analyst("chat", input="\n".join(script) + "\n")
    assert run.code == 0, str(run)
    facts, episodes = profile(analyst)
    [said] = [e for e in episodes if e.text == STATED]
    for name in ("risk_tolerance", "horizon_years", "max_drawdown_pct"):
        assert said.episode_id in facts[name]["episode_ids"], (name, facts)

    answer = run.out[run.out.index("What I have on record") :]
    # The price signals, as before.
    assert "the price signals were" in answer
    # The verdict the profile changed, and each fact that changed it, with its episode.
    assert "Your profile turned the price signals' Buy into Hold" in answer, answer
    for name, label in (
        ("max_drawdown_pct", "your max drawdown 15%"),
        ("horizon_years", "your horizon 2 years"),
        ("risk_tolerance", "your risk tolerance “conservative”"),
    ):
        line = next((x for x in answer.splitlines() if label in x), "")
        assert f"(fact {facts[name]['memory_id']})" in line, (label, answer)
        assert said.episode_id in line, (label, answer)
    assert "deeper than your 15% limit" in answer
    assert f"you said “{STATED}”" in answer
    # The plan the facts shaped (risk first) is named too.
    assert "the plan (Risk first)" in answer
