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
from agent.reasoning.base import Reasoner
from agent.reasoning.offline import OfflineReasoner
from agent.settings import Settings
from memory.documents import FileMemory

if TYPE_CHECKING:
    from agent.learning.extraction import Extractor
    from memory.facts import FactStore
    from memory.journal import Journal
    from memory.sealing import MemoryCipher


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
    #: The memory journal (episodes, extraction jobs, candidates, sessions, procedures), opened
    #: with the ledger (None: the graph stores no episodes and learns nothing).
    journal: Journal | None = None
    #: What turns episodes into memory: the offline rules, or the chat model (model path).
    extractor: Extractor | None = None
    #: Tokens of remembered context a new session loads (``ANALYST_CONTEXT_TOKENS``).
    context_tokens: int = 800
    review_days: int = 180
    #: The longest text the model's ``remember`` tool stores (``ANALYST_MAX_MEMORY_CHARS``).
    max_memory_chars: int = 2000

    @classmethod
    def from_settings(cls, settings: Settings) -> Services:
        from agent.learning.extraction import OfflineExtractor
        from agent.reasoning.chat_model import build_chat_model, resolve_model

        choice = resolve_model(settings)
        reasoner: Reasoner
        extractor: Extractor
        if choice.offline:
            reasoner = OfflineReasoner()
            extractor = OfflineExtractor()
        else:
            # The model path's structured-output schemas (pydantic models built at import)
            # load only when a model is configured: an offline run never uses them.
            from agent.learning.model_extraction import ModelExtractor
            from agent.reasoning.model import ModelReasoner

            reasoner = ModelReasoner(
                lambda: build_chat_model(settings, choice),
                label=choice.label,
                max_tool_iterations=settings.tool_iterations,
            )
            extractor = ModelExtractor(lambda: build_chat_model(settings, choice), choice.label)
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
            extractor=extractor,
            context_tokens=settings.context_tokens,
            review_days=settings.review_days,
            max_memory_chars=settings.max_memory_chars,
        )


@asynccontextmanager
async def open_ledger(
    services: Services,
    settings: Settings,
    *,
    server: bool = False,
    cipher: MemoryCipher | None = None,
) -> AsyncIterator[Services]:
    """``services`` with the fact ledger and the memory journal at ``settings.facts`` (one
    database) open for the life of the block.

    The one way a graph gets its ledger and journal, for CLI runs (:class:`agent.app.AnalystApp`)
    and API server runs (``graphs/studio.py``) alike. Both are opened for no principal: nodes
    scope every call by the run's principal (``with_principal``), never by what a model produced.
    Content is sealed with ``cipher`` (default: from ``settings.memory_key``, i.e.
    ``ANALYST_MEMORY_KEY``; see :mod:`memory.sealing`).
    """
    from memory.facts import open_fact_store
    from memory.journal import open_journal
    from memory.sealing import memory_cipher

    sealer = cipher if cipher is not None else memory_cipher(settings.memory_key)
    async with (
        open_fact_store(settings.facts, server=server, cipher=sealer) as facts,
        open_journal(
            settings.facts,
            server=server,
            clock=services.clock,
            audit_key=settings.audit_key,
            cipher=sealer,
        ) as journal,
    ):
        yield replace(services, facts=facts, journal=journal)
