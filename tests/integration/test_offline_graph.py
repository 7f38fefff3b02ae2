"""The compiled analyst graph, run offline against a real SQLite checkpoint file.

For every bundled ticker the graph runs "Analyze <T>" to the approval interrupt, and the
draft a reviewer would read is checked against an independent recomputation of every figure
(``tests/support/reference.py``): the Markdown tables are parsed as text, not read from the draft's
``metrics``. The critic is checked to judge the draft alone, and flash mode to run one step.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from agent.market import SampleDataProvider
from agent.nodes.services import Services
from agent.research.conventions import load_conventions
from agent.research.critic import critique
from agent.research.report import KEY_METRICS, REQUIRED_SECTIONS, fmt
from agent.state import Context
from graphs.builder import compile_graph
from memory.checkpoint import open_checkpointer
from memory.documents import FileMemory
from tests.support.reference import (
    AS_OF,
    TICKERS,
    load,
    ref_key_metrics,
    ref_peer_rows,
    ref_recommendation,
    section,
    table_rows,
)

pytestmark = pytest.mark.integration

#: Two weeks after the data ends: recent enough that the critic raises no staleness warning.
TODAY = datetime(2024, 1, 12, 15, 30, tzinfo=UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CONTEXT = Context(tenant_id="default", user_id="tester")


SEED_CONVENTIONS = Path(__file__).resolve().parents[2] / ".agent-memory" / "conventions"


def conventions(tmp_path: Path) -> Any:
    """The conventions the graph's nodes read (the repository's seeded ones)."""
    return load_conventions(FileMemory(tmp_path / "memory"))


@pytest.fixture
async def graph(tmp_path: Path) -> AsyncIterator[Any]:
    shutil.copytree(SEED_CONVENTIONS, tmp_path / "memory" / "conventions")
    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(tmp_path / "memory"),
        artifacts_dir=tmp_path / "data" / "artifacts",
        clock=lambda: TODAY,
    )
    async with open_checkpointer(f"sqlite:///{tmp_path}/cp.sqlite") as saver:
        yield compile_graph(saver, services=services)
    assert (tmp_path / "cp.sqlite").stat().st_size > 0


async def run_to_approval(graph: Any, query: str, thread_id: str) -> tuple[dict[str, Any], Any]:
    config = {"configurable": {"thread_id": thread_id}}
    await graph.ainvoke({"query": query}, config, context=CONTEXT, durability="sync")
    snap = await graph.aget_state(config)
    assert snap.next == ("approval",)
    [pending] = snap.interrupts
    assert pending.value["kind"] == "approval"
    assert pending.value["draft_hash"] == snap.values["draft"]["hash"]
    assert pending.value["markdown"] == snap.values["draft"]["markdown"]
    return snap.values, config


async def nodes_run(graph: Any, config: dict[str, Any]) -> list[str]:
    """Every node that ran on the thread, oldest first (from the checkpoint history)."""
    history = [s async for s in graph.aget_state_history(config)]
    ran: list[str] = []
    # A checkpoint's parent's pending tasks are the nodes that produced it.
    for parent, _child in zip(history[1:], history[:-1], strict=True):
        ran[:0] = list(parent.next)
    return ran


def assert_figures_match_reference(markdown: str, ticker: str) -> None:
    key_metrics = dict(table_rows(section(markdown, "Key metrics")))
    assert key_metrics == ref_key_metrics(ticker)
    assert table_rows(section(markdown, "Peer comparison")) == ref_peer_rows(highlight=ticker)


@pytest.mark.parametrize("ticker", TICKERS)
async def test_deep_research_draft_is_complete_and_every_figure_is_right(
    graph: Any, ticker: str
) -> None:
    state, config = await run_to_approval(graph, f"Analyze {ticker}", f"deep-{ticker}")
    draft = state["draft"]
    markdown = draft["markdown"]

    assert state["mode"] == "deep"
    assert [s["id"] for s in state["plan"]] == [
        f"{kind}:{ticker}" for kind in ("returns", "risk", "trend", "beta", "peers")
    ]
    assert set(state["results"]) == {s["id"] for s in state["plan"]}

    headings = re.findall(r"^## (.+)$", markdown, re.MULTILINE)
    for required in REQUIRED_SECTIONS:
        assert required in headings, f"section {required!r} missing from the {ticker} draft"
        assert section(markdown, required).strip(), f"section {required!r} is empty"

    rating, confidence, label = ref_recommendation(ticker)
    title = f"{ticker} equity research: {rating} ({label} confidence)"
    assert draft["title"] == title
    assert markdown.startswith(f"# {title}\n")
    assert draft["ticker"] == ticker
    assert f"**Ticker:** {ticker} · **Mode:** deep research · **Data as of:** {AS_OF}" in markdown
    assert (
        section(markdown, "Recommendation")
        .strip()
        .startswith(f"**{rating}** with {label} confidence ({confidence:.2f}).")
    )

    assert load(ticker)[0][-1].isoformat() == AS_OF
    assert draft["as_of"] == AS_OF
    assert section(markdown, "Data as of").strip() == f"Daily closes up to and including {AS_OF}."

    sources = section(markdown, "Sources")
    for name in TICKERS:  # beta and peers draw on every bundled series
        assert f" {name}.csv" in sources
    assert sources.count("Bundled sample dataset") == 1  # each source once
    assert len(draft["sources"]) == len(TICKERS)

    chart = Path(draft["chart_path"])
    assert chart.is_file()
    assert chart.read_bytes().startswith(PNG_SIGNATURE)

    assert_figures_match_reference(markdown, ticker)

    assert state["critique"]["verdict"] == "pass", state["critique"]["findings"]
    assert "executor" in await nodes_run(graph, config)


@pytest.mark.parametrize("ticker", ["NVDA", "TSLA"])
async def test_the_critic_judges_the_draft_alone(graph: Any, ticker: str, tmp_path: Path) -> None:
    state, _ = await run_to_approval(graph, f"Analyze {ticker}", f"critic-{ticker}")
    draft, review = state["draft"], state["critique"]
    assert review["draft_hash"] == draft["hash"]
    assert review["verdict"] == "pass"
    assert [f for f in review["findings"] if f["severity"] != "info"] == []
    rules = conventions(tmp_path)
    required = ", ".join(rules.required_sections)

    def errors(markdown: str) -> list[str]:
        judged = critique({**draft, "markdown": markdown}, today=TODAY.date(), conventions=rules)
        return [f["message"] for f in judged["findings"] if f["severity"] == "error"]

    # The critic has nothing but the draft: break one thing in it and exactly that is found,
    # once (the conventions and the critic share one notion of a section).
    markdown = draft["markdown"]
    without_risks = re.sub(r"## Risk factors\n.*?(?=\n## )", "", markdown, flags=re.DOTALL)
    assert errors(without_risks) == [
        "Missing required section 'Risk factors' "
        f"(conventions/analysis-format.md requires: {required})."
    ]
    blank_risks = re.sub(r"(## Risk factors\n).*?(?=\n## )", r"\1", markdown, flags=re.DOTALL)
    assert errors(blank_risks) == ["Section 'Risk factors' is empty."]
    key, label, kind = KEY_METRICS[0]
    shown = fmt(draft["metrics"][key], kind)
    tampered = markdown.replace(f"| {label} | {shown} |", f"| {label} | 999.99 |")
    assert tampered != markdown
    assert errors(tampered) == [f"'{label}' shows 999.99 but the computed value is {shown}."]
    # The same draft judged later is stale: the verdict is a function of draft and date only.
    later = critique(draft, today=date(2024, 6, 1), conventions=rules)
    assert later["verdict"] == "needs_attention"


async def test_flash_mode_runs_exactly_one_executor_step(graph: Any, tmp_path: Path) -> None:
    state, config = await run_to_approval(graph, "quick snapshot of AAPL", "flash-AAPL")
    assert state["mode"] == "flash"
    assert [s["id"] for s in state["plan"]] == ["snapshot:AAPL"]
    assert list(state["results"]) == ["snapshot:AAPL"]

    ran = await nodes_run(graph, config)
    assert ran.count("executor") == 1
    assert "planner" not in ran
    assert ran[:3] == ["__start__", "capture", "router"]

    markdown = state["draft"]["markdown"]
    assert "**Mode:** quick snapshot" in markdown
    assert_figures_match_reference(markdown, "AAPL")
    assert state["critique"]["verdict"] == "pass", state["critique"]["findings"]
