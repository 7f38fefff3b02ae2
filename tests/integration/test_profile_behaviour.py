"""What the user's profile changes, visibly: the plan, the report's length, the
recommendation's fit, the notes a holding or an employer adds, sector exclusions, and a
confirmed procedure that shapes later reports.

Real parts: the application over the compiled graph, SQLite checkpoints, the SQLite fact
ledger and journal, Qdrant Edge with MiniLM; facts are recorded in the ledger as stated by
the user, after the registry's validation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent.app import AnalystApp
from agent.learning.profile import validate
from memory.facts import MemoryDelta, subject_for
from tests.support.reference import section
from tests.support.sessions import app_at

pytestmark = pytest.mark.integration

START = datetime(2026, 9, 1, 10, tzinfo=UTC)

CONSERVATIVE = {
    "risk_tolerance": "conservative",
    "horizon_years": 2,
    "max_drawdown_pct": 15,
    "report_style": "brief",
}
AGGRESSIVE = {"risk_tolerance": "aggressive", "horizon_years": 25, "report_style": "detailed"}


async def state(app: AnalystApp, facts: dict[str, Any]) -> dict[str, str]:
    """Record ``facts`` as stated by the app's user; their fact ids by attribute."""
    await app.graph()
    learner = await app.memory.learner()
    ids = {}
    for name, value in facts.items():
        record = await learner.facts.record(
            MemoryDelta(
                subject=subject_for(app.principal),
                attribute=name,
                value=validate(name, value),
                valid_from=START,
                memory_type="profile",
                source="stated",
            )
        )
        assert record is not None
        ids[name] = record.memory_id
    return ids


async def analyse(user: str, facts: dict[str, Any], query: str = "Analyze NVDA") -> Any:
    async with app_at(START, user) as app:
        ids = await state(app, facts)
        view = await app.start(query, thread_id=f"{user}-1")
    assert view.status == "awaiting_approval", view.stop_reason
    return view, ids


def markdown(view: Any) -> str:
    """The draft a view shows (there is one)."""
    text = view.draft_markdown
    assert isinstance(text, str), view.status
    return text


def kinds(view: Any) -> list[str]:
    return [s["kind"] for s in view.plan]


async def test_opposite_profiles_get_different_plans_and_reports_each_citing_its_cause() -> None:
    careful, careful_ids = await analyse("carol", CONSERVATIVE)
    bold, bold_ids = await analyse("boris", AGGRESSIVE)

    # The plan: risk first for the cautious user, growth first for the aggressive one; the
    # brief report needs no peer step. Each difference cites the fact that caused it.
    assert kinds(careful) == ["risk", "beta", "returns", "trend"]
    assert kinds(bold) == ["returns", "trend", "peers", "beta", "risk"]
    why = careful.plan_rationale
    assert "Risk first because" in why
    assert f"horizon_years=2 (fact {careful_ids['horizon_years']})" in why
    assert f"max_drawdown_pct=15 (fact {careful_ids['max_drawdown_pct']})" in why
    assert f"risk_tolerance='conservative' (fact {careful_ids['risk_tolerance']})" in why
    assert (
        f"No peer step: the fact report_style='brief' (fact {careful_ids['report_style']})" in why
    )
    assert "Growth signals first" in bold.plan_rationale
    assert f"horizon_years=25 (fact {bold_ids['horizon_years']})" in bold.plan_rationale

    # The report: brief is short, detailed long, and each says why.
    short, long = markdown(careful), markdown(bold)
    assert len(short) < 0.75 * len(long)
    assert (
        f"A brief report, as your report_style='brief' (fact {careful_ids['report_style']})"
        in short
    )
    assert (
        f"A detailed report, as your report_style='detailed' (fact {bold_ids['report_style']})"
        in long
    )
    assert "### " not in section(short, "Analysis")  # one paragraph
    assert "### Drawdown" in section(long, "Analysis")
    assert "| Ticker |" not in section(short, "Peer comparison")
    assert "left out of this brief report" in section(short, "Peer comparison")
    assert "| Ticker |" in section(long, "Peer comparison")
    assert "### Peer notes" in section(long, "Peer comparison")

    # The recommendation states its fit to the profile and differs between the users.
    mine = section(short, "Recommendation")
    assert f"Too risky for your horizon_years=2 (fact {careful_ids['horizon_years']})" in mine
    assert "The price signals say Buy; for this profile it is a Hold." in mine
    assert f"(fact {careful_ids['max_drawdown_pct']})" in mine
    theirs = section(long, "Recommendation")
    assert "For a 25-year horizon and an aggressive risk tolerance" in theirs
    assert "Buy stands." in theirs
    assert short.startswith("# NVDA equity research: Hold")
    assert long.startswith("# NVDA equity research: Buy")

    # The critic judges both drafts, memory section included, without flagging it.
    for view in (careful, bold):
        assert "## Memory context" in markdown(view)
        assert not [f for f in view.findings if "Memory context" in f["message"]], view.findings


