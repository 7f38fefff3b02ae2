"""A store batch, validated and planned before it runs (:func:`plan_batch`): the
namespaces checked as LangGraph checks them, the operations split by kind, the last put of a
key kept, and every text and query the batch embeds listed once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from memory.store.views import views_of


def validate_op(op: Op) -> Op:
    """``op`` with its namespaces as tuples, or ``InvalidNamespaceError`` (``TypeError`` for an
    unknown op) where LangGraph would refuse it.

    As upstream, a namespace is any sequence of labels, and the labels are checked
    (``validate_op_namespace``: non-empty strings without ``.`` or NUL); the rules only the
    public ``put`` applies (a non-empty namespace not rooted at ``langgraph``) are ``put``'s,
    not the batch's."""
    if isinstance(op, GetOp | PutOp):
        op = op._replace(namespace=tuple(op.namespace))
    elif isinstance(op, SearchOp):
        op = op._replace(namespace_prefix=tuple(op.namespace_prefix))
    elif isinstance(op, ListNamespacesOp):
        if op.match_conditions:
            op = op._replace(
                match_conditions=tuple(
                    MatchCondition(c.match_type, tuple(c.path)) for c in op.match_conditions
                )
            )
    else:
        raise TypeError(f"Unknown store operation {type(op).__name__}")
    validate_op_namespace(op)
    return op


@dataclass
class BatchPlan:
    """One batch, split by kind, with the texts it needs embedded: ``puts`` keeps the last put
    of each ``(namespace, key)``, ``put_texts`` the texts each put embeds, ``texts`` and
    ``queries`` every distinct document text and query of the batch."""

    ops: list[Op]
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)
    put_texts: dict[tuple[tuple[str, ...], str], list[str]] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    #: the sentence views each put keeps (:mod:`memory.store.views`), embedded with ``texts``
    put_views: dict[tuple[tuple[str, ...], str], list[str]] = field(default_factory=dict)


def plan_batch(
    ops: Iterable[Op], fields: Sequence[tuple[str, Any]], *, embeds: bool, views: bool = False
) -> BatchPlan:
    """Validate ``ops`` and split them into a :class:`BatchPlan` (the last put of a key wins).

    ``fields``: the index's embedded fields, (path, tokenized path); ``embeds``: whether the
    store has an embedder (without one nothing is embedded); ``views``: whether it keeps the
    sentence views of what it embeds (:mod:`memory.store.views`), embedded in the same call as
    the texts (one batch, one pass through the embedding cache)."""
    plan = BatchPlan(ops=[validate_op(op) for op in ops])
    texts: dict[str, None] = {}
    queries: dict[str, None] = {}
    for i, op in enumerate(plan.ops):
        if isinstance(op, GetOp):
            plan.gets.append((i, op))
        elif isinstance(op, SearchOp):
            plan.searches.append((i, op))
            if op.query and embeds:
                queries[op.query] = None
        elif isinstance(op, ListNamespacesOp):
            plan.lists.append((i, op))
        else:
            plan.puts.pop((op.namespace, op.key), None)
            plan.puts[(op.namespace, op.key)] = op
    for ident, op in plan.puts.items():
        if op.value is None or op.index is False or not embeds:
            continue
        paths = (
            fields
            if op.index is None
            else [(p, "$" if p == "$" else tokenize_path(p)) for p in op.index]
        )
        found: list[str] = []
        for _, tokens in paths:
            found.extend(get_text_at_path(dict(op.value), tokens))
        if found:
            plan.put_texts[ident] = found
            texts.update(dict.fromkeys(found))
            if views:
                plan.put_views[ident] = views_of(found)
                texts.update(dict.fromkeys(plan.put_views[ident]))
    plan.texts = list(texts)
    plan.queries = list(queries)
    return plan


__all__ = ["BatchPlan", "plan_batch", "validate_op"]
