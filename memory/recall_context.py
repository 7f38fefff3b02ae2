"""Context keys: a dialogue turn is also found through the turn it answers.

A turn of a conversation is often elliptical ("Yes! It was amazing", "Luna and Oliver!"): what
it is about is in the turn before it ("What are your pets' names?"), which is what a question
matches. So a batch of dialogue memories stored together is read as a transcript
(:func:`link_replies`): each turn keeps the key of the turn that answered it (``reply``, a
pointer, no text of it), and every ranked query search (:mod:`memory.store.ranked`, through
:class:`Lift`) brings the reply of the most relevant candidates the store found into the
candidates, ranked by the better of its own relevance and :data:`REPLY_WEIGHT` times the
relevance of the turn it answers: recall, ``analyst memory search``, LangMem's tools and
Studio's store search alike.

Nothing is copied from one memory into another: the only thing kept is the reply's key (a
digest, :func:`memory.recall.memory_key`). Forgetting the reply leaves a key that names
nothing (recall skips it); forgetting the turn it answers removes the only way the reply was
lifted by it (it is no longer a candidate). tests/integration/test_recall_context_forget.py
checks both with a canary.

Cost cap: the replies of the :data:`PARENTS_PER_RESULT` ``× limit`` most relevant candidates
only (20 for a limit of 10), those not among the candidates read by key in one ``abatch``; no
embedding, no second search. On the LoCoMo development split the replies of the 10 most
relevant candidates reach the same recall as those of all 64.

:data:`REPLY_WEIGHT` was chosen leave-one-conversation-out on the LoCoMo development split
(``scripts/eval_recall.py``, R@10 of conv-26 / conv-30 / conv-41): 0.8 gave 0.792 / 0.715 /
0.799, 0.9 gave 0.812 / 0.722 / 0.805, 1.0 gave 0.788 / 0.746 / 0.790, against 0.738 / 0.715 /
0.797 without replies. 0.9 is best (by questions) on every pair of conversations, and the
third conversation gains with the value its two chose each time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise
from typing import Any

from langgraph.store.base import GetOp, Item, SearchItem

from memory.ranking import KNOBS, parse_at
from memory.store.scoring import ScoredItem

#: The share of the relevance of the turn it answers that a reply is ranked with (when its
#: own is lower): :attr:`memory.ranking.Knobs.reply_weight`.
REPLY_WEIGHT = KNOBS.reply_weight
#: The kind of memory that is a turn of a conversation.
DIALOGUE = "dialogue"
#: The value field that holds the key of the turn that answered this one.
REPLY = "reply"
#: Two consecutive dialogue memories of one batch are one exchange when said at most this far
#: apart (a session of a conversation); further apart, a new conversation began.
SAME_EXCHANGE = timedelta(hours=6)
#: Whose replies a search reads: those of this many candidates per result asked for, the
#: most relevant first (:attr:`memory.ranking.Knobs.replies_per_result`; on the LoCoMo
#: development split the replies of the 10 most relevant reach the recall of all 64's).
PARENTS_PER_RESULT = KNOBS.replies_per_result


def _answers(first: Mapping[str, Any], then: Mapping[str, Any]) -> bool:
    """Whether ``then``, stored right after ``first`` in one batch, is its reply: both are
    dialogue turns said (both with a time) at most :data:`SAME_EXCHANGE` apart."""
    if first.get("kind") != DIALOGUE or then.get("kind") != DIALOGUE:
        return False
    said, answered = parse_at(first.get("at")), parse_at(then.get("at"))
    if said is None or answered is None:
        return False
    return timedelta(0) <= answered - said <= SAME_EXCHANGE


def link_replies(
    prepared: Sequence[tuple[str, dict[str, Any]]],
) -> list[tuple[str, dict[str, Any]]]:
    """The ``(key, value)`` pairs of one batch, each dialogue turn answered by the next one
    holding that one's key under :data:`REPLY` (values are changed in place)."""
    for (_, value), (next_key, next_value) in pairwise(prepared):
        if _answers(value, next_value):
            value[REPLY] = next_key
    return list(prepared)


