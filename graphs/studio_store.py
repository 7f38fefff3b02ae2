"""The LangGraph API server's store, ranked as recall ranks (``langgraph.json``: ``store.path``).

``langgraph dev`` and Studio give the graph, and Studio's store browser, the server's own
store (indexed with the project's embeddings, :mod:`graphs.studio_embeddings`). By itself its
query search orders by similarity alone, so Studio would show memories in another order than
the planner recalls them in. :func:`store` hands the server that same store behind
:class:`memory.store.ranked.RankedStore`: every query search, Studio's included, then goes
through the one ranking of cold memory (:mod:`memory.ranking`), and the planner's recall on
it (which scopes the store to the run's principal) ranks once, as it does on the CLI's store.
"""

from __future__ import annotations

from langgraph.store.base import BaseStore

from memory.store.ranked import RankedStore


def store() -> BaseStore:
    """The server's store (its index from ``langgraph.json``), its query searches ranked.

    Called by the server after it has configured its store, once per thread that asks."""
    from langgraph_runtime.store import Store

    return RankedStore(Store())
