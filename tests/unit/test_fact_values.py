"""The SQLite ledger's stored values decode to exactly what ``json.loads`` gives.

:func:`memory.facts.sqlite_ops.value_of` takes a quoted string's text as it is when nothing in
it needs decoding; every other text goes through ``json.loads``, so a text with a stray quote
or backslash is refused as ``json.loads`` refuses it.
"""

from __future__ import annotations

import json
import random

import pytest

from memory.facts.records import canonical_json
from memory.facts.sqlite_ops import value_of

ALPHABET = 'ab "\\/\n\t\x00\x1fé€😀\u2028'


def test_every_stored_value_decodes_as_json_loads_does() -> None:
    rng = random.Random(7)
    values: list[object] = ["", "plain", 'a"b', "back\\slash", "é", "\x00", 0, 1.5, None, True]
    values += ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(12))) for _ in range(2000)]
    values += [["a", 1], {"k": 'v "q"'}, {"nested": {"x": [None, "é"]}}]
    for value in values:
        text = canonical_json(value)
        assert value_of(text) == json.loads(text) == value, text


@pytest.mark.parametrize("text", ['"a"b"', '"', '"open', "", '"tab\\"'])
def test_text_that_is_not_json_is_refused_as_json_loads_refuses_it(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        value_of(text)
