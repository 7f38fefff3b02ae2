"""The embeddings of the API server's store (``langgraph.json``: ``store.index.embed``).

``langgraph dev`` and Studio give the graph their own store instead of the CLI's Qdrant store.
With this index configured it embeds a memory's ``text`` and ``about`` the way the CLI's store
does, so the planner's recall there ranks by relevance too, not by recency and importance
alone. The embedder is the configured one (``ANALYST_EMBEDDINGS``, MiniLM by default) behind
the same content-hash cache, built on the first text the server embeds: importing this module
checks the vector size and writes nothing.
"""

from __future__ import annotations

import asyncio
import threading

from langchain_core.embeddings import Embeddings

from agent.errors import ConfigurationError
from agent.settings import Settings
from memory.embedding_cache import CachedEmbedder
from memory.embeddings import MiniLMEmbedder, parse_embeddings_setting

#: ``store.index.dims`` in ``langgraph.json``; the configured embedder must produce as many.
INDEX_DIMS = 384


class StudioEmbeddings(Embeddings):
    """The configured embedder behind its cache, created on first use."""

    def __init__(self, settings: Settings) -> None:
        _, _, dims = parse_embeddings_setting(settings.embeddings)
        dims = dims or MiniLMEmbedder.dims
        if dims != INDEX_DIMS:
            raise ConfigurationError(
                f"ANALYST_EMBEDDINGS={settings.embeddings} makes {dims}-dimensional vectors but "
                f"langgraph.json indexes the server's store with {INDEX_DIMS}: set "
                f'"store": {{"index": {{"dims": {dims}}}}} in langgraph.json and INDEX_DIMS in '
                f"{__name__}, or use ANALYST_EMBEDDINGS=minilm."
            )
        self._settings = settings
        self._inner: CachedEmbedder | None = None
        self._lock = threading.Lock()

    def _embedder(self) -> CachedEmbedder:
        with self._lock:
            if self._inner is None:
                from memory.embedding_cache import embedder_from_settings

                self._inner = embedder_from_settings(self._settings)
            return self._inner

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embedder().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._embedder().embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        embedder = self._inner
        if embedder is None:
            embedder = await asyncio.to_thread(self._embedder)  # creates the cache file
        return await embedder.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


embeddings = StudioEmbeddings(Settings.from_env())
