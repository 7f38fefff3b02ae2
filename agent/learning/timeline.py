"""Ages, and horizons said as an age or an event rather than as a number of years.

People give a horizon by where they will be, not how long it lasts: "I'm 40 and won't touch
it until I'm 65", "I'm 52 and plan to retire at 60". The horizon is then the difference of two ages the same words name: the
age now and the age at the event. :func:`horizons_by_age` reads it, for the phrasing rules
(:mod:`agent.learning.phrasing`) that propose a horizon and for the registry
(:mod:`agent.learning.profile`) that grounds one, so a quote that proposes a value always
states it and states no other. (A child's ages, "my daughter is 8 ... for her university
at 18", are not read: the understanding leaves a sentence whose subject is someone else out
before the rules.) The user's age itself is read here too (:data:`AGE`): the
age now must not be taken for the age at the event ("until I'm 65" states no age).
"""

from __future__ import annotations

import re

from agent.learning import quantities

_I = re.IGNORECASE
_AGE_NUMBER = rf"(?:\d{{1,3}}|{quantities.WORD_NUMBER})"
#: The user's age now, each pattern's ``v`` the number.
AGE = [
    rf"\b(?:i'?m|i\s+am|im)\s+(?:only\s+|just\s+|now\s+|already\s+)?(?P<v>{_AGE_NUMBER})"
    r"(?:\s*(?:years?|yrs?)[\s-]*old|\s*y/?o\b)?"
    r"(?!\s*(?:%|percent|per|years?|yrs?|months?|decades?|k\b|x\b|times|[,.]\d|-?\d|/))",
    rf"\bage(?:d)?\s*(?::|is|=|-)?\s*(?P<v>{_AGE_NUMBER})\b(?!\s*(?:%|years? (?!old)))",
    rf"\b(?:i'?m|i\s+am|im)\s+an?\s+(?P<v>{_AGE_NUMBER})[\s-]*(?:years?|yr)[\s-]*old\b",
    rf"\bmy\s+age\s+(?:is\s+)?(?P<v>{_AGE_NUMBER})\b",
    rf"\bi\s+(?:just\s+)?turned\s+(?P<v>{_AGE_NUMBER})\b(?!\s*(?:%|percent))",
    r"^\W*(?P<v>\d{1,3})\s*(?:years?[\s-]*old|y/?o)\b",
    # a clause of its own after a self-description: "young and don't mind swings, 26yo"
    r"[,;]\s*(?P<v>\d{2})\s*(?:yo|y/o|yrs?[\s-]*old)\s*(?=$|[,.;!])",
    rf"\bi\s+have\s+(?P<v>\d{{2}}|{quantities.WORD_NUMBER})\s+years\b(?!\s+(?:of|to|until|till|"
    r"left|before|ago|in|on|experience|invest\w*|horizon|more|now))",
    rf"^\W*(?P<v>\d{{2}}|{quantities.WORD_NUMBER})\s+years?\s+young\b",
    # in apposition after an introduction: "I'm Daniel Okafor, 29, software engineer"
    r"\b(?:i'?m|i\s+am|im|intro\s*[:-]|introduction\s*[:-]|about me\s*[:-])\s+[^,.;\d]{2,40},"
    r"\s*(?P<v>\d{2})\s*(?=,|\.|;|$|\s+(?:and|y/?o)\b)",
    # describing oneself by one's age: "cautious 63-year-old here", "a 45 year old engineer"
    rf"^\W*(?:\w+\s+){{0,2}}?(?P<v>{_AGE_NUMBER})[\s-]+(?:years?|yr)[\s-]+old\s+"
    r"(?:[\w-]+\s+){0,2}?(?:here|speaking|writing)\b",
]
_AGES = [re.compile(p, _I) for p in AGE]
#: Words before an age that place it in the future or a condition ("until I'm 65").
_NOT_NOW = re.compile(
    r"\b(?:until|till|til|untill|when|once|before|by the time|by|after|unless|if|whether)\s*$", _I
)


def ages(text: str) -> list[tuple[str, int]]:
    """The ages ``text`` gives as its author's now (words as written, position), in order."""
    found = {
        m.start("v"): m["v"]
        for pattern in _AGES
        for m in pattern.finditer(text)
        if not _NOT_NOW.search(text[: m.start()])
    }
    return sorted(((v, at) for at, v in found.items()), key=lambda f: f[1])


#: The age at which the money is needed: "until I'm 65", "retire at 60", "by the time I
#: turn sixty", "retirement at age 67".
_LATER_AGE = re.compile(
    r"\b(?:(?:until|till|til|untill|before|by the time|when|once)\s+(?:i|we)\s*"
    r"(?:'m|'re|am|are|turn|reach|hit|get to)"
    r"|(?:retire|retiring|retirement|stop working|stopping work|quit working)\s+"
    r"(?:\w+\s+)?(?:at|by|around)(?:\s+age)?)\s+"
    rf"(?:age\s+)?(?P<v>{_AGE_NUMBER})(?![\d%]|\s*(?:%|percent|years?\s+(?!old)|months?))",
    _I,
)
#: The longest horizon two ages may give.
_LONGEST = 70


def horizons_by_age(text: str) -> list[tuple[float, int]]:
    """The horizons ``text`` gives as two ages of its author, in years, with where the later
    age is written: the age now (the first ``text`` gives) and the age at which the money is
    needed."""
    now = [quantities.number(v) for v, _ in ages(text)]
    if not now or now[0] is None:
        return []
    out = []
    for match in _LATER_AGE.finditer(text):
        later = quantities.number(match["v"])
        if later is not None and 0 < later - now[0] <= _LONGEST:
            out.append((later - now[0], match.start("v")))
    return out
