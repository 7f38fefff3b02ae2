"""The sentence views of a stored text (memory.store.views)."""

from __future__ import annotations

from memory.store.views import MAX_VIEWS, sentence_views, views_of


def test_each_sentence_of_a_transcript_line_gets_its_speaker() -> None:
    text = "Melanie: Hi! I'm off to go swimming with the kids. It was so much fun."
    assert sentence_views(text) == [
        "Melanie: Hi! I'm off to go swimming with the kids.",
        "Melanie: It was so much fun.",
    ]


def test_a_text_of_one_sentence_has_no_view() -> None:
    assert sentence_views("Caroline: Yes! I went to the support group yesterday.") == []
    assert sentence_views("I like dividend stocks.") == []


def test_text_without_a_speaker_is_split_as_it_is() -> None:
    assert sentence_views("I like dividend stocks. I hate leverage of any kind.") == [
        "I like dividend stocks.",
        "I hate leverage of any kind.",
    ]


def test_views_are_bounded_and_listed_once() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    assert len(sentence_views(long)) == MAX_VIEWS
    twice = "A long first sentence here. A long second sentence here."
    assert views_of([twice, twice]) == sentence_views(twice)
