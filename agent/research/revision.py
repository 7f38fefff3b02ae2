"""A rejection's feedback as concrete edits of the next revision, and the check that each
edit shows.

:func:`requests_of` reads one piece of feedback as requests: the length (``shorter`` or
``longer``), a topic to leave out (``drop``) or to cover in more depth (``more``), and topics
the analyst cannot cover at all (it has daily prices only). :func:`edits_of` folds every
feedback so far into the :class:`Edits` the reporter applies (a later request on the same
topic wins). :func:`judge` then compares the revision with the draft it replaces
(:func:`outline` of each) and gives each request its status: ``addressed`` only when the
change is visible, ``not possible`` when it cannot be met, ``already`` when the previous
draft already did it. The critic re-runs the same comparison on the draft alone
(:func:`unverified`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["shorter", "longer", "drop", "more"]
Status = Literal["addressed", "not possible", "already", "superseded", "not done"]

#: Topics a reviewer can name, with the words that name them in feedback.
TOPIC_WORDS: Mapping[str, str] = {
    "rsi": r"\brsi\b|relative strength index|overbought|oversold",
    "moving averages": r"moving[- ]averages?|\bsmas?\b|\b(?:50|200)[- ]day|crossover|\btrend",
    "technicals": r"technical|indicator",
    "momentum": r"momentum",
    "peers": r"\bpeers?\b|competitor|\bcompar",
    "risk": r"\brisk|volatil|drawdown|downside",
    "metrics": r"metrics|numbers table|key figures",
    "valuation": r"valuation|\bp/?e\b|earnings|revenue|fundamental|dividend|\bnews\b|"
    r"price target|balance sheet|cash flow|\bmargins?\b",
}
#: What a broad topic stands for.
COVERS: Mapping[str, tuple[str, ...]] = {"technicals": ("rsi", "moving averages")}
#: Topics the analyst has no data for: a request for more of them cannot be met.
NO_DATA = frozenset({"valuation"})
#: Topics the conventions keep in every report: they cannot be left out.
KEPT = frozenset({"risk"})

_DROP = re.compile(
    r"\b(skip|drop|remove|omit|leave (?:out|off)|cut|without|no need|lose|exclude|"
    r"(?:do not|don't|dont|doesn't|does not) (?:need|want|care)|not interested|get rid|"
    r"less|fewer|no more|stop|no|useless|pointless|unnecessary|irrelevant|not needed)\b",
    re.IGNORECASE,
)
_MORE = re.compile(
    r"\b(more|add|include|expand|deeper|detail|focus|tell|explain|show|bring back|compare|"
    r"want|need|cover|discuss|elaborate|about|keep|what of|how about)\b",
    re.IGNORECASE,
)
_SHORTER = re.compile(
    r"too long|shorter|shorten|\bbrief|concise|too much|less detail|cut (?:it )?down|"
    r"\btl;?dr|keep it short|wordy|verbose|too many words",
    re.IGNORECASE,
)
_LONGER = re.compile(
    r"too short|longer|more detail|in[- ]depth|\bexpand|elaborate|too brief|too thin|"
    r"fuller|more thorough",
    re.IGNORECASE,
)
_CLAUSES = re.compile(r"[.;!?\n]+|\s[-\u2013\u2014]+\s|,|\bbut\b|\bjust\b", re.IGNORECASE)


@dataclass(frozen=True)
class Request:
    """One change a piece of feedback asks for (``topic`` is empty for a length request)."""

    action: Action
    topic: str = ""

    @property
    def label(self) -> str:
        if self.action in ("shorter", "longer"):
            return self.action
        name = "RSI" if self.topic == "rsi" else self.topic
        if self.topic in COVERS:
            name += f" ({' and '.join('RSI' if t == 'rsi' else t for t in COVERS[self.topic])})"
        return f"leave out {name}" if self.action == "drop" else f"more on {name}"


def requests_of(feedback: str) -> list[Request]:
    """What one piece of feedback asks for, clause by clause, in order, once each: a clause
    naming a topic asks to leave it out when it says so ("skip", "don't need", "less"), for
    more of it when it asks ("add", "more", "tell me about"), and for nothing otherwise."""
    found: list[Request] = []
    for clause in _CLAUSES.split(feedback):
        topics = [t for t, words in TOPIC_WORDS.items() if re.search(words, clause, re.I)]
        dropping = bool(_DROP.search(clause))
        if not topics:
            if _SHORTER.search(clause):
                found.append(Request("shorter"))
            elif _LONGER.search(clause):
                found.append(Request("longer"))
            continue
        if _SHORTER.search(clause) and not dropping:
            dropping = True  # "less detail on peers" asks to leave them out
        if not dropping and not _MORE.search(clause) and not _LONGER.search(clause):
            continue  # "the risk section is fine" asks for nothing
        for topic in topics:
            found.append(Request("drop" if dropping else "more", topic))
    covered = {(r.action, t) for r in found for t in COVERS.get(r.topic, ())}
    return list(dict.fromkeys(r for r in found if (r.action, r.topic) not in covered))


@dataclass(frozen=True)
class Edits:
    """What the next revision changes: its length, the topics it leaves out and the topics
    it covers in more depth; ``requests`` keeps each feedback's requests, by feedback."""

    length: Literal["shorter", "longer"] | None = None
    drop: frozenset[str] = frozenset()
    more: frozenset[str] = frozenset()
    requests: tuple[tuple[Request, ...], ...] = ()
    #: The 1-based feedback that set the length.
    length_note: int = 0

    @property
    def empty(self) -> bool:
        return self.length is None and not self.drop and not self.more

    def style(self, style: str) -> str:
        """The report style for this revision: the length asked for, else ``style``."""
        if self.length is None:
            return style
        return "brief" if self.length == "shorter" else "detailed"

    def labels(self) -> list[str]:
        """Each request that changes the revision, once, as a short phrase."""
        made = [r for asked in self.requests for r in asked if r.topic not in NO_DATA]
        return list(dict.fromkeys(r.label for r in made))


