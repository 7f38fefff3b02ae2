"""Structured output by JSON schema (``ANALYST_STRUCTURED_OUTPUT=json_schema``), the way local
servers (llama.cpp, Ollama, vLLM) constrain decoding, through the real ``ChatOpenAI`` client
against the fake server: what is sent, what is parsed, the one repair, and the error after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage

from agent.errors import ConfigurationError, ModelOutputError
from agent.reasoning.chat_model import ModelChoice, build_chat_model, structured
from agent.reasoning.schemas import RouteDecision
from agent.settings import Settings
from tests.support.fake_openai import FakeOpenAI, text
from tests.support.fake_openai import structured as tool_answer

pytestmark = pytest.mark.integration

ROUTE = {"mode": "deep", "tickers": ["NVDA"], "reason": "A full analysis was asked for."}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    with fake.running():
        yield fake


def model(server: FakeOpenAI, method: str) -> object:
    settings = Settings.from_env(
        {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "k",
            "ANALYST_STRUCTURED_OUTPUT": method,
            "ANALYST_MODEL_TIMEOUT": "10",
        }
    )
    return build_chat_model(settings, ModelChoice("openai", "local-model"))


async def test_json_schema_asks_for_a_response_format_and_parses_the_content(
    server: FakeOpenAI,
) -> None:
    server.script(text(json.dumps(ROUTE)))
    decision, usage = await structured(
        model(server, "json_schema"), RouteDecision, [HumanMessage("Analyze NVDA")], where="t"
    )
    assert decision == RouteDecision(**ROUTE)
    assert usage["calls"] == 1
    (request,) = server.chat_requests()
    assert "tools" not in request and "tool_choice" not in request
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "RouteDecision"
    assert set(fmt["json_schema"]["schema"]["properties"]) == {"mode", "tickers", "reason"}


async def test_json_schema_repairs_once_then_fails_clearly(server: FakeOpenAI) -> None:
    server.script(text("not json at all"), text(json.dumps(ROUTE)))
    decision, _ = await structured(
        model(server, "json_schema"), RouteDecision, [HumanMessage("Analyze NVDA")], where="t"
    )
    assert decision.tickers == ["NVDA"]
    repair = server.chat_requests()[1]["messages"][-1]["content"]
    assert "not valid for RouteDecision" in repair and "one JSON object" in repair

    server.script(text('{"mode": "deep"}'), text("{"))
    with pytest.raises(ModelOutputError, match=r"invalid twice .*after one repair attempt"):
        await structured(
            model(server, "json_schema"), RouteDecision, [HumanMessage("x")], where="routing"
        )


async def test_function_calling_stays_the_default(server: FakeOpenAI) -> None:
    server.script(tool_answer("RouteDecision", ROUTE))
    settings = Settings.from_env({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"})
    assert settings.structured_output == "function_calling"
    chat = build_chat_model(settings, ModelChoice("openai", "m"))
    decision, _ = await structured(chat, RouteDecision, [HumanMessage("Analyze NVDA")], where="t")
    assert decision.tickers == ["NVDA"]
    (request,) = server.chat_requests()
    assert request["tool_choice"]["function"]["name"] == "RouteDecision"
    assert "response_format" not in request


def test_an_unknown_structured_output_method_is_refused_naming_the_choices() -> None:
    with pytest.raises(ConfigurationError, match="ANALYST_STRUCTURED_OUTPUT='grammar'") as e:
        Settings.from_env({"ANALYST_STRUCTURED_OUTPUT": "grammar"})
    assert "function_calling, json_schema" in str(e.value)


async def test_an_answer_cut_off_at_the_token_limit_is_repaired_once(server: FakeOpenAI) -> None:
    # What llama.cpp sends when generation hits its limit mid-object: finish_reason "length".
    cut = text('{"mode": "deep", "tickers": ["NV')
    cut.body["choices"][0]["finish_reason"] = "length"
    server.script(cut, text(json.dumps(ROUTE)))
    decision, usage = await structured(
        model(server, "json_schema"), RouteDecision, [HumanMessage("Analyze NVDA")], where="t"
    )
    assert decision.tickers == ["NVDA"] and usage["calls"] == 2
    repair = server.chat_requests()[1]["messages"][-1]["content"]
    assert "cut off at the server's token limit" in repair

    again = text("{")
    again.body["choices"][0]["finish_reason"] = "length"
    server.script(again, again)
    with pytest.raises(ModelOutputError, match="after one repair attempt"):
        await structured(model(server, "json_schema"), RouteDecision, [], where="routing")