def _relevance(item: Item) -> float:
    score = item.score if isinstance(item, SearchItem) else None
    return score if score is not None and score > 0 else 0.0


def _replies_of(items: Sequence[Item], parents: int) -> dict[str, float]:
    """The key of the reply of each of the ``parents`` most relevant candidates, with the
    relevance it is lifted to (the best of the turns it answers)."""
    lifted: dict[str, float] = {}
    for item in sorted(items, key=_relevance, reverse=True)[:parents]:
        reply = item.value.get(REPLY)
        if isinstance(reply, str) and _relevance(item) > 0:
            lifted[reply] = max(lifted.get(reply, 0.0), REPLY_WEIGHT * _relevance(item))
    return lifted


def _as_candidate(item: Item, relevance: float, views: bool) -> SearchItem:
    """``item`` ranked with ``relevance``; where the search's candidates carry sentence views
    (:mod:`memory.store.views`), its lifted relevance is its view part too (a reply read by
    key has no view of its own), so it is ranked as a candidate of that relevance. Views the
    store has not read yet stay unread: reading them later raises the part to the better of
    the two (:meth:`~memory.store.scoring.ScoredItem.seen`)."""
    if not views:
        return SearchItem(
            item.namespace, item.key, item.value, item.created_at, item.updated_at, relevance
        )
    own = getattr(item, "view", None)
    return ScoredItem(
        item.namespace,
        item.key,
        item.value,
        item.created_at,
        item.updated_at,
        relevance,
        dense=getattr(item, "dense", None),
        view=relevance if own is None else max(float(own), relevance),
        unread=getattr(item, "unread", None),
    )


@dataclass(frozen=True)
class Lift:
    """What one query search's candidates (for ``limit`` results) lift: the key of each reply
    of the most relevant of them (:data:`PARENTS_PER_RESULT`) with the relevance it is lifted
    to, and the reads of those replies not among the candidates (in their parents' namespace,
    which the search was allowed to read)."""

    lifted: dict[str, float]
    reads: list[GetOp]

    @classmethod
    def of(cls, items: Sequence[Item], limit: int) -> Lift | None:
        """The lift of a search's candidates, or ``None`` when none of them has a reply."""
        parents = sorted(items, key=_relevance, reverse=True)[: PARENTS_PER_RESULT * limit]
        lifted: dict[str, float] = {}
        namespaces: dict[str, tuple[str, ...]] = {}
        for item in parents:
            reply = item.value.get(REPLY)
            if isinstance(reply, str) and _relevance(item) > 0:
                lifted[reply] = max(lifted.get(reply, 0.0), REPLY_WEIGHT * _relevance(item))
                namespaces.setdefault(reply, item.namespace)
        if not lifted:
            return None
        found = {item.key for item in items}
        reads = [
            GetOp(namespaces[key], key, refresh_ttl=False) for key in lifted if key not in found
        ]
        return cls(lifted, reads)

    def apply(self, items: Sequence[Item], read: Sequence[Any]) -> list[Item]:
        """``items`` with the replies read (``read``: the results of :attr:`reads`) added, each
        candidate ranked by the better of its own relevance and its lift; a reply that names
        no stored memory (forgotten) is skipped."""
        merged: list[Item] = []
        views = any(getattr(item, "view", None) is not None for item in items)
        for item in [*items, *(r for r in read if isinstance(r, Item))]:
            lift = self.lifted.get(item.key, 0.0)
            merged.append(_as_candidate(item, lift, views) if lift > _relevance(item) else item)
        return merged


__all__ = [
    "DIALOGUE",
    "PARENTS_PER_RESULT",
    "REPLY",
    "REPLY_WEIGHT",
    "SAME_EXCHANGE",
    "Lift",
    "link_replies",
]
