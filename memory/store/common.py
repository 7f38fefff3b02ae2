"""What every Qdrant-format store shares as data: point ids, the payload layout, filter
semantics and item conversion (format: ``docs/architecture.md``, "Long-term memory store").
Imports no engine, so opening the embedded store does not pay for qdrant-client's import.

Sealing (``ANALYST_MEMORY_KEY``, :mod:`memory.sealing`): with a key, an item's ``value`` is
stored as ``{"analyst_sealed": <token>}``; ids, namespace fields, key, times, TTL and vectors
stay in clear, and a filter on value fields runs in Python on each opened value.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar, cast

from langgraph.store.base import (
    Item,
    MatchCondition,
    PutOp,
    SearchItem,
)

from memory.ranking import KNOBS
from memory.sealing import PLAIN, MemoryCipher

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
VECTOR = "text"
#: The sparse BM25 vector next to ``text`` (collections created since hybrid search). It holds
#: each term's saturated frequency only: the IDF is put into the query, computed over the
#: searched scope (``docs/architecture.md``, "Hybrid search"), never by the engine over the
#: whole store.
SPARSE = "bm25"
#: The payload field listing an embedded item's BM25 term ids (distinct, sorted): its payload
#: index counts, within a search's namespace prefix, the items that hold a query term.
TERMS = "terms"
#: Reciprocal-rank fusion of the dense and BM25 rankings: k and the two weights (knobs of the
#: ranking, :class:`memory.ranking.Knobs`).
RRF_K = KNOBS.rrf_k
RRF_WEIGHTS = KNOBS.rrf_weights
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
    """The point id of ``(namespace, key)``: a UUID from the first 16 bytes of sha256 of
    ``[list(namespace), key]`` as compact JSON (distinct pairs cannot collide)."""
    digest = hashlib.sha256(_json([list(namespace), key]).encode("utf-8")).digest()
    return str(uuid.UUID(bytes=digest[:16]))


def now_us() -> int:
    """Now, in microseconds since the epoch (the payload's time unit)."""
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
    """Whether an item's value passes a search filter (the semantics in ``docs/architecture.md``)."""
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


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` passes a ``list_namespaces`` prefix/suffix condition (``*``
    matches any one label)."""
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


def point_payload(
    op: PutOp,
    created_us: int,
    now_us: int,
    cipher: MemoryCipher = PLAIN,
    terms: Sequence[int] = (),
) -> dict[str, Any]:
    """The payload of the point that stores ``op``'s item, its value sealed by ``cipher``;
    ``created_us`` is kept from an existing point, ``terms`` are the item's BM25 term ids
    (layout: ``docs/architecture.md``)."""
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
    if terms:
        payload[TERMS] = sorted(set(terms))
    if op.ttl is not None:
        payload["ttl_minutes"] = float(op.ttl)
        payload["expires_us"] = now_us + int(float(op.ttl) * 60_000_000)
    return payload


def stored_item(payload: Mapping[str, Any], cipher: MemoryCipher) -> Item:
    """The ``Item`` a point's payload stores, its value opened by ``cipher``."""
    return Item(
        value=cipher.open_object(payload["value"]),
        key=payload["key"],
        namespace=tuple(payload["namespace"]),
        created_at=_to_datetime(payload["created_us"]),
        updated_at=_to_datetime(payload["updated_us"]),
    )


def search_item(
    payload: Mapping[str, Any], score: float | None, cipher: MemoryCipher
) -> SearchItem:
    """The ``SearchItem`` a point's payload stores, with its reported ``score``."""
    return SearchItem(
        namespace=tuple(payload["namespace"]),
        key=payload["key"],
        value=cipher.open_object(payload["value"]),
        created_at=_to_datetime(payload["created_us"]),
        updated_at=_to_datetime(payload["updated_us"]),
        score=None if score is None else float(score),
    )
