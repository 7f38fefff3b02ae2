"""Report styles with teeth: a brief report is at most a third of a detailed one's words and
leaves out the full metrics table and the peer table; detailed adds them; every report lists
each source once.

Real parts: the application over the compiled graph, SQLite checkpoints and ledger; the style
is a profile fact recorded as stated by the user.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent.learning.profile import validate
from agent.research.revision import word_count
from agent.research.sections import KEY_METRICS
from memory.facts import MemoryDelta, subject_for
from tests.support.reference import section, table_rows
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

START = datetime(2026, 9, 1, 10, tzinfo=UTC)
PROFILE = {"risk_tolerance": "moderate", "horizon_years": 8}


async def report(user: str, facts: dict[str, Any], ticker: str = "NVDA") -> str:
    """The draft of ``ticker`` for a user with ``facts`` stated."""
    async with app_at(START, user) as app:
        await app.graph()
        learner = await app.memory.learner()
        for name, value in facts.items():
            await learner.facts.record(
                MemoryDelta(
                    subject=subject_for(app.principal),
                    attribute=name,
                    value=validate(name, value),
                    valid_from=START,
                    memory_type="profile",
                    source="stated",
                )
            )
        view = await app.start(f"Analyze {ticker}", thread_id=f"{user}-1")
    assert view.status == "awaiting_approval", view.stop_reason
    assert isinstance(view.draft_markdown, str)
    return view.draft_markdown


async def test_brief_is_a_third_of_detailed_without_the_full_tables() -> None:
    brief = await report("bea", {**PROFILE, "report_style": "brief"})
    detailed = await report("dan", {**PROFILE, "report_style": "detailed"})
    standard = await report("sam", PROFILE)

    assert word_count(brief) * 3 <= word_count(detailed), (word_count(brief), word_count(detailed))
    assert word_count(brief) < word_count(standard) < word_count(detailed)

    # Brief: a short metrics table, no peer table, one paragraph of analysis.
    rows = table_rows(section(brief, "Key metrics"))
    assert 0 < len(rows) <= 4
    assert "| Ticker |" not in brief
    assert "### " not in section(brief, "Analysis")
    assert "left out of this brief report" in section(brief, "Peer comparison")
    # Detailed: the full metrics table, the peer table with notes, the detail sections.
    assert [r[0] for r in table_rows(section(detailed, "Key metrics"))] == [
        label for _, label, _ in KEY_METRICS
    ]
    peers = section(detailed, "Peer comparison")
    assert "| Ticker |" in peers and "| **NVDA** |" in peers and "### Peer notes" in peers
    for heading in ("### Drawdown", "### Market sensitivity"):
        assert heading in section(detailed, "Analysis")
    # Both have every section the conventions require.
    for markdown in (brief, detailed):
        assert markdown.count("\n## ") >= 8


async def test_every_source_is_listed_once() -> None:
    for user, facts in (("uma", {"report_style": "brief"}), ("ugo", {}), ("uli", PROFILE)):
        markdown = await report(user, facts)
        lines = [line for line in section(markdown, "Sources").splitlines() if line.strip()]
        assert len(lines) == len(set(lines)), lines
        assert markdown.count("Bundled sample dataset") == 1, user
        for ticker in ("AAPL", "NVDA", "TSLA"):
            assert f"{ticker}.csv" in section(markdown, "Sources")
