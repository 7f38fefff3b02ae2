"""A scripted analyst for the fake OpenAI server, and readers for what the server received.

:class:`ScriptedAnalyst` is a responder for :class:`fake_openai.FakeOpenAI`: it answers each
request the way a competent model would, judged only from the request itself (which schema
``tool_choice`` forces, which tool the executor's step names, what the last message is). Tests
override one kind of request with ``overrides[kind]``: a function that returns a reply, or
None to fall back to the default answer. Besides the schemas and ``executor``, two kinds exist
only when memory is involved: ``Extraction`` (the memory extractor; by default a cautious
answer with nothing to remember) and ``memory_lookup`` (the planner's turn to read the user's
memory with the memory tools; by default it looks nothing up). Every successful reply carries a distinct usage
block, recorded in ``served`` so a test can add up what the client was told.

The request readers (:func:`kind_of`, :func:`quoted`, :func:`system_prompt`, ...) work on the
JSON bodies the server recorded, so assertions speak about what went over the wire.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, structured, text, tool_calls

#: The bundled tickers (the fake answers from the request text, never from the agent's code).
TICKERS = ("AAPL", "AMZN", "GOOGL", "META", "MSFT", "NVDA", "TSLA")
COMPANIES = {"tesla": "TSLA", "nvidia": "NVDA", "apple": "AAPL", "microsoft": "MSFT"}
DEEP_KINDS = ("returns", "risk", "trend", "beta", "peers")
TOOLS = ("get_snapshot", "get_returns", "get_risk", "get_trend", "get_beta", "get_peers")
#: The memory tools the model path binds when the user has memory (agent.learning.tools): the reads,
#: then the user's controls (what is remembered, remember, forget).
MEMORY_TOOLS = (
    "get_user_profile",
    "search_episodes",
    "list_open_items",
    "list_what_you_remember",
    "remember",
    "forget",
)
#: The schemas the structured-output nodes force through ``tool_choice``.
SCHEMAS = (
    "RouteDecision",
    "PlanDecision",
    "ReportNarrative",
    "CriticVerdict",
    "ConversationSummary",
)
#: Planner step descriptions: distinctive, so a test can prove they never reach the critic.
STEP_NOTE = "scripted-step-description"
SUMMARY = "Earlier the user asked for quick snapshots and approved them."

#: Environment variables that would send traces to LangSmith; tests keep them unset.
TRACING_VARS = (
    "LANGSMITH_TRACING",
    "LANGSMITH_TRACING_V2",
    "LANGCHAIN_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
)

Override = Callable[[dict[str, Any]], Reply | None]


def model_environ(base_url: str, **extra: str) -> dict[str, str]:
    """Settings for the model path against the fake server: fast backoff, bounded timeouts."""
    return {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "test-key",
        "ANALYST_MODEL": "openai:gpt-4o-mini",
        "ANALYST_MODEL_BACKOFF": "0.01",
        "ANALYST_MODEL_RETRIES": "3",
        "ANALYST_MODEL_TIMEOUT": "10",
        **extra,
    }


@contextmanager
def fake_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A running fake server with this process's environment pointing the analyst at it.

    On exit it checks that the test's responder never raised (a broken script is answered with
    HTTP 500, which the analyst would otherwise treat as a server failure).
    """
    server = FakeOpenAI()
    with server.running():
        for name in TRACING_VARS:
            monkeypatch.delenv(name, raising=False)
        for name, value in model_environ(server.base_url).items():
            monkeypatch.setenv(name, value)
        yield server
    assert not server.errors, f"the scripted responder failed: {server.errors!r}"


def with_model(analyst: Any, server: FakeOpenAI, **extra: str) -> Any:
    """The integration ``analyst`` CLI fixture with the model path pointed at ``server``."""
    env = {k: v for k, v in analyst.env.items() if k not in TRACING_VARS}
    return replace(analyst, env={**env, **model_environ(server.base_url, **extra)})