def edits_of(feedback: Sequence[str]) -> Edits:
    """Every feedback so far as one set of edits; a later request on the same topic (or the
    length) overrides an earlier one. Topics with no data and kept topics change nothing."""
    length: Literal["shorter", "longer"] | None = None
    length_note = 0
    wanted: dict[str, Action] = {}
    per_note = []
    for n, note in enumerate(feedback, start=1):
        asked = requests_of(note)
        per_note.append(tuple(asked))
        for r in asked:
            if r.action == "shorter" or r.action == "longer":
                length, length_note = r.action, n
                continue
            for topic in COVERS.get(r.topic, (r.topic,)):
                wanted[topic] = r.action
    drop = {t for t, a in wanted.items() if a == "drop" and t not in KEPT | NO_DATA}
    more = {t for t, a in wanted.items() if a == "more" and t not in NO_DATA}
    return Edits(length, frozenset(drop), frozenset(more), tuple(per_note), length_note)


# -- what a draft visibly shows ----------------------------------------------------------------

#: How each topic shows in a rendered report (searched outside notes, sources and memory).
SHOWN: Mapping[str, str] = {
    "rsi": r"\bRSI\b",
    "moving averages": r"moving average|moving-average|\b(?:50|200)-day\b|crossover|### Trend|"
    r"\btrend\b|\| Trend \|",
    "momentum": r"### Momentum",
}
#: Where the depth of a topic is measured: sections and ``###`` subsections by name (their
#: words), and ``peer rows``, the rows of the peer table.
DEPTH: Mapping[str, tuple[str, ...]] = {
    "risk": ("Risk factors", "Risk", "Drawdown", "Market sensitivity"),
    "peers": ("peer rows", "Peer notes", "Relative performance"),
    "rsi": ("Momentum", "Signals"),
    "moving averages": ("Trend", "Signals"),
    "momentum": ("Momentum",),
    "metrics": ("Key metrics",),
}
#: A row of the peer table (not its header or rule).
_PEER_ROW = re.compile(r"^\| (?!Ticker \||-)")
#: Sections that are about the report rather than the stock: never searched for topics.
_ASIDE = ("Revision notes", "Memory context", "Sources")
#: A sentence saying what was left out at the reviewer's request names it on purpose.
LEFT_OUT = "left out at your request"


@dataclass(frozen=True)
class Outline:
    """What a reader sees of a report: its words (revision notes excluded), the words under
    each section and subsection, and which topics of :data:`SHOWN` it shows."""

    words: int
    parts: Mapping[str, int] = field(default_factory=dict)
    shown: frozenset[str] = frozenset()

    def shows(self, topic: str) -> bool:
        return topic in self.shown

    def depth(self, topic: str) -> int:
        return sum(self.parts.get(name, 0) for name in DEPTH.get(topic, ()))

    def to_json(self) -> dict[str, Any]:
        return {"words": self.words, "parts": dict(self.parts), "shown": sorted(self.shown)}

    @classmethod
    def of_json(cls, data: Mapping[str, Any]) -> Outline:
        return cls(int(data["words"]), dict(data["parts"]), frozenset(data["shown"]))


def word_count(text: str) -> int:
    """Words a reader reads: runs of letters or digits (table rules and pipes are not)."""
    return len(re.findall(r"[A-Za-z0-9][\w.,%+'/-]*", text))


