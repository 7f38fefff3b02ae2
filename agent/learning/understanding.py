"""Understanding what a message states about the user, offline.

:func:`read` turns one message into :class:`Reading` s: a profile attribute, its canonical
value (validated by :mod:`agent.learning.profile`) and the sentence that states it, verbatim.
It reads the message sentence by sentence:

- a sentence that asks, supposes ("if ..."), hedges ("maybe", "not decided", "we'll see") or
  is sarcastic ("yeah right") states nothing; a hedge in one comma clause that names a value
  of its own drops only that clause; a statement before the question a sentence ends with
  ("I'm conservative, but do you think ...?") or before the comma clause of a condition
  ("I'm 34, and if it drops 30% I'd buy more") still stands, and "I think" or "I'd say"
  before a self-description ("I think I'm moderate") is no hedge;
- a holding named by a pronoun ("Apple had a rough quarter. I own a chunk of it.") is the
  one company the sentence before names, quoted from that sentence;
- a part whose subject is someone else is either that person's view of the user ("my advisor
  says I'm aggressive", "says I should be conservative", "said my tolerance is moderate": the
  reading is marked ``reported``, a candidate), or about that person ("my friend is an
  aggressive trader": nothing). Whose words they are is read from the grammar, not from a list
  of verbs (:mod:`agent.learning.voices`): someone else as the subject and the user as the
  object of what they say, think, assume or are sure of ("my brother assumes I'm ...", "a guy
  on a forum told me my ...") is a view of the user whatever the verb; another person's value
  named by its noun ("my wife's horizon is 5 years") is theirs, and a "mine" after it is the
  user's value of the same noun. After "but" (one that does not set a value aside, as in "not
  income but growth") or a conjunction that turns to another subject ("I'm 41 and my planner
  says ...") the voice changes, and a last clause that adopts or concedes the claim ("..., and
  honestly that's fair", "and I agree with him") makes it the user's;
- what is left is read by the detectors of :mod:`agent.learning.phrasing`, each of which needs
  a cue that the words are about the user (a self-reference, a key such as "risk:", or an
  instruction), so talk about the market ("high risk to buy at these levels") states nothing;
- a correction marker (:mod:`agent.learning.repairs`: "no wait", "scratch that", "I
  misspoke", "correction:", and the repairs people type: "not X but Y", "not 40 - 20", "I said
  X but ...", "er", "*word", "lower that to", "srry ment", "I make mistake"), or a message
  that opens on a bare value ("sixty-two, I had a birthday"),
  makes the value after it win over the one before, and a bare value after it ("no sorry,
  14") corrects the attribute stated last, in this message or in ``recent`` ones, or the one
  the words after the marker name by its noun ("put risk as conservative").

Every value is checked by the registry's ``supports``: a reading's quote always states it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import JsonValue

from agent.errors import InvalidProfileValueError
from agent.learning import (
    discourse,
    employment,
    meaning,
    moods,
    phrasing,
    profile,
    pronouns,
    quantities,
    repairs,
    spelling,
    voices,
)
from agent.learning.quotes import plain


@dataclass(frozen=True)
class Reading:
    """One attribute a message states: the canonical value and the sentence saying it."""

    attribute: str
    value: JsonValue
    quote: str
    correction: bool = False
    reported: bool = False
    #: Who said it, when ``reported`` ("wife", "risk quiz").
    source: str = ""
    #: A list edit: the tickers it takes out, and whether ``value`` is now the whole list.
    removed: tuple[str, ...] = ()
    whole: bool = False
    #: A removal that refers to the list said before ("sold them both"): "it", "both" or
    #: "all"; :func:`agent.learning.revisions.referred` reads what it takes out.
    refers: str = ""
    #: The user withdraws the attribute's value and gives none ("scratch that, I don't know
    #: my horizon yet"); ``value`` is then None.
    withdrawn: bool = False


#: Where a sentence ends; not after an abbreviation of an address or a title ("Co. Cork").
_SENTENCE = re.compile(
    r"(?<=[.!?;])(?<!\s(?:Co|St|Rd|Dr|Mr|Ms|Jr|Sr|Mt)\.)(?<!\s(?:Ave|Apt|Mrs)\.)\s+|\n+|"
    r"(?<=[a-z])\s*!+\s*"
)
_NEGATION = re.compile(
    r"\b(?:not|never|no|nothing|neither|nor|none|hardly|without)\b|n't\b|\bcannot\b",
    re.IGNORECASE,
)


def read(
    text: str,
    *,
    known: Iterable[str] = (),
    recent: Sequence[str] = (),
    held: Mapping[str, object] | None = None,
) -> list[Reading]:
    """What ``text`` states about its author; ``recent`` names the attributes stated in the
    messages before it (oldest first), which a bare correction ("no sorry, 14") refers to;
    ``held`` is the stored profile (attribute -> value), which a list edit that names no list
    ("drop META") is read against. A misspelt word is read as the word it misspells
    (:mod:`agent.learning.spelling`), and quoted as typed."""
    respelt = spelling.respell(text or "")
    found = _read(respelt.text, known=known, recent=recent, held=held)
    return [replace(r, quote=respelt.original(r.quote)) for r in found]


def _read(
    text: str, *, known: Iterable[str], recent: Sequence[str], held: Mapping[str, object] | None
) -> list[Reading]:
    words = plain(text or "")
    if not words.strip() or moods.SARCASM.search(words):
        return []
    known_set = {k.upper() for k in known}
    meaning.prepare([plain(s) for s in _sentences(text)], known_set)
    stated = list(recent)
    out: list[Reading] = []
    pending, at, before = -1, 0, -1
    for sentence in _sentences(text):
        start = text.find(sentence, at)
        at = max(at, start + len(sentence))
        # "no, let me take that back. moderate.": a marker that named nothing reaches on.
        span = text[pending : start + len(sentence)] if 0 <= pending < start else sentence
        found = _sentence(span, known_set, stated, held)
        if not found and (more := repairs.continued(plain(sentence), stated, known_set)):
            found = [r for r in [_reading(*more, sentence)] if r is not None]  # "Ditto for X."
        found = _not_kept(found)
        if 0 <= before < start:
            found += _held_by_pronoun(
                text[before : start + len(sentence)],
                sentence,
                known_set,
                {r.attribute for r in found},
            )
        before = start
        marked = not found and start >= 0 and repairs.CORRECTION.search(plain(sentence)) is not None
        pending = start if marked and pending < 0 else pending if marked else -1
        if any(r.reported for r in found) and voices.adopted_after(plain(sentence)):
            # "my wife would say I'm moderate, and honestly that's fair": the user's own now.
            found = [replace(r, reported=False, source="") for r in found]
        gone = None if found else discourse.withdrawn(plain(sentence))
        if gone is not None:
            out = [r for r in out if r.attribute != gone or r.reported]
            found = [Reading(gone, None, sentence, correction=True, withdrawn=True)]
        if not found and discourse.adopts(plain(sentence)):
            # "My planner says 12 years. And I agree": the claim before is now the user's.
            out = [_adopted(r, sentence, text) if r.reported else r for r in out]
        for reading in found:
            out, reading = _one_edit(out, reading, text)
            # A later value of the same attribute in this message wins ("X. No, scratch that: Y").
            # A list grows instead, unless the user corrects it.
            replaces = profile.attribute(reading.attribute).merge == "replace"
            if reading.correction or (
                replaces and any(r.attribute == reading.attribute for r in out)
            ):
                out = [r for r in out if r.attribute != reading.attribute or r.reported]
                reading = replace(reading, correction=True)
            out = _grown(out, reading, text)
            stated.append(reading.attribute)
    own = {r.attribute for r in out if not r.reported}
    # The user's own word wins over what someone else says in the same message.
    return [r for r in out if not (r.reported and r.attribute in own)]


def _held_by_pronoun(span: str, sentence: str, known: set[str], read: set[str]) -> list[Reading]:
    """An item of a ticker list (not in ``read`` already) ``sentence`` names by a pronoun for
    the one company the sentence before it names (:mod:`agent.learning.pronouns`), quoted
    from the sentence before, so the quote names it."""
    if (resolved := pronouns.resolved(span, sentence, known)) is None:
        return []
    symbol, said = resolved
    found = [
        r
        for r in _sentence(said, known, [], None)
        if r.attribute in pronouns.LISTS and r.attribute not in read
    ]
    return [
        replace(r, quote=span)
        for r in found
        if r.value == [symbol] and profile.attribute(r.attribute).supports(r.value, span)
    ]


def _grown(out: list[Reading], reading: Reading, text: str) -> list[Reading]:
    """``out`` with ``reading`` added: a list said again in the same message ("Follow Amazon.
    Nvidia as well.") is one reading of both, quoted from the first to the second."""

    def adds(r: Reading) -> bool:
        plain_list = isinstance(r.value, list) and not (r.correction or r.reported or r.removed)
        return plain_list and not r.whole and profile.attribute(r.attribute).merge == "union"

    same = [r for r in out if r.attribute == reading.attribute and adds(r)]
    start = text.find(same[-1].quote) if same else -1
    end = text.find(reading.quote, max(start, 0))
    if not adds(reading) or start < 0 or end < 0:
        return [*out, reading]
    first = same[-1].value if isinstance(same[-1].value, list) else []
    added = reading.value if isinstance(reading.value, list) else []
    value = [*first, *(v for v in added if v not in first)]
    merged = replace(same[-1], value=value, quote=text[start : end + len(reading.quote)])
    return [merged if r is same[-1] else r for r in out]


def _one_edit(out: list[Reading], reading: Reading, text: str) -> tuple[list[Reading], Reading]:
    """``out`` and ``reading`` with the user's earlier edits of ``reading``'s list in this
    message folded into it, when either edits the list ("nvm tesla. and amazon. only
    nvidia"): a message makes one edit of a list. A whole list wins; a later edit or
    correction keeps what the earlier ones took out, and is quoted from the first to it."""
    mine = [r for r in out if r.attribute == reading.attribute and not r.reported]
    edits = reading.removed or reading.whole or any(r.removed or r.whole for r in mine)
    if reading.attribute not in discourse.LISTS or reading.reported or not mine or not edits:
        return out, reading
    rest = [r for r in out if r not in mine]
    start = text.find(mine[0].quote)
    end = text.find(reading.quote, max(start, 0))
    if reading.whole or start < 0 or end < 0:
        return rest, reading
    added = reading.value if isinstance(reading.value, list) else []
    values = [] if reading.correction else [v for r in mine for v in _listed_values(r)]
    kept = [v for v in values if v not in reading.removed]
    value = [*kept, *(v for v in added if v not in kept)]
    removed = dict.fromkeys([*(t for r in mine for t in r.removed), *reading.removed])
    return rest, replace(
        reading,
        value=value,
        removed=tuple(t for t in removed if t not in value),
        whole=any(r.whole for r in mine),
        correction=reading.correction or any(r.correction for r in mine),
        quote=text[start : end + len(reading.quote)],
    )


def _listed_values(reading: Reading) -> list[JsonValue]:
    return reading.value if isinstance(reading.value, list) else []


def _not_kept(found: list[Reading]) -> list[Reading]:
    """``found`` without a holding or a watch of what the same words rule out ("keep Meta out
    of my portfolio" names a portfolio, it holds nothing)."""
    out = {
        t
        for r in found
        if r.attribute == "excluded_tickers" and not r.reported and isinstance(r.value, list)
        for t in r.value
    }
    return [
        r
        for r in found
        if r.attribute not in ("holdings", "watchlist")
        or not isinstance(r.value, list)
        or not r.value
        or not set(r.value) <= out
    ]


def _adopted(reading: Reading, sentence: str, text: str) -> Reading:
    """``reading`` made the user's own by ``sentence``: its quote runs on to the adoption."""
    start = text.find(reading.quote)
    end = text.find(sentence, max(start, 0))
    if start < 0 or end < 0:
        return reading
    return replace(reading, quote=text[start : end + len(sentence)], reported=False, source="")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _sentence(
    sentence: str, known: set[str], recent: Sequence[str], held: Mapping[str, object] | None
) -> list[Reading]:
    words = plain(sentence)
    if moods.is_question(words):
        # "I'm pretty conservative, but do you think Nvidia is overvalued?": the statement
        # before a question that follows it is still said.
        asked = moods.before_question(words)
        return [] if asked is None else _sentence(sentence[: len(asked)], known, recent, held)
    supposing = moods.HYPOTHETICAL.search(words)
    # "25%, no, let's say fifteen": "let's say" names a value, it opens no clause of its own.
    opens = supposing is not None and not re.match(r"let'?s say|say that", supposing[0], re.I)
    cut = moods.before_condition(words, supposing.start()) if supposing and opens else None
    if cut is not None:
        # "I'm 34, and if the market drops 30% I'd buy more": the clause before the condition
        # stands on its own; the condition limits only what follows it.
        head = _sentence(sentence[: cut[0]], known, recent, held)
        stated = [*recent, *(r.attribute for r in head)]
        return head + _sentence(sentence[cut[1] :], known, stated, held)
    # A condition may still state a limit ("I'd sell if it fell more than 20%"), nothing else.
    only = phrasing.CONDITIONAL if supposing is not None else None
    # Doubting what someone else says of the user leaves their claim a claim ("my girlfriend
    # says I'm aggressive, but idk about that"): only the hedging clause goes.
    reports = any(voices.REPORTED.search(p) for p in voices.NEW_VOICE.split(words))
    words = moods.without_hedges(words, whole=not reports)
    if not words.strip():
        return []
    readings: list[Reading] = []
    for part, source, elided in voices.voices(words):
        stated = [*recent, *(r.attribute for r in readings)]
        mine = _part(sentence, part, known, stated, held, source=source)
        claimed = [*elided, *(r.attribute for r in readings if r.reported)]
        if not source and not mine and claimed:
            # "my husband says 10 years, but for me it's 20", "my wife's horizon is 5 years,
            # mine's 25": the user's own value of what was claimed, named bare after it.
            mine = _answered(sentence, part, claimed, known)
        readings += [r for r in mine if only is None or r.attribute in only]
    levels = [r for r in readings if r.attribute == "risk_tolerance" and not r.reported]
    if len({r.value for r in levels}) > 1 and not any(r.correction for r in levels):
        # "I'm in the middle: some swings are fine, but I don't want to gamble": levels that
        # differ in one sentence, neither correcting the other, meet at moderate.
        between = _reading("risk_tolerance", "moderate", sentence)
        readings = [r for r in readings if r not in levels] + ([between] if between else [])
    return readings


#: The user speaking of themselves.
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|i'd|me|my|mine|myself)\b", re.IGNORECASE)


def answered(text: str, claimed: Sequence[str], *, known: Iterable[str] = ()) -> list[Reading]:
    """The user's own values, in ``text``, of the attributes someone else's claim in the
    message before named (``claimed``), given bare in the first person ("My dad thinks I
    should keep my drawdown under 10%." / "He's old-fashioned, I'm fine with 25."): each a
    correction of that claim. Nothing when ``text`` asks, supposes or hedges."""
    known_set = {k.upper() for k in known}
    out: list[Reading] = []
    for sentence in _sentences(spelling.respell(text or "").text):
        words = plain(sentence)
        if moods.is_question(words) or moods.HYPOTHETICAL.search(words):
            continue
        if not moods.without_hedges(words).strip():
            continue
        for part, source, _ in voices.voices(words):
            if not source and _FIRST_PERSON.search(part):
                out += _answered(sentence, part, claimed, known_set)
    return out


def _answered(sentence: str, part: str, claimed: Sequence[str], known: set[str]) -> list[Reading]:
    """The user's own value, in ``part``, of an attribute someone else's claim before it
    named (``claimed``): a correction of that claim."""
    bare = _bare(sentence, part, [], list(reversed(claimed)), known, marked=True)
    readings = [_reading(attribute, raw, sentence) for attribute, raw in bare]
    return [replace(r, correction=True) for r in readings if r is not None]


#: Someone else's description of the user ("says I'm too cautious for my age", "says I
#: should be conservative").
_SELF_DESCRIBED = re.compile(
    r"\s*(?:that\s+)?(?:i'm|i am|im|i was|i'm being|i am being|i should be|i ought to be|"
    r"i need to be|i must be|i'd be|i would be|we should be|we ought to be|we need to be)\s+(?:a\s+|an\s+)?(?:\w+\s+){0,2}?"
    rf"(?:{'|'.join(sorted(profile.attribute('risk_tolerance').vocabulary, key=len, reverse=True))})\b",
    re.IGNORECASE,
)
#: Someone else's claim naming the attribute it is about ("said my tolerance is moderate",
#: "noted my max drawdown as 20%").
_CLAIMED_NOUN = re.compile(
    rf"\s*(?:that\s+)?(?:my|me)\s+(?:\w+\s+)?({'|'.join(f'(?:{n})' for n in discourse.NOUNS.values())})"
    r"\s*(?:is|was|'s|are|as|at|to|of|should be|would be|ought to be|:)(?!\w)",
    re.IGNORECASE,
)
#: What a revision without a marker may name bare ("so GBP again", "moderate these days").
_REVISABLE = frozenset(
    {"base_currency", "risk_tolerance", "report_style", "goal", "income_preference"}
)


def _part(
    sentence: str,
    part: str,
    known: set[str],
    recent: Sequence[str],
    held: Mapping[str, object] | None,
    *,
    source: str,
) -> list[Reading]:
    edits = [] if source else discourse.list_edits(part, known, recent, held)
    said = part
    # "..., not 10" / "... rather than 5 years": the value being replaced is not read.
    tail = repairs.CORRECTED_TAIL.search(part)
    correcting = tail is not None
    if tail is not None and not edits:
        part = part[: tail.start()]
    markers = list(repairs.CORRECTION.finditer(part))
    found = _found(part, known, edits)
    bare: list[tuple[str, object]] = []
    if not source and not found:
        bare = _renamed(sentence, part, known)
    opens = _opens_on_value(part, recent, source, bool(found or edits))
    claim = voices.REPORTED.search(part) if source and not found else None
    if claim is not None:
        bare = _claimed(sentence, part[claim.end() :], known)
        corrected = set()
    elif markers or (not found and not edits and (repairs.REVISION.search(part) or opens)):
        # A correction marker: what follows it wins; a bare value after it ("no sorry, 14")
        # corrects the attribute stated before it, here or in an earlier message (or stored).
        # A revision without a marker ("moved back, so GBP again") names a bare value too.
        start = markers[-1].start() if markers else 0
        after = [f for f in found if f[2] >= start]
        named = {a for a, _, _ in after}
        before = [f for f in found if f[2] < start and f[0] not in named]
        # "sorry, John Smith, typo": the value may follow an earlier marker than the last.
        # With values after the marker, a bare one can only correct what came before it
        # ("report in USD, er, I mean GBP, I moved to Leeds").
        earlier = () if after else recent
        gap = part[markers[-1].end() : min(f[2] for f in after)] if markers and after else ""
        if 0 < len(re.findall(r"[A-Za-z0-9]+", gap)) <= 3:
            # "not income but growth - I'm 29": a bare value right after the marker corrects
            # the value before even when the message goes on with other values.
            bare = _bare(sentence, gap, before, recent, known, marked=True)
        elif gap and before:
            # "CHF, oh wait, no, I moved to Lyon so it's euros now, and my horizon is 15": the
            # words between the marker and the next value revise a value said before it.
            bare = _bare(sentence, gap, before, (), known, marked=True)
        for tail_words in [part[m.end() :] for m in reversed(markers)] or [part]:
            if bare or (after and not before):
                break
            bare = _bare(
                sentence, tail_words, before, earlier, known, marked=bool(markers) or opens
            )
        lead = part[: markers[0].start()] if markers and not found else ""
        if not bare and re.search(r"\d", lead) and len(re.findall(r"[A-Za-z0-9]+", lead)) <= 4:
            # "no 14 years, sorry fat fingers": the number before the apology.
            bare = _bare(sentence, lead, before, earlier, known, marked=True)
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
                    reported=bool(source),
                    source=source,
                )
            )
    readings = _swapped(_edited(readings, edits, sentence, held), said, sentence, held)
    return _without_removed(readings, part, held)


