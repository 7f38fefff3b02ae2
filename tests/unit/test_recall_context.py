"""Which turns a batch links as replies (memory.recall_context.link_replies): pure, no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.recall import NewMemory
from memory.recall_context import REPLY, SAME_EXCHANGE, link_replies

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def put(text: str, kind: str = "dialogue", at: datetime | None = SAID) -> tuple[str, dict]:
    return NewMemory(text, kind=kind, at=at).put()


def test_each_turn_keeps_the_key_of_the_turn_after_it() -> None:
    batch = link_replies([put("A: Where did you go?"), put("B: Rome!"), put("A: Nice.")])
    assert batch[0][1][REPLY] == batch[1][0]
    assert batch[1][1][REPLY] == batch[2][0]
    assert REPLY not in batch[2][1]


def test_no_link_across_conversations_kinds_or_unknown_times() -> None:
    later = SAID + SAME_EXCHANGE + timedelta(minutes=1)
    batch = link_replies(
        [
            put("A: Where did you go?"),
            put("B: Rome!", at=later),  # another conversation
            put("B: I like Rome.", kind="note", at=later),  # not a turn
            put("A: And then?", at=None),  # no time: cannot tell
            put("B: Paris.", at=None),
        ]
    )
    assert all(REPLY not in value for _, value in batch)


def test_a_reply_is_never_earlier_than_the_turn_it_answers() -> None:
    batch = link_replies([put("A: Hi.", at=SAID), put("B: Hi!", at=SAID - timedelta(hours=1))])
    assert REPLY not in batch[0][1]