def outline(markdown: str) -> Outline:
    """The :class:`Outline` of a rendered report."""
    parts: dict[str, int] = {}
    body: list[str] = []
    total = 0
    section = sub = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            section, sub = line[3:].strip(), ""
        elif line.startswith("### "):
            sub = line[4:].strip()
        if section == "Revision notes":
            continue
        n = word_count(line)
        total += n
        parts[section] = parts.get(section, 0) + n
        if section == "Peer comparison" and _PEER_ROW.match(line):
            parts["peer rows"] = parts.get("peer rows", 0) + 1
        if sub:
            parts[sub] = parts.get(sub, 0) + n
        if section not in _ASIDE and LEFT_OUT not in line.lower():
            body.append(line)
    text = "\n".join(body)
    shown = frozenset(t for t, pattern in SHOWN.items() if re.search(pattern, text, re.I))
    return Outline(total, parts, shown)


# -- judging a revision -------------------------------------------------------------------------


def changed(request: Request, before: Outline, after: Outline) -> bool:
    """Whether ``after`` visibly makes the change ``request`` asks of ``before``."""
    if request.action == "shorter":
        return after.words < before.words
    if request.action == "longer":
        return after.words > before.words
    topics = COVERS.get(request.topic, (request.topic,))
    if request.action == "drop":
        return all(not after.shows(t) for t in topics) and any(before.shows(t) for t in topics)
    return any(after.depth(t) > before.depth(t) for t in topics)


def holds(request: Request, current: Outline) -> bool:
    """Whether ``current`` still shows an edit made in an earlier revision."""
    if request.action == "drop":
        return all(not current.shows(t) for t in COVERS.get(request.topic, (request.topic,)))
    return True


def status_of(
    request: Request,
    before: Outline | None,
    after: Outline,
    edits: Edits,
    prior: Status | None = None,
) -> Status:
    """The honest status of one request in the revision ``after`` of ``before``: a request
    of the newest feedback is compared with ``before``; one of earlier feedback keeps the
    ``prior`` status its own revision gave it while the change still shows."""
    if request.topic in NO_DATA:
        return "already" if request.action == "drop" else "not possible"
    if request.topic in KEPT and request.action == "drop":
        return "not possible"
    if request.action in ("shorter", "longer") and edits.length != request.action:
        return "superseded"
    final = edits.drop if request.action == "drop" else edits.more
    if request.topic and any(t not in final for t in COVERS.get(request.topic, (request.topic,))):
        return "superseded"
    if prior is not None:
        return prior if prior != "addressed" or holds(request, after) else "not done"
    if before is None:
        return "not done"
    if changed(request, before, after):
        return "addressed"
    if request.action == "drop" and holds(request, after):
        return "already"
    return "not done"


def statuses(
    edits: Edits,
    before: Outline | None,
    after: Outline,
    prior: Mapping[tuple[int, str, str], Status] | None = None,
) -> list[list[tuple[Request, Status]]]:
    """Each feedback's requests with their status; ``prior`` holds the statuses the previous
    revision gave the earlier feedback, by (feedback number, action, topic)."""
    last = len(edits.requests)
    prior = prior or {}
    out = []
    for n, asked in enumerate(edits.requests, start=1):
        out.append(
            [
                (
                    r,
                    status_of(
                        r,
                        before,
                        after,
                        edits,
                        None if n == last else prior.get((n, r.action, r.topic), "not done"),
                    ),
                )
                for r in asked
            ]
        )
    return out


def prior_statuses(revised: Mapping[str, Any] | None) -> dict[tuple[int, str, str], Status]:
    """The statuses a draft's revision record gave its requests, for the next revision."""
    return {
        (int(r["note"]), str(r["action"]), str(r.get("topic", ""))): r["status"]
        for r in (revised or {}).get("requests", [])
    }


def unverified(revised: Mapping[str, Any] | None, markdown: str) -> Iterable[str]:
    """The critic's check: each request a draft's revision record marks ``addressed`` must
    show when the draft's own Markdown is compared with the previous draft's outline."""
    if not revised:
        return []
    before = Outline.of_json(revised["previous"])
    after = outline(markdown)
    last = max((int(r["note"]) for r in revised["requests"]), default=0)
    problems = []
    for r in revised["requests"]:
        if r["status"] != "addressed":
            continue
        request = Request(r["action"], r.get("topic", ""))
        ok = changed(request, before, after) if r["note"] == last else holds(request, after)
        if not ok:
            problems.append(
                f"Revision note {r['note']} says it addressed '{request.label}', but the "
                "revision does not show that change against the previous draft."
            )
    return problems
