"""The offline pool re-ranking of scripts/eval_pool_parts.py: at weight 0 a pool keeps the
planner's order (so its figures are eval_recall's), at weight 1 the part alone orders it; a
question's topic is what it asks about, without its frame or the people it names."""

from __future__ import annotations

import pytest

from scripts.eval_pool_parts import recall_at_10, reranked, topic_of


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("What activities does Melanie partake in?", "activities partake"),
        ("What books has Melanie read?", "books read"),
        ("Which cities has Jon visited?", "cities visited"),
        ("What are Melanie's pets' names?", "pets' names"),
        ("Who?", "Who?"),
    ],
)
def test_topic_drops_the_frame_and_the_names(question: str, topic: str) -> None:
    assert topic_of(question) == topic


def test_weight_zero_keeps_the_planners_order_and_one_follows_the_part() -> None:
    question = {"pool": [["a", 0.9], ["b", 0.8], ["c", 0.7]], "evidence": ["c"]}
    part = [0.1, 0.2, 0.9]
    assert reranked(question, part, 0.0) == ["a", "b", "c"]
    assert reranked(question, part, 1.0) == ["c", "b", "a"]


def test_recall_at_10_counts_the_first_ten_only() -> None:
    order = [str(i) for i in range(12)]
    assert recall_at_10(order, ["0", "11"]) == 0.5
