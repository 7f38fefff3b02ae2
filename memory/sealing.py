"""Memory content sealed at rest (``ANALYST_MEMORY_KEY``).

A :class:`MemoryCipher` seals what a user said and what the analyst learned from it before a
tier stores it, and opens it when read back: the journal's text (episodes' text and meta,
session summaries' topic, summary and open items, candidates' quote and payload, procedures'
text and rule, a job's last error), the fact ledger's values, and the cold store's item
values. It is :class:`~memory.serde.ValueCipher` (AES-EAX: confidentiality and integrity)
with the checkpoint key's formats (16/24/32 bytes, or their base64), under its own variable.

What stays in clear, on purpose: ids, namespaces, tenants and users, times, statuses, kinds,
attribute names, provenance and keyed hashes (what rows are found, ordered and secured by),
and the vectors (dense and BM25) the cold store searches by. Vectors are derived from the
text and are not sealed: whoever reads the raw store can compare them with vectors of guessed
texts, but cannot read the texts back. Every comparison of content (a fact's duplicate rule,
a cold-store filter on a value field, an episode stored twice) runs in Python on opened
values, never in SQL or in the search engine.

Columns typed as JSON objects or arrays keep their type: a sealed object is
``{"analyst_sealed": "<token>"}``, a sealed array ``["<token>"]`` (so the schema's checks
still hold and no migration is needed); a sealed scalar is the token itself, a string.

Values stored before the key was set are plain and read back unchanged; new writes are
sealed. A sealed value read with no key, or with another key, is a
:class:`~memory.errors.MemoryKeyError` naming ``ANALYST_MEMORY_KEY`` -- never a crash deep
inside a JSON decoder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory.errors import CheckpointDecryptionError, MemoryKeyError
from memory.serde import SEALED_PREFIX, ValueCipher, parse_key

#: The environment variable that holds the memory key.
KEY_VARIABLE = "ANALYST_MEMORY_KEY"
#: The one key of a sealed JSON object.
SEALED_KEY = "analyst_sealed"


def is_sealed(value: Any) -> bool:
    """Whether ``value`` is a sealed token (as stored, before opening)."""
    return isinstance(value, str) and value.startswith(SEALED_PREFIX)


class MemoryCipher:
    """Seals memory content with ``key`` (``None``: stores plain, but still refuses to
    misread sealed values: opening one is a :class:`MemoryKeyError`)."""

    def __init__(self, key: str | bytes | None = None) -> None:
        self._cipher = None if not key else ValueCipher(parse_key(key, KEY_VARIABLE))

    @property
    def sealing(self) -> bool:
        """Whether new writes are sealed (a key is set)."""
        return self._cipher is not None

    # -- scalars and text -------------------------------------------------------------------

    def seal(self, value: Any) -> Any:
        """``value`` as a sealed token (a string), or unchanged without a key. ``None`` stays
        ``None`` (an absent optional column is not content)."""
        if self._cipher is None or value is None:
            return value
        return self._cipher.seal(value)

    def open(self, value: Any) -> Any:
        """The value a token was sealed from; a plain value as it is."""
        if not is_sealed(value):
            return value
        if self._cipher is None:
            raise MemoryKeyError(
                f"Stored memory is encrypted, but {KEY_VARIABLE} is not set. Set "
                f"{KEY_VARIABLE} to the key it was written with."
            )
        try:
            return self._cipher.open(value)
        except CheckpointDecryptionError as e:
            raise MemoryKeyError(
                f"Stored memory cannot be decrypted with {KEY_VARIABLE}: the key differs "
                "from the one it was written with, or the stored bytes were altered. Set "
                f"{KEY_VARIABLE} to the key the memory was written with."
            ) from e

    # -- JSON objects and arrays (columns whose schema checks the JSON type) ----------------

    def seal_object(self, value: Mapping[str, Any]) -> dict[str, Any]:
        if self._cipher is None:
            return dict(value)
        return {SEALED_KEY: self.seal(dict(value))}

    def open_object(self, value: Any) -> Any:
        if isinstance(value, Mapping) and len(value) == 1 and is_sealed(value.get(SEALED_KEY)):
            return self.open(value[SEALED_KEY])
        return value

    def seal_array(self, value: Sequence[Any]) -> list[Any]:
        if self._cipher is None:
            return list(value)
        return [self.seal(list(value))]

    def open_array(self, value: Any) -> Any:
        if isinstance(value, list) and len(value) == 1 and is_sealed(value[0]):
            return self.open(value[0])
        return value


#: No key: writes plain, refuses sealed values with a clear error.
PLAIN = MemoryCipher(None)


def memory_cipher(key: str | bytes | None) -> MemoryCipher:
    """The cipher for ``ANALYST_MEMORY_KEY`` (``None`` or empty: :data:`PLAIN`)."""
    return MemoryCipher(key) if key else PLAIN