def _renamed(sentence: str, part: str, known: set[str]) -> list[tuple[str, object]]:
    """ "I moved! new address is 48 Mill Road, ...": a new value of the attribute named."""
    renamed = repairs.NEW_VALUE.search(part)
    if renamed is None:
        return []
    nouns = discourse.NOUNS.items()
    which = [a for a, noun in nouns if re.fullmatch(noun, renamed[1], re.IGNORECASE)]
    return _bare(sentence, part[renamed.end() :], [], which[:1], known, marked=True)


def _opens_on_value(part: str, recent: Sequence[str], source: str, read: bool) -> bool:
    """ "sixty-two, I had a birthday": a message (nothing else ``read`` in it) opening on a
    bare value revises as a marker does."""
    return bool(recent) and not source and not read and repairs.LEAD_VALUE.match(part) is not None


def _claimed(sentence: str, said: str, known: set[str]) -> list[tuple[str, object]]:
    """The value someone else's claim ``said`` (the words after "says") names bare: of the
    attribute it names ("my tolerance is moderate"), or a word of an enumeration ("says
    moderate", "says I should be conservative")."""
    named = _CLAIMED_NOUN.match(said)
    if named is not None:
        nouns = discourse.NOUNS.items()
        which = [a for a, noun in nouns if re.fullmatch(noun, named[1], re.IGNORECASE)]
        return _bare(sentence, said[named.end() :], [], which[:1], known, marked=True)
    if len(re.findall(r"[A-Za-z0-9]+", said)) <= 3 or _SELF_DESCRIBED.match(said):
        return _bare(sentence, said, [], sorted(_REVISABLE), known, marked=False)
    # What they say of the user, in the user's own person ("... that I can't handle a
    # drawdown over 20%"), is read as the user's words would be.
    return [(attribute, raw) for attribute, raw, _ in _found(said, known, [])]


