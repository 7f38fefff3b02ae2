"""The model adapter: which chat model to use, and calling it with clear failure modes.

- :func:`resolve_model` decides between the offline analyst and an OpenAI-compatible model from
  settings (ANALYST_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL).
- :func:`invoke` sends messages and maps the SDK's exceptions to the analyst's errors:
  rate limits, 5xx, timeouts and connection failures become :class:`ModelTransientError` (the
  graph's ``RetryPolicy`` retries those with backoff; the client itself does not retry), a
  rejected key becomes :class:`ModelAuthError` naming the setting.
- :func:`structured` asks for a Pydantic schema via function calling, gives the model one
  repair attempt when the output does not validate, then raises :class:`ModelOutputError`.
  With a ``response_format`` JSON schema the prompt also describes the fields
  (:func:`schema_brief`): llama.cpp, Ollama and vLLM turn the schema into a grammar and never
  show it, or its descriptions, to the model.

Token usage from each response's metadata is returned with the result so nodes can account it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.errors import (
    AnalystError,
    ConfigurationError,
    ModelAuthError,
    ModelOutputError,
    ModelTransientError,
)
from agent.records import Usage

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage

    from agent.settings import Settings

S = TypeVar("S", bound=BaseModel)

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def no_usage() -> Usage:
    return Usage(calls=0, input_tokens=0, output_tokens=0, total_tokens=0)


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Reducer for the state's ``usage`` channel: token counts add up across nodes."""
    a, b = left or no_usage(), right or no_usage()
    return Usage(
        calls=a["calls"] + b["calls"],
        input_tokens=a["input_tokens"] + b["input_tokens"],
        output_tokens=a["output_tokens"] + b["output_tokens"],
        total_tokens=a["total_tokens"] + b["total_tokens"],
    )


def usage_of(message: Any) -> Usage:
    meta = getattr(message, "usage_metadata", None) or {}
    return Usage(
        calls=1,
        input_tokens=int(meta.get("input_tokens", 0)),
        output_tokens=int(meta.get("output_tokens", 0)),
        total_tokens=int(meta.get("total_tokens", 0)),
    )


@dataclass(frozen=True)
class ModelChoice:
    """The resolved model: ``provider`` is None for the offline analyst."""

    provider: str | None
    name: str | None
    note: str | None = None

    @property
    def offline(self) -> bool:
        return self.provider is None

    @property
    def label(self) -> str:
        return "offline" if self.offline else f"{self.provider}:{self.name}"


def resolve_model(settings: Settings, *, flag: str | None = None) -> ModelChoice:
    """The model ``settings`` ask for, or the offline analyst with a note saying why.

    ``flag`` is the command-line option the model was given with (``--model``): messages then
    name it instead of ANALYST_MODEL, and a model it names that cannot be reached (no key, no
    base URL) is a :class:`ConfigurationError` rather than a quiet offline run.
    """
    requested = (settings.model or "").strip()
    source = f"{flag} {settings.model}" if flag else f"ANALYST_MODEL='{settings.model}'"
    configured = bool(settings.openai_api_key or settings.openai_base_url)
    if requested == "offline":
        return ModelChoice(None, None)
    if not requested or requested == "auto":
        if not configured:
            return ModelChoice(
                None,
                None,
                note="No model configured (OPENAI_API_KEY / OPENAI_BASE_URL unset): "
                "using the offline analyst.",
            )
        requested = f"openai:{DEFAULT_OPENAI_MODEL}"
    provider, sep, name = requested.partition(":")
    if not sep:
        provider, name = "openai", requested
    if provider != "openai" or not name:
        raise ConfigurationError(
            f"{source} is not supported; use 'offline' or "
            "'openai:<model>' (any OpenAI-compatible endpoint via OPENAI_BASE_URL)."
        )
    if not configured and flag:
        raise ConfigurationError(
            f"{source} needs OPENAI_API_KEY or OPENAI_BASE_URL (any OpenAI-compatible server), "
            f"and neither is set. Set one, or use {flag} offline."
        )
    if not configured:
        return ModelChoice(
            None,
            None,
            note=f"ANALYST_MODEL={requested} but neither OPENAI_API_KEY nor OPENAI_BASE_URL is "
            "set: using the offline analyst.",
        )
    return ModelChoice(provider, name)


