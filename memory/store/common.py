"""What every Qdrant-format store shares, whatever the engine: point ids, the payload layout,
filter semantics, batch planning and item conversion (see :mod:`memory.store.qdrant` for the
format). Imports no engine, so opening the embedded store does not pay for qdrant-client's
import (over a second).

Sealing (``ANALYST_MEMORY_KEY``, :mod:`memory.sealing`): with a key, an item's ``value`` is
stored as ``{"analyst_sealed": <token>}``; the point id, namespace fields, key, times and TTL
stay in clear (reads, namespace filters, ordering and sweeps use them), and so do the dense
and BM25 vectors (derived from the value's texts). A filter on value fields then cannot run in
the engine: it is applied in Python to each opened value (:meth:`PlannedStore._matches`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
import time
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from memory.embeddings import check_vectors
from memory.sealing import PLAIN, MemoryCipher

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
VECTOR = "text"
#: The sparse BM25 vector next to ``text`` (collections created since hybrid search).
SPARSE = "bm25"
#: Reciprocal-rank fusion of the dense and BM25 rankings: k and the two weights.
RRF_K = 10
RRF_WEIGHTS = (1.0, 1.0)
#: BM25 length normalisation for short texts (memories are one or two sentences).
BM25_AVG_LEN = 24.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SAFE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")

LocalAccess = Literal["exclusive", "shared"]
C = TypeVar("C")


# -- identity ---------------------------------------------------------------------------------


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def namespace_text(namespace: Sequence[str]) -> str:
    """The namespace as compact JSON (payload ``ns_key`` and ``ns_prefixes`` entries)."""
    return _json(list(namespace))


def point_id(namespace: Sequence[str], key: str) -> str:
    """The point id of ``(namespace, key)``: a UUID from sha256 of a JSON array (see module doc)."""
    digest = hashlib.sha256(_json([list(namespace), key]).encode("utf-8")).digest()
    return str(uuid.UUID(bytes=digest[:16]))


def _now_us() -> int:
    return time.time_ns() // 1000


def _to_datetime(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=int(us))


# -- filters ----------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: booleans are not numbers, 1 == 1.0, containers compared deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _ordered(actual: Any, operator: str, bound: Any) -> bool:
    if (_is_number(actual) and _is_number(bound)) or (
        isinstance(actual, str) and isinstance(bound, str)
    ):
        pass
    else:
        return False
    if operator == "$gt":
        return bool(actual > bound)
    if operator == "$gte":
        return bool(actual >= bound)
    if operator == "$lt":
        return bool(actual < bound)
    return bool(actual <= bound)


def _check_operator(operator: str) -> None:
    if operator not in _OPERATORS:
        raise ValueError(
            f"Unsupported filter operator '{operator}'. Use one of: {', '.join(_OPERATORS)}."
        )


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            for operator, bound in expected.items():
                _check_operator(operator)
                if operator == "$eq":
                    ok = json_equal(actual, bound)
                elif operator == "$ne":
                    ok = not json_equal(actual, bound)
                else:
                    ok = _ordered(actual, operator, bound)
                if not ok:
                    return False
            return True
        return isinstance(actual, Mapping) and all(
            _compare(actual.get(k), v) for k, v in expected.items()
        )
    return json_equal(actual, expected)


def value_matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search filter (the exact semantics; module doc)."""
    if not filter:
        return True
    return all(_compare(value.get(k), v) for k, v in filter.items())


def prefilter(
    filter: Mapping[str, Any] | None,
    *,
    equal: Callable[[str, Any], C | None],
    compare: Callable[[str, str, float], C],
) -> list[C]:
    """Engine conditions selecting a superset of what :func:`value_matches` accepts.

    ``equal(path, value)`` makes an equality condition for a string, boolean or number (or
    ``None`` to leave it to the exact check); ``compare(path, "gt"|"gte"|"lt"|"lte", bound)``
    a numeric range. Paths address the payload (``value.<field>``)."""
    conditions: list[C] = []

    def eq(path: str, value: Any) -> None:
        if isinstance(value, bool | str) or _is_number(value):
            condition = equal(path, value)
            if condition is not None:
                conditions.append(condition)

    def walk(path: str, expected: Any) -> None:
        if isinstance(expected, Mapping):
            if any(str(k).startswith("$") for k in expected):
                for operator, bound in expected.items():
                    _check_operator(operator)
                    if operator == "$eq":
                        eq(path, bound)
                    elif operator != "$ne" and _is_number(bound):
                        conditions.append(compare(path, operator[1:], float(bound)))
                return
            for k, v in expected.items():
                if isinstance(k, str) and _SAFE_KEY.match(k):
                    walk(f"{path}.{k}", v)
            return
        eq(path, expected)

    for k, v in (filter or {}).items():
        if isinstance(k, str) and _SAFE_KEY.match(k):
            walk(f"value.{k}", v)
        elif isinstance(v, Mapping):
            for operator in v:
                if str(operator).startswith("$"):
                    _check_operator(operator)
    return conditions


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported namespace match type '{condition.match_type}'")
    return all(p == "*" or n == p for n, p in pairs)