async def test_holdings_and_the_employer_add_a_concentration_and_a_conflict_note() -> None:
    view, ids = await analyse(
        "erin", {"holdings": ["NVDA", "MSFT"], "employer": "Nvidia", "horizon_years": 8}
    )
    risks = section(markdown(view), "Risk factors")
    assert f"Concentration: your holdings (fact {ids['holdings']}) include NVDA" in risks
    assert (
        f"Conflict of interest: you work for the company that issues NVDA, as your employer (fact {ids['employer']}) says"
        in risks
    )
    assert "Nvidia" not in markdown(view)  # the employer's name is not repeated
    other, _ = await analyse("fred", {"horizon_years": 8})
    assert "Concentration" not in markdown(other)
    assert "Conflict of interest" not in markdown(other)


async def test_excluded_sectors_are_enforced_like_excluded_tickers() -> None:
    # TSLA holds bitcoin: a crypto screen leaves it out of the peers and the beta basket.
    view, ids = await analyse("gina", {"excluded_sectors": ["crypto"]})
    peers = section(markdown(view), "Peer comparison")
    assert "TSLA" not in peers and "AAPL" in peers
    assert "TSLA" not in section(markdown(view), "Analysis")
    # Asking for it alone is declined, naming the fact; a quick snapshot too.
    fact = ids["excluded_sectors"]
    async with app_at(START, "gina") as app:
        for query, thread in (("Analyze TSLA", "gina-2"), ("quick snapshot of TSLA", "gina-4")):
            refused = await app.start(query, thread_id=thread)
            assert refused.status == "declined", (query, refused.status)
            assert refused.stop_reason is not None
            assert "I won't analyse TSLA" in refused.stop_reason
            assert (
                f"excluded_sectors=['crypto'] (fact {fact}) screens it out" in refused.stop_reason
            )
            assert refused.draft_markdown is None and refused.plan == []
    # With another ticker in the request, only the excluded one is left out.
    async with app_at(START, "gina") as app:
        both = await app.start("Compare NVDA and TSLA", thread_id="gina-3")
    assert "TSLA left out" in both.plan_rationale
    assert all(s["ticker"] != "TSLA" for s in both.plan)


async def test_a_sector_of_interest_is_named() -> None:
    view, ids = await analyse("hugo", {"sectors_of_interest": ["semiconductors"]})
    risks = section(markdown(view), "Risk factors")
    assert (
        f"a sector you follow, the fact sectors_of_interest=['semiconductors'] (fact {ids['sectors_of_interest']})"
        in risks
    )


async def test_a_rejections_feedback_once_confirmed_shapes_the_next_sessions_report() -> None:
    """Session 1: a brief report without the peer table is rejected with feedback, and the
    preference it yields is confirmed. Session 2, another ticker: the plan keeps the peer step
    and the report shows the table, each citing the confirmed preference."""
    feedback = "Always include the peer table."
    async with app_at(START, "ivan") as app:
        await state(app, {"report_style": "brief"})
        first = await app.start("Analyze NVDA", thread_id="s1", keep_session=True)
        assert "| Ticker |" not in section(markdown(first), "Peer comparison")
        payload = {"approver": "ivan", "draft_hash": first.draft_hash}
        await app.decide("s1", {**payload, "action": "reject", "feedback": feedback})
        await app.memory.end_session("s1")
        pending = [
            c for c in await app.memory.review() if "peer table" in str(c["payload"].get("text"))
        ]
        assert pending, await app.memory.review()
        confirmed = await app.memory.confirm(pending[0]["candidate_id"])
    async with app_at(START.replace(day=8), "ivan") as app:
        later = await app.start("Analyze AAPL", thread_id="s2")
    assert later.status == "awaiting_approval", later.stop_reason
    assert "peers" in kinds(later)
    cause = (
        f"procedure {confirmed['procedure']['procedure_id']}"
        if "procedure" in confirmed
        else "your confirmed preference, memory"
    )
    assert f"Peer step kept in a brief plan because {cause}" in later.plan_rationale
    peers = section(markdown(later), "Peer comparison")
    assert "| Ticker |" in peers and "| **AAPL** |" in peers
    assert f"The full table, because {cause}" in peers
    assert markdown(later).count("\n## ") >= 8  # still a brief report otherwise
    assert "### " not in section(markdown(later), "Analysis")


