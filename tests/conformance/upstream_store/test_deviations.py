"""The deviations of :mod:`deviations`, each pinned by a test of the behaviour it names, and the
list itself checked: every entry names a vendored test that is collected on its backends.

The vendored upstream tests are run once per backend by the ``upstream_backend`` fixture; the
tests here take the backend from it too, and each returns early on the backends its deviation
does not concern (a pin asserts what those backends do instead where it matters).
"""

from __future__ import annotations

import importlib
import math

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError

from tests.conformance.upstream_store import harness
from tests.conformance.upstream_store.deviations import DEVIATIONS, Deviation
from tests.conformance.upstream_store.embed_test_utils import CharacterEmbeddings

PROJECT = {"edge", "edge-sealed", "qdrant"}
HERE = "tests.conformance.upstream_store"


def deviation(name: str) -> Deviation:
    [found] = [d for d in DEVIATIONS if d.test.partition("[")[0] == name]
    return found


def vector_store(embeddings: CharacterEmbeddings, fields: list[str] | None = None) -> BaseStore:
    index: dict[str, object] = {"dims": embeddings.dims, "embed": embeddings}
    if fields is not None:
        index["fields"] = fields
    return harness.open_backend_store(harness.place(), index=index)  # type: ignore[arg-type]


def test_every_deviation_names_a_vendored_test() -> None:
    for entry in DEVIATIONS:
        name, _, part = entry.test.partition("[")
        module, _, test = name.partition("::")
        vendored = importlib.import_module(f"{HERE}.test_upstream_store_{module}")
        function = getattr(vendored, test)
        assert entry.backends <= set(harness.UPSTREAM_BACKENDS), entry.test
        if part:
            marks = getattr(function, "pytestmark", [])
            assert any(part.rstrip("]") in str(mark.args) for mark in marks), entry.test


def test_a_query_search_returns_only_items_with_a_vector(
    upstream_backend: str, fake_embeddings: CharacterEmbeddings
) -> None:
    """``base::test_embed_with_path``: an item put with ``index=False`` has no vector, so a
    query search does not return it (``InMemoryStore`` appends such items with score None);
    a search without a query does."""
    store = vector_store(fake_embeddings)
    store.put(("test",), "indexed", {"text": "hhh"})
    store.put(("test",), "plain", {"text": "hhh"}, index=False)
    by_query = [r.key for r in store.search(("test",), query="hhh")]
    listed = sorted(r.key for r in store.search(("test",)))
    assert listed == ["indexed", "plain"]
    if upstream_backend in deviation("base::test_embed_with_path").backends:
        assert by_query == ["indexed"]
    else:
        assert by_query == ["indexed", "plain"]


def test_the_score_is_a_similarity_in_0_1_and_the_raw_cosine_is_kept(
    upstream_backend: str, fake_embeddings: CharacterEmbeddings
) -> None:
    """``postgres::test_scores``: the project's score is in [0, 1]: a negative cosine is
    reported as 0 (LangGraph reports the cosine itself); the raw cosine stays available as
    the item's ``dense`` part."""
    store = vector_store(fake_embeddings, ["key0"])
    store.put(("test",), "doc", {"key0": "aaa"})
    [hit] = store.search((), query="poisson")
    cosine = _cosine(fake_embeddings.embed_query("poisson"), fake_embeddings.embed_query("aaa"))
    assert cosine < 0
    if upstream_backend in PROJECT:
        assert hit.score == 0.0
        assert getattr(hit, "dense", None) == pytest.approx(cosine, abs=1e-4)
    else:
        assert hit.score == pytest.approx(cosine, abs=1e-3)


def test_the_score_order_is_the_result_order_and_parts_are_exposed(
    upstream_backend: str, fake_embeddings: CharacterEmbeddings
) -> None:
    """The project's stores: results in score order; each query hit carries ``dense``,
    ``lexical`` and ``fused``, and ``score`` is ``1 − (1 − max(dense, 0))·(1 − lexical)``."""
    if upstream_backend not in PROJECT:
        return
    store = vector_store(fake_embeddings)
    for i, text in enumerate(["red apple pie", "green apple", "blue car", "apple", "pie chart"]):
        store.put(("t",), f"d{i}", {"text": text})
    hits = store.search(("t",), query="apple pie", limit=10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    for hit in hits:
        parts = hit.parts()  # type: ignore[attr-defined]
        dense, lexical = max(parts["dense"], 0.0), parts["lexical"]
        assert hit.score == pytest.approx(1 - (1 - dense) * (1 - lexical))
        assert 0.0 <= (parts["fused"] or 0.0) <= 1.0
    assert hits[0].key == "d0" and hits[0].score == 1.0


def test_in_memory_store_has_no_ttl(upstream_backend: str) -> None:
    """``postgres::test_store_ttl`` on memory: ``InMemoryStore`` does not support TTL."""
    if upstream_backend != "memory":
        return
    assert harness.open_backend_store(harness.place()).supports_ttl is False


def test_in_memory_store_prefix_must_be_a_tuple(upstream_backend: str) -> None:
    """``postgres::test_search`` on memory: ``InMemoryStore`` finds nothing under a namespace
    prefix given as a list; the project's stores accept any sequence, as PostgresStore does."""
    store = harness.open_backend_store(harness.place())
    store.put(("test", "docs"), "k", {"v": 1})
    found = store.search(["test"])  # type: ignore[arg-type]
    assert len(found) == (0 if upstream_backend == "memory" else 1)


def test_in_memory_store_batch_takes_invalid_labels(upstream_backend: str) -> None:
    """``postgres::test_batch_rejects_invalid_namespace_labels`` on memory: ``InMemoryStore``
    checks labels in its public methods only, not in ops passed to ``batch`` (it stores
    namespaces as tuples, so ``("foo.bar",)`` cannot reach ``("foo", "bar")``)."""
    store = harness.open_backend_store(harness.place())
    op = GetOp(("foo.bar",), "key")
    if upstream_backend == "memory":
        assert store.batch([op]) == [None]
    else:
        with pytest.raises(InvalidNamespaceError, match="period"):
            store.batch([op])


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_range_filters_compare_numbers(upstream_backend: str) -> None:
    """``base::test_async_batched_vector_search_concurrent`` on postgres: PostgresStore
    compares ``$gt`` on a JSON number as text; the other stores compare numbers."""
    store = harness.open_backend_store(harness.place())
    store.put(("t",), "seven", {"index": 7})
    store.put(("t",), "thirty", {"index": 30})
    found = sorted(i.key for i in store.search(("t",), filter={"index": {"$gt": 25}}))
    if upstream_backend == "postgres":
        assert found == ["seven", "thirty"]
    else:
        assert found == ["thirty"]


def test_postgres_store_keeps_ttl_minutes_as_an_integer(upstream_backend: str) -> None:
    """``postgres::test_store_ttl`` on postgres: the column is an INTEGER as shipped."""
    if upstream_backend != "postgres":
        return
    store = harness.open_backend_store(harness.place())
    with store._cursor() as cur:  # type: ignore[attr-defined]
        cur.execute(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_name = 'store' AND column_name = 'ttl_minutes'"
        )
        row = cur.fetchone()
    assert row["data_type"] == "integer"
