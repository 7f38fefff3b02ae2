"""Decisions are bound to one exact draft and validated before anything is published."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.errors import InvalidDecisionError, StaleDraftError
from agent.nodes.decisions import validate_decision
from agent.research.report import content_hash
from agent.state import Draft

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def draft() -> Draft:
    md = "# T\n\nbody\n"
    return Draft(
        ticker="NVDA",
        title="T",
        markdown=md,
        hash=content_hash(md),
        revision=0,
        as_of="2023-12-29",
        sources=["s"],
        chart_path=None,
        metrics={},
        recommendation={},
    )


def check(raw: object, draft: Draft):  # type: ignore[no-untyped-def]
    return validate_decision(raw, draft, thread_id="t-1", now=NOW)


def test_approve_binds_full_hash_and_time(draft: Draft) -> None:
    d = check({"action": "approve", "draft_hash": draft["hash"][:12], "approver": "alice"}, draft)
    assert d == {
        "action": "approve",
        "draft_hash": draft["hash"],
        "approver": "alice",
        "decided_at": "2026-01-02T03:04:05+00:00",
    }


def test_stale_hash_is_refused_with_both_hashes(draft: Draft) -> None:
    with pytest.raises(StaleDraftError) as info:
        check({"action": "approve", "draft_hash": "deadbeefdeadbeef", "approver": "a"}, draft)
    assert "deadbeefdead" in str(info.value) and draft["hash"][:12] in str(info.value)
    assert "Nothing was published" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("approve", "must be an object"),
        ({"action": "publish", "draft_hash": "x" * 64, "approver": "a"}, "Unknown decision action"),
        ({"action": "approve", "approver": "a"}, "draft_hash is missing"),
        ({"action": "approve", "draft_hash": "HASH", "approver": " "}, "approver is empty"),
        ({"action": "reject", "draft_hash": "HASH", "approver": "a"}, "needs feedback"),
        ({"action": "edit", "draft_hash": "HASH", "approver": "a", "text": "  "}, "empty"),
    ],
)
def test_malformed_decisions(draft: Draft, raw: object, message: str) -> None:
    if isinstance(raw, dict) and raw.get("draft_hash") == "HASH":
        raw = {**raw, "draft_hash": draft["hash"]}
    with pytest.raises(InvalidDecisionError, match=message):
        check(raw, draft)


def test_short_prefix_is_not_enough(draft: Draft) -> None:
    with pytest.raises(InvalidDecisionError, match="too short"):
        check({"action": "approve", "draft_hash": draft["hash"][:4], "approver": "a"}, draft)


def test_edit_text_gets_trailing_newline(draft: Draft) -> None:
    d = check(
        {"action": "edit", "draft_hash": draft["hash"], "approver": "a", "text": "# Mine"}, draft
    )
    assert d["text"] == "# Mine\n"
