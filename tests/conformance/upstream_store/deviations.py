"""Every upstream store test a backend of the project fails, with the reason: the one list.

Each entry marks the named tests ``xfail(strict=True)`` on the named backends
(``conftest.py``): the upstream assertion runs unchanged and must still fail, so a deviation
that disappears fails the suite until its entry is removed. ``test_deviations.py`` checks that
every entry names a collected test, and pins each deviation's behaviour with a test of its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deviation:
    #: ``<module>::<test function>`` (module without ``test_upstream_store_``), optionally
    #: ``[<text the parameter id contains>]``
    test: str
    backends: frozenset[str]
    reason: str


#: The project's stores (the Qdrant format) and LangGraph's own stores, as the harness names them.
PROJECT = frozenset({"edge", "edge-sealed", "qdrant"})
MEMORY = frozenset({"memory"})
POSTGRES = frozenset({"postgres"})

DEVIATIONS: list[Deviation] = [
    # -- the project's stores ---------------------------------------------------------------
    Deviation(
        "base::test_embed_with_path",
        PROJECT | POSTGRES,
        "A query search returns the items that have a vector. InMemoryStore appends the items "
        "put with index=False, with score None; PostgresStore does not either (its own test "
        "keeps that assertion as a TODO). The Qdrant engines search vectors; filling a page "
        "with unindexed items would need a second scan of the filter on every search.",
    ),
    Deviation(
        "postgres::test_scores[poisson]",
        PROJECT,
        "The score is a similarity in [0, 1] (docs/architecture.md, 'Hybrid search'): the "
        "cosine of 'poisson' and 'aaa' under the test's embeddings is -0.03, reported as 0. "
        "The raw cosine is kept as the hit's dense part.",
    ),
    # -- LangGraph's own stores (the control), as upstream ships them -----------------------
    Deviation(
        "postgres::test_store_ttl",
        MEMORY,
        "InMemoryStore has no TTL (supports_ttl is False).",
    ),
    Deviation(
        "postgres::test_store_ttl",
        POSTGRES,
        "PostgresStore's migrations keep ttl_minutes as an INTEGER, so the 6-second TTL is "
        "stored as 0 minutes and a refresh expires the item at once; upstream's own fixture "
        "patches the column to FLOAT before the test, the project opens the store as shipped.",
    ),
    Deviation(
        "base::test_async_batched_vector_search_concurrent",
        POSTGRES,
        "PostgresStore compares a range filter on a JSON number as text ('7' > '25'); the "
        "project's stores and InMemoryStore compare numbers numerically.",
    ),
    Deviation(
        "postgres::test_search",
        MEMORY,
        "InMemoryStore finds nothing under a namespace prefix given as a list (['test']): it "
        "compares tuples. PostgresStore and the project's stores accept any sequence.",
    ),
    Deviation(
        "postgres::test_batch_rejects_invalid_namespace_labels",
        MEMORY,
        "InMemoryStore checks labels in its public methods, not in ops passed to batch (it keeps "
        "namespaces as tuples, so a dotted label cannot reach another namespace).",
    ),
]