def _found(part: str, known: set[str], edits: Sequence[discourse.ListEdit]) -> list[phrasing.Found]:
    """What the rules read in ``part``, then what its other clauses say by their meaning
    (:mod:`agent.learning.meaning`) of attributes no rule or list edit named, in order."""
    found = [
        f
        for f in phrasing.detect(part, known)
        if not _negated(part, f[0], f[2])
        and not (f[0] == "employer" and _PLACE.search(part[: f[2]]))
    ]
    skip = {f[0] for f in found} | {e.attribute for e in edits}
    taken = [f[2] for f in found]
    found = sorted([*found, *meaning.detect(part, known, skip, taken)], key=lambda f: f[2])
    return employment.without_employer(found, part, known)


def _bare(
    sentence: str,
    tail: str,
    before: Sequence[phrasing.Found],
    recent: Sequence[str],
    known: set[str],
    *,
    marked: bool,
) -> list[tuple[str, object]]:
    """The first attribute stated before (here, then earlier) that ``tail`` names a bare
    value of; without a correction marker only a value no other words could be taken for
    (a currency, a word of an enumeration): not a number, a name or a ticker list."""
    # "put risk as conservative": an attribute the corrected words name by its noun first.
    nouns = discourse.NOUNS.items()
    named = [a for a, n in nouns if marked and re.search(rf"\b(?:{n})\b", tail, re.IGNORECASE)]
    targets = list(dict.fromkeys([*named, *(a for a, _, _ in reversed(before)), *reversed(recent)]))
    # "36 actually, not 38": the value being replaced is not the bare value; a dash between
    # clauses ends one as a comma does ("no, 17 - I typed it wrong").
    tail = re.sub(r"\s+[-\u2013\u2014]+\s+", ", ", _NOT_THIS.sub(" ", _COMPARED.sub(r"\1", tail)))
    if marked and len(re.findall(r"[A-Za-z0-9]+", tail)) <= 3:
        # "no, let me take that back. moderate.": a word of one enumeration says which.
        targets += [a for a in sorted(_REVISABLE) if a not in targets and a != "base_currency"]
    for attribute in targets:
        if not marked and attribute not in _REVISABLE:
            continue
        # "sorry, I used to, I'm at Meta now": the employer is no pronoun.
        words = _PRONOUN.sub(" ", tail) if attribute == "employer" else tail
        raw = repairs.bare_value(attribute, words, known)
        if raw is None and attribute in _BARE_TEXT:
            match = _BARE_TEXT[attribute].search(tail)
            raw = None if match is None else match.group(0).strip(" ,.")
        if isinstance(raw, str) and attribute in _NUMERIC:
            raw = quantities.number(raw) or raw  # "make it twelve"
        if raw is not None and _reading(attribute, raw, sentence) is not None:
            return [(attribute, raw)]
    return []


