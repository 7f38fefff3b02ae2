"""The analyst's dependencies, built once and handed to the graph builder.

Nodes reach market data, document memory, the reasoner (offline rules or a chat model) and the
clock through :class:`Services`, never through globals, so tests and alternative deployments
swap them without patching anything. Only plain values enter graph state; these objects never
do (a model client in state would end up in every checkpoint).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agent.market import MarketDataProvider, provider_from_name
from agent.reasoning import ModelReasoner, OfflineReasoner, Reasoner
from agent.settings import Settings
from memory.documents import FileMemory

if TYPE_CHECKING:
    from memory.facts import FactStore


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Services:
    market: MarketDataProvider
    documents: FileMemory
    artifacts_dir: Path
    reasoner: Reasoner = field(default_factory=OfflineReasoner)
    clock: Callable[[], datetime] = field(default=utc_now)
    step_delay: float = 0.0
    #: Attempts and first backoff for model calls that fail transiently (LangGraph RetryPolicy).
    retry_attempts: int = 3
    retry_initial_interval: float = 1.0
    history_max_messages: int = 24
    history_keep: int = 6
    #: One line for the user when the model setting fell back to the offline analyst.
    model_note: str | None = None
    #: The typed fact ledger, opened by the application (None: planning without facts).
    facts: FactStore | None = None
    #: How many long-term memories the planner recalls.
    recall_limit: int = 5

    @classmethod
    def from_settings(cls, settings: Settings) -> Services:
        from agent.models import build_chat_model, resolve_model

        choice = resolve_model(settings)
        reasoner: Reasoner
        if choice.offline:
            reasoner = OfflineReasoner()
        else:
            reasoner = ModelReasoner(
                lambda: build_chat_model(settings, choice),
                label=choice.label,
                max_tool_iterations=settings.tool_iterations,
            )
        return cls(
            market=provider_from_name(settings.market_provider),
            documents=FileMemory.from_settings(settings),
            artifacts_dir=settings.artifacts_dir,
            reasoner=reasoner,
            step_delay=settings.step_delay,
            retry_attempts=settings.model_retries,
            retry_initial_interval=settings.model_backoff,
            history_max_messages=settings.history_max_messages,
            history_keep=settings.history_keep,
            model_note=choice.note,
        )


@asynccontextmanager
async def open_ledger(
    services: Services, settings: Settings, *, server: bool = False
) -> AsyncIterator[Services]:
    """``services`` with the fact ledger at ``settings.facts`` open for the life of the block.

    The one way a graph gets its ledger, for CLI runs (:class:`agent.app.AnalystApp`) and API
    server runs (``graphs/studio.py``) alike. It is opened for no principal: nodes scope every
    read by the run's principal (``ledger.with_principal``), never by what a model produced.
    """
    from memory.facts import open_fact_store

    async with open_fact_store(settings.facts, server=server) as facts:
        yield replace(services, facts=facts)