async def test_feedback_that_recurs_becomes_a_procedure_that_shapes_later_reports() -> None:
    """The same feedback in two sessions asks to become a procedure; confirmed, it holds
    for a later report on another ticker even though its words say no "always"."""
    for day, thread in ((1, "r1"), (2, "r2")):
        async with app_at(START.replace(day=day), "judy") as app:
            if day == 1:
                await state(app, {"report_style": "brief"})
            draft = await app.start("Analyze NVDA", thread_id=thread, keep_session=True)
            payload = {"approver": "judy", "draft_hash": draft.draft_hash}
            await app.decide(
                thread, {**payload, "action": "reject", "feedback": "Include the peer table."}
            )
            await app.memory.end_session(thread)
    async with app_at(START.replace(day=3), "judy") as app:
        [behaviour] = [c for c in await app.memory.review() if c["kind"] == "behaviour"]
        procedure = (await app.memory.confirm(behaviour["candidate_id"]))["procedure"]
        later = await app.start("Analyze MSFT", thread_id="r3")
    cause = f"procedure {procedure['procedure_id']}"
    assert f"Peer step kept in a brief plan because {cause}" in later.plan_rationale
    peers = section(markdown(later), "Peer comparison")
    assert "| **MSFT** |" in peers and f"The full table, because {cause}" in peers
    assert f"procedure {procedure['procedure_id']}" in section(markdown(later), "Memory context")


async def test_on_the_model_path_the_same_code_shapes_the_plan_and_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scripted model plans the standard five steps and rates NVDA a Buy; the profile's
    rules still order and trim the plan and judge the fit, and the reporter is told the
    style and the facts only as quoted data."""
    from tests.support.model_script import ScriptedAnalyst, fake_model, first_user, of_kind

    with fake_model(monkeypatch) as server:
        server.respond_with(ScriptedAnalyst())
        careful, ids = await analyse("kate", CONSERVATIVE)
    assert kinds(careful) == ["risk", "beta", "returns", "trend"]
    assert "scripted standard plan" in careful.plan_rationale
    assert f"horizon_years=2 (fact {ids['horizon_years']})" in careful.plan_rationale
    mine = section(markdown(careful), "Recommendation")
    assert "The price signals say Buy; for this profile it is a Hold." in mine
    assert "| Ticker |" not in section(markdown(careful), "Peer comparison")
    [report] = of_kind(server.chat_requests(), "ReportNarrative")
    ask = first_user(report)
    assert "Report style: brief." in ask
    assert 'source="user\'s current facts"' in ask and '"max_drawdown_pct": 15' in ask


async def test_a_preference_remembered_on_request_keeps_the_peer_table() -> None:
    """``analyst memory remember "Always include the peer table"`` (a preference: no rule code
    enforces it as a procedure) keeps the table in a brief report on any ticker."""
    async with app_at(START, "lena") as app:
        await state(app, {"report_style": "brief"})
        stored = await app.memory.remember("Always include the peer table")
        [key] = [item["id"] for item in stored["stored"]]
        view = await app.start("Analyze GOOGL", thread_id="l1")
    assert "peers" in kinds(view)
    peers = section(markdown(view), "Peer comparison")
    assert "| **GOOGL** |" in peers
    assert f"because your confirmed preference, memory {key}" in peers
    assert key in view.memories_used
