"""What the storage tiers read from the application's settings.

``memory/`` does not import the application. A factory that is configured "from settings"
takes any object with the attributes below (the analyst's ``agent.settings.Settings`` is one),
so the storage layer states exactly which settings it depends on and nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class StorageSettings(Protocol):
    """The settings the memory tiers are built from."""

    @property
    def data_dir(self) -> Path: ...  # runtime data: stores, caches, indexes

    @property
    def memory_dir(self) -> Path: ...  # Markdown document memory

    @property
    def store(self) -> str: ...  # long-term store URL

    @property
    def qdrant_url(self) -> str | None: ...

    @property
    def qdrant_api_key(self) -> str | None: ...

    @property
    def qdrant_path(self) -> Path: ...

    @property
    def embeddings(self) -> str: ...  # ``minilm`` or ``openai:<model>``

    @property
    def openai_api_key(self) -> str | None: ...

    @property
    def openai_base_url(self) -> str | None: ...

    @property
    def model_timeout(self) -> float: ...

    @property
    def model_retries(self) -> int: ...
