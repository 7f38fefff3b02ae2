"""Structured-output schemas for the model path (sent to the model as function schemas).

Field descriptions are part of the prompt: they tell the model what each value means. Every
value the model returns is validated here or by the node that uses it before it touches state.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

StepKindLiteral = Literal["snapshot", "returns", "risk", "trend", "beta", "peers"]


class RouteDecision(BaseModel):
    """How to handle the request: deep research or a quick snapshot, and which tickers."""

    mode: Literal["deep", "flash"] = Field(
        description="deep: multi-step research; flash: one quick snapshot step."
    )
    tickers: list[str] = Field(
        description="Ticker symbols the request is about, primary first, from the available list."
    )
    reason: str = Field(description="One sentence: why this mode.")


class PlannedStep(BaseModel):
    kind: StepKindLiteral = Field(description="Which analytics computation this step runs.")
    ticker: str = Field(description="Ticker the step is about.")
    description: str = Field(description="What the step establishes for the report.")


class PlanDecision(BaseModel):
    """The research plan: ordered steps, each one analytics computation."""

    steps: list[PlannedStep] = Field(min_length=1, max_length=10)
    rationale: str = Field(description="Why these steps, citing memories or conventions used.")
    memories_used: list[str] = Field(
        default_factory=list, description="Keys of the recalled memories the plan relies on."
    )


class CitedMetric(BaseModel):
    name: str = Field(description="Metric key exactly as given in the computed metrics.")
    value: float | str = Field(description="The value as given in the computed metrics.")


class ReportNarrative(BaseModel):
    """The prose of the report. Tables are rendered from computed values, not from this."""

    model_config = ConfigDict(str_strip_whitespace=True)

    # Lengths are bounded so a server that constrains decoding to the schema cannot loop
    # until its token limit (a small local model repeats itself otherwise).
    summary: str = Field(
        min_length=1, max_length=600, description="Two to four sentences for a busy reader."
    )
    analysis: str = Field(
        min_length=1,
        max_length=1500,
        description="Trend, momentum, risk and relative performance, in prose.",
    )
    risk_factors: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(
        min_length=1, max_length=6, description="Concrete risks, one per item."
    )
    rating: Literal["Buy", "Hold", "Sell"]
    confidence: float = Field(ge=0, le=1, description="0..1 confidence in the rating.")
    rationale: str = Field(
        min_length=1, max_length=600, description="Why this rating, referring to the metrics."
    )
    cited_metrics: list[CitedMetric] = Field(
        default_factory=list,
        max_length=20,
        description="Every metric value the prose states, copied exactly.",
    )


class CriticFinding(BaseModel):
    severity: Literal["info", "warning", "error"]
    message: str


class CriticVerdict(BaseModel):
    """An independent review of one draft. It informs the human reviewer; it never approves."""

    verdict: Literal["pass", "needs_attention", "fail"]
    findings: list[CriticFinding] = Field(default_factory=list)


class ConversationSummary(BaseModel):
    """A compact summary of older conversation turns (authoritative constraints live elsewhere)."""

    summary: str
