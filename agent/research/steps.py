"""Research steps: what one plan step computes, from the prices the provider returns.

Each step returns a small JSON-friendly result (numbers, ISO dates, provenance); price series
themselves never enter graph state. The same functions back the model path's market tools.
"""

from __future__ import annotations

from typing import Any, TypedDict

from agent.market import MarketDataProvider, PriceHistory
from agent.records import PlanStep
from agent.research import analytics


class StepResult(TypedDict, total=False):
    step_id: str
    kind: str
    ticker: str
    as_of: str
    sources: list[str]
    data: dict[str, Any]
    #: What the step could not do (model path: iteration budget hit, a tool never called).
    notes: list[str]


def run_step(step: PlanStep, market: MarketDataProvider) -> StepResult:
    """Compute one plan step. Raises the provider's errors (unknown ticker, no data)."""
    ticker = step["ticker"]
    history = market.history(ticker)
    kind = step["kind"]
    used: list[PriceHistory] = [history]
    data: dict[str, Any]
    if kind == "returns":
        data = analytics.returns_metrics(history)
    elif kind == "risk":
        data = analytics.risk_metrics(history)
    elif kind == "trend":
        data = analytics.trend_metrics(history)
    elif kind == "beta":
        basket = _others(market, ticker)
        used += basket
        data = analytics.beta_metrics(history, basket)
    elif kind == "peers":
        everyone = _everyone(market, history)
        used = everyone
        data = {"peers": analytics.peer_table(everyone)}
    elif kind == "snapshot":
        basket = _others(market, ticker)
        everyone = [history, *basket]
        used = everyone
        data = {
            **analytics.returns_metrics(history),
            **analytics.risk_metrics(history),
            **analytics.trend_metrics(history),
            **analytics.beta_metrics(history, basket),
            "peers": analytics.peer_table(everyone),
        }
    else:  # pragma: no cover - PlanStep.kind is a closed Literal
        raise ValueError(f"unknown plan step kind {kind!r}")
    return StepResult(
        step_id=step["id"],
        kind=kind,
        ticker=ticker,
        as_of=history.as_of.isoformat(),
        sources=sorted({h.source for h in used}),
        data=data,
    )


def _others(market: MarketDataProvider, ticker: str) -> list[PriceHistory]:
    return [market.history(t) for t in market.available_tickers() if t != ticker]


def _everyone(market: MarketDataProvider, history: PriceHistory) -> list[PriceHistory]:
    """Every listed ticker, and the step's own when the provider fetched it beyond its list."""
    listed = market.available_tickers()
    everyone = [market.history(t) for t in listed]
    return everyone if history.ticker in listed else [*everyone, history]
