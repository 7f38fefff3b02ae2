"""How a user marks that what they say revises what they said before.

:data:`CORRECTION` is a repair marker ("no wait", "I misspoke", "make that", "not X but Y",
"*word", and the same typed in a hurry or in another language's grammar: "srry ment CAD",
"I make mistake", "I want to say moderate"); :data:`CORRECTED_TAIL` the value set aside at
the end of a clause (", not 10"); :data:`REVISION` a word that revises without a marker ("so
GBP again"); :data:`LEAD_VALUE` a message that opens on a bare value ("sixty-two, I had a
birthday"); :data:`NEW_VALUE` a new value named by its attribute's noun ("new address is
..."). :func:`bare_value` reads the value a repair names with no cue of its own ("no sorry,
14"), not one let back in ("gambling is fine, only tobacco"); :func:`set_aside` makes a repair
that names the one list item it sets aside ("sorry, not Apple, it's Amazon") an edit of that
item. :mod:`agent.learning.understanding` decides what each revises.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from agent.learning import discourse, employment, phrasing, quantities, symbols, vocabulary

_I = re.IGNORECASE

#: A repair marker: what follows it wins over what came before.
CORRECTION = re.compile(
    r"\b(?:actually|correction|i meant|i mean|meant to say|i misspoke|misspoke|sorry|"
    r"no wait|wait|scratch that|let me revise|let me rephrase|revised?|revising|on reflection|"
    r"(?:thinking|now that i think|having thought) about (?:it|that)|come to think of it|"
    r"(?:let me |i'll )?take (?:that|it) back|changed my mind|let me be honest|to be honest|"
    r"if (?:i'm|i am|im) (?:being )?honest(?: with myself)?|(?:the )?real (?:number|figure|answer)|"
    r"i was going to say|was gonna say|(?<=-\s)well|(?<=\.\s)well|too (?:bold|high|low|much)|"
    r"strike that|make that|make it|change (?:that|it) to|typo|"
    r"(?:replace|swap|switch|exchange|trade) (?:it|that|this|them|those)(?: out)? "
    r"(?:with|for|to|into)|"
    r"my bad|wrong|let me correct|on second thought|i was wrong|oops|whoops|fat fingers?|"
    # typed in a hurry or in another language's grammar: "srry ment CAD", "make taht 20",
    # "I make mistake", "I want to say moderate", "excuse me"
    r"srry|sry|soz|sorr?y+|(?:i )?ment|acc?u?tu?a?l+y|make (?:taht|tht|dat)|"
    r"i (?:make|made|did) (?:a |one )?mistake|i want(?:ed)? to say|excuse me|"
    # the value before named and set aside by a dash: "not 40 - 20"
    r"not [\w.%]+\s*[-\u2013\u2014]+\s*(?=\w)|"
    r"mistyped|typed wrong|nope|(?<![\w'])(?:no|nah)(?=\s*[,.!:-])|not \w+,\s*(?:it's|its|"
    r"but|i meant)|"
    # the value before named and set aside: "not income but growth", "I said twelve but ..."
    r"not (?:a |an |the )?[\w-]+,?\s+but|i (?:said|wrote|put|typed|gave you)\s+[^,;.!?]{1,30}?\s+but|"
    r"my mistake|my error|i got (?:that|it|this) wrong|(?:quick |small )?update(?=\s*[:-])|"
    # a change of the value just given: "let me lower that to a quarter", "bump it to 12"
    r"(?:lower|raise|bump|increase|reduce|decrease|cut|drop|change|move|push|bring|up|set) "
    r"(?:it|that|this)(?: up| down| back)? to|"
    # a self-repair: "I'm 45, er 46"; "that should read 12 years"; "ignore the 40%, it's 30%"
    r"(?:er|erm|uh|um|umm|uhh)(?=[\s,.]+\w)|(?:that|it|this) should (?:read|say|have said|be)|"
    r"ignore (?:the|that|my))\b"
    # a chat correction by asterisk: "*moderate", "moderate*"
    r"|(?<!\S)\*(?=\w)|(?<=\w)\*(?!\S)",
    re.IGNORECASE,
)
CORRECTED_TAIL = re.compile(
    r"(?:,\s*|\s+)(?:and\s+)?(?:not(?!\s+(?:allowed|permitted|able|supposed|built|made|cut|going|gonna|to lose|losing)\b)|rather than|"
    r"instead of)\s+[^,;.!?]*[.!?]*\s*$",
    re.IGNORECASE,
)
#: Words that revise a value stated before without a correction marker ("so GBP again").
REVISION = re.compile(
    r"\b(?:again|back to|instead|switched to|switching to|changed to|changing to|moved to|"
    r"these days|nowadays|any ?more|from now on)\b",
    re.IGNORECASE,
)


#: A message that opens on a bare value ("sixty-two, I had a birthday", "20.").
LEAD_VALUE = re.compile(
    rf"^\W*(?:{quantities.NUMBER})\s*(?:%|percent|years?)?\s*(?:[,;.!]|[-\u2013\u2014]|$)",
    re.IGNORECASE,
)


#: A new value of an attribute named outright ("new address is ...", "my new horizon: 12").
NEW_VALUE = re.compile(
    rf"\b(?:my\s+)?new\s+({'|'.join(f'(?:{n})' for n in discourse.NOUNS.values())})"
    r"\s*(?:is|'s|will be|:|=)\s*",
    re.IGNORECASE,
)


# -- bare values (after a correction marker) ---------------------------------------------------

#: A number standing alone as the corrected value ("14.", "sorry, 55", "18 not 8", "20 is my
#: real limit"), not one that counts something else ("one more thing", "2 questions").
_BARE_NUMBER = re.compile(
    rf"(?<![\w.])(?:~\s*)?(?P<v>\d+(?:\.\d+)?|{quantities.WORD_NUMBER})(?![\w])"
    r"(?=\s*(?:[.,;:!?)]|$|%|percent|years?\b|yrs?\b|y/?o\b|(?:not|instead|rather|then|"
    r"actually|sorry|typo|as of|since|now|today|these days|nowadays|"
    r"(?:this|last) (?:week|month|year|spring|summer|autumn|fall|winter))\b|\s*(?:is|'s|would be)"
    r"\s+(?:(?:my|the|more|a)\s+)?(?:\w+\s+)?(?:limit|max\w*|cap|number|figure|right|true)\b))",
    _I,
)
_NEGATED_BEFORE = re.compile(r"\b(?:not|no|never|isn't|wasn't)\s+(?:\w+\s+){0,1}$", _I)


_LET_IN = r"\s+(?:(?:\w+\s+)?(?:not|n't)|(?:is|are|'s|'re)\s+(?:\w+\s+)?(?:fine|ok|okay|alright))\b"


def bare_value(attribute: str, tail: str, known: set[str]) -> object | None:
    """The value of ``attribute`` that ``tail`` names without a cue of its own ("14",
    "make that 15%", "it's HKD", "I meant META", "more moderate really"); the last one named
    that is not negated, or None."""
    if attribute in ("horizon_years", "age", "max_drawdown_pct"):
        if attribute == "horizon_years":
            spans = [(m, y) for m, y in quantities.durations(tail)]
            if spans:
                return spans[-1][1]
        if attribute == "max_drawdown_pct":
            percents = list(quantities.percents(tail))
            if percents:
                return percents[-1][1]
        numbers = [m["v"] for m in _BARE_NUMBER.finditer(tail)]
        return numbers[-1] if numbers else None
    if attribute == "base_currency":
        codes = [c for _, c in quantities.currencies(tail)]
        return codes[-1] if codes else None
    if attribute in ("watchlist", "holdings", "excluded_tickers"):
        named = [
            s for s, at in symbols.tickers_in(tail, known) if not _NEGATED_BEFORE.search(tail[:at])
        ]
        return named or None
    if attribute == "employer":
        match = re.search(employment.COMPANY, tail)
        return match.group(0) if match else None
    table = {
        "risk_tolerance": vocabulary.RISK,
        "report_style": vocabulary.STYLE,
        "goal": vocabulary.GOAL,
        "income_preference": vocabulary.INCOME,
        "excluded_sectors": vocabulary.EXCLUDED_SECTORS,
        "sectors_of_interest": vocabulary.SECTORS,
    }.get(attribute)
    if table is None:
        return None
    named = [
        m.group(0)
        for m in re.finditer(rf"(?<![\w-])(?:{phrasing.words_of(table)})(?![\w-])", tail, _I)
        if not _NEGATED_BEFORE.search(tail[: m.start()])
        # "gambling is fine, only tobacco": a value let back in is not the one meant
        and not re.match(_LET_IN, tail[m.end() :], _I)
    ]
    if not named:
        return None
    return named if attribute in ("excluded_sectors", "sectors_of_interest") else named[-1]


# -- a list continued by reference ---------------------------------------------------------------

#: The lists a sentence may add to by reference alone.
_CONTINUED_LISTS = (
    "excluded_sectors",
    "sectors_of_interest",
    "excluded_tickers",
    "watchlist",
    "holdings",
)
#: A sentence that adds its values to the list said just before ("Same goes for booze.",
#: "Ditto for Meta.", "Oh and Tesla too.", "Alcohol as well."): nothing but the values and the
#: words of reference.
_CONTINUED = re.compile(
    r"^\W*(?:(?:and|oh|also|plus|ok|okay|oh and)[\s,]+)*"
    r"(?:(?:the\s+)?same\s+(?:thing\s+)?(?:goes\s+|applies\s+)?(?:for|with|here with|to)|"
    r"ditto(?:\s+(?:for|with))?|likewise(?:\s+(?:for|with))?)[\s,:]+(?P<v>[^,;:.!?]+?)\W*$"
    r"|^\W*(?:(?:and|oh|also|plus|oh and)[\s,]+)*(?P<w>(?:[\w$&'-]+\s+){0,3}?[\w$&'-]+)"
    r"[\s,]+(?:too|as well|also)\W*$",
    _I,
)


def continued(sentence: str, stated: list[str], known: set[str]) -> tuple[str, object] | None:
    """The list attribute said last (``stated``, oldest first) and the values ``sentence`` adds
    to it by reference alone ("Same goes for booze."), or None."""
    match = _CONTINUED.match(sentence)
    lists = [a for a in stated if a in _CONTINUED_LISTS]
    if match is None or not lists or (match["w"] and not _only_values(match["w"], known)):
        return None
    raw = bare_value(lists[-1], match["v"] or match["w"], known)
    return None if raw is None else (lists[-1], raw)


_SECTOR_PHRASES = sorted(
    {
        w
        for table in (vocabulary.SECTORS, vocabulary.EXCLUDED_SECTORS)
        for k, v in table.items()
        for w in (k.replace("_", " "), *v)
    },
    key=len,
    reverse=True,
)


def _only_values(words: str, known: set[str]) -> bool:
    """Whether ``words`` name values and nothing else ("Nvidia", "booze and guns"), not a
    request or a statement of their own ("exclude AMZN")."""
    spans = []
    for _, at in symbols.tickers_in(words, known):
        word = re.match(r"\$?[\w.&-]+", words[at:])
        spans.append((at, at + (len(word[0]) if word else 0)))
    rest = "".join(" " if any(a <= i < b for a, b in spans) else c for i, c in enumerate(words))
    for phrase in _SECTOR_PHRASES:
        rest = re.sub(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", " ", rest, flags=_I)
    left = re.sub(r"\b(?:and|or|the|my|some|also|plus|oh)\b|[,&+/]", " ", rest, flags=_I)
    return rest != words and not left.strip()


class _ListReading(Protocol):
    @property
    def attribute(self) -> str: ...
    @property
    def value(self) -> object: ...
    @property
    def correction(self) -> bool: ...
    @property
    def removed(self) -> tuple[str, ...]: ...


#: A ticker a repair sets aside for the one named after it: "sorry, not Apple, it's Amazon",
#: "no wait, not Tesla - Nvidia".
_SET_ASIDE = re.compile(
    r"\bnot\s+(?P<t>[\w$.&]+(?:\s+(?:and|or|&)\s+[\w$.&]+)?)\s*(?:,|[-\u2013\u2014]|\bbut\b)", _I
)


def set_aside(reading: _ListReading, part: str) -> dict[str, Any]:
    """The changes that make a repair of one item of a ticker list ("I own Microsoft and
    Apple. Sorry, not Apple, it's Amazon") an edit of that item, not a new whole list: the
    item set aside is removed and the others stay."""
    if reading.attribute not in discourse.LISTS or not reading.correction or reading.removed:
        return {}
    named = reading.value if isinstance(reading.value, list) else []
    gone = [s for m in _SET_ASIDE.finditer(part) for s, _ in symbols.tickers_in(m["t"], set())]
    gone = [s for s in dict.fromkeys(gone) if s not in named]
    return {"correction": False, "removed": tuple(gone)} if gone and named else {}
