"""The whole graph on the model path against a model that really generates.

SmolLM2-135M answers what it answers; these tests hold the analyst to what must be true
whatever that is: structured output validates or ends in the documented ``ModelOutputError``
after one repair; no ticker outside the data is ever analysed; the tool loop stays within
``ANALYST_TOOL_ITERATIONS``; every figure in a draft's table and in the model's prose is a
computed one, or the critic says it is not; an extracted item whose quote is not in the
conversation is stored nowhere a prompt reads; approval, rejection and resume work as offline;
no outcome is a traceback.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from agent.learning.extraction import Extraction
from agent.learning.grounding import ground
from agent.learning.model_extraction import ModelExtractor
from agent.reasoning.chat_model import ModelChoice, build_chat_model
from agent.research.critic import prose_figures
from agent.research.report import KEY_METRICS, fmt
from agent.settings import Settings
from memory.journal.records import Episode
from scripts.bench_model import grounding_line
from tests.realmodel.conftest import SERVICES, model_environ
from tests.support.model_proxy import Exchange, ModelProxy

#: A run on a weak CPU takes minutes; each CLI call carries its own bound as well.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

SAMPLE = {"AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA"}
#: What a model failure may look like to a user: exit 4 and one line naming what to do.
MODEL_FAILURE = 4
#: What the repair request says (agent.reasoning.chat_model.structured).
REPAIR = "was not valid for"


def no_traceback(run: Any) -> None:
    assert "Traceback" not in run.err and "Traceback" not in run.out, run.err[-3000:]


def outcome(run: Any) -> str:
    """A short account of a CLI run for an assertion message."""
    return f"exit {run.code}\nstdout: {run.out[-1500:]}\nstderr: {run.err[-1500:]}"


def structured_requests(exchanges: list[Exchange]) -> list[Exchange]:
    return [x for x in exchanges if x.schema_name]


def check_structured(exchanges: list[Exchange], run: Any) -> None:
    """Each structured answer either parsed as a JSON object, or was followed by the one
    repair request, or was itself the answer to the repair and the run ended with the
    documented error."""
    for i, x in enumerate(exchanges):
        if not x.schema_name or x.status != 200:
            continue
        try:
            fine = isinstance(json.loads(x.message.get("content") or ""), dict)
        except ValueError:
            fine = False
        if fine:
            continue
        if any(REPAIR in str(m.get("content")) for m in x.request.get("messages", [])):
            assert run.code == MODEL_FAILURE and "after one repair attempt" in run.err
            continue
        following = exchanges[i + 1 : i + 2]
        assert any(
            REPAIR in str(m.get("content")) for y in following for m in y.request["messages"]
        ), f"a broken {x.schema_name} answer was neither repaired nor refused"


def planned_tickers(state: dict[str, Any]) -> set[str]:
    """The tickers the thread's plan steps research (the view lists only the steps' ids)."""
    return {step["ticker"] for step in state.get("plan") or [] if step.get("ticker")}


def check_prose(state: dict[str, Any], view: dict[str, Any]) -> None:
    """Every figure the model wrote in the draft's prose is a computed one or the critic
    names it (the findings the human sees at approval)."""
    messages = " ".join(f["message"] for f in view["findings"])
    unbacked = prose_figures(state["draft"])
    for figure in unbacked:
        assert f"states {figure.text} " in messages, (figure, view["findings"])
    print(f"\nprose: {len(state['draft'].get('prose') or [])} texts, {len(unbacked)} unbacked")


def seed_memories(cli: Any) -> None:
    """Bob (same tenant) leaves canaries in his memory and facts; the tester states a fact.
    Offline CLI calls: the model sees these only through its memory tools."""
    offline = {**cli.env, "ANALYST_MODEL": "offline"}
    bob = replace(cli, env={**offline, "ANALYST_USER": "bob"})
    assert bob("memory", "add", "zqbobmem private pin note", "--json").code == 0
    assert bob("facts", "record", "me", "nickname", "zqbobnick", "--text").code == 0
    mine = replace(cli, env=offline)
    assert mine("facts", "record", "me", "risk_tolerance", "low").code == 0


def check_memory_tools(exchanges: list[Exchange]) -> None:
    """Whatever the model asked for, nothing of Bob's reached it, the planner and executor
    were offered the memory tools, and every memory tool's result came back as quoted,
    untrusted data."""
    sent = json.dumps([x.request for x in exchanges])
    assert "zqbob" not in sent
    offered = {t["function"]["name"] for x in exchanges for t in x.request.get("tools") or []} & {
        "get_user_profile",
        "search_episodes",
        "list_open_items",
    }
    assert offered, "the planner and executor were offered no memory tool"
    called = [
        c["function"]["name"]
        for x in exchanges
        for c in x.message.get("tool_calls") or []
        if c["function"]["name"] in offered
    ]
    messages = [m for x in exchanges for m in x.request.get("messages", [])]
    memory_call_ids = {
        c["id"]
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if c["function"]["name"] in offered
    }
    results = [
        m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") in memory_call_ids
    ]
    for message in results:
        assert 'trust="untrusted"' in str(message.get("content")), message
    print(f"\nmemory tools: offered {sorted(offered)}, called {len(called)}: {called}")


# Three CLI calls of up to 1500 s each: beside a CPU hog (load 5-6 on two cores) the model
# generated 8-13 tokens/s instead of 40 and this test took about 27 minutes.
@pytest.mark.timeout(4500)
def test_a_deep_analysis_keeps_every_invariant_and_the_human_decides(
    cli: Any, real: ModelProxy
) -> None:
    # One run on the model serves every invariant (a run costs minutes on this CPU): the
    # memory tools see the tester's memory and never Bob's, whatever the model asks for.
    seed_memories(cli)
    run = cli("run", "Analyze NVDA", "--thread", "real-1", "--json", timeout=1500)
    no_traceback(run)
    exchanges = real.chat()
    assert exchanges, "the analyst never called the model"
    assert all(x.status == 200 for x in exchanges), [x.response for x in exchanges]
    check_structured(exchanges, run)
    check_memory_tools(exchanges)
    if run.code == MODEL_FAILURE:
        # The documented end of an answer that stayed invalid after its repair.
        assert "after one repair attempt" in run.err or "model" in run.err.lower(), outcome(run)
        assert cli("show", "real-1", "--json").code == 0  # the thread is kept
        return
    assert run.code == 0, outcome(run)
    view = run.json()
    assert view["status"] == "awaiting_approval", view
    assert view["ticker"] in SAMPLE
    state = cli.state("real-1")
    assert planned_tickers(state) <= SAMPLE
    # The tool loop: a step asks the model at most ANALYST_TOOL_ITERATIONS (4) times.
    loop_calls = [x for x in exchanges if x.request.get("tools") and not x.schema_name]
    assert len(loop_calls) <= 4 * len(view["plan"]), len(loop_calls)

    # Figures: the table shows the computed values, or the critic says which do not.
    metrics, markdown = state["draft"]["metrics"], state["draft"]["markdown"]
    messages = " ".join(f["message"] for f in view["findings"])
    for key, label, kind in KEY_METRICS:
        if key in metrics and f"| {label} |" in markdown:
            row = next(line for line in markdown.splitlines() if line.startswith(f"| {label} |"))
            assert fmt(metrics[key], kind) in row or label in messages, row
    check_prose(state, view)

    # The human decides, exactly as offline: reject, then approve what is shown.
    rejected = cli("reject", "real-1", "--feedback", "more on risk", "--json", timeout=1500)
    no_traceback(rejected)
    if rejected.code == MODEL_FAILURE:
        return
    assert rejected.code == 0 and rejected.json()["revision"] == 1, outcome(rejected)
    check_prose(cli.state("real-1"), rejected.json())
    draft = rejected.json()["draft_hash"]
    approved = cli("approve", "real-1", "--draft", draft, "--as", "qa", "--json", timeout=1500)
    no_traceback(approved)
    assert approved.code == 0 and approved.json()["status"] == "published", outcome(approved)
    assert approved.json()["publication"]["draft_hash"] == draft


def test_a_ticker_the_data_does_not_have_is_never_analysed(cli: Any, real: ModelProxy) -> None:
    # The router's answer is what is under test: a snapshot (one computed step, no planner
    # and no tool loop) keeps the run short whatever tickers the model names.
    run = cli("run", "quick snapshot of Volkswagen", "--mode", "flash", "--json", timeout=900)
    no_traceback(run)
    assert run.code in (0, 2, MODEL_FAILURE), outcome(run)
    if run.code == 0:
        view = run.json()
        # Answered without research, or researched on a ticker the data has.
        assert view["ticker"] in (None, *SAMPLE), view
        if view.get("plan"):
            assert planned_tickers(cli.state(view["thread_id"])) <= SAMPLE
    elif run.code == 2:
        assert "Unknown ticker" in run.err or "No ticker" in run.err, outcome(run)


async def test_extraction_keeps_only_what_the_conversation_says(real: ModelProxy) -> None:
    from datetime import UTC, datetime

    settings = Settings.from_env(model_environ(real.base_url))
    said = [
        "I am saving for retirement in about 25 years.",
        "Please keep reports short, and never include TSLA.",
        "My brother thinks I should buy crypto, but I won't.",
    ]
    episodes = [
        Episode(
            "t",
            f"ep-{i}",
            "u",
            "th",
            datetime(2026, 12, 1, 9, i, tzinfo=UTC),
            "user",
            "message",
            text,
        )
        for i, text in enumerate(said)
    ]
    extractor = ModelExtractor(lambda: build_chat_model(settings, ModelChoice("openai", "m")), "m")
    try:
        extraction, _ = await extractor.extract(episodes)
    except Exception as e:  # the documented end of an answer invalid after its repair
        from agent.errors import ModelOutputError

        assert isinstance(e, ModelOutputError), repr(e)
        return
    assert isinstance(extraction, Extraction)
    grounded = ground(extraction, episodes)
    transcript = " ".join(said).casefold()
    accepted = grounded.accepted
    items = [
        *accepted.new_facts,
        *accepted.preference_signals,
        *accepted.notable_events,
        *accepted.open_items,
    ]
    for item in items:
        assert " ".join(item.quote.split()).casefold() in transcript, item
    proposed = sum(
        len(getattr(extraction, f))
        for f in ("new_facts", "preference_signals", "notable_events", "open_items")
    )
    print("\n" + grounding_line(1, proposed, len(items), len(grounded.rejected), failed=0))


def test_a_server_stopped_mid_generation_leaves_a_resumable_thread(cli: Any, tmp_path: Any) -> None:
    # A second llama-server of its own, stopped while it generates the run's second answer
    # (the plan); the analyst sees its connection drop, retries, and gives up clearly.
    with second_server(tmp_path) as (url, server), ModelProxy(url).running() as proxy:

        def stop_mid_generation() -> None:
            while proxy.forwarded < 2:
                threading.Event().wait(0.05)
            server.kill()

        killer = threading.Thread(target=stop_mid_generation, daemon=True)
        killer.start()
        on_it = replace(cli, env={**cli.env, **model_environ(proxy.base_url)})
        run = on_it("run", "Analyze NVDA", "--thread", "stop-1", "--json", timeout=900)
        killer.join(timeout=60)
    no_traceback(run)
    assert server.poll() is not None, "the server was never stopped"
    assert run.code == MODEL_FAILURE, outcome(run)
    assert "Cannot reach the model endpoint" in run.err and "OPENAI_BASE_URL" in run.err
    assert "analyst resume stop-1" in run.err, outcome(run)
    shown = cli("show", "stop-1", "--json")
    assert shown.code == 0 and shown.json()["status"] not in ("published", "awaiting_approval")
    # The thread goes on from its checkpoint (offline here: the same graph, no model).
    resumed = cli("resume", "stop-1", "--model", "offline", "--json", timeout=600)
    no_traceback(resumed)
    assert resumed.code == 0, outcome(resumed)
    assert resumed.json()["status"] == "awaiting_approval"


def test_a_generation_slower_than_the_timeout_is_a_clear_error(cli: Any, real: ModelProxy) -> None:
    real.delay = 4.0
    slow = replace(cli, env={**cli.env, "ANALYST_MODEL_TIMEOUT": "1", "ANALYST_MODEL_RETRIES": "1"})
    run = slow("run", "Analyze NVDA", "--thread", "slow-1", "--json", timeout=600)
    no_traceback(run)
    assert run.code == MODEL_FAILURE, outcome(run)
    assert "timed out" in run.err and "ANALYST_MODEL_TIMEOUT" in run.err, outcome(run)
    assert cli("show", "slow-1", "--json").code == 0


def test_a_prompt_longer_than_the_context_window_is_a_clear_error(
    cli: Any, real: ModelProxy
) -> None:
    # About 8,000 tokens of request for a 4,096-token window: the server refuses the prompt.
    huge = "Analyze NVDA. " + "Weigh every line of every quarterly filing with care. " * 700
    long = replace(cli, env={**cli.env, "ANALYST_MAX_QUERY_CHARS": str(len(huge))})
    run = long("run", huge, "--thread", "long-1", "--json", timeout=900)
    no_traceback(run)
    assert run.code == MODEL_FAILURE, outcome(run)
    assert "context" in run.err.lower() and "analyst resume long-1" in run.err, outcome(run)
    [refused] = real.chat()
    assert refused.status == 400, refused.response
    assert cli("show", "long-1", "--json").code == 0  # the thread is kept


@contextmanager
def second_server(tmp_path: Any) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A second ``llama-server`` (the binary, model and settings the session's server runs) on
    its own port: its base URL and its process, stopped at the end if it still runs."""
    import socket
    import urllib.request

    running = json.loads((SERVICES / "llama.json").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "llama-second.log").open("w")
    proc = subprocess.Popen(
        [
            running["binary"],
            "--model",
            running["model"],
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--ctx-size",
            "4096",
            "--n-predict",
            "768",
            "--jinja",
            "--threads",
            "1",
            "--parallel",
            "1",
            "--no-webui",
            "--no-repack",  # as scripts/model_server.sh starts it (AVX-512/AMX CPUs crash)
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, (tmp_path / "llama-second.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the second server never came up"
                threading.Event().wait(0.2)
        yield f"http://127.0.0.1:{port}/v1", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(autouse=True)
def _server_answers(real_model_url: str) -> None:
    """Every test needs the real server (the session fixture fails the tier without it)."""