def once(reply: Callable[[dict[str, Any]], Reply]) -> Override:
    """An override that answers the first matching request with ``reply``, then defers."""
    used = threading.Event()

    def override(request: dict[str, Any]) -> Reply | None:
        if used.is_set():
            return None
        used.set()
        return reply(request)

    return override


# -- reading requests -------------------------------------------------------------------------


def kind_of(request: Mapping[str, Any]) -> str:
    """The schema a request forces via ``tool_choice``, ``memory_lookup`` for a free tool loop
    over the memory tools alone (the planner's look-up), or ``executor`` for the other free
    tool loops."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name"))
    names = tool_names(request)
    if names and set(names) <= set(MEMORY_TOOLS):
        return "memory_lookup"
    return "executor"


def of_kind(requests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in requests if kind_of(r) == kind]


def content(message: Mapping[str, Any]) -> str:
    value = message.get("content")
    if isinstance(value, list):  # content parts
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return "" if value is None else str(value)


def system_prompt(request: Mapping[str, Any]) -> str:
    return "\n".join(content(m) for m in request["messages"] if m["role"] == "system")


def first_user(request: Mapping[str, Any]) -> str:
    """The request's own task (a repair request appends its note after it)."""
    return next(content(m) for m in request["messages"] if m["role"] == "user")


def last_user(request: Mapping[str, Any]) -> str:
    return [content(m) for m in request["messages"] if m["role"] == "user"][-1]


def quoted(text_: str, label: str) -> str:
    """The body of the untrusted ``<reference source="label">`` block in a prompt."""
    match = re.search(
        rf'<reference id="(\w+)" source="{re.escape(label)}" trust="untrusted">\n'
        rf".*?```text\n(?P<body>.*?)\n```\n</reference id=\"\1\">",
        text_,
        re.DOTALL,
    )
    assert match, f"no quoted '{label}' in: {text_[:500]}"
    return match.group("body")


