"""Sentence views of a stored memory: each sentence of an embedded text, on its own, with its
speaker (``"Melanie: I'm off to go swimming with the kids."`` from a transcript line
``"Melanie: <several sentences>"``).

A long turn's vector is the mean of what it says, so a question about one of its sentences
finds it less well than a turn that says only that; the best cosine of the question to one of
the turn's sentences finds it again (the ranking adds it with :attr:`memory.ranking.Knobs.
view_weight`). The views' vectors are a second multivector (:data:`VIEWS`) of the SAME point
as the item, so a forget, a TTL expiry or an erasure removes them with it; it is stored on
disk as float16 with no HNSW graph (:func:`memory.store.erasing.shard_config`): never
searched, only read for the candidates of a ranked search that can still reach its page (an
exact query over their ids; :class:`memory.store.ranked.Views`). A text of one sentence has
no view: its own vector is that sentence's.

The weight (:attr:`memory.ranking.Knobs.view_weight`, 0.1) was chosen leave-one-conversation
out on the LoCoMo development split (``scripts/eval_views_weight.py``, planner recall, R@10):
each pair of conversations chose 0.1-0.2 (conv-26 held out: 0.2, R@10 0.812 -> 0.822;
conv-30: 0.2, 0.722 -> 0.765; conv-41: 0.1, 0.805 -> 0.807); over all three, 0.790 at 0 and
0.801-0.806 from 0.07 to 0.2, falling at 0.3. 0.1 is the smallest weight every choice
reached. A control that gives each memory its own text's cosine as its "view" (the same
weight, no sentence views) stays at 0.786-0.795, so the gain is the sentences'.

Cost (2-core machine shared with other benchmarks, load average 7-12 throughout, so wall
times are mostly waiting): resident memory does not grow with views (``scripts/
bench_recall.py``, 100k memories: +596 MB against +651 MB without, same hour); the 100k
ingest took 259 s against 190 s, 20k 34 s against 21 s (writing the views' vectors); a cold
700-turn ingest (``scripts/bench_ingest.py``) costs 18.0 s of CPU against 9.7 s (the
sentences are embedded too: about as many tokens again; 700 turns at that rate: 19 s of CPU,
wall 28.9 s median at load 8-9 against 31.8 s without views at load 10-12). One recall at
100k: median 139 ms (p95 1,695) against 84 ms (1,143), at 20k 31 ms (149) against 63 ms
(540): within what the load moves it. A ranked search reads the views of the candidates that
can still reach its page only: about 24 of a limit-10 recall's 118 candidates (figures in
docs/memory-lifecycle.md, "The query path").

Qdrant Edge shards and qdrant-client collections created since keep views (an older shard is
given them when opened, :meth:`memory.store.edge.EdgeStore.setup`); Postgres+pgvector items
have none, and get no view part.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: The multivector of an item's sentence views, beside ``text`` (:data:`memory.store.common.
#: VECTOR`).
VIEWS = "views"
#: At most this many views per text (a pasted document is not split into hundreds).
MAX_VIEWS = 16
#: A view shorter than this many characters (after its speaker) is joined to the next one:
#: "Yes!" or "Wow." alone says nothing a question asks about.
MIN_CHARS = 12

_SPEAKER = re.compile(r"^([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,3}):\s+(\S.*)$", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def sentences(text: str) -> list[str]:
    """``text`` split after each ``.``, ``!`` or ``?`` followed by a space; pieces shorter
    than :data:`MIN_CHARS` joined to the next."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    merged: list[str] = []
    carry = ""
    for piece in pieces:
        carry = f"{carry} {piece}".strip()
        if len(carry) >= MIN_CHARS:
            merged.append(carry)
            carry = ""
    if carry:
        if merged:
            merged[-1] = f"{merged[-1]} {carry}"
        else:
            merged.append(carry)
    return merged


def sentence_views(text: str) -> list[str]:
    """The views of one embedded text: each sentence, prefixed with ``"<Speaker>: "`` when
    the text is a transcript line; none when the text is one sentence (module docstring)."""
    match = _SPEAKER.match(text.strip())
    speaker, body = (match.group(1), match.group(2)) if match else (None, text)
    found = sentences(body)
    if len(found) < 2:
        return []
    return [f"{speaker}: {s}" if speaker else s for s in found[:MAX_VIEWS]]


def views_of(texts: Sequence[str]) -> list[str]:
    """The views of an item's embedded texts, each once, in order."""
    return list(dict.fromkeys(v for t in texts for v in sentence_views(t)))


__all__ = ["MAX_VIEWS", "MIN_CHARS", "VIEWS", "sentence_views", "sentences", "views_of"]
