"""The collector's full collections held off while an import runs (memory.facts.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from memory.facts.collector import HELD_THRESHOLD, full_collections_held


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    found = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*found)


def test_full_collections_wait_while_held_and_come_back_after(
    thresholds: tuple[int, int, int],
) -> None:
    with full_collections_held():
        assert gc.get_threshold() == (700, 10, HELD_THRESHOLD)
    assert gc.get_threshold() == thresholds


def test_nested_holds_end_with_the_last_and_keep_younger_thresholds_set_meanwhile(
    thresholds: tuple[int, int, int],
) -> None:
    with full_collections_held():
        with full_collections_held():
            gc.set_threshold(5_000, 20, HELD_THRESHOLD)  # someone tunes the young ones
        assert gc.get_threshold()[2] == HELD_THRESHOLD  # the outer hold still holds
    assert gc.get_threshold() == (5_000, 20, 10)


def test_a_failure_inside_still_restores_the_threshold(
    thresholds: tuple[int, int, int],
) -> None:
    with pytest.raises(RuntimeError), full_collections_held():
        raise RuntimeError("the import failed")
    assert gc.get_threshold() == thresholds
