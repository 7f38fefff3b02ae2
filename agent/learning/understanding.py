"""Understanding what a message states about the user, offline.

:func:`read` turns one message into :class:`Reading` s: a profile attribute, its canonical
value (validated by :mod:`agent.learning.profile`) and the sentence that states it, verbatim.
It reads the message sentence by sentence:

- a sentence that asks, supposes ("if ..."), hedges ("maybe", "not decided", "we'll see") or
  is sarcastic ("yeah right") states nothing; a hedge in one comma clause that names a value
  of its own drops only that clause;
- a part whose subject is someone else is either that person's view of the user ("my
  advisor says I'm aggressive": the reading is marked ``reported``, a candidate), or about
  that person ("my friend is an aggressive trader": nothing); after "but" the user speaks
  again ("... but honestly moderate fits me better");
- what is left is read by the detectors of :mod:`agent.learning.phrasing`, each of which needs
  a cue that the words are about the user (a self-reference, a key such as "risk:", or an
  instruction), so talk about the market ("high risk to buy at these levels") states nothing;
- a correction marker ("no wait", "scratch that", "I misspoke", "correction:") makes the value
  after it win over the one before, and a bare value after it ("no sorry, 14") corrects the
  attribute stated last, in this message or in ``recent`` ones.

Every value is checked by the registry's ``supports``: a reading's quote always states it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pydantic import JsonValue

from agent.errors import InvalidProfileValueError
from agent.learning import phrasing, profile
from agent.learning.quotes import plain


@dataclass(frozen=True)
class Reading:
    """One attribute a message states: the canonical value and the sentence saying it."""

    attribute: str
    value: JsonValue
    quote: str
    correction: bool = False
    reported: bool = False


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+|(?<=[a-z])\s*!+\s*")
_SARCASM = re.compile(
    r"\b(?:yeah right|yea right|oh sure|sure sure|as if|not!|/s\b|lol as if|yeah,? sure,? "
    r"totally|(?:right|sure),? because|oh great|oh totally)"
    r"|^\W*(?:sure|right|oh yeah|yeah)\b,.*\b(?:lol|lmao|haha|that's why)\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|also|hey|ok|okay|well)[\s,]+)*"
    r"(?:what|how|why|which|when|where|who|whom|whose|should|shall|is|are|am|was|were|does|"
    r"did|do(?!\s+not|n't)|has|have(?!\s+(?:a|an|some|my))|isn't|aren't|wouldn't|shouldn't)\b",
    re.IGNORECASE,
)
_POLITE = re.compile(r"^(?:please\s+)?(?:can|could|would|will)\s+you\b", re.IGNORECASE)
_HYPOTHETICAL = re.compile(
    # "if you need it" offers, it supposes nothing about the user.
    r"\b(?:if(?!\s+(?:you|u)\s+(?:ever\s+)?(?:need|want|like|have to|must)\b)|unless|suppose|supposing|assuming|imagine|hypothetically|in case|say that|"
    r"let's say|lets say|were i|had i|whether)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|mite|i may|may be|could be|not sure|unsure|"
    r"undecided|not decided|haven't decided|have not decided|not yet decided|don't know|"
    r"do not know|dont know|dunno|no idea|no clue|we'll see|we will see|will see|toying|"
    r"thinking (?:about|of)|considering|contemplating|someday|some day|one day|sometime|"
    r"at some point|i guess|i suppose|i think(?!\s+in\b)|i wonder|wondering|tempted|not certain|"
    r"who knows|idk|if at all|doubt|hard to say|it depends|depends on|on the fence|torn between|"
    r"not convinced|can't decide|cannot decide|still deciding|figuring out|figure out|"
    r"debating|mulling)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:actually|correction|i meant|i mean|meant to say|i misspoke|misspoke|sorry|"
    r"no wait|wait|scratch that|strike that|make that|make it|change (?:that|it) to|typo|"
    r"my bad|wrong|let me correct|on second thought|i was wrong|oops|whoops|fat fingers?|"
    r"mistyped|typed wrong|nope|(?<![\w'])(?:no|nah)(?=\s*[,.!:-])|not \w+,\s*(?:it's|its|"
    r"but|i meant))\b",
    re.IGNORECASE,
)
_CORRECTED_TAIL = re.compile(
    r"(?:,\s*|\s+)(?:and\s+)?(?:not(?!\s+(?:allowed|permitted|able|supposed|built|made|cut|going|gonna)\b)|rather than|"
    r"instead of)\s+[^,;]*$",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no|nothing|neither|nor|none|hardly|without)\b|n't\b|\bcannot\b",
    re.IGNORECASE,
)
_PEOPLE = (
    r"(?:friend|friends|husband|wife|partner|spouse|brother|sister|dad|father|mum|mom|mother|"
    r"son|daughter|kids?|children|parents?|boss|colleague|co-?worker|neighbou?r|"
    r"advis[eo]rs?|banker|broker|planner|accountant|manager|uncle|aunt|cousin|boyfriend|"
    r"girlfriend|family|fianc[ée]e?|grandpa|grandma|grandfather|grandmother|in-laws?|"
    r"mother-in-law|father-in-law|therapist|coach|teacher|bank|brother-in-law|sister-in-law)"
)
_REPORTING = (
    r"(?:says|said|say|thinks|thought|think|insists|insisted|believes|believed|reckons|"
    r"reckoned|claims|claimed|told me|tells me|tell me|wrote(?: down)?|writes|put(?: me)? down|"
    r"noted|recorded|rated|rates|labels|labelled|labeled|called|calls|classified|classifies|"
    r"considers|suggests|suggested|recommends|recommended|wants|figures|feels|felt|argues|"
    r"keeps saying|has me(?: down)? as|had me(?: down)? as|marked|puts me|put me|scored)"
)
_FILLER = r"(?:(?:well|so|and|also|oh|btw|fyi|fwiw|plus|honestly|apparently|but)[\s,]+)*"
_REPORTED = re.compile(
    rf"^{_FILLER}(?:(?:my|our|the|his|her|their|a|an)\s+(?:[\w-]+\s+){{0,3}}?"
    rf"|(?:he|she|they|everyone|everybody|someone|somebody|people|others)\s+){_REPORTING}\b"
    r"|\baccording to\b",
    re.IGNORECASE,
)
_OTHER_PERSON = re.compile(
    rf"^{_FILLER}(?:(?:my|our|his|her|their)\s+{_PEOPLE}(?!\s+and\s+i\b)|he|she|they|"
    r"he's|she's|they're)\s+(?!and\s+i\b)(?:[\w'-]+\s+){0,2}?"
    r"(?:is|'s|was|are|were|has|have|likes?|loves?|prefers?|wants?|invests?|trades?|"
    r"holds?|owns?|works?|buys?|goes|went)\b",
    re.IGNORECASE,
)
_OWN_AFTER = re.compile(
    r"(?:[,;]\s*(?:and\s+|but\s+|while\s+|whereas\s+)?|\s+(?:and|while|whereas)\s+)"
    r"(?=(?:i'm|i am|im|i|my|me)\b)",
    re.I,
)
_BUT = re.compile(r",?\s+\bbut\b\s+|\s+-+\s+but\s+", re.IGNORECASE)


def read(text: str, *, known: Iterable[str] = (), recent: Sequence[str] = ()) -> list[Reading]:
    """What ``text`` states about its author; ``recent`` names the attributes stated in the
    messages before it (oldest first), which a bare correction ("no sorry, 14") refers to."""
    words = plain(text or "")
    if not words.strip() or _SARCASM.search(words):
        return []
    known_set = {k.upper() for k in known}
    stated = list(recent)
    out: list[Reading] = []
    for sentence in _sentences(text):
        found = _sentence(sentence, known_set, stated)
        for reading in found:
            # A later value of the same attribute in this message wins ("X. No, scratch that: Y").
            # A list grows instead, unless the user corrects it.
            replaces = profile.attribute(reading.attribute).merge == "replace"
            if reading.correction or (
                replaces and any(r.attribute == reading.attribute for r in out)
            ):
                out = [r for r in out if r.attribute != reading.attribute or r.reported]
                reading = replace(reading, correction=True)
            out.append(reading)
            stated.append(reading.attribute)
    own = {r.attribute for r in out if not r.reported}
    # The user's own word wins over what someone else says in the same message.
    return [r for r in out if not (r.reported and r.attribute in own)]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _sentence(sentence: str, known: set[str], recent: Sequence[str]) -> list[Reading]:
    words = plain(sentence)
    if _is_question(words):
        return []
    # A condition may still state a limit ("I'd sell if it fell more than 20%"), nothing else.
    only = phrasing.CONDITIONAL if _HYPOTHETICAL.search(words) else None
    words = _without_hedges(words)
    if not words.strip():
        return []
    readings: list[Reading] = []
    for part, reported in _voices(words):
        readings += [
            r
            for r in _part(sentence, part, known, recent, reported=reported)
            if only is None or r.attribute in only
        ]
    return readings


def _is_question(words: str) -> bool:
    stripped = words.strip()
    if _POLITE.match(stripped):
        return False
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


def _without_hedges(words: str) -> str:
    """``words`` without the comma clauses that hedge; all of it hedged when a hedging clause
    names nothing of its own ("..., I don't know yet")."""
    clauses = re.split(r"(?<=,)\s*|\s+-{1,2}\s+|\s+(?=but\b)", words)
    kept = []
    for clause in clauses:
        hedge = _HEDGE.search(clause)
        if hedge is None:
            kept.append(clause)
            continue
        rest = _HEDGE.sub(" ", clause)
        if len(re.findall(r"[A-Za-z0-9]+", rest)) < 3:
            return ""
    return " ".join(kept)


def _voices(words: str) -> list[tuple[str, bool]]:
    """The parts of a sentence with whether each is someone else's view of the user; parts
    about another person are left out."""
    out: list[tuple[str, bool]] = []
    reported = False
    for part in _BUT.split(words):
        if _REPORTED.search(part):
            reported = True
        elif _OTHER_PERSON.search(part):
            # "He is aggressive, I'm moderate": the user speaks again after the comma.
            mine = _OWN_AFTER.search(part)
            if mine is None:
                continue
            part, reported = part[mine.end() :], False
        elif out:
            reported = False  # "..., but honestly moderate fits me better": the user again
        if re.match(r"^\s*that'?s (?:him|her|them)\b", part, re.IGNORECASE):
            continue
        out.append((part, reported))
    return out


def _part(
    sentence: str, part: str, known: set[str], recent: Sequence[str], *, reported: bool
) -> list[Reading]:
    # "..., not 10" / "... rather than 5 years": the value being replaced is not read.
    tail = _CORRECTED_TAIL.search(part)
    correcting = tail is not None
    if tail is not None:
        part = part[: tail.start()]
    markers = list(_CORRECTION.finditer(part))
    found = [f for f in phrasing.detect(part, known) if not _negated(part, f[0], f[2])]
    bare: list[tuple[str, object]] = []
    if markers:
        # A correction marker: what follows it wins; a bare value after it ("no sorry, 14")
        # corrects the attribute stated before it, here or in an earlier message.
        marker = markers[-1]
        after = [f for f in found if f[2] >= marker.start()]
        named = {a for a, _, _ in after}
        before = [f for f in found if f[2] < marker.start() and f[0] not in named]
        if not after:
            targets = list(dict.fromkeys([*(a for a, _, _ in reversed(before)), *reversed(recent)]))
            for attribute in targets:
                raw = phrasing.bare_value(attribute, part[marker.end() :], known)
                if raw is not None and _reading(attribute, raw, sentence) is not None:
                    bare.append((attribute, raw))
                    break
        corrected = named | {a for a, _ in bare}
        found = after + [f for f in before if f[0] not in corrected]
        correcting = correcting or bool(corrected)
    else:
        corrected = set()
    readings: list[Reading] = []
    for attribute, raw in [*bare, *((a, r) for a, r, _ in found)]:
        reading = _reading(attribute, raw, sentence)
        if reading is not None and all(r.attribute != attribute for r in readings):
            readings.append(
                replace(
                    reading,
                    correction=correcting and (attribute in corrected or tail is not None),
                    reported=reported,
                )
            )
    return readings


#: Negations that state a value rather than deny it ("I won't need the money for 10 years").
_AFFIRMING = re.compile(
    r"\b(?:won't|will not|don't|do not|not)\s+(?:need|touch|be touching|be needing|withdraw|"
    r"sell)\b|\bnot\s+(?:only|just)\b",
    re.IGNORECASE,
)


def _negated(part: str, attribute: str, at: int) -> bool:
    """Whether a negation in the value's comma clause, before it, denies it ("I'm not a
    conservative investor"); exclusions and loss limits are stated with negations."""
    if attribute in phrasing.NEGATIVE_FORMS:
        return False
    start = max(part.rfind(",", 0, at), part.rfind(";", 0, at), -1) + 1
    return bool(_NEGATION.search(_AFFIRMING.sub(" ", part[start : at + 1])))


def _reading(attribute: str, raw: object, sentence: str) -> Reading | None:
    """The reading of ``raw`` for ``attribute``, if the registry accepts it and ``sentence``
    states it."""
    try:
        value = profile.validate(attribute, raw)
    except InvalidProfileValueError:
        return None
    if not profile.attribute(attribute).supports(value, sentence):
        return None
    return Reading(attribute, value, sentence)