def _validate(op: Op) -> None:
    namespaces: list[Any] = []
    if isinstance(op, GetOp | PutOp):
        namespaces.append(op.namespace)
    elif isinstance(op, SearchOp):
        namespaces.append(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        namespaces.extend(c.path for c in op.match_conditions or ())
    else:
        raise TypeError(f"Unknown store operation {type(op).__name__}")
    for namespace in namespaces:
        if not isinstance(namespace, tuple):
            raise InvalidNamespaceError(
                f"Namespaces are tuples of strings; got {type(namespace).__name__} {namespace!r}."
            )
    validate_op_namespace(op)
    if isinstance(op, PutOp) and op.value is not None:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )


@dataclass
class _Plan:
    """One batch, split by kind, with the texts it needs embedded."""

    ops: list[Op]
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)
    put_texts: dict[tuple[tuple[str, ...], str], list[str]] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)


def point_payload(
    op: PutOp, created_us: int, now_us: int, cipher: MemoryCipher = PLAIN
) -> dict[str, Any]:
    """The payload of the point that stores ``op``'s item (the format in the docstring of
    :mod:`memory.store.qdrant`), its value sealed by ``cipher``; ``created_us`` is kept from
    an existing point."""
    namespace = op.namespace
    payload: dict[str, Any] = {
        "namespace": list(namespace),
        "key": op.key,
        "value": cipher.seal_object(cast(Mapping[str, Any], op.value)),
        "ns_key": namespace_text(namespace),
        "ns_prefixes": [namespace_text(namespace[:n]) for n in range(1, len(namespace) + 1)],
        "created_us": created_us,
        "updated_us": now_us,
    }
    if op.ttl is not None:
        payload["ttl_minutes"] = float(op.ttl)
        payload["expires_us"] = now_us + int(float(op.ttl) * 60_000_000)
    return payload


def _item(payload: Mapping[str, Any], cipher: MemoryCipher) -> Item:
    return Item(
        value=cipher.open_object(payload["value"]),
        key=payload["key"],
        namespace=tuple(payload["namespace"]),
        created_at=_to_datetime(payload["created_us"]),
        updated_at=_to_datetime(payload["updated_us"]),
    )


def _search_item(
    payload: Mapping[str, Any], score: float | None, cipher: MemoryCipher
) -> SearchItem:
    return SearchItem(
        namespace=tuple(payload["namespace"]),
        key=payload["key"],
        value=cipher.open_object(payload["value"]),
        created_at=_to_datetime(payload["created_us"]),
        updated_at=_to_datetime(payload["updated_us"]),
        score=None if score is None else float(score),
    )