#: Words before a place that is no employer ("I moved to Leeds last year").
_PLACE = re.compile(
    r"\b(?:moved|moving|move|relocated|relocating|live|living|lived|based|born|grew up)\s+"
    r"(?:back\s+)?(?:to|in|out to|over to)\s+$",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"(?<![\w'])I(?:'m|'ve|'d|'ll)?(?![\w'])")
_NOT_THIS = re.compile(r"\b(?:not|rather than|instead of)\s+[^,;.]*", re.IGNORECASE)
#: A value compared with the one set aside: "closer to a decade than two", "more like 20
#: than 30" (the value after "than" is not the one meant).
_COMPARED = re.compile(
    r"(\b(?:closer|nearer)(?: to)?\s+[^,;.]+?|\bmore like\s+[^,;.]+?)\s+than\s+[^,;.]*", re.I
)
_NUMERIC = frozenset({"horizon_years", "age", "max_drawdown_pct"})
#: A full name or an address standing alone after a correction marker ("sorry, John
#: Smith", "it's 12 Elm Street, Springfield IL 62701").
_BARE_TEXT = {
    "full_name": re.compile(
        r"(?<![\w'])(?-i:[A-Z][a-z][\w'.-]*(?:\s+[A-Z][\w'.-]*){1,4})(?![\w'])"
    ),
    "address": re.compile(r"(?<![\w'])(?-i:\d+[A-Za-z]?,?\s+[A-Z][\w'.-]*(?:,?\s+[\w'.-]+){1,10})"),
}


#: The sector lists a removal cue edits (for an exclusion, "cut out tobacco" adds it).
_SECTOR_LISTS = ("sectors_of_interest",)


def _swapped(
    readings: list[Reading], part: str, sentence: str, held: Mapping[str, object] | None
) -> list[Reading]:
    """``readings`` with the sector swaps of ``part`` applied ("swap energy for healthcare"):
    the stored list that holds what goes out loses it and gains what comes in."""
    for attribute in _SECTOR_LISTS:
        vocabulary = profile.attribute(attribute).vocabulary
        words = "|".join(re.escape(w) for w in sorted(vocabulary, key=len, reverse=True))
        for gone_words, into_words in discourse.swapped_words(part, words):
            gone, into = _listed(attribute, gone_words), _listed(attribute, into_words)
            mine = [r for r in readings if r.attribute == attribute]
            if not (gone and into) or not (mine or discourse.holds(held, attribute, gone)):
                continue
            before = [v for r in mine for v in (r.value if isinstance(r.value, list) else [])]
            value = [*(v for v in before if v not in gone), *(v for v in into if v not in before)]
            if not profile.attribute(attribute).supports(value, sentence):
                continue
            readings = [r for r in readings if r.attribute != attribute]
            readings.append(Reading(attribute, value, sentence, correction=True, removed=gone))
    return readings


def _listed(attribute: str, words: Sequence[str]) -> tuple[str, ...]:
    """The canonical values of ``attribute`` that ``words`` name."""
    values = []
    for word in words:
        try:
            valid = profile.validate(attribute, [word])
        except InvalidProfileValueError:
            continue
        values += [str(v) for v in valid] if isinstance(valid, list) else []
    return tuple(dict.fromkeys(values))


def _without_removed(
    readings: list[Reading], part: str, held: Mapping[str, object] | None
) -> list[Reading]:
    """Sector lists without the sectors ``part`` takes out ("actually drop healthcare, add
    semiconductors"): they are the reading's ``removed``."""
    out = []
    for reading in readings:
        if reading.attribute not in _SECTOR_LISTS or not isinstance(reading.value, list):
            out.append(replace(reading, **repairs.set_aside(reading, part)))  # "not X, it's Y"
            continue
        vocabulary = profile.attribute(reading.attribute).vocabulary
        words = discourse.removed_words(part, "|".join(re.escape(w) for w in vocabulary))
        gone = [profile.validate(reading.attribute, [w]) for w in words]
        taken = (str(g[0]) for g in gone if isinstance(g, list) and g)
        removed = tuple(dict.fromkeys([*reading.removed, *taken]))
        value = [v for v in reading.value if v not in removed]
        if removed and not value and not discourse.holds(held, reading.attribute, removed):
            continue
        out.append(replace(reading, value=value, removed=removed))
    return out


def _edited(
    readings: list[Reading],
    edits: Sequence[discourse.ListEdit],
    sentence: str,
    held: Mapping[str, object] | None,
) -> list[Reading]:
    """``readings`` with the list edits of the same part applied: a list read there loses
    what the edit takes out and gains what it adds; an edit with no such reading is one.
    Taking out only what the stored list (``held``) does not hold states nothing ("I sold
    all my Apple shares" from a new user)."""
    out = list(readings)
    for edit in edits:
        spec = profile.attribute(edit.attribute)
        if edit.refers:
            if not any(r.attribute == edit.attribute for r in out):
                out.append(
                    Reading(edit.attribute, [], sentence, correction=True, refers=edit.refers)
                )
            continue
        if edit.removed and not discourse.removal_stated(edit.removed, sentence):
            continue
        if edit.whole and not discourse.whole_stated(edit.added, sentence):
            continue
        mine = [r for r in out if r.attribute == edit.attribute]
        values = [v for r in mine for v in (r.value if isinstance(r.value, list) else [])]
        kept = [v for v in values if v not in edit.removed]
        value = [*kept, *(t for t in edit.added if t not in kept)]
        if value and not spec.supports(value, sentence):
            continue
        out = [r for r in out if r.attribute != edit.attribute]
        if not value and not discourse.holds(held, edit.attribute, edit.removed):
            continue
        out.append(
            Reading(
                edit.attribute,
                value,
                sentence,
                correction=any(r.correction for r in mine),
                removed=edit.removed,
                whole=edit.whole,
            )
        )
    return out


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
    bounds = [m.end() for m in _CLAUSE_BOUND.finditer(part, 0, at)]
    start = bounds[-1] if bounds else 0
    return bool(_NEGATION.search(_AFFIRMING.sub(" ", part[start : at + 1])))


#: Where a negation's reach ends: a comma, a semicolon, a dash between words, or "but" ("not
#: income but growth - I'm 29": the age is not negated).
_CLAUSE_BOUND = re.compile(r"[,;]|\s[-\u2013\u2014]+\s|\bbut\b", re.IGNORECASE)


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
