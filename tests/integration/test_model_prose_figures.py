"""A model-written report whose prose states a figure nothing computed backs, end to end on the
model path (the real client, graph and storage against the fake OpenAI server).

The scripted reporter cites its metrics correctly, so the table and ``cited_metrics`` checks
pass; only the prose is wrong. The critic must name the figure, the run must stop at the
human's approval with the draft unpublished, and a rejection must bring a revised draft
that the critic judges afresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, structured
from tests.support.model_script import (
    ScriptedAnalyst,
    fake_model,
    metrics_in,
    narrative,
    of_kind,
    once,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with fake_model(monkeypatch) as server:
        yield server


def made_up(request: dict[str, Any]) -> Any:
    """A narrative whose citations are right but whose prose invents two figures."""
    m = metrics_in(request)
    return structured(
        "ReportNarrative",
        narrative(
            m,
            summary=f"NVDA revenue grew 250% and it returned {m['return_1y']} over the year.",
            rationale="At a P/E of 12 the shares are cheap.",
        ),
    )


async def test_a_made_up_figure_in_the_prose_is_named_and_never_published_unrevised(
    fake: FakeOpenAI, open_app: Any
) -> None:
    script = ScriptedAnalyst(verdict="pass", overrides={"ReportNarrative": once(made_up)})
    fake.respond_with(script)
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="P")
        assert view.status == "awaiting_approval"
        # The model critic said pass; the computed check of the prose wins.
        assert view.verdict == "fail"
        errors = [f["message"] for f in view.findings if f["severity"] == "error"]
        [growth] = [m for m in errors if "250%" in m]
        assert "revenue" in growth and "does not come from the tool results" in growth
        [multiple] = [m for m in errors if "P/E of 12" in m]
        assert "does not compute" in multiple
        # The correctly stated return is not flagged, nor anything else.
        assert len(errors) == 2, errors
        assert view.publication is None
        assert not (app.settings.memory_dir / "research").exists()

        # The reviewer rejects it; the reporter writes again and the critic judges the new one.
        revised = await app.decide(
            "P",
            {
                "action": "reject",
                "draft_hash": view.draft_hash,
                "approver": "qa",
                "feedback": "Drop the revenue and P/E figures; we have prices only.",
            },
        )
        assert revised.status == "awaiting_approval"
        assert revised.draft_hash != view.draft_hash
        assert revised.verdict != "fail", revised.findings  # the sample data's age warns
        assert not [f for f in revised.findings if f["severity"] == "error"], revised.findings
        assert revised.publication is None
        reporter = of_kind(fake.chat_requests(), "ReportNarrative")
        assert len(reporter) == 2 and "Drop the revenue" in str(reporter[1]["messages"])

        done = await app.decide(
            "P", {"action": "approve", "draft_hash": revised.draft_hash, "approver": "qa"}
        )
        assert done.status == "published"
        [note] = (app.settings.memory_dir / "research").glob("*.md")
        text = note.read_text()
        assert "revenue grew 250%" not in text and "P/E of 12" not in text
