"""Keys of memories and questions (memory.recall_keys): grounded in the text, no model."""

from __future__ import annotations

from datetime import UTC, datetime

from langgraph.store.base import SearchItem

from memory.ranking import KNOBS
from memory.recall import score
from memory.recall_keys import (
    MemoryKeys,
    QuestionKeys,
    key_match,
    memory_keys,
    question_keys,
)

NOW = datetime(2026, 6, 10, tzinfo=UTC)


def test_a_transcript_line_is_keyed_by_its_speaker_and_the_time_it_states() -> None:
    assert memory_keys("Melanie: I ran a charity race last Saturday.") == MemoryKeys(
        "melanie", True
    )
    assert memory_keys("Jon: Rome was lovely.") == MemoryKeys("jon", False)
    # Not a transcript line: no speaker, whatever the capitalised words.
    assert memory_keys("I prefer conservative positions in NVDA") == MemoryKeys(None, False)
    # A time word in the speaker's name does not count; one in what was said does.
    assert memory_keys("Summer: nice to see you").states_time is False


def test_a_question_is_keyed_by_the_names_it_mentions_and_whether_it_asks_when() -> None:
    assert question_keys("What did Caroline research?") == QuestionKeys(
        frozenset({"caroline"}), False
    )
    assert question_keys("When did Melanie's kids go camping?") == QuestionKeys(
        frozenset({"melanie"}), True
    )
    assert question_keys("How long has Jon had his studio?").asks_when
    assert question_keys("what is my risk tolerance").count == 0


def test_the_match_is_the_share_of_the_questions_keys_the_memory_holds() -> None:
    asks = question_keys("When did Melanie run a charity race?")
    assert key_match(asks, memory_keys("Melanie: I ran one last Saturday")) == 1.0
    assert key_match(asks, memory_keys("Melanie: I love running")) == 0.5
    assert key_match(asks, memory_keys("Caroline: last week was busy")) == 0.5
    assert key_match(asks, memory_keys("Caroline: nice!")) == 0.0
    assert key_match(question_keys("what do I like"), memory_keys("Jon: dance")) == 0.0


def test_keys_reorder_near_ties_and_show_in_the_score() -> None:
    at = datetime(2026, 6, 1, tzinfo=UTC)
    said = SearchItem(("m",), "a", {"text": "Melanie: I ran a race"}, at, at, score=0.70)
    other = SearchItem(("m",), "b", {"text": "Caroline: I ran a race"}, at, at, score=0.72)
    keys = question_keys("What race did Melanie run?")
    first, second = score(said, NOW, keys=keys), score(other, NOW, keys=keys)
    assert (first.keys, second.keys) == (1.0, 0.0)
    assert first.total > second.total
    assert first.to_json()["keys"] == 1.0
    # Without keys the more relevant one ranks first, and no "keys" part is reported.
    plain = score(other, NOW)
    assert plain.keys is None and "keys" not in plain.to_json()
    assert plain.total > score(said, NOW).total
    assert 0 < KNOBS.key_weight < 0.5
