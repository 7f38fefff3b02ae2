"""Model failures on the wire: what the analyst promises for each, shown against the fake server.

- 429, 5xx and timeouts are retried with backoff by the graph's ``RetryPolicy`` (the client
  itself never retries), so the same request reaches the server again and the run completes.
- A failure that persists ends the command with a clear error after exactly
  ``ANALYST_MODEL_RETRIES`` attempts; the thread stays resumable from its last checkpoint and
  finishes once the server recovers, without redoing checkpointed steps.
- A rejected key is an error naming OPENAI_API_KEY (exit code 2), never retried.
- Invalid structured output gets one repair request, then a clear error; no draft, no report.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from agent.errors import (
    ModelAuthError,
    ModelOutputError,
    ModelTransientError,
    NotAwaitingApprovalError,
)
from tests.support.fake_openai import (
    FakeOpenAI,
    Reply,
    context_exceeded,
    error,
    slow,
    structured,
)
from tests.support.model_script import (
    ScriptedAnalyst,
    fake_model,
    kind_of,
    last_user,
    of_kind,
    once,
    wire,
    with_model,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with fake_model(monkeypatch) as server:
        yield server


@pytest.fixture
def cli(fake: FakeOpenAI, analyst: Any) -> Any:
    return with_model(analyst, fake)


async def state_of(app: Any, thread_id: str) -> dict[str, Any]:
    graph = await app.graph()
    snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    return dict(snap.values)


def kinds(fake: FakeOpenAI, start: int = 0) -> list[str]:
    return [kind_of(r) for r in fake.chat_requests()[start:]]


# -- retried, then fine ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [error(429, "Rate limit reached", retry_after="0"), error(502, "bad gateway")],
    ids=["429", "502"],
)
async def test_a_transient_error_is_retried_by_the_graph_and_the_run_completes(
    fake: FakeOpenAI, open_app: Any, failure: Reply
) -> None:
    script = ScriptedAnalyst(overrides={"PlanDecision": once(lambda _: failure)})
    fake.respond_with(script)
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="T")
    assert view.status == "awaiting_approval"
    first, second = of_kind(fake.chat_requests(), "PlanDecision")
    assert wire(first) == wire(second)  # the same request, sent again
    # The failed attempt returned no usage; the accounting is exactly the successful replies.
    assert view.usage == script.totals()
    assert view.usage["calls"] == len(fake.chat_requests()) - 1


async def test_a_response_slower_than_the_timeout_is_retried(
    fake: FakeOpenAI, open_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_MODEL_TIMEOUT", "1")
    script = ScriptedAnalyst()
    script.overrides["RouteDecision"] = once(lambda r: slow(script.default(r), 3.0))
    fake.respond_with(script)
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="T")
    assert view.status == "awaiting_approval"
    first, second = of_kind(fake.chat_requests(), "RouteDecision")
    assert wire(first) == wire(second)


async def test_a_server_that_never_answers_in_time_is_a_timeout_error_naming_the_setting(
    fake: FakeOpenAI, open_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_MODEL_TIMEOUT", "0.3")
    monkeypatch.setenv("ANALYST_MODEL_RETRIES", "2")
    fake.respond_with(lambda r: slow(structured("RouteDecision", "{}"), 1.0))
    async with open_app() as app:
        with pytest.raises(ModelTransientError) as raised:
            await app.start("Analyze NVDA", thread_id="T")
        assert "timed out during routing" in str(raised.value)
        assert "ANALYST_MODEL_TIMEOUT" in str(raised.value)
        assert (await app.view("T")).status == "interrupted"
    assert len(fake.chat_requests()) == 2


async def test_a_prompt_longer_than_the_window_is_a_clear_error_not_retried(
    fake: FakeOpenAI, open_app: Any
) -> None:
    # llama-server's own answer to a prompt over its --ctx-size (tests/realmodel sees it live).
    fake.respond_with(lambda r: context_exceeded(8123, 4096))
    async with open_app() as app:
        with pytest.raises(ModelOutputError) as raised:
            await app.start("Analyze NVDA", thread_id="T")
        message = str(raised.value)
        assert "prompt for routing is longer than the model's context window" in message
        assert "(4096 tokens)" in message and "--ctx-size" in message
        assert (await app.view("T")).status == "interrupted"
    assert len(fake.chat_requests()) == 1  # a longer wait does not make it fit


# -- persistent failures: a clear error, a resumable thread ------------------------------------


async def test_500_forever_fails_after_exactly_the_configured_attempts_then_resumes(
    fake: FakeOpenAI, open_app: Any
) -> None:
    fake.respond_with(lambda r: error(500, "upstream exploded"))
    async with open_app() as app:
        with pytest.raises(ModelTransientError) as raised:
            await app.start("Analyze NVDA", thread_id="T")
        assert "Model server error during routing (HTTP 500)" in str(raised.value)
        view = await app.view("T")
        assert view.status == "interrupted"
        assert view.next_nodes == ["router"]
    requests = fake.chat_requests()
    assert len(requests) == 3  # ANALYST_MODEL_RETRIES
    assert all(wire(r) == wire(requests[0]) for r in requests)

    fake.respond_with(ScriptedAnalyst())  # the server recovers
    async with open_app() as app:  # later, from a fresh app
        resumed = await app.resume("T")
    assert resumed.status == "awaiting_approval"
    assert resumed.query == "Analyze NVDA"
    assert resumed.draft_hash


def test_a_reporter_failing_persistently_publishes_nothing_and_resumes_from_its_checkpoint(
    fake: FakeOpenAI, cli: Any
) -> None:
    script = ScriptedAnalyst(overrides={"ReportNarrative": lambda r: error(503, "overloaded")})
    fake.respond_with(script)

    run = cli("run", "Analyze NVDA", "--thread", "T", "--json")
    assert run.code == ModelTransientError.exit_code == 4, str(run)
    assert run.out == ""
    assert run.err.startswith("error: Model server error during report writing (HTTP 503)")
    assert "Traceback" not in run.err
    assert kinds(fake).count("ReportNarrative") == 3
    assert "CriticVerdict" not in kinds(fake)

    state = cli.state("T")
    assert not state.get("draft")
    assert state["status"] == "running"  # the reporter never finished; no status was written
    assert cli.history("T")[0].next_nodes == ["reporter"]
    assert cli.research_notes() == []

    recovered = len(fake.chat_requests())
    del script.overrides["ReportNarrative"]
    resumed = cli.json("resume", "T")
    assert resumed["status"] == "awaiting_approval", resumed
    # Routing, planning and the executor steps were checkpointed: none of them ran again.
    assert kinds(fake, recovered) == ["ReportNarrative", "CriticVerdict"]
    assert cli.research_notes() == []  # publishing still waits for a human


async def test_a_critic_failing_persistently_leaves_the_draft_unapproved(
    fake: FakeOpenAI, open_app: Any
) -> None:
    script = ScriptedAnalyst(overrides={"CriticVerdict": lambda r: error(500)})
    fake.respond_with(script)
    async with open_app() as app:
        with pytest.raises(ModelTransientError):
            await app.start("Analyze NVDA", thread_id="T")
        view = await app.view("T")
        assert view.status == "interrupted"
        assert view.next_nodes == ["critic"]
        assert view.draft_hash  # drafted, but not reviewed: nobody can approve it yet
        approve = {"action": "approve", "draft_hash": view.draft_hash, "approver": "me"}
        with pytest.raises(NotAwaitingApprovalError):
            await app.decide("T", approve)
        assert not (app.settings.memory_dir / "research").exists()
        del script.overrides["CriticVerdict"]
        assert (await app.resume("T")).status == "awaiting_approval"
    assert kinds(fake).count("CriticVerdict") == 4


# -- a rejected key ----------------------------------------------------------------------------


def test_a_rejected_key_names_the_setting_is_not_retried_and_the_thread_resumes(
    fake: FakeOpenAI, cli: Any
) -> None:
    def gatekeeper(request: dict[str, Any]) -> Reply | None:
        if request["_auth"] != "Bearer test-key":
            return error(401, "Incorrect API key provided: wrong-key")
        return None

    script = ScriptedAnalyst(overrides={"RouteDecision": gatekeeper})
    fake.respond_with(script)
    wrong = replace(cli, env={**cli.env, "OPENAI_API_KEY": "wrong-key"})

    run = wrong("run", "Analyze NVDA", "--thread", "T", "--json")
    assert run.code == ModelAuthError.exit_code == 2, str(run)
    assert run.out == ""
    assert run.err.startswith("error: The model endpoint rejected the API key during routing")
    assert "OPENAI_API_KEY" in run.err
    assert "resume" in run.err
    [sent] = fake.chat_requests()  # no retry
    assert sent["_auth"] == "Bearer wrong-key"
    assert cli.history("T")[0].next_nodes == ["router"]

    resumed = cli.json("resume", "T")  # the key is fixed
    assert resumed["status"] == "awaiting_approval", resumed
    assert {r["_auth"] for r in fake.chat_requests()[1:]} == {"Bearer test-key"}


# -- invalid structured output -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "bad"),
    [
        ("RouteDecision", "{not json"),
        ("PlanDecision", {"steps": [{"kind": "valuation", "ticker": "NVDA", "description": "?"}]}),
    ],
    ids=["invalid-json", "schema-violation"],
)
async def test_invalid_structured_output_gets_one_repair_request_and_the_run_completes(
    fake: FakeOpenAI, open_app: Any, schema: str, bad: Any
) -> None:
    script = ScriptedAnalyst(overrides={schema: once(lambda r: structured(schema, bad))})
    fake.respond_with(script)
    async with open_app() as app:
        view = await app.start("Analyze NVDA", thread_id="T")
    assert view.status == "awaiting_approval"
    first, repair = of_kind(fake.chat_requests(), schema)
    assert repair["messages"][:-1] == first["messages"]
    assert repair["messages"][-1]["role"] == "user"
    assert last_user(repair).startswith(f"Your previous answer was not valid for {schema}")
    assert view.usage == script.totals()  # the invalid reply's tokens count too


async def test_invalid_structured_output_twice_is_a_clear_error_with_no_draft(
    fake: FakeOpenAI, open_app: Any
) -> None:
    script = ScriptedAnalyst(
        overrides={"ReportNarrative": lambda r: structured("ReportNarrative", '{"summary": ')}
    )
    fake.respond_with(script)
    async with open_app() as app:
        with pytest.raises(ModelOutputError) as raised:
            await app.start("Analyze NVDA", thread_id="T")
        message = str(raised.value)
        assert "ReportNarrative output during report writing was invalid twice" in message
        assert "resume" in message
        assert not (await state_of(app, "T")).get("draft")
        view = await app.view("T")
        assert view.status == "interrupted"
        assert view.next_nodes == ["reporter"]
        assert not (app.settings.memory_dir / "research").exists()
    # One request and one repair; an output error is not a transient one, so no graph retry.
    assert kinds(fake).count("ReportNarrative") == 2

    recovered = len(fake.chat_requests())
    del script.overrides["ReportNarrative"]
    async with open_app() as app:
        resumed = await app.resume("T")
    assert resumed.status == "awaiting_approval"
    assert kinds(fake, recovered) == ["ReportNarrative", "CriticVerdict"]
    assert resumed.draft_hash and resumed.verdict
