"""The model path end to end: the real ``ChatOpenAI`` client against a local fake server.

The fake OpenAI-compatible server (``tests/support/fake_openai.py``) runs in the test process on a
free loopback port; the analyst talks to it over HTTP, from in-process apps and from separate
``analyst`` processes. A scripted analyst (``tests/support/model_script.py``) answers each request
from the request alone, and the tests assert on both sides: what the analyst produced, and
what the server received (forced schemas, bound tools, tool results, a history-free critic).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, structured, tool_calls
from tests.support.model_script import (
    SCHEMAS,
    STEP_NOTE,
    TOOLS,
    ScriptedAnalyst,
    content,
    correct_call,
    fake_model,
    kind_of,
    last_user,
    metrics_in,
    narrative,
    of_kind,
    quoted,
    step_of,
    tool_names,
    with_model,
)
from tests.support.reference import (
    load,
    ref_beta,
    ref_drawdown,
    ref_peer_order,
    ref_rsi,
    ref_sma,
    ref_trailing,
    ref_volatility,
    ref_ytd,
)

pytestmark = pytest.mark.integration

PLAN = ["returns:NVDA", "risk:NVDA", "trend:NVDA", "beta:NVDA", "peers:NVDA"]
TOOL_OF = {
    "returns:NVDA": "get_returns",
    "risk:NVDA": "get_risk",
    "trend:NVDA": "get_trend",
    "beta:NVDA": "get_beta",
    "peers:NVDA": "get_peers",
}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with fake_model(monkeypatch) as server:
        yield server


@pytest.fixture
def cli(fake: FakeOpenAI, analyst: Any) -> Any:
    return with_model(analyst, fake)


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def check_tool_result(step_id: str, data: dict[str, Any]) -> None:
    """The numbers a tool returned match an independent recomputation from the CSVs."""
    dates, prices = load("NVDA")
    others = tuple(t for t in ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "TSLA"))
    if step_id == "returns:NVDA":
        assert close(data["return_1m"], ref_trailing(prices, 21))
        assert close(data["return_1y"], ref_trailing(prices, 252))
        ytd = ref_ytd(dates, prices)
        assert ytd is not None and close(data["return_ytd"], ytd)
    elif step_id == "risk:NVDA":
        assert close(data["volatility_1y"], ref_volatility(prices))
        assert close(data["max_drawdown_1y"], ref_drawdown(dates, prices)[0])
    elif step_id == "trend:NVDA":
        assert close(data["sma_50"], ref_sma(prices, 50))
        assert close(data["sma_200"], ref_sma(prices, 200))
        assert abs(data["rsi_14"] - ref_rsi(prices)) < 1e-6
    elif step_id == "beta:NVDA":
        beta, corr = ref_beta("NVDA", others)
        assert abs(data["beta"] - beta) < 1e-9 and abs(data["correlation"] - corr) < 1e-9
    elif step_id == "peers:NVDA":
        assert [row["ticker"] for row in data["peers"]] == ref_peer_order()
    else:  # pragma: no cover - the plan is fixed above
        raise AssertionError(step_id)


def test_full_run_routes_plans_calls_tools_drafts_critiques_and_publishes_from_a_new_process(
    fake: FakeOpenAI, cli: Any
) -> None:
    script = ScriptedAnalyst(verdict="needs_attention")
    fake.respond_with(script)
    # Tracing stays off unless switched on: a configured endpoint alone sends nothing.
    cli = replace(cli, env={**cli.env, "LANGSMITH_ENDPOINT": fake.root_url})

    drafted = cli.json("run", "Analyze NVDA", "--thread", "T")
    assert drafted["status"] == "awaiting_approval", drafted
    assert drafted["next"] == ["approval"]
    assert drafted["model"] == "openai:gpt-4o-mini"
    assert drafted["plan"] == PLAN
    assert drafted["plan_rationale"] == "scripted standard plan"
    assert drafted["verdict"] == "needs_attention"
    assert "(model) x" in [f["message"] for f in drafted["findings"]]
    # Token accounting: exactly what the server's usage blocks said, summed over every call.
    requests = fake.chat_requests()
    assert drafted["usage"] == script.totals()
    assert drafted["usage"]["calls"] == len(requests) > 0
    assert cli.research_notes() == []

    # The prose is the model's; every table is computed.
    markdown = drafted["draft_markdown"]
    assert "The stock returned 2.528" in markdown
    assert "| Return 1Y | +252.82% |" in markdown

    shown = cli("show", "T")
    u = drafted["usage"]
    assert (
        f"Model openai:gpt-4o-mini: {u['calls']} calls, {u['input_tokens']} input + "
        f"{u['output_tokens']} output = {u['total_tokens']} tokens this request." in shown.out
    ), str(shown)

    # -- what went over the wire ----------------------------------------------------------
    kinds = [kind_of(r) for r in requests]
    assert kinds[:2] == ["RouteDecision", "PlanDecision"]
    assert kinds[-2:] == ["ReportNarrative", "CriticVerdict"]
    assert set(kinds[2:-2]) == {"executor"}
    for r in requests:
        assert r["_path"] == "/v1/chat/completions"
        assert r["_auth"] == "Bearer test-key"
        assert r["model"] == "gpt-4o-mini"
    for r in requests:
        name = kind_of(r)
        if name in SCHEMAS:  # structured output forces its schema via function calling
            assert r["tool_choice"] == {"type": "function", "function": {"name": name}}
            assert tool_names(r) == [name]
    router = of_kind(requests, "RouteDecision")[0]
    assert set(router["tools"][0]["function"]["parameters"]["properties"]) >= {"mode", "tickers"}
    assert quoted(last_user(router), "user request") == "Analyze NVDA"

    executor = of_kind(requests, "executor")
    by_step: dict[str, list[dict[str, Any]]] = {}
    for r in executor:
        assert sorted(tool_names(r)) == sorted(TOOLS)
        assert r.get("tool_choice") in (None, "auto")
        params = {t["function"]["name"]: t["function"]["parameters"] for t in r["tools"]}
        assert "ticker" in params["get_returns"]["properties"]
        by_step.setdefault(step_of(r)[0], []).append(r)
    assert list(by_step) == PLAN
    for step_id, (first, second) in by_step.items():
        assert [m["role"] for m in first["messages"]] == ["system", "user"]
        assert STEP_NOTE in content(first["messages"][1])
        # The tool the model asked for ran; its real result is in the next request.
        call = second["messages"][2]["tool_calls"][0]
        assert call["function"]["name"] == TOOL_OF[step_id]
        result = second["messages"][3]
        assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
        check_tool_result(step_id, json.loads(result["content"]))

    reporter = of_kind(requests, "ReportNarrative")[0]
    metrics = metrics_in(reporter)
    check_tool_result("returns:NVDA", metrics)
    check_tool_result("trend:NVDA", metrics)

    # The critic sees the draft (and conventions), nothing of the run.
    critic = of_kind(requests, "CriticVerdict")[0]
    assert [m["role"] for m in critic["messages"]] == ["system", "user"]
    assert quoted(content(critic["messages"][1]), "draft report") == markdown.rstrip()
    body = json.dumps(critic["messages"])
    for leaked in ("Analyze NVDA", STEP_NOTE, "scripted standard plan", "scripted deep route"):
        assert leaked not in body
    assert "The tool results are in." not in body
    assert not critic.get("tools", [])[1:]  # only the forced CriticVerdict schema

    # -- approval from another process publishes once; the only model calls after it are the
    # memory extraction of the decision and of the session's end (structured output) ---------
    before = len(fake.requests)
    published = cli.json("approve", "T", "--as", "alice")
    assert published["status"] == "published", published
    assert [kind_of(r) for r in fake.requests[before:]] == ["Extraction", "Extraction"]
    assert [j["kind"] for j in published["memory_jobs"]] == ["decision", "session_end"]
    [note] = cli.research_notes()
    assert published["publication"]["path"] == str(note)
    assert note.read_text(encoding="utf-8").endswith(markdown)
    assert fake.other_requests() == []  # no trace was sent


def test_langsmith_tracing_runs_only_when_switched_on_with_the_standard_variables(
    fake: FakeOpenAI, cli: Any
) -> None:
    fake.respond_with(ScriptedAnalyst())
    traced = replace(
        cli,
        env={
            **cli.env,
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_API_KEY": "ls-test-key",
            "LANGSMITH_ENDPOINT": fake.root_url,
        },
    )
    run = traced("run", "Quick snapshot of NVDA", "--json")
    assert run.code == 0, str(run)
    assert json.loads(run.out)["status"] == "awaiting_approval"
    posted = [r for r in fake.other_requests() if r["_method"] == "POST"]
    assert posted and all(r["_path"].startswith("/runs") for r in posted)


async def test_a_cited_metric_that_differs_from_the_computed_one_fails_the_critique(
    fake: FakeOpenAI, open_app: Any
) -> None:
    def wrong_return(request: dict[str, Any]) -> Any:
        m = metrics_in(request)
        cited = [{"name": "return_1y", "value": m["return_1y"] + 0.5}]
        return structured("ReportNarrative", narrative(m, cited_metrics=cited))

    fake.respond_with(ScriptedAnalyst(overrides={"ReportNarrative": wrong_return}))
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="T")
        assert view.status == "awaiting_approval"
        assert view.verdict == "fail"  # the model critic said pass; the computed check wins
        [finding] = [f for f in view.findings if "return_1y" in f["message"]]
        assert finding["severity"] == "error"
        assert "does not come from the tool results" in finding["message"]
        assert view.publication is None
        assert not (app.settings.memory_dir / "research").exists()


async def test_a_tool_error_goes_back_to_the_model_which_then_calls_correctly(
    fake: FakeOpenAI, open_app: Any
) -> None:
    def executor(request: dict[str, Any]) -> Any:
        if step_of(request)[0] != "returns:NVDA":
            return None
        last = request["messages"][-1]
        if last["role"] == "user":
            return tool_calls(("get_returns", {"ticker": "ZZZZ"}))
        if content(last).startswith("error:"):
            return tool_calls(correct_call(request))
        return None

    fake.respond_with(ScriptedAnalyst(overrides={"executor": executor}))
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="T")
        assert view.status == "awaiting_approval"
        graph = await app.graph()
        state = (await graph.aget_state({"configurable": {"thread_id": "T"}})).values

    steps = [
        r for r in of_kind(fake.chat_requests(), "executor") if step_of(r)[0] == "returns:NVDA"
    ]
    assert len(steps) == 3
    error = steps[1]["messages"][-1]
    assert error["role"] == "tool"
    assert content(error).startswith("error: Unknown ticker ZZZZ")
    assert "NVDA" in content(error)  # the message lists what is available
    check_tool_result("returns:NVDA", json.loads(content(steps[2]["messages"][-1])))
    result = state["results"]["returns:NVDA"]
    assert result["notes"] == []
    check_tool_result("returns:NVDA", result["data"])


async def test_a_step_over_its_iteration_budget_stops_with_what_it_has_and_says_so(
    fake: FakeOpenAI, open_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_TOOL_ITERATIONS", "2")

    def restless(request: dict[str, Any]) -> Any:
        if step_of(request)[0] == "trend:NVDA":
            return tool_calls(correct_call(request))  # never settles on an answer
        return None

    fake.respond_with(ScriptedAnalyst(overrides={"executor": restless}))
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="T")
        assert view.status == "awaiting_approval"  # the run went on
        graph = await app.graph()
        state = (await graph.aget_state({"configurable": {"thread_id": "T"}})).values

    trend = [r for r in of_kind(fake.chat_requests(), "executor") if step_of(r)[0] == "trend:NVDA"]
    assert len(trend) == 2
    result = state["results"]["trend:NVDA"]
    assert len(result["notes"]) == 1
    assert result["notes"][0].startswith("Stopped after 2 model turns (the iteration budget)")
    check_tool_result("trend:NVDA", result["data"])  # what it gathered is kept
    assert all(state["results"][s]["notes"] == [] for s in PLAN if s != "trend:NVDA")


@pytest.mark.parametrize(
    ("model", "notice"),
    [
        (
            "openai:gpt-4o-mini",
            "ANALYST_MODEL=openai:gpt-4o-mini but neither OPENAI_API_KEY nor OPENAI_BASE_URL is "
            "set: using the offline analyst.",
        ),
        (
            None,
            "No model configured (OPENAI_API_KEY / OPENAI_BASE_URL unset): using the offline "
            "analyst.",
        ),
    ],
    ids=["explicit-model", "auto"],
)
def test_without_a_key_or_base_url_the_offline_analyst_runs_and_says_so_once(
    analyst: Any, model: str | None, notice: str
) -> None:
    env = {k: v for k, v in analyst.env.items() if not k.startswith("OPENAI_")}
    if model:
        env["ANALYST_MODEL"] = model
    offline = replace(analyst, env=env)
    run = offline("run", "Analyze NVDA", "--json")
    assert run.code == 0, str(run)
    assert run.err.strip().splitlines() == [notice]
    view = json.loads(run.out)
    assert view["status"] == "awaiting_approval"
    assert view["model"] == "offline"
    assert view["usage"]["calls"] == 0


def test_model_offline_flag_sends_nothing_and_prints_no_notice(fake: FakeOpenAI, cli: Any) -> None:
    fake.respond_with(ScriptedAnalyst())
    run = cli("run", "Analyze NVDA", "--json", "--model", "offline")
    assert run.code == 0, str(run)
    assert run.err == ""
    assert json.loads(run.out)["model"] == "offline"
    assert fake.requests == []
    assert os.environ["OPENAI_API_KEY"] == "test-key"  # a model was configured, and not used
