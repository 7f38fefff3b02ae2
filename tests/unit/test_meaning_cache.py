"""The meaning reader keeps the vectors of the clauses it embedded, keyed by the user's own
words, only until a forget: :func:`agent.learning.meaning.forget_clauses` (called by every
forget, ``agent.app.forgetting.apply``) leaves none of them in the process."""

from __future__ import annotations

from agent.learning import meaning

SAID = "Honestly I could never sleep if my savings dropped by a third in a month."


def kept() -> list[str]:
    return list(meaning._MODEL._cache)


def test_forgetting_drops_every_clause_vector_kept_in_the_process() -> None:
    assert meaning.scores([SAID])
    assert SAID in kept(), kept()  # the clause was embedded and kept
    meaning.forget_clauses()
    assert kept() == []
    assert meaning.scores([SAID]) and kept() == [SAID]  # read again, embedded afresh
