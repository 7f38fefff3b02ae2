"""Plans: the ordered analytics steps the executor runs, one per super-step.

A deep plan splits the primary ticker's analysis into separate steps so every step is its own
checkpoint (a crash loses at most one computation); a snapshot is a single step that computes
everything at once. Step ids are stable (``<kind>:<TICKER>``) so results survive revisions.
"""

from __future__ import annotations

from agent.records import PlanStep, StepKind
from agent.research.routing import Route

STEP_DESCRIPTIONS: dict[StepKind, str] = {
    "snapshot": "Quick snapshot: returns, risk, trend, beta and peers in one pass",
    "returns": "Trailing returns over 1M, 3M, 1Y and year-to-date",
    "risk": "Annualised volatility and maximum drawdown over the last year",
    "trend": "50/200-day moving averages, crossover state and RSI(14)",
    "beta": "Beta and correlation against an equal-weighted basket of the other tickers",
    "peers": "Peer comparison table across every available ticker",
}

DEEP_KINDS: tuple[StepKind, ...] = ("returns", "risk", "trend", "beta", "peers")


def step(kind: StepKind, ticker: str) -> PlanStep:
    return PlanStep(
        id=f"{kind}:{ticker}", kind=kind, ticker=ticker, description=STEP_DESCRIPTIONS[kind]
    )


def snapshot_plan(route: Route) -> list[PlanStep]:
    return [step("snapshot", route.tickers[0])]


def deep_plan(route: Route) -> list[PlanStep]:
    """Full research on the first ticker; other requested tickers get a snapshot each."""
    primary, *others = route.tickers
    return [step(kind, primary) for kind in DEEP_KINDS] + [
        step("snapshot", other) for other in others
    ]