def build_chat_model(settings: Settings, choice: ModelChoice) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    class AnalystChatOpenAI(ChatOpenAI):
        """``ChatOpenAI`` that knows how its server returns structured answers."""

        structured_output: str = "function_calling"

    return AnalystChatOpenAI(
        model=choice.name or DEFAULT_OPENAI_MODEL,
        # A local server (vLLM, Ollama, llama.cpp) needs no key, but the SDK insists on one.
        api_key=settings.openai_api_key or "not-needed",  # type: ignore[arg-type]
        base_url=settings.openai_base_url,
        temperature=settings.temperature,
        timeout=settings.model_timeout,
        max_tokens=settings.model_max_tokens,  # type: ignore[call-arg]
        max_retries=0,  # retries belong to the graph's RetryPolicy, with backoff
        structured_output=settings.structured_output,
    )


def is_transient(error: BaseException) -> bool:
    """Retry predicate for LangGraph's RetryPolicy."""
    return isinstance(error, ModelTransientError)


async def invoke(model: Any, messages: Sequence[BaseMessage], *, where: str) -> AIMessage:
    """Call the model; translate SDK failures into the analyst's errors."""
    import httpx
    import openai

    try:
        return await model.ainvoke(list(messages))
    except openai.AuthenticationError as e:
        raise ModelAuthError(
            f"The model endpoint rejected the API key during {where} "
            f"({_status(e)}). Check OPENAI_API_KEY (and OPENAI_BASE_URL if you use a "
            "compatible server). The thread is saved; resume it once the key is fixed."
        ) from e
    except openai.RateLimitError as e:
        raise ModelTransientError(f"Model rate limit during {where} ({_status(e)}).") from e
    except openai.APITimeoutError as e:
        raise ModelTransientError(
            f"Model request timed out during {where}; raise ANALYST_MODEL_TIMEOUT if the "
            "server is slow."
        ) from e
    except openai.APIConnectionError as e:
        raise ModelTransientError(
            f"Cannot reach the model endpoint during {where}: {e}. Check OPENAI_BASE_URL."
        ) from e
    except openai.InternalServerError as e:
        raise ModelTransientError(f"Model server error during {where} ({_status(e)}).") from e
    except openai.BadRequestError as e:
        if _context_exceeded(e):
            raise ModelOutputError(
                f"The prompt for {where} is longer than the model's context window "
                f"({_message(e)}). Use a model or server with a larger window (llama-server "
                "--ctx-size), or start a new thread with a shorter request."
            ) from e
        raise ModelOutputError(
            f"The model endpoint refused the request during {where} ({_status(e)}): {_message(e)}"
        ) from e
    except openai.APIStatusError as e:
        raise ModelOutputError(
            f"The model endpoint refused the request during {where} ({_status(e)}): {_message(e)}"
        ) from e
    except httpx.TimeoutException as e:  # pragma: no cover - the SDK wraps these
        raise ModelTransientError(f"Model request timed out during {where}.") from e


async def structured(
    model: Any,
    schema: type[S],
    messages: Sequence[BaseMessage],
    *,
    where: str,
    validate: Callable[[S], None] | None = None,
) -> tuple[S, Usage]:
    """Structured output, with exactly one repair attempt: a forced function call, or a
    ``response_format`` JSON schema when the model says so (``ANALYST_STRUCTURED_OUTPUT``)."""
    import openai
    from langchain_core.messages import HumanMessage

    method = getattr(model, "structured_output", "function_calling")
    runnable = model.with_structured_output(schema, method=method, include_raw=True)
    usage = no_usage()
    if method == "json_schema":
        messages = _with_brief(messages, schema_brief(schema))
    conversation = list(messages)
    problem = ""
    for attempt in range(2):
        try:
            out: Any = await invoke(runnable, conversation, where=where)
        except (ValidationError, ValueError, openai.LengthFinishReasonError) as e:
            # With a JSON schema the SDK parses the content itself: it raises on bad JSON, and
            # on an answer cut off by the server's token limit (seen with llama.cpp).
            if method != "json_schema" or isinstance(e, AnalystError):
                raise
            out = {"raw": None, "parsed": None, "parsing_error": _parse_problem(e)}
        raw = out["raw"]
        usage = add_usage(usage, usage_of(raw))  # a call, whatever came back
        parsed, error = out.get("parsed"), out.get("parsing_error")
        if parsed is not None and error is None:
            try:
                if validate is not None:
                    validate(parsed)
                return parsed, usage
            except (ValueError, ValidationError) as e:
                problem = str(e)
        else:
            problem = str(error or _no_call_reason(raw))
        if attempt == 0:
            conversation = [
                *messages,
                HumanMessage(
                    content=f"Your previous answer was not valid for {schema.__name__}: "
                    f"{problem[:800]}\n"
                    + (
                        f"Answer again with one JSON object that matches the {schema.__name__} "
                        "schema exactly."
                        if method == "json_schema"
                        else f"Call {schema.__name__} again with arguments that match its "
                        "schema exactly."
                    )
                ),
            ]
    raise ModelOutputError(
        f"The model's {schema.__name__} output during {where} was invalid twice "
        f"(after one repair attempt): {problem[:300]}. The thread is saved; resume it to retry."
    )


