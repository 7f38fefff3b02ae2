"""The parts of a hybrid search's score (memory/store/scoring.py), on plain numbers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from memory.store.common import SPARSE, VECTOR
from memory.store.scoring import best_cosines, fused_hits, idf, term_share, term_weight


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_best_cosines_is_each_candidates_closest_vector() -> None:
    query = [1.0, 2.0, 0.5]
    one = [[0.5, 1.0, 3.0]]
    two = [[-1.0, 0.0, 0.0], [2.0, 4.1, 1.0]]  # a multivector: its best field counts
    got = best_cosines(query, [one, two, [], [[0.0, 0.0, 0.0]]])
    assert got[0] == pytest.approx(cosine(query, one[0]), abs=1e-9)
    assert got[1] == pytest.approx(cosine(query, two[1]), abs=1e-9)
    assert got[2] is None and got[3] is None  # no vector, or only a zero vector
    assert best_cosines([0.0, 0.0, 0.0], [one]) == [None]
    assert best_cosines(query, []) == []


def test_a_rare_term_counts_more_than_a_common_one() -> None:
    """Of "caroline" (1 item of 100) and "went" (60 of 100), the item holding the rare one
    has the larger lexical part; without weights every term counts the same."""
    rare, common = 11, 22
    weights = [idf(100, 1), idf(100, 60)]
    with_rare = term_share([rare, common], [rare, 5], weights)
    with_common = term_share([rare, common], [common, 5], weights)
    assert with_rare > 0.5 > with_common
    assert with_rare + with_common == pytest.approx(1.0)
    assert with_rare == pytest.approx(
        term_weight(weights[0]) / (term_weight(weights[0]) + term_weight(weights[1]))
    )
    assert term_share([rare, common], [rare]) == term_share([rare, common], [common]) == 0.5
    assert term_share([rare, common], [rare, common, 3], weights) == pytest.approx(1.0)
    assert term_share([], [rare], []) == 0.0


def test_fused_hits_score_every_point_with_its_parts() -> None:
    point = SimpleNamespace(
        payload={"key": "k"},
        score=0.2,
        vector={VECTOR: [[1.0, 0.0]], SPARSE: SimpleNamespace(indices=[7, 9])},
    )
    bare = SimpleNamespace(payload=None, score=0.0, vector=None)
    hit, empty = fused_hits([point, bare], [1.0, 1.0], [7, 8], [idf(10, 1), idf(10, 1)])
    assert hit.dense == pytest.approx(1 / math.sqrt(2)) and hit.lexical == pytest.approx(0.5)
    assert hit.fused == pytest.approx(1.0)  # 0.2 = 2/RRF_K: first in both rankings
    assert empty.payload == {} and empty.dense is None and empty.lexical == 0.0