def tool_names(request: Mapping[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def tool_results(request: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool name, arguments, result content) of every tool result in a request, in order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in request["messages"]:
        for call in m.get("tool_calls") or []:
            args = json.loads(call["function"]["arguments"] or "{}")
            calls[call["id"]] = (call["function"]["name"], args)
        if m["role"] == "tool":
            name, args = calls[m["tool_call_id"]]
            out.append((name, args, content(m)))
    return out


_REFERENCE = re.compile(
    r'<reference id="(\w+)" source="[^"]*" trust="untrusted">\n.*?</reference id="\1">', re.DOTALL
)


def outside_quotes(text_: str) -> str:
    """``text_`` with every quoted ``<reference>`` block taken out: what is not data."""
    return _REFERENCE.sub("", text_)


def episodes_in(request: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """{episode id: (kind, text)} of the episodes an ``Extraction`` request quotes."""
    user = first_user(request)
    found = re.findall(r"^Episode (\S+): \w+ (\w+) at ", user, re.MULTILINE)
    return {eid: (kind, quoted(user, f"episode {eid}")) for eid, kind in found}


def wire(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the client sent it, without the server's bookkeeping keys."""
    return {k: v for k, v in request.items() if not k.startswith("_")}


# -- the scripted analyst -------------------------------------------------------------------


def tickers_in(request_text: str) -> list[str]:
    found: list[str] = []
    for word in re.findall(r"[A-Za-z]+", request_text):
        symbol = word if word in TICKERS else COMPANIES.get(word.lower())
        if symbol and symbol not in found:
            found.append(symbol)
    return found


@dataclass
class ScriptedAnalyst:
    """Answers every request kind; ``overrides[kind]`` replaces the answer for one kind."""

    verdict: str = "pass"
    overrides: dict[str, Override] = field(default_factory=dict)
    #: (kind, usage block) of every successful reply handed to the server, in order.
    served: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, request: dict[str, Any]) -> Reply:
        kind = kind_of(request)
        override = self.overrides.get(kind)
        reply = override(request) if override is not None else None
        if reply is None:
            reply = self.default(request)
        if reply.status == 200 and isinstance(reply.body, dict) and "usage" in reply.body:
            with self._lock:
                n = len(self.served)
                usage = {"prompt_tokens": 100 + 3 * n, "completion_tokens": 10 + n}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                reply.body["usage"] = usage
                self.served.append((kind, usage))
        return reply

    def totals(self) -> dict[str, int]:
        return {
            "calls": len(self.served),
            "input_tokens": sum(u["prompt_tokens"] for _, u in self.served),
            "output_tokens": sum(u["completion_tokens"] for _, u in self.served),
            "total_tokens": sum(u["total_tokens"] for _, u in self.served),
        }

    def default(self, request: dict[str, Any]) -> Reply:
        """The scripted answer to ``request`` when no override applies."""
        answer: Callable[[dict[str, Any]], Reply] = getattr(self, "_" + kind_of(request).lower())
        return answer(request)

    # -- defaults, one per request kind ---------------------------------------------------

    def _routedecision(self, request: dict[str, Any]) -> Reply:
        asked = quoted(first_user(request), "user request")
        lowered = asked.lower()
        mode = "flash" if any(w in lowered for w in ("quick", "snapshot")) else "deep"
        return structured(
            "RouteDecision",
            {"mode": mode, "tickers": tickers_in(asked), "reason": f"scripted {mode} route"},
        )

    def _plandecision(self, request: dict[str, Any]) -> Reply:
        primary = re.search(r"\(primary: (\w+)\)", first_user(request))
        assert primary, first_user(request)
        steps = [
            {"kind": k, "ticker": primary.group(1), "description": f"{STEP_NOTE} {k}"}
            for k in DEEP_KINDS
        ]
        return structured("PlanDecision", {"steps": steps, "rationale": "scripted standard plan"})

    def _reportnarrative(self, request: dict[str, Any]) -> Reply:
        metrics = metrics_in(request)
        return structured("ReportNarrative", narrative(metrics))

    def _criticverdict(self, request: dict[str, Any]) -> Reply:
        findings = [] if self.verdict == "pass" else [{"severity": "warning", "message": "x"}]
        return structured("CriticVerdict", {"verdict": self.verdict, "findings": findings})

    def _conversationsummary(self, request: dict[str, Any]) -> Reply:
        return structured("ConversationSummary", {"summary": SUMMARY})

    def _extraction(self, request: dict[str, Any]) -> Reply:
        """Cautious: a topic and a summary, nothing to remember (omitting beats inventing)."""
        return structured(
            "Extraction", {"topic": "research request", "summary": "The user asked for research."}
        )

    def _memory_lookup(self, request: dict[str, Any]) -> Reply:
        return text("Nothing to look up.")

    def _executor(self, request: dict[str, Any]) -> Reply:
        if request["messages"][-1]["role"] == "tool":
            return text("The tool results are in.")
        return tool_calls(correct_call(request))


def step_of(request: Mapping[str, Any]) -> tuple[str, str, str]:
    """(step id, ticker, tool name) of an executor request."""
    ask = next(content(m) for m in request["messages"] if m["role"] == "user")
    match = re.search(r"Step (\S+): .*Ticker: (\w+)\. The tool for this step is (\w+)\.", ask)
    assert match, ask
    return match.group(1), match.group(2), match.group(3)


def correct_call(request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    _, ticker, tool = step_of(request)
    return tool, {} if tool == "get_peers" else {"ticker": ticker}


def metrics_in(request: Mapping[str, Any]) -> dict[str, Any]:
    """The computed metrics the reporter's request quotes."""
    return dict(json.loads(quoted(first_user(request), "computed metrics"))["metrics"])


def narrative(metrics: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A valid ReportNarrative that cites return_1y exactly as computed."""
    value = metrics["return_1y"]
    return {
        "summary": f"{metrics.get('ticker', 'The stock')} returned {value} over the last year.",
        "analysis": "Momentum and trend are both positive.",
        "risk_factors": ["High volatility."],
        "rating": "Buy",
        "confidence": 0.8,
        "rationale": "Momentum.",
        "cited_metrics": [{"name": "return_1y", "value": value}],
        **changes,
    }
