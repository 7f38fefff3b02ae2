"""The structured-output schemas as sent to the model: narrowed per request to what a server
that constrains decoding to a JSON schema can enforce.

llama.cpp, Ollama and vLLM turn the ``response_format`` schema into a grammar: enums, string
lengths, item counts and integer bounds hold for every token the model emits, but a float's
``minimum``/``maximum`` does not, and the schema's descriptions never reach the model. With
SmolLM2-135M through llama.cpp, a schema with wide string bounds made the model repeat itself
until the server's token cap cut the JSON off, and an unbounded float came back out of range.
So each schema here:

- names what may be chosen (the tickers that can be analysed, the recalled memory keys, the
  computed metric keys) as enums, so a constrained decoder cannot invent one;
- bounds every string and list so the whole answer fits one generation of about 700 tokens;
- keeps each value's meaning in grammar-enforceable form (confidence as one of eleven tenths).

Each narrowed schema keeps its base's name (it is the schema's name on the wire) and subclasses
it, so callers get the base type. Whatever the grammar cannot enforce is validated after parsing
(:func:`agent.reasoning.chat_model.structured` gives one repair attempt).
"""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import Field, create_model

from agent.reasoning.schemas import (
    CitedMetric,
    ConversationSummary,
    CriticFinding,
    CriticVerdict,
    PlanDecision,
    PlannedStep,
    ReportNarrative,
    RouteDecision,
    StepKindLiteral,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

#: Confidence as a grammar can hold it: one of 0.0, 0.1, ..., 1.0.
TENTHS: Any = Literal[tuple(i / 10 for i in range(11))]


def _text(most: int) -> Any:
    """The type of a non-empty string of at most ``most`` characters."""
    return Annotated[str, Field(min_length=1, max_length=most)]


def _described(base: type[BaseModel], name: str, **bounds: Any) -> Any:
    """``Field`` with the base field's description and ``bounds``."""
    return Field(description=base.model_fields[name].description, **bounds)


def route_schema(available: Set[str]) -> type[RouteDecision]:
    """:class:`RouteDecision` with at most four tickers from those that can be analysed and a
    one-sentence reason: a constrained decoder cannot produce an invented ticker or an endless
    reason (SmolLM2 answered "Analyze NVDA" with seven, repeating AAPL and GOOGL)."""
    if not available:
        return RouteDecision
    symbols: Any = Literal[tuple(sorted(available))]
    return create_model(
        "RouteDecision",
        __base__=RouteDecision,
        __doc__=RouteDecision.__doc__,
        tickers=(
            list[symbols],
            _described(RouteDecision, "tickers", min_length=1, max_length=min(4, len(available))),
        ),
        reason=(str, _described(RouteDecision, "reason", max_length=300)),
    )


def plan_schema(tickers: Set[str], memory_keys: Set[str]) -> type[PlanDecision]:
    """:class:`PlanDecision` with steps on the request's tickers only (at most eight), short
    descriptions and rationale, and memory keys that were recalled; a constrained decoder then
    cannot loop on steps until it is cut off (SmolLM2's plan for three tickers ran into the
    server's 768-token cap with ten steps and 600 characters of rationale)."""
    if not tickers:
        return PlanDecision
    symbols: Any = Literal[tuple(sorted(tickers))]
    step_model = create_model(
        "PlannedStep",
        __base__=PlannedStep,
        ticker=(symbols, _described(PlannedStep, "ticker")),
        description=(str, _described(PlannedStep, "description", max_length=60)),
    )
    most = max(1, min(8, len(get_args(StepKindLiteral)) * len(tickers)))
    keys: Any = Literal[tuple(sorted(memory_keys))] if memory_keys else str
    return create_model(
        "PlanDecision",
        __base__=PlanDecision,
        __doc__=PlanDecision.__doc__,
        steps=(list[step_model], Field(min_length=1, max_length=most)),  # type: ignore[valid-type]
        rationale=(str, _described(PlanDecision, "rationale", max_length=300)),
        memories_used=(
            list[keys],
            _described(
                PlanDecision, "memories_used", default_factory=list, max_length=len(memory_keys)
            ),
        ),
    )


def narrative_schema(metric_keys: Set[str]) -> type[ReportNarrative]:
    """:class:`ReportNarrative` sized to one generation (about 2,000 characters in all), with
    confidence in tenths and cited metrics named by the computed metrics' keys only (their
    values are still checked by the critic)."""
    risk: Any = _text(150)
    fields: dict[str, Any] = {
        "summary": (str, _described(ReportNarrative, "summary", min_length=1, max_length=300)),
        "analysis": (
            str,
            _described(ReportNarrative, "analysis", min_length=1, max_length=600),
        ),
        "risk_factors": (
            list[risk],
            _described(ReportNarrative, "risk_factors", min_length=1, max_length=3),
        ),
        "confidence": (TENTHS, _described(ReportNarrative, "confidence")),
        "rationale": (
            str,
            _described(ReportNarrative, "rationale", min_length=1, max_length=300),
        ),
    }
    if metric_keys:
        names: Any = Literal[tuple(sorted(metric_keys))]
        cited = create_model(
            "CitedMetric",
            __base__=CitedMetric,
            name=(names, _described(CitedMetric, "name")),
            value=(float | _text(24), _described(CitedMetric, "value")),
        )
        fields["cited_metrics"] = (
            list[cited],  # type: ignore[valid-type]
            _described(
                ReportNarrative,
                "cited_metrics",
                default_factory=list,
                max_length=min(6, len(metric_keys)),
            ),
        )
    return create_model(
        "ReportNarrative", __base__=ReportNarrative, __doc__=ReportNarrative.__doc__, **fields
    )


def verdict_schema() -> type[CriticVerdict]:
    """:class:`CriticVerdict` with at most four findings of one or two sentences each."""
    finding = create_model(
        "CriticFinding",
        __base__=CriticFinding,
        message=(str, Field(min_length=1, max_length=240)),
    )
    return create_model(
        "CriticVerdict",
        __base__=CriticVerdict,
        __doc__=CriticVerdict.__doc__,
        findings=(list[finding], Field(default_factory=list, max_length=4)),  # type: ignore[valid-type]
    )


def summary_schema() -> type[ConversationSummary]:
    """:class:`ConversationSummary` in at most 800 characters."""
    return create_model(
        "ConversationSummary",
        __base__=ConversationSummary,
        __doc__=ConversationSummary.__doc__,
        summary=(str, Field(min_length=1, max_length=800)),
    )
