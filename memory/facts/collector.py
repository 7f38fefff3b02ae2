"""The cyclic garbage collector's full collections, held off while a bulk import runs.

An import keeps two batches of writes alive at once (the one committing, the one being read):
some 250,000 objects the collector tracks per 50,000 facts (each delta, its fields, its
write). At CPython's default thresholds a full collection runs each time a quarter of the
old generation is new, and each walks every object of the process: six full collections
per 100,000 facts, a fifth of the import's processor time, all of it on the thread that
also hands the writer its batches. Young collections, which find the cycles made and
dropped meanwhile, go on as usual; only the full ones wait until the last import of the
process ends. Reference counting, which frees nearly everything, is untouched.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: The oldest generation's threshold while an import runs: young collections between full
#: ones. Ten is CPython's default; this many is some 7,000,000 new objects.
HELD_THRESHOLD = 1_000

#: Imports under way in this process, and the oldest generation's threshold the first found.
_holding = 0
_found: int | None = None


@contextmanager
def full_collections_held() -> Iterator[None]:
    """Hold off full collections for the block (see the module docstring); nested and
    concurrent imports share the hold, and the last to end restores the oldest generation's
    threshold (the younger ones stay as whoever set them last left them)."""
    global _holding, _found
    if _holding == 0:
        young, middle, _found = gc.get_threshold()
        gc.set_threshold(young, middle, max(_found, HELD_THRESHOLD))
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if _holding == 0 and _found is not None:
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, _found)
            _found = None
