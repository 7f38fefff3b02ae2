"""The mood of what a user says: whether a sentence asks, supposes, hedges or mocks, and
which part of it still states something.

:func:`is_question` (a request such as "could you ..." is none), :func:`before_question` (the
statement before the question a sentence ends with), :data:`HYPOTHETICAL` and
:func:`before_condition` (the clause before a condition stands on its own unless it is in the
conditional mood), :func:`without_hedges` (the comma clauses that hedge are dropped; "I think
I'm moderate" is a self-assessment, no hedge) and :data:`SARCASM`.
:mod:`agent.learning.understanding` reads each sentence through them.
"""

from __future__ import annotations

import re

SARCASM = re.compile(
    r"\b(?:yeah right|yea right|oh sure|sure sure|as if|not!|/s\b|lol as if|yeah,? sure,? "
    r"totally|(?:right|sure),? because|oh great|oh totally)"
    r"|^\W*(?:sure|right|oh yeah|yeah)\b,.*\b(?:lol|lmao|haha|that's why)\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|also|hey|ok|okay|well)[\s,]+)*"
    # "Which is fair, I ...": a relative "which" taking up what was said, when nothing asks
    r"(?:what(?!\s+(?:i|we)\b)|how|why|which(?!\s+(?:is|was|means|meant|makes|made)\b[^?]*$)|when(?=\s+(?:do|does|did|is|are|was|were|will|would|should|can|could|shall|has|have|had|am)\b)|where|who|whom|whose|should|shall|is|are|am|was|were|does|"
    r"did|do(?!\s+not|n't)|has|have(?!\s+(?:a|an|some|my))|isn't|aren't|wouldn't|shouldn't)\b",
    re.IGNORECASE,
)
#: A request, asked or not: "could you ...", and "please you can ..." in another word order.
#: An opener before it is no part of the request: a word or two set off by a comma ("Anyway,",
#: "Right then,", "Hi Sam,") or a conjunction ("and could you ...").
_POLITE = re.compile(
    r"^(?:(?:[\w']+\s+)?[\w']+\s*,\s*|(?:and|so|also|oh|but)\s+)*"
    r"(?:(?:please[\s,]+)?(?:can|could|would|will)\s+you\b|please[\s,]+you\s+(?:can|could|would|will)\b)",
    re.IGNORECASE,
)
HYPOTHETICAL = re.compile(
    # "if I'm honest" concedes and "if you need it" offers: neither supposes anything.
    r"\b(?:if(?!\s+(?:(?:i'm|i am|im)\s+(?:honest|being honest|truthful)|(?:you|u)\s+(?:ever\s+)?(?:need|want|like|have to|must)\b|(?:anything|something)\s+(?:\w+\s+){0,2}?(?:happens|changes|comes up)\b))|unless|suppose|supposing|assuming|imagine|hypothetically|in case|say that|"
    r"let's say|lets say|were i|had i|whether)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    # "in maybe five years" rounds a time, it does not doubt the plan
    r"\b(?:(?<!\bin )(?:maybe|perhaps)|possibly|probably|might|mite|i may|may be|could be|not sure|unsure|"
    r"undecided|not decided|haven't decided|have not decided|not yet decided|don't know|"
    r"do not know|dont know|dunno|no idea|no clue|we'll see|we will see|will see|toying|"
    r"thinking (?:about|of)(?!\s+(?:it|that|this)\b)|(?:i'm|i am|im|still|been) thinking (?:about|of)|considering|contemplating|someday|some day|one day|sometime|"
    r"at some point|i guess|i suppose|i think(?!\s+in\b)|i wonder|wondering|tempted|not certain|"
    r"who knows|idk|if at all|doubt|hard to say|it depends|depends on|on the fence|torn between|"
    r"not convinced|can't decide|cannot decide|still deciding|figuring out|figure out|"
    r"debating|mulling)\b",
    re.IGNORECASE,
)