def schema_brief(schema: type[BaseModel]) -> str:
    """What a JSON answer to ``schema`` holds, field by field, for the prompt: the meaning
    (the field's description) and what the grammar allows (choices, lengths, counts)."""
    spec = schema.model_json_schema()
    defs = spec.get("$defs", {})

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref", "")
        return dict(defs.get(ref.rsplit("/", 1)[-1], {})) if ref else node

    def kind(node: dict[str, Any]) -> str:
        node = resolve(node)
        if "const" in node:
            return json.dumps(node["const"])
        if "enum" in node:
            return "one of " + ", ".join(json.dumps(v) for v in node["enum"])
        if "anyOf" in node:
            return " or ".join(kind(n) for n in node["anyOf"])
        if node.get("type") == "array":
            most = f"at most {node['maxItems']} " if "maxItems" in node else ""
            return f"a list of {most}items, each {kind(node.get('items', {}))}"
        if node.get("type") == "object" and "properties" in node:
            return "an object with " + ", ".join(node["properties"])
        if node.get("type") == "string" and "maxLength" in node:
            return f"text, up to {node['maxLength']} characters"
        return str(node.get("type") or "any JSON value")

    about = spec.get("description", "")
    lines = [f"Answer with one JSON object ({schema.__name__}: {about}) with these fields:"]
    for name, node in spec.get("properties", {}).items():
        meaning = node.get("description", "")
        # The meaning first: a small model copies the first words it is shown into the value.
        lines.append(
            f"- {name}: {meaning} ({kind(node)})" if meaning else f"- {name}: {kind(node)}"
        )
    return "\n".join(lines)


def _with_brief(messages: Sequence[BaseMessage], brief: str) -> list[BaseMessage]:
    """``messages`` with ``brief`` at the end of the system prompt (or as one, if none)."""
    from langchain_core.messages import SystemMessage

    out = list(messages)
    for i, message in enumerate(out):
        if isinstance(message, SystemMessage) and isinstance(message.content, str):
            out[i] = SystemMessage(f"{message.content}\n\n{brief}")
            return out
    return [SystemMessage(brief), *out]


def _parse_problem(error: Exception) -> str:
    """What was wrong with a JSON-schema answer the SDK could not parse, for the repair."""
    if type(error).__name__ == "LengthFinishReasonError":
        return (
            "the answer was cut off at the server's token limit before the JSON object was "
            "complete; answer with a shorter one (fewer and shorter items)"
        )
    return str(error)


def _no_call_reason(raw: Any) -> str:
    invalid = getattr(raw, "invalid_tool_calls", None) or []
    if invalid:
        first = invalid[0]
        return (
            f"the arguments of {first.get('name')} were not valid JSON "
            f"({first.get('error') or 'could not be parsed'}): {str(first.get('args'))[:200]}"
        )
    return "the reply did not call the function"


def _context_exceeded(error: Any) -> bool:
    """Whether a refused request was too long for the model's window: llama.cpp says
    ``exceed_context_size_error``, OpenAI and vLLM ``context_length_exceeded``."""
    body = getattr(error, "body", None)
    marks = {"exceed_context_size_error", "context_length_exceeded"}
    if isinstance(body, dict):
        return bool(marks & {str(body.get("type")), str(body.get("code"))})
    return False


def _status(error: Any) -> str:
    code = getattr(error, "status_code", None)
    return f"HTTP {code}" if code else type(error).__name__


def _message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        return str(body.get("message") or body)
    return str(error)
