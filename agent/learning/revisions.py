"""Revisions that name only the new value ("replace it with GOOGL" after "follow META").

A correction of a ticker list whose words name none of the values it replaces refers to the
user's message before it that stated the list: what that message named, and the correction
does not keep, is what it takes out. The revision then rests on the pair of episodes: its
quote names the new values, the earlier episode the old ones, and the fact cites both, its
own first (:func:`agent.learning.discourse.replacement_stated` is the grounding check).

A removal whose object refers to that list ("got out of both", "sold them all", "sold it")
takes out what the message before named (:func:`referred`): both its tickers, all of them, or
its one ticker; it cites that message too (:func:`agent.learning.discourse.referred_stated`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from agent.learning import discourse, symbols, understanding


def replacing(
    reading: understanding.Reading, earlier: Sequence[tuple[str, str]], known: Iterable[str]
) -> tuple[understanding.Reading, str | None]:
    """``reading`` with what it replaces taken out, and the id of the earlier message that
    named it; ``(reading, None)`` when it is no such revision. ``earlier`` are the user's
    messages before it (``(episode id, text)``, oldest first)."""
    if reading.refers:
        return referred(reading, earlier, known)
    value = reading.value if isinstance(reading.value, list) else []
    if not (
        reading.correction
        and reading.attribute in discourse.LISTS
        and value
        and not reading.removed
        and not reading.whole
        and not reading.reported
        and discourse.replaces(reading.quote)
    ):
        return reading, None
    known_set = {k.upper() for k in known}
    named = {s for s, _ in symbols.tickers_in(reading.quote, known_set)}
    if not named <= set(value):
        return reading, None  # "watch TSLA, no wait, NVDA": the message names what it replaces
    for episode_id, text in reversed(earlier):
        stated = [
            r
            for r in understanding.read(text, known=known_set)
            if r.attribute == reading.attribute and not r.reported
        ]
        if stated:
            before = stated[-1].value if isinstance(stated[-1].value, list) else []
            old = tuple(str(v) for v in before if v not in value)
            return (replace(reading, removed=old), episode_id) if old else (reading, None)
    return reading, None


def referred(
    reading: understanding.Reading, earlier: Sequence[tuple[str, str]], known: Iterable[str]
) -> tuple[understanding.Reading, str | None]:
    """A removal whose object refers to the list said before (``reading.refers``) with what it
    takes out: the tickers of the last earlier message that stated ``reading``'s list, if they
    are as many as the words say ("it" one, "both" two), and that message's id; ``(reading,
    None)`` when no earlier message says which."""
    known_set = {k.upper() for k in known}
    for episode_id, text in reversed(earlier):
        stated = [
            r.value
            for r in understanding.read(text, known=known_set)
            if r.attribute == reading.attribute and not r.reported and isinstance(r.value, list)
        ]
        if not stated:
            continue
        before = tuple(str(v) for value in stated if isinstance(value, list) for v in value)
        wanted = {"it": 1, "both": 2}.get(reading.refers, len(before))
        if len(set(before)) != wanted or not before:
            return reading, None
        taken = tuple(dict.fromkeys(before))
        return replace(reading, removed=taken, refers=""), episode_id
    return reading, None
