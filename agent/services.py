"""The analyst's dependencies, built once and handed to the graph builder.

Nodes reach market data, document memory and the clock through :class:`Services`, never
through globals, so tests and alternative deployments swap them without patching anything.
Only plain, picklable values enter graph state; these objects never do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agent.market import MarketDataProvider, provider_from_name
from agent.settings import Settings
from memory.documents import FileMemory


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Services:
    market: MarketDataProvider
    documents: FileMemory
    artifacts_dir: Path
    clock: Callable[[], datetime] = field(default=utc_now)
    step_delay: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> Services:
        return cls(
            market=provider_from_name(settings.market_provider),
            documents=FileMemory(settings.memory_dir),
            artifacts_dir=settings.artifacts_dir,
            step_delay=settings.step_delay,
        )
