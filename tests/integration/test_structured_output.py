"""Structured output by JSON schema (``ANALYST_STRUCTURED_OUTPUT=json_schema``), the way local
servers (llama.cpp, Ollama, vLLM) constrain decoding, through the real ``ChatOpenAI`` client
against the fake server: what is sent, what is parsed, the one repair, and the error after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import ValidationError

from agent.errors import ConfigurationError, ModelOutputError
from agent.learning.model_extraction import extraction_schema
from agent.reasoning.chat_model import ModelChoice, build_chat_model, structured
from agent.reasoning.narrowing import (
    narrative_schema,
    plan_schema,
    route_schema,
    summary_schema,
    verdict_schema,
)
from agent.reasoning.schemas import ReportNarrative, RouteDecision
from agent.settings import Settings
from tests.support.fake_openai import FakeOpenAI, cut_off, text
from tests.support.fake_openai import structured as tool_answer

pytestmark = pytest.mark.integration

ROUTE: dict[str, Any] = {
    "mode": "deep",
    "tickers": ["NVDA"],
    "reason": "A full analysis was asked for.",
}


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
    server.script(cut_off('{"mode": "deep", "tickers": ["NV'), text(json.dumps(ROUTE)))
    decision, usage = await structured(
        model(server, "json_schema"), RouteDecision, [HumanMessage("Analyze NVDA")], where="t"
    )
    assert decision.tickers == ["NVDA"] and usage["calls"] == 2
    repair = server.chat_requests()[1]["messages"][-1]["content"]
    assert "cut off at the server's token limit" in repair

    server.script(cut_off("{"), cut_off("{"))
    with pytest.raises(ModelOutputError, match="after one repair attempt"):
        await structured(model(server, "json_schema"), RouteDecision, [], where="routing")


async def test_json_schema_describes_the_fields_in_the_prompt(server: FakeOpenAI) -> None:
    # A grammar-constraining server (llama.cpp, Ollama, vLLM) never shows the schema to the
    # model: the system prompt says what each field means and what it may hold.
    server.script(text(json.dumps(ROUTE)))
    ask = [SystemMessage("You route requests."), HumanMessage("Analyze NVDA")]
    await structured(model(server, "json_schema"), route_schema({"NVDA", "AAPL"}), ask, where="t")
    system, user = server.chat_requests()[0]["messages"]
    assert system["content"].startswith("You route requests.\n\nAnswer with one JSON object")
    assert '(a list of at most 2 items, each one of "AAPL", "NVDA")' in system["content"]
    assert (
        "- reason: One sentence: why this mode. (text, up to 300 characters)" in system["content"]
    )
    assert user["content"] == "Analyze NVDA"

    server.script(tool_answer("RouteDecision", ROUTE))
    await structured(model(server, "function_calling"), RouteDecision, ask, where="t")
    assert server.chat_requests()[1]["messages"][0]["content"] == "You route requests."


def test_the_wire_schemas_hold_only_what_a_grammar_enforces() -> None:
    """No float bounds (llama.cpp ignores them), every string and list bounded, choices as
    enums; what was narrowed still validates as the base schema."""

    def walk(node: object) -> Iterator[dict]:
        if isinstance(node, dict):
            yield node
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    schemas = [
        route_schema({"NVDA"}),
        plan_schema({"NVDA"}, {"m-1"}),
        narrative_schema({"return_1y", "rsi_14"}),
        verdict_schema(),
        summary_schema(),
        extraction_schema(["ep-1", "ep-2"]),
    ]
    for schema in schemas:
        for node in walk(schema.model_json_schema()):
            kind = node.get("type")
            assert not (kind == "number" and {"minimum", "maximum"} & set(node)), schema
            if kind == "string" and not {"enum", "const"} & set(node):
                assert "maxLength" in node, (schema.__name__, node)
            if kind == "array":
                assert "maxItems" in node, (schema.__name__, node)
    narrative = narrative_schema({"return_1y"}).model_validate(
        {
            "summary": "NVDA rose.",
            "analysis": "Up.",
            "risk_factors": ["Volatile."],
            "rating": "Hold",
            "confidence": 0.7,
            "rationale": "Mixed.",
            "cited_metrics": [{"name": "return_1y", "value": 0.42}],
        }
    )
    assert isinstance(narrative, ReportNarrative) and narrative.confidence == 0.7
    # A constraining decoder writes only required keys when a small model would rather stop:
    # every list of an extraction is required on the wire ("[]" is an answer).
    wire = extraction_schema(["ep-1"]).model_json_schema()
    lists = {"notable_events", "new_facts", "preference_signals", "open_items"}
    assert lists <= set(wire["required"]), wire["required"]
    with pytest.raises(ValidationError):  # a confidence out of the grammar's choices
        narrative_schema({"return_1y"}).model_validate({**narrative.model_dump(), "confidence": 85})
    with pytest.raises(ValidationError):  # a metric that was not computed
        narrative_schema({"return_1y"}).model_validate(
            {**narrative.model_dump(), "cited_metrics": [{"name": "eps", "value": 1}]}
        )
