"""Consolidation merges related events into themes and decays them, and every fact survives
. Checked against the
ledger, on a transcript the write path itself produced (real journal, ledger and Qdrant Edge).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent.app import AnalystApp
from agent.nodes.services import Services
from agent.settings import Settings
from memory.facts import subject_for
from memory.identity import Principal
from memory.recall import alist_memories

pytestmark = pytest.mark.integration

START = datetime(2026, 6, 1, 9, tzinfo=UTC)


def app_at(when: datetime, user: str = "noor") -> Any:
    settings = Settings.from_env()
    services = replace(Services.from_settings(settings), clock=lambda: when)
    return AnalystApp.open(settings, Principal("default", user), services)


async def ledger(app: AnalystApp) -> list[dict[str, Any]]:
    learner = await app.memory.learner()
    subject = subject_for(app.principal)
    rows = []
    for attribute in ("horizon_years", "risk_tolerance", "base_currency"):
        rows += [r.to_json() for r in await learner.facts.history(subject, attribute)]
    return rows


async def seed_six_sessions() -> None:
    """Six daily sessions: a statement and an approved report each (4 NVDA, 2 AAPL)."""
    statements = [
        "My investment horizon is 10 years.",
        "I'm a conservative investor.",
        "Actually my horizon is 5 years, not 10.",
        "My base currency is EUR.",
    ]
    for day in range(6):
        async with app_at(START + timedelta(days=day)) as app:
            learner = await app.memory.learner()
            thread = f"c{day}"
            said = await learner.record(thread, "message", statements[day % 4], turn="1")
            await learner.learn_now(said)
            ticker, rating = ("NVDA", "Buy") if day % 3 else ("AAPL", "Hold")
            decided = await learner.record(
                thread,
                "approve",
                f'approve: {ticker} report "{ticker} research" (rating {rating})',
                turn="2",
                meta={"ticker": ticker, "rating": rating},
            )
            await learner.after_decision(thread, [said.episode_id, decided.episode_id])
            await learner.drain()


async def test_themes_merge_events_decay_them_and_every_fact_survives() -> None:
    await seed_six_sessions()
    async with app_at(START + timedelta(days=90)) as app:
        before_facts = await ledger(app)
        events = [
            m
            for m in await alist_memories(await app.tiers.store(), app.principal)
            if m.kind == "decision"
        ]
        report = await app.memory.consolidate(older_than_days=30, min_group=3)
        again = await app.memory.consolidate(older_than_days=30, min_group=3)
        after_facts = await ledger(app)
        memories = await alist_memories(await app.tiers.store(), app.principal)
    assert len(events) == 6
    nvda = [e for e in events if e.metadata["tickers"] == ["NVDA"]]
    # Four NVDA decisions make a theme; two AAPL ones are too few (min_group 3).
    assert [(t["ticker"], t["events"]) for t in report["themes"]] == [("NVDA", 4)]
    (theme,) = [m for m in memories if m.kind == "theme" and m.about == "NVDA history"]
    for event in nvda:  # every merged event is carried by its theme, with its episodes
        assert event.text in theme.text
        assert set(event.metadata["episode_ids"]) <= set(theme.metadata["episode_ids"])
    decayed = {m.key: m for m in memories if m.kind == "decision"}
    for event in nvda:
        assert decayed[event.key].importance == event.importance - 1  # decayed once, kept
    assert again["decayed"] == []  # a second run refreshes themes, decays nothing twice
    assert before_facts == after_facts and len(after_facts) >= 4  # the ledger is untouched


async def test_events_are_found_by_ticker_and_by_meaning() -> None:
    await seed_six_sessions()
    async with app_at(START + timedelta(days=7)) as app:
        nvda = await app.memory.events(ticker="NVDA")
        asked = await app.memory.events("what did we decide about AAPL", limit=1)
    async with app_at(START + timedelta(days=7), user="someone-else") as app:
        theirs = await app.memory.events(ticker="NVDA")
    assert len(nvda) == 4 and all(e.metadata["tickers"] == ["NVDA"] for e in nvda)
    assert all(e.kind == "decision" and e.metadata["episode_ids"] for e in nvda)
    assert asked[0].metadata["tickers"] == ["AAPL"]
    assert theirs == []
