"""Keys a memory is found by beyond its words: who said it, and whether it states a time.

A question often names what its answer is keyed by rather than the words the answer uses:
"What did Caroline research?" is answered by a line Caroline said ("Researching adoption
agencies"), which the name alone hardly finds (it is in half the transcript), and "When did
Melanie run a charity race?" by the line that says when ("I ran a charity race last
Saturday"). The ranking (:mod:`memory.ranking`) therefore adds a bounded part to a candidate's
score: the share of the question's keys (:class:`QuestionKeys`) the memory's keys
(:class:`MemoryKeys`) satisfy, weighted by :attr:`memory.ranking.Knobs.key_weight`.

The keys are grounded and derived, never stored apart: :func:`memory_keys` reads them from the
memory's own text each time it is ranked (a speaker is the ``"Name:"`` a transcript line
starts with; a time is a time word the text holds), so nothing is invented, every key points
to the memory it was read from, and forgetting the memory forgets its keys (there is nothing
else to delete; tests/integration/test_recall_keys_forget.py checks it with a canary).

The key weight was chosen leave-one-conversation-out on the LoCoMo development split
(``scripts/eval_recall.py``): 0.1 was best on every pair of conversations among 0.05-0.3, and
the third conversation gained with it each time (figures in the commit that set it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A transcript line: "Name: what they said" (a name of one to three capitalised words).
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
#: A question that asks for a time: "When did ...", "How long ...", "What year ...".
_ASKS_WHEN = re.compile(
    r"^\s*(?:when|how long|(?:what|which) (?:year|month|day|date|time|week))\b", re.IGNORECASE
)
#: Words that state a time: relative ("yesterday", "two weeks ago", "last Friday"), calendar
#: (months, weekdays, years) and spans ("since", "week", "month").
_TIME_WORDS = re.compile(
    r"\b(?:yesterday|today|tomorrow|tonight|ago|last|next|week|weekend|month|year|since|"
    r"recently|(?:19|20)\d\d|january|february|march|april|june|july|august|september|"
    r"october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)
#: A capitalised word, a candidate proper name.
_CAPITALISED = re.compile(r"\b[A-Z][a-z]\w*\b")


@dataclass(frozen=True)
class MemoryKeys:
    """What a memory is keyed by: its speaker (lower case; None: not a transcript line) and
    whether it states a time."""

    speaker: str | None
    states_time: bool


@dataclass(frozen=True)
class QuestionKeys:
    """What a question is keyed by: the capitalised names it mentions (lower case, its first
    word left out) and whether it asks for a time."""

    names: frozenset[str]
    asks_when: bool

    @property
    def count(self) -> int:
        """How many kinds of key the question has (0: keys cannot reorder anything)."""
        return (1 if self.names else 0) + (1 if self.asks_when else 0)


def memory_keys(text: str) -> MemoryKeys:
    """The keys of a memory's text. Not cached: a cache would keep a forgotten memory's text
    in the process (two regular expressions over a candidate pool cost microseconds)."""
    speaker = _SPEAKER.match(text)
    body = text[speaker.end() :] if speaker else text
    return MemoryKeys(speaker.group(1).lower() if speaker else None, bool(_TIME_WORDS.search(body)))


def question_keys(question: str) -> QuestionKeys:
    """The keys of a question ("What did Caroline research?": the name ``caroline``)."""
    words = _CAPITALISED.findall(question)
    first = question.split(maxsplit=1)[0] if question.split() else ""
    names = frozenset(w.lower() for w in words if not (w == first and question.startswith(w)))
    return QuestionKeys(names, bool(_ASKS_WHEN.search(question)))


def key_match(question: QuestionKeys, memory: MemoryKeys) -> float:
    """The share of the question's kinds of key the memory satisfies, in [0, 1]: said by a
    person the question names, and stating a time when the question asks when. A memory that
    is no transcript line cannot match a name (its speaker is unknown)."""
    if not question.count:
        return 0.0
    held = 0
    if question.names and memory.speaker is not None:
        held += any(part in question.names for part in memory.speaker.split())
    if question.asks_when and memory.states_time:
        held += 1
    return held / question.count


__all__ = [
    "MemoryKeys",
    "QuestionKeys",
    "key_match",
    "memory_keys",
    "question_keys",
]
