"""What each Qdrant-format engine supplies to the shared engine
(:class:`memory.store.engine.QdrantFormatStore`): its connection and a few primitives --
retrieve, query, scroll, scan, facet, upsert, delete, count -- and the filter conditions they
take, with the points they read and write (:class:`NewPoint`, :class:`Terms`, ``Payload``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from memory.store.scoring import Hit

#: The engine's connection: what its primitives are handed (a shard, a client).
H = TypeVar("H")

#: A stored point's payload, as the engine returns it.
Payload = dict[str, Any]


@dataclass(frozen=True)
class Terms:
    """A BM25 sparse vector: term ids and their weights (same order)."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class NewPoint:
    """A point to upsert: its id and payload, the texts it embeds with their dense vectors
    (one per text, same order; both empty for an item without an index), and its BM25
    document vector (``None`` without an index or where the store keeps no BM25), and the
    vectors of its sentence views."""

    id: str
    payload: Payload
    texts: list[str]
    vectors: list[list[float]]
    terms: Terms | None = None
    #: the vectors of its sentence views (:mod:`memory.store.views`); empty: none
    views: list[list[float]] = field(default_factory=list)


class EnginePrimitives(ABC, Generic[H]):
    """The connection and primitives an engine implements (:mod:`memory.store.edge`,
    :mod:`memory.store.qdrant`); the shared engine runs gets, puts, searches, listings and
    sweeps over them."""

    @abstractmethod
    def _connected(self) -> AbstractContextManager[H]:
        """Hold the store's lock with an open connection for one operation."""

    @abstractmethod
    def _retrieve(
        self, handle: H, ids: list[str], fields: list[str] | None = None
    ) -> dict[str, Payload]:
        """The payloads of the points among ``ids`` that exist, by id (only ``fields`` if given)."""

    @abstractmethod
    def _query(
        self, handle: H, vector: list[float], lexical: Terms | None, flt: Any, depth: int
    ) -> list[Hit]:
        """The candidates of a query: the ``depth`` nearest points by cosine and (with
        ``lexical``, the query's terms weighted by their IDF in the scope) the ``depth`` best
        by BM25, each with the parts of its score (:mod:`memory.store.scoring`)."""

    @abstractmethod
    def _recent(
        self, handle: H, flt: Any, limit: int, fields: list[str] | None = None
    ) -> list[Payload]:
        """The ``limit`` most recently updated points passing ``flt``, newest first (only
        ``fields`` of their payloads if given)."""

    @abstractmethod
    def _scan(self, handle: H, flt: Any) -> Iterator[Payload]:
        """Every point passing ``flt``, page by page."""

    @abstractmethod
    def _namespace_keys(self, handle: H, flt: Any) -> Iterable[str]:
        """The distinct ``ns_key`` values of the points passing ``flt`` (a facet)."""

    @abstractmethod
    def _set_payload(self, handle: H, ids: list[str], payload: Payload) -> None:
        """Set the given payload fields on the points ``ids``."""

    @abstractmethod
    def _upsert(self, handle: H, points: list[NewPoint]) -> None:
        """Write the points (replacing any with the same id)."""

    @abstractmethod
    def _delete(self, handle: H, ids: list[str]) -> None:
        """Delete the points ``ids``."""

    @abstractmethod
    def _delete_where(self, handle: H, flt: Any) -> None:
        """Delete every point passing ``flt``."""

    @abstractmethod
    def _count(self, handle: H, flt: Any) -> int:
        """How many points pass ``flt`` (``None``: all), counted exactly."""

    @abstractmethod
    def _namespace_condition(self, prefix: tuple[str, ...]) -> Any:
        """The condition "the namespace starts with ``prefix``" (non-empty)."""

    @abstractmethod
    def _value_conditions(self, filter: Mapping[str, Any] | None) -> list[Any]:
        """Conditions on value fields selecting a superset of what ``filter`` accepts
        (:func:`memory.store.common.prefilter`)."""

    @abstractmethod
    def _term_condition(self, term: int) -> Any:
        """The condition "the item holds BM25 term ``term``" (payload ``terms``)."""

    @abstractmethod
    def _no_terms_condition(self) -> Any:
        """The condition "the item holds no BM25 term" (payload ``terms`` empty or missing)."""

    @abstractmethod
    def _expired_condition(self, now: int) -> Any:
        """The condition "expired at ``now``" (``expires_us <= now``)."""

    @abstractmethod
    def _filter(self, must: list[Any], must_not: list[Any]) -> Any:
        """The engine's filter of all ``must`` conditions and none of ``must_not``."""

    @abstractmethod
    def _any_of(self, field: str, values: list[str]) -> Any:
        """The condition "the payload's ``field`` (a string, or a list holding strings)
        equals one of ``values``" (non-empty)."""

    @abstractmethod
    def _either(self, conditions: list[Any]) -> Any:
        """The condition "at least one of ``conditions`` holds" (non-empty)."""


__all__ = ["EnginePrimitives", "NewPoint", "Payload", "Terms"]
