"""The API server's store index (langgraph.json) and the embeddings it names agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.errors import ConfigurationError
from agent.settings import Settings
from graphs.studio_embeddings import INDEX_DIMS, StudioEmbeddings

REPO = Path(__file__).resolve().parents[2]


def test_langgraph_json_indexes_the_store_with_these_embeddings() -> None:
    index = json.loads((REPO / "langgraph.json").read_text())["store"]["index"]
    assert index["embed"] == "./graphs/studio_embeddings.py:embeddings"
    assert index["dims"] == INDEX_DIMS
    assert index["fields"] == ["text", "about"]  # what memory.recall stores and the CLI embeds


def test_an_embedder_of_another_size_is_refused_with_the_fix(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"ANALYST_EMBEDDINGS": "openai:text-embedding-3-small", "ANALYST_DATA_DIR": str(tmp_path)}
    )
    with pytest.raises(ConfigurationError) as error:
        StudioEmbeddings(settings)
    message = str(error.value)
    assert "1536" in message and "langgraph.json" in message and "minilm" in message


def test_nothing_is_created_until_the_first_text(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"ANALYST_EMBEDDINGS": "minilm", "ANALYST_DATA_DIR": str(tmp_path / "data")}
    )
    StudioEmbeddings(settings)
    assert not (tmp_path / "data").exists()
