"""Sentence views (memory.store.views) on the real embedded store (Qdrant Edge): stored on
the item's own point (a forget takes their vectors out of every file of the shard), given to
the items of a shard made before them when it is opened, and read by the ranking, so the
sentence of a long turn that answers a question ranks that turn first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from memory.embeddings import HashingEmbedder
from memory.identity import Principal
from memory.recall import NewMemory, aforget, arecall, aremember_many
from memory.store.edge import EdgeStore
from memory.store.erasing import has_views, shard_config
from memory.store.factory import edge_path, index_config, open_store
from tests.support.raw_bytes import raw_hits

pytestmark = pytest.mark.integration

ME = Principal("acme", "mira")
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
NOW = datetime(2023, 6, 1, tzinfo=UTC)
CANARY = "Zorvendix"
SECRET = "I keep my spare key under the blue flowerpot."
LONG = f"{CANARY}: Work was long today. {SECRET} See you at the market on Friday."
OTHERS = [
    "Mira: I'm painting a sunrise over the lake.",
    "Theo: My kids love the dinosaur exhibit.",
]


def _memories(texts: list[str]) -> list[NewMemory]:
    return [
        NewMemory(text, at=SAID, kind="dialogue", source="test", episode_ids=[f"D1:{i}"])
        for i, text in enumerate(texts)
    ]


def _vector_forms(embedder: HashingEmbedder, text: str) -> list[bytes]:
    """A stretch of ``text``'s vector as the shard may hold it: float16 of the normalised
    vector (the views' storage) and float32 as embedded (a write-ahead log's copy)."""
    raw = np.asarray(embedder.embed_documents([text])[0], dtype=np.float32)
    unit = raw / np.linalg.norm(raw)
    return [unit.astype(np.float16).tobytes()[16:48], raw.tobytes()[32:96]]


def _files_holding(folder: Path, forms: list[bytes]) -> list[str]:
    return [
        str(path.relative_to(folder))
        for path in sorted(folder.rglob("*"))
        if path.is_file() and any(form in path.read_bytes() for form in forms)
    ]


async def test_forgetting_a_turn_removes_its_views_from_every_file(tmp_path: Path) -> None:
    embedder = HashingEmbedder(dims=64, seed=3)
    forms = _vector_forms(embedder, f"{CANARY}: {SECRET}")
    folder = tmp_path / "qdrant"
    async with open_store("qdrant://local", embedder=embedder, qdrant_path=folder) as store:
        keys = await aremember_many(store, ME, _memories([LONG, *OTHERS]))
        assert isinstance(store, EdgeStore)
        shard = edge_path(folder)
        # The canary sentence's view is stored (on disk, float16), on the turn's own point.
        assert any("vector_storage-views" in hit for hit in _files_holding(shard, forms))
        found = await arecall(store, ME, f"{CANARY}: {SECRET}", limit=3, now=NOW)
        assert found[0].key == keys[0]
        assert found[0].parts.view is not None and found[0].parts.view > 0.99

        await aforget(store, ME, keys[0])
        store.erase_deleted()
    assert raw_hits(tmp_path, CANARY) == []
    assert _files_holding(tmp_path, forms) == []


class _PreViewsStore(EdgeStore):
    """An EdgeStore that makes its shard as the store did before sentence views."""

    def _config(self) -> qe.EdgeConfig:
        return shard_config(self.dims or 0, None, views=False)


async def test_a_shard_from_before_views_gets_them_when_opened(tmp_path: Path) -> None:
    embedder = HashingEmbedder(dims=64, seed=3)
    folder = tmp_path / "qdrant"
    shard = edge_path(folder)
    old = _PreViewsStore(shard, index=index_config(embedder))
    old.setup()
    keys = await aremember_many(old, ME, _memories([LONG, *OTHERS]))
    old.close()
    assert not has_views(shard)

    async with open_store("qdrant://local", embedder=embedder, qdrant_path=folder) as store:
        assert has_views(shard)
        found = await arecall(store, ME, f"{CANARY}: {SECRET}", limit=3, now=NOW)
        assert found[0].key == keys[0]
        assert sorted(m.key for m in found) == sorted(keys)  # every memory kept
        # The turn's sentence views, made of its text as a put makes them.
        assert found[0].parts.view is not None and found[0].parts.view > 0.99


@pytest.mark.parametrize("url", ["qdrant+local://local", "qdrant://local"])
async def test_a_long_turn_is_found_by_its_answering_sentence(url: str, tmp_path: Path) -> None:
    """Both embedded stores (qdrant-client's local mode, Qdrant Edge) keep views and hand the
    ranking the question's best view cosine."""
    embedder = HashingEmbedder(dims=64, seed=3)
    async with open_store(url, embedder=embedder, qdrant_path=tmp_path / "q") as store:
        keys = await aremember_many(store, ME, _memories([LONG, *OTHERS]))
        found = await arecall(store, ME, f"{CANARY}: {SECRET}", limit=3, now=NOW)
        assert found[0].key == keys[0]
        assert found[0].parts.view is not None and found[0].parts.view > 0.99
