"""Whose words a sentence speaks: the user's, someone else's view of the user, or someone
else's own.

Read from the grammar rather than from a list of verbs (:mod:`agent.learning.understanding`
uses it for every sentence):

- someone else as the subject and the user as the object of what they say, think, assume or
  are sure of ("my brother assumes I'm ...", "a guy on a forum told me my ...") is that
  person's view of the user, whatever the verb (:data:`REPORTED`; the source is read by
  :func:`agent.learning.discourse.source_of`);
- a part about another person ("my friend is an aggressive trader", "META is my wife's")
  is left out; another person's value named by its noun ("my wife's horizon is 5 years") is
  theirs, and a "mine" after it is the user's value of the same noun;
- the voice changes after a "but" that does not set a value aside ("not income but
  growth", "I said twelve but ...") and at a conjunction that turns to another subject ("I'm
  41 and my planner says ...", :data:`NEW_VOICE`);
- a last clause that adopts or concedes a claim ("..., and honestly that's fair", "and I
  agree with him") makes it the user's (:func:`adopted_after`);
- a view may be named as someone else's after it is said ("I'm conservative, my husband
  says", "..., or so my planner says", "..., per the app": :func:`said_by`), by hearsay with
  no one named ("I'm told I'm ...", "apparently I'm ..."), by another subject judging "me"
  ("Vanguard rated me conservative") or as an instrument's verdict ("the result of my risk
  quiz was aggressive"): each is that source's claim, never the user's fact.
"""

from __future__ import annotations

import re

from agent.learning import discourse

_PEOPLE = (
    r"(?:friend|friends|husband|wife|partner|spouse|brother|sister|dad|father|mum|mom|mother|"
    r"son|daughter|kids?|children|parents?|boss|colleague|co-?worker|neighbou?r|"
    r"advis[eo]rs?|banker|broker|planner|accountant|manager|uncle|aunt|cousin|boyfriend|"
    r"girlfriend|family|fianc[ée]e?|grandpa|grandma|grandfather|grandmother|in-laws?|"
    r"mother-in-law|father-in-law|therapist|coach|teacher|bank|brother-in-law|sister-in-law|"
    r"guy|lady|person|bloke|mate|buddy|pal|bff|bestie|roommate|flatmate|housemate|mentor|"
    r"tutor|professor|doctor|lawyer|attorney|solicitor|consultant|counsell?or|"
    r"(?:wealth|relationship|fund|portfolio) manager|ex(?:-wife|-husband)?|stepdad|stepmom|"
    r"stepmum|grandad|granny|nan|niece|nephew|siblings?|twin|"
    r"esposo|esposa|marido|mujer|mari|femme)"
)
_REPORTING = (
    r"(?:says|said|say|thinks|thought|think|insists|insisted|believes|believed|reckons|"
    r"(?:would|will|'d|'ll|can|could) tell you|"
    r"reckoned|claims|claimed|told me|tells me|tell me|wrote(?: down)?|writes|put(?: me)? down|"
    r"noted|recorded|rated|rates|labels|labelled|labeled|called|calls|classified|classifies|"
    r"considers|suggests|suggested|recommends|recommended|wants|figures|feels|felt|argues|"
    r"keeps saying|has me(?: down)? as|had me(?: down)? as|marked|puts me|put me|scored|"
    r"(?:keeps|keep|kept|is always|always) (?:telling me|saying|insisting)|set|sets|assigned|"
    r"assigns|estimated|estimates|pegged|calculated|computed|dice(?: que)?|cree(?: que)?|"
    rf"{discourse.REPORTS})"
)
_FILLER = r"(?:(?:well|so|and|also|oh|btw|fyi|fwiw|plus|honestly|apparently|but)[\s,]+)*"
#: Who, or what, may hold a view of the user: a person, or a quiz, an app, a tool.
_SOURCES = (
    rf"(?:{_PEOPLE[3:-1]}|quiz|questionnaire|survey|assessment|test|app|robo-?advis[eo]rs?|"
    r"tool|calculator|algorithm|website|site|platform|form|profiler?|report|bank|broker|"
    r"newsletter|spouse|adviser|advisor|wife|husband|forum|thread|book|article|podcast|blog|"
    r"video|post|guide|chatbot)"
)
#: A determiner of who holds a view: "my", "the", or a name's possessive ("Vanguard's").
_WHOSE = (
    r"(?:my|mi|our|the|his|her|their|a|an|(?!(?:it|that|what|there|here|he|she|who|let)'s)[\w-]+'s)"
)
#: What the user carries that "says" what is written on it, not anyone's view ("my badge says
#: Google", "my payslip still says Tesla").
_WRITTEN_ON = (
    r"(?:(?:work|staff|company|employee)\s+)?(?:badge|lanyard|id\s+card|id|name\s*tag|"
    r"business\s+card|payslip|pay\s*stub|email\s+signature|contract)\b"
)
REPORTED = re.compile(
    # At least one word names who: "the thought of losing" is no one's report.
    rf"^{_FILLER}(?:{_WHOSE}\s+(?!{_WRITTEN_ON})(?:[\w-]+\s+){{1,3}}?"
    rf"|(?:he|she|they|everyone|everybody|someone|somebody|people|others|anyone|nobody)"
    rf"(?:\s+(?:in|at|on|from|of|around)\s+(?:[\w-]+\s+){{0,2}}?[\w-]+)?\s+){_REPORTING}\b"
    rf"|^{_FILLER}{_PEOPLE}\s+(?:\w+\s+)?{_REPORTING}\b"
    rf"|^{_FILLER}{_WHOSE}\s+[^,;.!?]{{0,60}}?\b{_SOURCES}\b"
    rf"[^,;.!?]{{0,40}}?\s+{_REPORTING}\b"
    rf"|\baccording to\b|^{_FILLER}(?:per|going by|judging by|based on|if i go by)\s+"
    rf"(?:my|our|the|his|her|their)\b|{discourse.IN_VIEW}"
    # Whose words: someone else is the subject and the user the object of what they say,
    # think or assume, whatever the verb ("my brother assumes I'm ...", "my dad is adamant
    # that I ...", "a guy on a forum told me my ...").
    rf"|^{_FILLER}(?P<who>(?:(?:{_WHOSE}|some|this|that|one|another)\s+(?:[\w-]+\s+){{0,2}}?"
    rf"{_SOURCES}|{_PEOPLE}))(?:'s)?\b"
    r"(?:\s+(?:on|at|from|in|of|with)\s+(?:[\w-]+\s+){0,2}?[\w-]+)?"
    r"\s+(?!(?:and|or|&)\b)(?:[\w'-]+\s+){1,2}?(?=(?:that\s+)?(?:i|i'm|i've|i'd|i'll|im|me|my)\b)",
    re.IGNORECASE,
)
#: Where a sentence turns to someone else's view ("I'm 41 and my planner says ...").
NEW_VOICE = re.compile(
    rf",?\s+(?:and|while|whereas|but)\s+(?=(?:my|our|the|his|her|their)\s+"
    rf"(?:[\w-]+\s+){{0,2}}?{_SOURCES}\b)",
    re.IGNORECASE,
)
_OTHER_PERSON = re.compile(
    rf"^{_FILLER}(?:(?:my|our|his|her|their)\s+{_PEOPLE}(?!\s+and\s+i\b)|he|she|they|"
    r"he's|she's|they're)\s+(?!and\s+i\b)(?:[\w'-]+\s+){0,2}?"
    r"(?:is|'s|was|are|were|been|has|have|likes?|loves?|prefers?|wants?|invests?|trades?|"
    r"holds?|owns?|works?|buys?|goes|went|keeps?|kept|uses?|used|measures?|saves?|lives?|"
    r"sold|sells?|bought|dumped|dropped|got rid of|exited|added|"
    r"reports?|thinks? in|counts? in|"
    # what they would do or cannot bear: "my friend would bail at 20%", "my wife can't stomach"
    r"would|will|can|could|should|might|must|can't|cannot|won't|wouldn't|doesn't|does|did|"
    r"never|always|panics?|panicked|bails?|bailed|freaks?|freaked|hates?|hated|gets?|got)\b"
    # "my wife's retiring in five years": their "is" or "has" contracted onto them
    rf"|^{_FILLER}(?:my|our|his|her|their)\s+{_PEOPLE}'s\s+(?:(?:just|still|already|also|"
    r"always|never|really|now|been)\s+)?(?:\w+ing|\w{2,}ed|been|got|gone|\d)\b",
    re.IGNORECASE,
)
_OWN_AFTER = re.compile(
    r"(?:[,;]\s*(?:and\s+|but\s+|while\s+|whereas\s+)?|\s+(?:and|while|whereas)\s+)"
    r"(?=(?:i'm|i am|im|i|my|me|mine)\b)"
    # "my wife works at Microsoft, so to be safe we avoid MSFT": what follows from it is ours,
    # and so is a request to the analyst ("..., so to be safe please never recommend META").
    rf"|,?\s+so\s+(?:(?!(?:he|she|they|him|her|them|{_PEOPLE})\b)[\w']+\s+){{0,6}}?"
    r"(?=(?:i|i'm|we|we're)\s|please\b)",
    re.I,
)
#: Someone else's value named by its noun ("my wife's horizon is 5 years"): theirs, and a
#: "mine" after it is the user's value of the same noun ("..., mine's more like 25").
_THEIR_NOUN = re.compile(
    rf"^{_FILLER}(?:my|our|his|her|their)\s+{_PEOPLE}(?:'s|s')\s+(?:[\w-]+\s+){{0,2}}?"
    rf"(?P<noun>{'|'.join(f'(?:{n})' for n in discourse.NOUNS.values())})\b",
    re.IGNORECASE,
)
#: Something said to be another person's ("META is my wife's").
_THEIRS = re.compile(
    rf"\b(?:is|are|'s|was|were)\s+(?:(?:all|actually|really)\s+)?(?:my|our|his|her)\s+"
    rf"{_PEOPLE}'s\b",
    re.IGNORECASE,
)
_BUT = re.compile(r",?\s+\bbut\b\s+|\s+-+\s+but\s+", re.IGNORECASE)
#: Who holds a view, as a noun phrase ("my planner", "the robo-adviser", "Vanguard's tool").
_HOLDER = (
    rf"(?:(?:{_WHOSE}|some|this|that|one|another)\s+(?:[\w-]+\s+){{0,2}}?{_SOURCES}|{_PEOPLE})"
)
#: Verbs that close a sentence the user attributes to someone else ("..., my husband says").
_CLOSING = rf"(?:{_REPORTING}|concluded|concludes|decided|found|showed|shows|came up with|gave)"
#: A view named as someone else's after it is said: "I'm a conservative investor, my husband
#: says", "15 years, or so my planner says", "moderate - at least that's what the app
#: thinks", "growth over dividends, says my dad", "..., per the app", "..., based on the quiz".
_SAID_AFTER = re.compile(
    r"(?:[,;:]|\s+[-\u2013\u2014]+|\s+(?=(?:or so|at least)\b))\s*"
    r"(?:(?:or so|or at least|at least|well|so|and|that's|thats|that is|is|was)\s+)*"
    r"(?:(?:what|how)\s+)?"
    rf"(?:(?P<who>{_HOLDER})(?:'s)?\s+(?:(?:always|keeps|apparently)\s+)?{_CLOSING}"
    rf"|{_CLOSING}\s+(?P<by>{_HOLDER})|(?:per|based on|going by|according to)\s+(?P<per>{_HOLDER}))"
    r"(?:\s+(?:me|so|it|of me|about me|too|anyway|at least))*\s*[.!]*\s*$",
    re.IGNORECASE,
)
#: Hearsay with no one named: "I'm told I'm aggressive", "apparently I'm a growth investor".
_HEARSAY = re.compile(
    rf"^{_FILLER}(?:apparently|supposedly|allegedly|reportedly|(?:i'm|i am|im|i was|i've been|"
    r"i have been|i get|i got|i keep getting|i keep being) told|i(?:'ve| have)? heard)\b",
    re.IGNORECASE,
)
#: A judgment of the user by anyone but the user ("Vanguard rated me conservative").
_JUDGED = re.compile(
    rf"^{_FILLER}(?!(?:i|we|i've|we've|i'd|i'm)\b)(?P<who>[\w.&-]+(?:'s)?(?:\s+[\w-]+)?)\s+"
    r"(?:rated|rates|classed|classes|classified|classifies|labell?ed|labels|scored|scores|"
    r"pegged|pegs|profiled|profiles|assessed|assesses|graded|grades|ranked|ranks|"
    r"categori[sz]ed|categori[sz]es|flagged|flags|has me|had me|puts me|put me)\s+(?:me|my)?\b",
    re.IGNORECASE,
)
#: An instrument's verdict ("the result of my risk quiz was aggressive", "my score on the
#: risk assessment was moderate"): the instrument's view, not the user's word.
_INSTRUMENT = re.compile(
    r"\b(?:quiz(?:zes)?|questionnaires?|surveys?|assessments?|profilers?|robo-?advis[eo]rs?|"
    r"calculators?|scorecards?)\b",
    re.IGNORECASE,
)
_VERDICT = re.compile(
    r"\b(?:results?|scores?|scored|ratings?|rated|outcomes?|verdict|came (?:out|back)|"
    r"classifi\w+|label\w*|said|says|gave|put|puts)\b",
    re.IGNORECASE,
)


def _holder(who: str) -> str:
    """``who`` as a source's short name ("my financial planner" -> "financial planner")."""
    who = re.sub(
        r"^(?:my|our|the|his|her|their|a|an|some|this|that|one|another)\s+", "", who, flags=re.I
    )
    return re.sub(r"'s$", "", who.strip().lower()) or "someone else"


def said_by(words: str) -> tuple[str, str] | None:
    """The words before a closing attribution (:data:`_SAID_AFTER`) and who it names, or None
    when the sentence ends with none."""
    after = _SAID_AFTER.search(words)
    if after is not None and after.start() > 0:
        who = after["who"] or after["by"] or after["per"] or ""
        return words[: after.start()], _holder(who)
    return None


#: Someone else doing something to "my <attribute>" ("my planner pencilled in 20 years as my
#: horizon"): their setting of the user's value, whatever the verb.
_SETS_MINE = re.compile(
    rf"^{_FILLER}(?P<who>{_HOLDER})\s+(?!(?:is|are|was|were|and|or)\b)[\w'-]+"
    r"(?:\s+[\w'-]+){0,6}?\s+(?:as|for|at|to|on)\s+my\s+"
    rf"(?:{'|'.join(f'(?:{n})' for n in discourse.NOUNS.values())})\b",
    re.IGNORECASE,
)
#: Someone named, then taken up by a pronoun ("my wife, she thinks ...", "my advisor - he
#: reckons ..."): read as "my wife thinks ...".
_TAKEN_UP = re.compile(
    rf"^({_FILLER}(?:my|our|the|his|her|their)\s+(?:[\w-]+\s+){{0,2}}?{_SOURCES})\s*"
    r"(?:[,:?-]+\s*)+(?:he|she|they|it)\b",
    re.IGNORECASE,
)
#: Someone else sent for as the authority: "ask my wife and she'll tell you I'm ...".
_ASK = re.compile(rf"^{_FILLER}(?:just\s+)?(?:ask|go ask)\s+(?P<who>{_HOLDER})\b", re.IGNORECASE)
#: An aside about who someone is ("my dad, who's a banker, says ..."): left out of the reading.
_ASIDE = re.compile(r",\s*(?:who|whom|whose)\b[^,;.!?]{1,60},", re.IGNORECASE)


def _judged_by(part: str) -> str:
    """Who a part of a sentence gives as the source of what it says of the user: hearsay
    ("I'm told ..."), another subject judging "me" ("Vanguard rated me ..."), an instrument's
    verdict ("the result of my risk quiz was ..."); ``""`` when the part is the user's own."""
    if _HEARSAY.search(part):
        return "someone else"
    if (judged := _JUDGED.search(part) or _SETS_MINE.search(part) or _ASK.search(part)) is not None:
        return _holder(judged["who"])
    instrument = _INSTRUMENT.search(part)
    if instrument is not None and _VERDICT.search(part) and not discourse.adopts(part):
        return _holder(instrument[0])
    return ""


def adopted_after(words: str) -> bool:
    """Whether the last clause of a sentence adopts the claim before it ("..., and honestly
    that's fair")."""
    clauses = re.split(
        r"[,;]|\s+[-\u2013\u2014]+\s+|\s+(?:and|which)\s+"
        r"(?=(?:i|i'd|honestly|he|she|they|he's|she's|they're|that's|it's)\b)",
        words,
        flags=re.I,
    )
    return len(clauses) > 1 and discourse.adopts(clauses[-1])


#: A "but" that sets a value aside rather than turning to another voice ("not income but
#: growth", "I said twelve but it's twenty").
_SET_ASIDE = re.compile(
    r"(?:\bnot (?:a |an |the )?[\w-]+,?|\bi (?:said|wrote|put|typed|gave you)\s+[^,;.!?]{1,30}?)$",
    re.IGNORECASE,
)


def _but_split(words: str) -> list[str]:
    """``words`` split at each "but" that turns to another voice (:data:`_BUT`)."""
    parts, start = [], 0
    for match in _BUT.finditer(words):
        if not _SET_ASIDE.search(words[start : match.start()]):
            parts.append(words[start : match.start()])
            start = match.end()
    return [*parts, words[start:]]


def _spelt(match: re.Match[str]) -> str:
    return f"{match[1]} {'would' if match[2].lower() == 'd' else 'will'}"


def voices(words: str) -> list[tuple[str, str, list[str]]]:
    """The parts of a sentence with who speaks in each: ``""`` for the user, else the source
    of a view of the user someone else holds ("wife"); parts about another person are left
    out, and the attribute they named by its noun ("my wife's horizon ...") goes with the
    user's part after them, which names it by "mine"."""
    words = _TAKEN_UP.sub(r"\1", _ASIDE.sub("", words))
    # "my wife'd tell you ...": someone's contracted "would" or "will" spelt out.
    words = re.sub(rf"\b({_PEOPLE})'(d|ll)\b", _spelt, words, flags=re.IGNORECASE)
    held = said_by(words)
    if held is not None and not REPORTED.search(words):
        # "I'm a conservative investor, my husband says": every part before it is theirs.
        return [(held[0], held[1], [])]
    out: list[tuple[str, str, list[str]]] = []
    source = ""
    for part in (p for piece in _but_split(words) for p in NEW_VOICE.split(piece)):
        elided: list[str] = []
        if (reported := REPORTED.search(part)) is not None:
            source = discourse.source_of(part, subject=reported["who"] or "")
        elif judged := _judged_by(part):
            source = judged
        elif (theirs := _THEIR_NOUN.search(part)) or _OTHER_PERSON.search(part):
            # "He is aggressive, I'm moderate": the user speaks again after the comma.
            mine = _OWN_AFTER.search(part)
            if mine is None:
                continue
            part, source = part[mine.end() :], ""
            if theirs is not None and re.match(r"mine\b", part, re.IGNORECASE):
                nouns = discourse.NOUNS.items()
                elided = [a for a, n in nouns if re.fullmatch(n, theirs["noun"], re.IGNORECASE)]
        elif out:
            source = ""  # "..., but honestly moderate fits me better": the user again
        if re.match(r"^\s*that'?s (?:him|her|them)\b", part, re.IGNORECASE) or _THEIRS.search(part):
            continue
        out.append((part, source, elided[:1]))
    return out