#: Where a statement ends and a question after it begins (", but do you think ...?").
_THEN_ASKED = re.compile(
    r"(?:[,;:]|\s+-+)\s*(?:(?:but|and|so|also|though|anyway)[\s,]+)?(?=\S)", re.I
)


def before_question(words: str) -> str | None:
    """The statement before the question a sentence ends with, or None when the sentence
    asks from its start ("am I conservative, or should I be bolder?")."""
    stripped = words.strip()
    if not stripped.endswith("?") or _QUESTION_START.match(stripped) or _POLITE.match(stripped):
        return None
    for cut in reversed(list(_THEN_ASKED.finditer(stripped))):
        tail = stripped[cut.end() :]
        if _QUESTION_START.match(tail) or _POLITE.match(tail):
            head = stripped[: cut.start()].strip()
            return head if head and not HYPOTHETICAL.search(head) else None
    return None


#: A clause boundary right before a condition that opens its own clause (", and if ...");
#: else the last comma before it (:data:`_BOUNDARY`) ends the clause the condition is in.
_CLAUSE_END = re.compile(
    r"(?:[,;:]|\s+-+)\s*(?:(?:and|but|so|though|although)\s+)?$|\s+and\s+$", re.IGNORECASE
)
_BOUNDARY = re.compile(r"[,;:]\s*|\s+-+\s+")
#: A clause in the conditional mood depends on the condition after it ("I'd be bolder, if
#: ...").
_MOOD = re.compile(r"\b(?:would|could|might|should|wouldn't|couldn't|i'd|we'd|id)\b", re.I)


def before_condition(words: str, at: int) -> tuple[int, int] | None:
    """Where the clause before a condition starting at ``at`` ends and the condition's clause
    begins, when that clause states something by itself (not in the conditional mood); None
    when the condition opens the sentence or governs it."""
    ending = _CLAUSE_END.search(words[:at])
    if ending is None:
        # "I'm happy taking risk, I'm not going to panic if things drop": the comma clause
        # the condition is in.
        ending = next(reversed(list(_BOUNDARY.finditer(words[:at]))), None)
    if ending is None or not words[: ending.start()].strip():
        return None
    head = words[: ending.start()]
    return None if _MOOD.search(head) else (ending.start(), ending.end())


def is_question(words: str) -> bool:
    stripped = words.strip()
    if _POLITE.match(stripped):
        return False
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


#: "I think", "I'd say" before the user's description of themselves: a self-assessment, which
#: is how people state a trait ("I think I'm moderate"), not a doubt; a plan after it ("I
#: think I'm going to retire early") stays hedged.
_ASSESSED = re.compile(
    r"\b(?:i\s+(?:think|guess|suppose|believe|reckon|feel(?:\s+like)?|would\s+say)|i'?d\s+say|"
    r"id\s+say)\s+(?:that\s+)?(?=(?:i'm|i am|im)\s+(?!(?:going|gonna|about|thinking|considering|"
    r"planning|leaning|not\b|unsure|undecided|torn|still)\b))",
    re.IGNORECASE,
)


def without_hedges(words: str, *, whole: bool = True) -> str:
    """``words`` without the comma clauses that hedge; all of it hedged when a hedging clause
    names nothing of its own ("..., I don't know yet"). A self-assessment ("I'd say I'm
    fairly conservative") is no hedge."""
    # Separators are kept: a dash is part of a revision ("aggressive - well, moderate"). A
    # comma between digits ("50,000") separates thousands, not clauses.
    pieces = re.split(r"((?<=,)(?<!\d,)\s*|(?<=\d,)(?!\d)\s*|\s+-{1,2}\s+|\s+(?=but\b))", words)
    kept = []
    for clause, separator in zip(pieces[::2], [*pieces[1::2], ""], strict=True):
        hedge = _HEDGE.search(_ASSESSED.sub(" ", clause))
        if hedge is None:
            kept.append(clause + (separator or " "))
            continue
        rest = _HEDGE.sub(" ", clause)
        if whole and len(re.findall(r"[A-Za-z0-9]+", rest)) < 3:
            return ""
    return "".join(kept).strip()
