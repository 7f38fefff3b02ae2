"""Bringing older memories into a Qdrant Edge shard (:class:`memory.store.edge.EdgeStore`):
a qdrant-client local-mode folder copied in (:func:`import_local_mode`, the embedded store
before Qdrant Edge), and the sentence views an older shard's items lack
(:func:`add_views`, :mod:`memory.store.views`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import qdrant_edge as qe
from langgraph.store.base import get_text_at_path

from memory.store.common import SPARSE, TERMS, VECTOR
from memory.store.views import VIEWS, views_of

if TYPE_CHECKING:
    from memory.store.engine import QdrantFormatStore

_PAGE = 256


def _texts(store: QdrantFormatStore[Any], payload: dict[str, Any]) -> list[str]:
    """The texts ``store`` embeds of a stored item (its index fields, value opened)."""
    value = store.cipher.open_object(payload.get("value", {}))
    texts: list[str] = []
    for _, tokens in store.fields:
        texts.extend(get_text_at_path(value, tokens))
    return texts


#: The fields the principal's memories embed (:data:`memory.store.scoped.TEXT_FIELDS`): a put
#: names them, so the shard does not record them; the views of such a value are theirs.
_MEMORY_FIELDS = ("text", "about")


def _view_texts(store: QdrantFormatStore[Any], payload: dict[str, Any]) -> list[str]:
    """The texts a stored item's views were made of when it was put: its memory fields when
    it has them, else what the store's index config embeds."""
    value = store.cipher.open_object(payload.get("value", {}))
    if isinstance(value, dict):
        own = [value[f] for f in _MEMORY_FIELDS if isinstance(value.get(f), str)]
        if own:
            return own
    return _texts(store, payload)


def import_local_mode(store: QdrantFormatStore[Any], shard: qe.EdgeShard, folder: Path) -> int:
    """Copy every item of the local-mode ``folder`` into ``shard`` (vectors as stored, BM25
    weights and sentence views computed from the item's embedded fields); return how many."""
    if not (folder / "collection").is_dir():
        return 0  # checked first: importing qdrant-client takes over a second
    from memory.store.qdrant import DEFAULT_COLLECTION, open_qdrant_client

    if not (folder / "collection" / DEFAULT_COLLECTION).exists():
        return 0
    client = open_qdrant_client(path=folder, lock_timeout=getattr(store, "lock_timeout", 10.0))
    copied = 0
    try:
        offset: Any = None
        while True:
            records, offset = client.scroll(
                DEFAULT_COLLECTION,
                limit=_PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=True,
            )
            points: list[qe.Point] = []
            for record in records:
                payload = dict(record.payload or {})
                vector: dict[str, Any] = {}
                stored = record.vector if isinstance(record.vector, dict) else {}
                if store.dims and stored.get(VECTOR):
                    vector[VECTOR] = stored[VECTOR]
                    texts = _texts(store, payload)
                    if texts:
                        terms = store.document_terms(texts)
                        vector[SPARSE] = qe.SparseVector(terms.indices, terms.values)
                        payload[TERMS] = sorted(set(terms.indices))
                points.append(qe.Point(str(record.id), vector, payload))
            if points:
                shard.update(qe.UpdateOperation.upsert_points(points))
                copied += len(points)
            if offset is None:
                break
    finally:
        client.close()
    add_views(store, shard)
    return copied


def add_views(store: QdrantFormatStore[Any], shard: qe.EdgeShard) -> int:
    """Embed and write the sentence views of every item of ``shard`` that has a dense vector
    (a shard from before views, rewritten with their vector), page by page, through the
    store's embedder (its cache and batching); return how many items got views."""
    if store.embeddings is None:
        return 0
    added = 0
    for page in _pages(shard):
        wanted: list[tuple[Any, list[str]]] = []
        for record in page:
            if not (record.vector or {}).get(VECTOR):
                continue
            views = views_of(_view_texts(store, dict(record.payload or {})))
            if views:
                wanted.append((record.id, views))
        texts = list(dict.fromkeys(v for _, views in wanted for v in views))
        if not texts:
            continue
        vectors = dict(zip(texts, store.embeddings.embed_documents(texts), strict=True))
        shard.update(
            qe.UpdateOperation.update_vectors(
                [
                    qe.PointVectors(ident, {VIEWS: [vectors[v] for v in views]})
                    for ident, views in wanted
                ]
            )
        )
        added += len(wanted)
    return added


def _pages(shard: qe.EdgeShard) -> Iterator[list[Any]]:
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            qe.ScrollRequest(
                offset=offset,
                limit=_PAGE,
                with_payload=True,
                with_vector=True,
            )
        )
        if records:
            yield records
        if offset is None:
            return


__all__ = ["add_views", "import_local_mode"]