class PlannedStore(BaseStore):
    """What the Qdrant stores share: the index config, and batches planned, embedded once and
    handed to :meth:`_execute` (the backend's own reads and writes, run off the event loop).

    A batch's puts are de-duplicated (the last put of a key wins), every text it needs is
    embedded in one call and every query once, and the vectors are checked (count, size,
    finite, non-zero) before anything is stored.
    """

    #: names the TTL sweeper's thread and its log lines
    engine = "qdrant"
    ttl_config: TTLConfig | None = None

    def __init__(self, index: IndexConfig | None, cipher: MemoryCipher | None = None) -> None:
        #: Seals item values at rest (``ANALYST_MEMORY_KEY``; see the module docstring).
        self.cipher: MemoryCipher = cipher or PLAIN
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        self.index_config: IndexConfig | None = None
        self.embeddings: Embeddings | None = None
        self._fields: list[tuple[str, Any]] = []
        if index:
            if not index.get("dims"):
                raise ValueError("index config needs 'dims' (the embedding size)")
            self.index_config = cast(IndexConfig, dict(index))
            self.embeddings = ensure_embeddings(index.get("embed"))
            self._fields = [
                (p, "$" if p == "$" else tokenize_path(p)) for p in (index.get("fields") or ["$"])
            ]

    @property
    def dims(self) -> int | None:
        return self.index_config["dims"] if self.index_config else None

    @property
    def model_id(self) -> str | None:
        return getattr(self.embeddings, "model_id", None) if self.embeddings else None

    def _plan(self, ops: Iterable[Op]) -> _Plan:
        plan = _Plan(ops=list(ops))
        texts: dict[str, None] = {}
        queries: dict[str, None] = {}
        for i, op in enumerate(plan.ops):
            _validate(op)
            if isinstance(op, GetOp):
                plan.gets.append((i, op))
            elif isinstance(op, SearchOp):
                plan.searches.append((i, op))
                if op.query and self.embeddings is not None:
                    queries[op.query] = None
            elif isinstance(op, ListNamespacesOp):
                plan.lists.append((i, op))
            else:
                plan.puts.pop((op.namespace, op.key), None)
                plan.puts[(op.namespace, op.key)] = op
        for ident, op in plan.puts.items():
            if op.value is None or op.index is False or self.embeddings is None:
                continue
            paths = (
                self._fields
                if op.index is None
                else [(p, "$" if p == "$" else tokenize_path(p)) for p in op.index]
            )
            found: list[str] = []
            for _, tokens in paths:
                found.extend(get_text_at_path(dict(op.value), tokens))
            if found:
                plan.put_texts[ident] = found
                texts.update(dict.fromkeys(found))
        plan.texts = list(texts)
        plan.queries = list(queries)
        return plan

    def _vectors(
        self, plan: _Plan, docs: list[list[float]], queries: list[list[float]]
    ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        dims = cast(int, self.dims)
        source = self.model_id or type(self.embeddings).__name__
        docs = check_vectors(docs, count=len(plan.texts), dims=dims, source=source)
        queries = check_vectors(queries, count=len(plan.queries), dims=dims, source=source)
        return dict(zip(plan.texts, docs, strict=True)), dict(
            zip(plan.queries, queries, strict=True)
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        docs: list[list[float]] = []
        queries: list[list[float]] = []
        if self.embeddings is not None:
            if plan.texts:
                docs = self.embeddings.embed_documents(plan.texts)
            queries = [self.embeddings.embed_query(q) for q in plan.queries]
        return self._execute(plan, *self._vectors(plan, docs, queries))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        docs: list[list[float]] = []
        queries: list[list[float]] = []
        if self.embeddings is not None:
            if plan.texts:
                docs = await self.embeddings.aembed_documents(plan.texts)
            queries = list(
                await asyncio.gather(*(self.embeddings.aembed_query(q) for q in plan.queries))
            )
        doc_vectors, query_vectors = self._vectors(plan, docs, queries)
        return await asyncio.to_thread(self._execute, plan, doc_vectors, query_vectors)

    @abstractmethod
    def _execute(
        self,
        plan: _Plan,
        doc_vectors: dict[str, list[float]],
        query_vectors: dict[str, list[float]],
    ) -> list[Result]:
        """Run a planned batch against the backend (on a worker thread for ``abatch``)."""

    # -- reads shared by the engines -------------------------------------------------------

    def _value_filter(self, filter: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The part of a search filter the engine may apply: none when values are sealed
        (the engine sees only tokens); :meth:`_matches` then checks every candidate."""
        return None if self.cipher.sealing else filter

    def _matches(self, payload: Mapping[str, Any] | None, filter: Mapping[str, Any] | None) -> bool:
        """Whether the stored item passes ``filter``, checked on its opened value."""
        if not filter:
            return True
        return value_matches(self.cipher.open_object((payload or {}).get("value", {})), filter)

    def _omit_expired(self) -> bool:
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    def _live(self, payload: Mapping[str, Any], now: int) -> bool:
        expires = payload.get("expires_us")
        return not (self._omit_expired() and expires is not None and expires <= now)

    def _resolve_gets(
        self,
        gets: Sequence[tuple[int, GetOp]],
        by_id: Mapping[str, Mapping[str, Any]],
        now: int,
        results: list[Result],
        refresh: dict[str, float],
    ) -> None:
        """Answer each get from the retrieved payloads (by point id): None unless the point is
        this very (namespace, key) and not expired; note the TTLs a read refreshes."""
        for i, op in gets:
            pid = point_id(op.namespace, op.key)
            payload = by_id.get(pid)
            if (
                payload is None
                or tuple(payload.get("namespace", ())) != op.namespace
                or payload.get("key") != op.key
                or not self._live(payload, now)
            ):
                results[i] = None
                continue
            results[i] = _item(payload, self.cipher)
            if op.refresh_ttl and payload.get("ttl_minutes") is not None:
                refresh[pid] = float(payload["ttl_minutes"])

    # -- TTL ----------------------------------------------------------------------------------

    @abstractmethod
    def sweep_ttl(self) -> int:
        """Delete expired items now; how many."""

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep on a daemon thread every interval (default: ttl_config's, else 5 minutes)."""
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        interval = (
            sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        )
        self._sweeper_stop.clear()

        def loop() -> None:
            while not self._sweeper_stop.wait(float(interval) * 60):
                try:
                    self.sweep_ttl()
                except Exception:  # a failed sweep must not kill the thread; it retries
                    logger.exception("%s store TTL sweep failed", self.engine)

        self._sweeper = threading.Thread(
            target=loop, name=f"{self.engine}-ttl-sweeper", daemon=True
        )
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it is not running afterwards."""
        if self._sweeper is None:
            return True
        self._sweeper_stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped
