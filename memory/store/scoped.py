"""Tenancy at the storage layer: a ``BaseStore`` that can only see one principal's namespaces.

Namespace layout (every backend, every memory kind)::

    ("tenants", <tenant>, "users", <user>)                 principal root  (principal_namespace)
    ("tenants", <tenant>, "users", <user>, "memories")     long-term memories (recall / remember)
    ("tenants", <tenant>, "users", <user>, <kind>, ...)    other per-user kinds (summaries, ...)

``<tenant>`` and ``<user>`` are the principal's ids made into safe labels by
:func:`principal_label`: ``%``, ``.``, ``*`` and NUL are percent-encoded (``%25``, ``%2E``,
``%2A``, ``%00``). The mapping is injective, so ``"a.b"`` and ``"a%2Eb"`` stay different users,
an e-mail address is a valid id, and no id can act as the ``*`` wildcard of namespace listing.

:class:`ScopedStore` wraps any store for one principal and works like a ``chroot``: callers
use namespaces *relative* to the principal root (``("memories",)``), every operation is
rewritten under the root before it reaches the wrapped store, and every namespace in a result
has the root removed. A caller therefore has no way to name another principal's data: a
relative namespace that spells out someone else's path (``("tenants", "t2", ...)``) lands
under the caller's own root. Results that come back from outside the root (a bug in a
backend) raise :class:`ScopeViolationError` instead of being returned.

The principal always comes from the CLI flags/environment or the server's identity, never
from model output. Every value put through it is redacted first (:func:`memory.pii.redact_value`):
no writer of the cold store can store a card number, an IBAN, an e-mail address, a phone
number or a national id it was given.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from memory.errors import InvalidPrincipalError
from memory.identity import Principal
from memory.pii import redact_value
from memory.ranking import Plan, Ranking
from memory.store.ranked import (
    RankedStore,
    awith_context,
    awith_views,
    narrow,
    widen,
    with_context,
    with_views,
)

TENANTS, USERS, MEMORIES = "tenants", "users", "memories"
#: The value fields the principal's memories (``("memories", ...)`` values with a ``text`` or
#: ``about`` field) embed when a put names no fields of its own: one vector each, a memory
#: scoring as its best field. Other values and namespaces follow the store's index config (the
#: whole value unless it names fields), as upstream.
TEXT_FIELDS = ["text", "about"]

_ESCAPES = (("%", "%25"), (".", "%2E"), ("*", "%2A"), ("\x00", "%00"))


def _is_project_memory(op: PutOp) -> bool:
    """A put of one of the project's own memories (``text``/``about``) under ``("memories",
    ...)``: those embed :data:`TEXT_FIELDS`. Any other value there (LangMem's ``{"content":
    ...}``) keeps the store's index config, so it is embedded and recall can find it."""
    value = op.value
    return (
        value is not None
        and tuple(op.namespace[:1]) == (MEMORIES,)
        and ("text" in value or "about" in value)
    )


class ScopeViolationError(RuntimeError):
    """A backend returned data outside the principal's root: a bug, never shown as data."""


def principal_label(value: str, what: str) -> str:
    """A tenant or user id as a namespace label (injective percent-encoding, see module doc)."""
    if not isinstance(value, str) or not value.strip():
        flag = "--tenant / ANALYST_TENANT" if what == "tenant" else "--user / ANALYST_USER"
        raise InvalidPrincipalError(
            f"The {what} id {value!r} cannot scope memory: it must be non-empty text. Set {flag}."
        )
    for raw, escaped in _ESCAPES:
        value = value.replace(raw, escaped)
    return value


def principal_namespace(principal: Principal) -> tuple[str, ...]:
    """The root namespace of everything stored for ``principal``."""
    return (
        TENANTS,
        principal_label(principal.tenant_id, "tenant"),
        USERS,
        principal_label(principal.user_id, "user"),
    )


def memories_namespace(principal: Principal) -> tuple[str, ...]:
    """Where :mod:`memory.recall` keeps the principal's long-term memories."""
    return (*principal_namespace(principal), MEMORIES)


def scoped(store: BaseStore, principal: Principal) -> ScopedStore:
    """``store`` restricted to ``principal`` (the same object if it already is). The view
    ranks its query searches itself, so a :class:`~memory.store.ranked.RankedStore` is seen
    through (ranking twice would rank the ranking's totals)."""
    if isinstance(store, RankedStore):
        store = store.store
    if isinstance(store, ScopedStore):
        if store.principal != principal:
            raise ScopeViolationError(
                "A store scoped to one principal cannot be re-scoped to another."
            )
        return store
    return ScopedStore(store, principal)


class ScopedStore(BaseStore):
    """``store`` as seen by one principal; namespaces are relative to its root. A query search
    ranks as recall does (:mod:`memory.store.ranked`, with ``ranking``: the default weights
    and half-life, at the time of the search)."""

    def __init__(
        self, store: BaseStore, principal: Principal, ranking: Ranking | None = None
    ) -> None:
        if isinstance(store, ScopedStore):
            raise ScopeViolationError("ScopedStore cannot wrap a ScopedStore; use scoped().")
        self.store = store
        self.principal = principal
        self.ranking = ranking or Ranking()
        self.root = principal_namespace(principal)
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config

    # -- rewriting ------------------------------------------------------------------------

    def _inner(self, op: Op) -> Op:
        _check_relative(op)
        root = self.root
        if isinstance(op, GetOp):
            return op._replace(namespace=(*root, *op.namespace))
        if isinstance(op, PutOp):
            if not op.namespace:
                raise InvalidNamespaceError(
                    "A scoped namespace needs at least one label, e.g. ('memories',)."
                )
            if op.index is None and _is_project_memory(op):
                op = op._replace(index=list(TEXT_FIELDS))
            value = None if op.value is None else redact_value(op.value)
            return op._replace(namespace=(*root, *op.namespace), value=value)
        if isinstance(op, SearchOp):
            return op._replace(namespace_prefix=(*root, *op.namespace_prefix))
        if isinstance(op, ListNamespacesOp):
            conditions = [MatchCondition("prefix", root)]
            suffixes = False
            for condition in op.match_conditions or ():
                if condition.match_type == "prefix":
                    conditions.append(MatchCondition("prefix", (*root, *condition.path)))
                else:
                    suffixes = True
            if suffixes:
                # Suffixes must be matched against the *relative* namespace (a suffix must not
                # reach into the root), then truncated and paged here: fetch every candidate.
                return ListNamespacesOp(tuple(conditions), None, limit=2**31 - 1, offset=0)
            depth = None if op.max_depth is None else len(root) + op.max_depth
            return ListNamespacesOp(tuple(conditions), depth, limit=op.limit, offset=op.offset)
        raise TypeError(f"Unknown store operation {type(op).__name__}")

    def _relative(self, namespace: Sequence[str]) -> tuple[str, ...]:
        n = len(self.root)
        if tuple(namespace[:n]) != self.root:
            raise ScopeViolationError(
                f"The store returned namespace {tuple(namespace)!r}, outside {self.root!r}."
            )
        return tuple(namespace[n:])

    def _outer(self, op: Op, result: Result) -> Result:
        if isinstance(op, GetOp):
            if result is None:
                return None
            assert isinstance(result, Item)
            return self._item(result)
        if isinstance(op, SearchOp):
            assert isinstance(result, list)
            return [self._search_item(r) for r in result]
        if isinstance(op, ListNamespacesOp):
            assert isinstance(result, list)
            relative = [self._relative(cast(tuple[str, ...], ns)) for ns in result]
            relative = [ns for ns in relative if ns]
            suffixes = [c for c in op.match_conditions or () if c.match_type == "suffix"]
            if not suffixes:
                return relative
            kept = {
                ns if op.max_depth is None else ns[: op.max_depth]
                for ns in relative
                if all(_suffix_matches(c.path, ns) for c in suffixes)
            }
            return sorted(kept)[op.offset : op.offset + op.limit]
        return result

    def _item(self, item: Item) -> Item:
        return Item(
            value=item.value,
            key=item.key,
            namespace=self._relative(item.namespace),
            created_at=item.created_at,
            updated_at=item.updated_at,
        )

    def _search_item(self, item: Any) -> SearchItem:
        """The item with its namespace made relative (a copy, score parts included)."""
        found = copy.copy(item)
        found.namespace = self._relative(item.namespace)
        return cast(SearchItem, found)

    async def arelated(self, *, keys: Sequence[str], episodes: Sequence[str]) -> list[Item] | None:
        """The principal's items named by ``keys`` or citing ``episodes``, when the wrapped
        store can find them without reading every item (its ``arelated``); else ``None``."""
        find = getattr(self.store, "arelated", None)
        if find is None:
            return None
        found = await find(self.root, keys=keys, episodes=episodes)
        return [self._item(item) for item in found]

    async def aitems(self) -> list[SearchItem] | None:
        """Every item of the principal, newest first, when the wrapped store can list them in
        one read (its ``aitems``); else ``None``."""
        find = getattr(self.store, "aitems", None)
        if find is None:
            return None
        return [self._search_item(item) for item in await find(self.root)]

    async def aremove_all(self) -> list[SearchItem] | None:
        """Delete every item of the principal and return them, when the wrapped store can do
        both in one step (its ``aremove_all``); else ``None``, and nothing is deleted."""
        remove = getattr(self.store, "aremove_all", None)
        if remove is None:
            return None
        return [self._search_item(item) for item in await remove(self.root)]

    def ranked_by(self, ranking: Ranking) -> ScopedStore:
        """The same principal's view of the same store, its query searches ranked with
        ``ranking`` (recall's weights, half-life and moment)."""
        return ScopedStore(self.store, self.principal, ranking)

    # -- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        wide = [widen(op, self.ranking) for op in ops]
        results = self.store.batch([self._inner(w) for w, _ in wide])
        results = with_context(self.store, ops, wide, results)
        results = with_views(ops, wide, results)
        return self._results(ops, wide, results)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        wide = [widen(op, self.ranking) for op in ops]
        results = await self.store.abatch([self._inner(w) for w, _ in wide])
        results = await awith_context(self.store, ops, wide, results)
        results = await awith_views(ops, wide, results)
        return self._results(ops, wide, results)

    def _results(
        self, ops: list[Op], wide: list[tuple[Op, Plan | None]], results: list[Result]
    ) -> list[Result]:
        """Each result with its namespaces made relative; a query search's ranked and paged."""
        return [
            narrow(op, planned, self._outer(w, r))
            for op, (w, planned), r in zip(ops, wide, results, strict=True)
        ]


def _check_relative(op: Op) -> None:
    """Labels must be valid strings (the wrapped store may not check ops given to ``batch``)."""
    namespaces: list[Sequence[Any]] = []
    if isinstance(op, GetOp | PutOp):
        namespaces.append(op.namespace)
    elif isinstance(op, SearchOp):
        namespaces.append(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        namespaces.extend(c.path for c in op.match_conditions or ())
    for namespace in namespaces:
        if not isinstance(namespace, tuple):
            raise InvalidNamespaceError(
                f"Namespaces are tuples of strings; got {type(namespace).__name__} "
                f"{namespace!r}. Use e.g. ('memories',)."
            )
    validate_op_namespace(op)


def _suffix_matches(path: Sequence[str], namespace: tuple[str, ...]) -> bool:
    if len(namespace) < len(path):
        return False
    return all(p in ("*", n) for p, n in zip(reversed(path), reversed(namespace), strict=False))
