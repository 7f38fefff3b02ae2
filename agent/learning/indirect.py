"""Values people state without naming them.

People rarely say "my risk tolerance is conservative": they say they panicked and sold in
2020, or that a crash is a sale. They rule a ticker out by a conflict ("I work at the FTC so
I can't own Meta") or a dislike ("can't stand Musk, keep Tesla out"), name a currency by its
symbol ("I'm € based") or as the local currency of where they live, and give a name or an
address in passing ("I'm Dana Whitfield by the way", "we're at 14 Elm Street, Leeds"). The
tickers a conflict or a dislike rules out are read by :mod:`agent.learning.exclusions`, the
currencies by :mod:`agent.learning.currencies`.

Each reader here is small grammar over the words, returning the value the words state and
where; the phrasing rules (:mod:`agent.learning.phrasing`) propose values with them and the
registry (:mod:`agent.learning.profile`) grounds a quote with the same readers
(:func:`states_risk`), so a reaction that proposes a value is
always one the check accepts, and no other value is accepted for it.
"""

from __future__ import annotations

import re

from agent.learning import symbols
from agent.research.tickers import COMPANY_NAMES

Found = tuple[str, object, int]

_I = re.IGNORECASE
#: The user as the one who acts or feels: a first-person subject or object ("my" alone is
#: not enough: "my wife can't stomach it").
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'd|id|i'm|im|i've|ive|i'll|me|myself|we|we'd|we're|we've|us)\b", _I
)
PEOPLE = (
    r"(?:friends?|husband|wife|partner|spouse|brother|sister|dad|father|mum|mom|mother|sons?|"
    r"daughters?|kids?|children|parents?|boss|colleagues?|co-?workers?|neighbou?rs?|"
    r"advis[eo]rs?|banker|broker|planner|accountant|uncle|aunt|cousin|boyfriend|girlfriend|"
    r"family|fianc[ée]e?|grand\w+|in-laws?)"
)
#: Someone else as the subject before a reaction ("my brother panicked and sold").
_OTHER_SUBJECT = re.compile(
    rf"\b(?:(?:my|our|his|her|their)\s+(?:\w+\s+)?{PEOPLE}|he|she|they|people|investors|"
    r"everyone|everybody|traders|the market|markets|stocks|it|that|this)\b"
    r"(?![^,;]*\b(?:i|i'd|i'm|im|we|we'd)\b)",
    _I,
)

# -- risk tolerance from reactions to losses ----------------------------------------------------

_FALL = (
    r"(?:crash(?:es|ed|ing)?|drops?|dropped|dropping|dips?|dipped|falls?|fell|falling|"
    r"declines?|declined|downturns?|corrections?|sell-?offs?|bear markets?|slumps?|"
    r"tank(?:s|ed|ing)?|plunge[sd]?|plunging|drawdowns?|red days?|(?:in|into|going) the red|"
    r"goes down|went down|go down|2008|2020|2022|covid|gfc|dot-?com)"
)
#: A market's fall, or any loss of money.
#: A market's fall, or a loss of money ("losing weight" is none).
_LOSS = re.compile(
    rf"\b(?:{_FALL}|losses|loss|down\s+\d|\d+\s*%\s+(?:down|drop|fall|loss)|"
    r"bad (?:day|week|month|year)s?|los(?:e|es|ing|t)\s+(?:\w+\s+)?(?:money|it|everything|"
    r"savings|capital|cash|value|half|a (?:lot|third|quarter|fifth)|\d))\b",
    _I,
)
_SWINGS = (
    r"(?:volatility|swings?|ups and downs|ups & downs|big moves|wild rides?|roller ?coasters?|"
    r"drops?|dips?|drawdowns?|losses|crash(?:es)?|corrections?|red days|seeing red|"
    r"paper losses|the red|falls?|declines?|bad (?:days?|weeks?|months?|years?))"
)
_BIG = r"(?:a lot of|lots of|big|huge|large|massive|wild|serious|heavy|significant|sharp|deep)"
_SOME = (
    r"(?:some|a bit of|a little|a little bit of|moderate|modest|a certain amount of|"
    r"a fair bit of|reasonable|normal|the usual|a few|the odd|the occasional|an occasional|"
    r"small|minor)"
)
_OK = (
    r"(?:fine|ok|okay|comfortable|happy|cool|good|at ease|relaxed)\s+with|"
    r"(?:can|could)\s+(?:handle|take|stomach|tolerate|live with|accept|deal with|ride out)|"
    r"don'?t mind|do not mind|accept|tolerate|live with"
)

_CANNOT = (
    r"(?:can'?t|cannot|can not|couldn'?t|could not|not able to|unable to)\s+"
    r"(?:really\s+|even\s+)?(?:stomach|handle|take|bear|tolerate|deal with|cope with|"
    r"live with|sit through|watch|stand|afford to lose)"
)

#: "my risk appetite is pretty big": the size of an appetite for risk.
_APPETITE = (
    r"\b(?:risk\s+(?:appetite|tolerance)|appetite\s+for\s+risk)\s+(?:is\s+|'s\s+)?"
    r"(?:(?:very|fairly|pretty|quite|rather|really|super|kinda|somewhat|a bit|honestly)\s+)*"
)

#: value -> (pattern, whether it needs a fall or a loss beside it).
RISK_REACTIONS: dict[str, tuple[tuple[str, bool], ...]] = {
    "aggressive": (
        (
            r"\b(?:buy|buys|buying|bought|add|adds|adding|added|load(?:ed|ing)? up|top(?:ped|ping)? up|"
            r"doubl(?:e|ed|ing) down)\s+(?:\w+\s+){0,2}?(?:more|the dips?|dips|on dips)\b",
            True,
        ),
        (r"\bback(?:ed|ing)? up the truck\b", True),
        # "when stocks tank I tend to buy": buying is the reaction to the fall named before it
        (
            rf"\b(?:when|whenever|every time)\s+[^,;.!?]{{0,30}}?\b{_FALL}\b[^,;.!?]{{0,25}}?"
            r"\s+(?:i|we)\s+(?:\w+\s+){0,2}?(?:buy|bought|add|added|load(?:ed)? up|pounced?|"
            r"scoop(?:ed)? up|pil(?:e|ed) in)\b",
            True,
        ),
        (
            r"\b(?:kept|keep|kept on|continued|carried on)\s+(?:buying|adding|accumulating|"
            r"averaging down)\b",
            True,
        ),
        (r"\bbring it on\b", False),
        # "a 10% down week barely registers", "I don't even open the app"
        (
            r"\b(?:barely|hardly|never even|don'?t even|doesn'?t even|do not even)\s+"
            r"(?:registers?|notice|look|check|open)\b",
            True,
        ),
        (
            rf"\b{_BIG}\s+{_SWINGS}\s+(?:are|is)\s+(?:totally\s+|perfectly\s+)?(?:fine|ok|okay|"
            r"cool|no problem)\b",
            False,
        ),
        (
            r"\b(?:i'?d|i would|i'?ll|i will)\s+(?:just\s+|simply\s+)?(?:buy|add)\s+more"
            r"\s*(?=$|[,.;!])",
            False,
        ),
        # "if it fell by half I would honestly just add to my position"
        (
            r"\b(?:i'?d|i would|i'?ll|i will)\s+(?:(?:just|simply|honestly|happily)\s+)*"
            r"(?:buy|add)\s+(?:more|to\s+(?:my|the|our)\s+(?:positions?|stakes?))\b",
            True,
        ),
        (
            r"\b(?:happy|comfortable|fine|ok|okay|willing|prepared|ready|like|love|enjoy|"
            r"don'?t mind)\s+(?:to\s+take|taking|with|to\s+accept|accepting|to\s+carry)\s+"
            r"(?:a\s+lot\s+of|lots\s+of|plenty\s+of|big|high|serious|significant|considerable|"
            r"substantial)\s+(?:\w+\s+)?risks?\b",
            False,
        ),
        (
            r"\b(?:big|huge|large|high|strong|healthy|a lot of|plenty of)\s+(?:appetite|"
            r"stomach|tolerance)\s+for\s+(?:risk|volatility|speculation)\b",
            False,
        ),
        (r"\b(?:i'?m|i am|im)\s+(?:a\s+)?(?:big\s+|real\s+|natural\s+)?risk[\s-]*takers?\b", False),
        (rf"{_APPETITE}(?:big|huge|large|high|strong|healthy)\b", False),
        (
            r"\b(?:crash(?:es)?|dips?|drops?|corrections?|sell-?offs?|bear markets?|downturns?)"
            r"\s+(?:are|is|=|as)\s+(?:\w+\s+){0,2}?(?:opportunit\w+|sales?|gifts?|discounts?|"
            r"bargains?)\b",
            False,
        ),
        # "sell-offs are when I do my shopping", "crashes are when I make my best buys"
        (
            r"\b(?:crash(?:es)?|dips?|drops?|corrections?|sell-?offs?|bear markets?|downturns?)"
            r"\s+(?:are|is)\s+(?:exactly\s+)?when\s+(?:i|we)\s+(?:\w+\s+){0,3}?(?:buy\w*|"
            r"shop\w*|load up|pounce|add)\b",
            False,
        ),
        (r"\b(?:go big or go home|yolo)\b", False),
        (
            rf"\b{_SWINGS}\s+(?:\w+\s+){{0,2}}?(?:doesn'?t|does not|don'?t|do not|never|didn'?t|"
            r"did not|"
            r"won'?t|wouldn'?t|would not|will not)\s+(?:\w+\s+)?(?:bother|scare|worry|faze|"
            r"phase|trouble|rattle|spook|stress|keep me up)\w*",
            False,
        ),
        (
            rf"\b(?:not|never)\s+(?:\w+\s+)?(?:bothered|fazed|phased|scared|worried|rattled|"
            rf"spooked)\s+by\s+(?:\w+\s+){{0,3}}?{_SWINGS}\b",
            False,
        ),
        (
            r"\b(?:slept|sleep|sleeping)\s+(?:just\s+)?(?:fine|well|soundly|like a (?:baby|log))",
            True,
        ),
        (
            r"\b(?:didn'?t|did not|never|wouldn'?t|would not|won'?t|will not|not going to|"
            r"not gonna)\s+(?:even\s+)?(?:sell|panic|flinch|blink|budge|bail|cash out)\b"
            # what was not sold is an investment, not "my car"
            r"(?!\s+(?:my|the|our|a|an|his|her)\s+(?!single|thing|share|stock|position|"
            r"portfolio|holding|investment|fund|etf)\w)",
            True,
        ),
        (
            rf"\b(?:can|could)\s+(?:easily\s+)?(?:stomach|handle|take|tolerate|live with|"
            rf"ride out|sit through)\s+(?:{_BIG}\s+)+{_SWINGS}\b",
            False,
        ),
        (
            r"\b(?:love|like|enjoy|thrive on|live for)\s+(?:the\s+)?(?:(?:thrill|excitement|rush)"
            r"\s+of\s+(?:\w+\s+)?)?(?:volatility|volatile|swings|roller ?coaster|speculat\w+|"
            r"risky|penny stocks|high[\s-]risk)\b",
            False,
        ),
    ),
    "conservative": (
        (
            rf"\b{_CANNOT}\s+(?:\w+\s+){{0,3}}?(?:{_SWINGS}|los(?:e|ing|ses)|any of it)\b",
            False,
        ),
        (rf"\b{_CANNOT}\b", True),
        (
            r"\b(?:los(?:e|ing|t)\s+sleep|keeps?\s+me\s+(?:up|awake)|kept\s+me\s+(?:up|awake)|"
            r"(?:couldn'?t|could not|can'?t|cannot|didn'?t)\s+sleep|sleepless)\b",
            True,
        ),
        (
            r"\b(?:panic(?:ked|ky)?(?:\s+and)?\s+(?:sold|sell)|"
            r"(?:sold|dumped)\s+(?:everything|it all|all of it|out)|"
            r"freak(?:ed|s)? out|lost my nerve)\b",
            True,
        ),
        (
            r"\b(?:hate|dread|terrified of|scared of|afraid of|fear|nervous about|"
            r"anxious about)\s+(?:\w+\s+){0,2}?(?:losing|losses|to lose|lose)\b",
            False,
        ),
        (
            r"\b(?:losing|losses|drops?|crash(?:es)?|dips?|falls?|volatility|swings|red days)\s+"
            r"(?:\w+\s+){0,4}?"
            r"(?:makes?|made|gets?|got)\s+me\s+(?:\w+\s+)?(?:nervous|anxious|sick|queasy|"
            r"panic\w*|stressed|miserable|ill|scared|uneasy|want to (?:throw up|puke|vomit|"
            r"cry|sell))\b",
            False,
        ),
        (
            r"\b(?:get|got|feel|felt|am|'m|im|become)\s+(?:really\s+|very\s+|super\s+|so\s+)?"
            r"(?:nervous|anxious|stressed|scared|panicky|sick|queasy|uneasy)\s+"
            r"(?:when|whenever|if|seeing|watching)\b",
            True,
        ),
        (r"\b(?:need|want|like|have)\s+to\s+(?:be\s+able\s+to\s+)?sleep\s+at\s+night\b", False),
        (r"\brather\s+sleep\s+well\s+than\s+eat\s+well\b", False),
        (r"\bsleep\s+(?:badly|poorly|terribly|worse)\b", True),
        (rf"{_APPETITE}(?:small|tiny|limited|low|minimal|modest)\b", False),
        (
            r"\b(?:no|little|zero|not much|limited|low|small|tiny)\s+(?:appetite|stomach|"
            r"tolerance)\s+for\s+(?:risk|volatility|speculation|gambl\w+|losses|drama)\b",
            False,
        ),
        (
            rf"\bnot\s+(?:really\s+)?(?:built|made|cut out)\s+for\s+(?:\w+\s+){{0,2}}?"
            rf"(?:{_SWINGS}|risk|this)\b",
            False,
        ),
        (
            r"\b(?:i'?m|i am|im)\s+not\s+(?:a|much of a|really a|the)\s+risk[\s-]*(?:takers?|"
            r"person|guy|gal|type|lover|kind)\b",
            False,
        ),
        (
            r"\b(?:don'?t|do not|can'?t|cannot)\s+(?:want|afford)\s+to\s+lose\s+"
            r"(?:any|money|a (?:penny|cent|dime)|what i have|my savings)\b",
            False,
        ),
    ),
    "moderate": (
        (
            rf"\b(?:{_OK})\s+(?:\w+\s+)?{_SOME}\s+(?:\w+\s+)?(?:{_SWINGS}|risk)\b",
            False,
        ),
    ),
}
_REACTIONS = [
    (value, re.compile(pattern, _I), needs_loss)
    for value, patterns in RISK_REACTIONS.items()
    for pattern, needs_loss in patterns
]


def risk_reactions(text: str) -> list[tuple[str, int]]:
    """The risk tolerances ``text`` states by how its author reacts to losses, with where
    each reaction starts: ``("aggressive", 12)`` for "If it dropped 30% I'd buy more"."""
    if not _FIRST_PERSON.search(text):
        return []
    found: list[tuple[str, int]] = []
    for value, pattern, needs_loss in _REACTIONS:
        for match in pattern.finditer(text):
            if needs_loss and not _LOSS.search(text):
                continue
            if someone_else(text, match.start()) or OUTGROWN.search(text):
                continue
            found.append((value, match.start()))
    return sorted(found, key=lambda f: f[1])


#: A reaction the user has outgrown ("I used to panic in every dip", "..., not anymore").
OUTGROWN = re.compile(r"\bused to\b|\bno longer\b|\bnot any ?more\b", _I)


def states_risk(value: object, text: str) -> bool:
    """Whether ``text`` states the risk tolerance ``value`` by a reaction to losses."""
    return any(v == value for v, _ in risk_reactions(text))


_PERSON_SUBJECT = re.compile(
    rf"\b(?:(?:my|our|his|her|their)\s+(?:\w+\s+)?{PEOPLE}|he|she|they)\b"
    r"(?!\s+(?:\w+\s+)?(?:says?|said|thinks?|thought|reckons?|believes?|told|tells|wants?|"
    r"insists?|suggests?|claims?|feels?)\b)"
    r"(?![^,;]*\b(?:i|i'd|i'm|im|we|we'd)\b)",
    _I,
)


def said_of_someone_else(text: str, at: int) -> bool:
    """Whether the clause before ``at`` is about another person ("my neighbour keeps
    everything in Swiss francs")."""
    start = max(text.rfind(",", 0, at), text.rfind(";", 0, at), -1) + 1
    return bool(_PERSON_SUBJECT.search(text[start:at]))


def someone_else(text: str, at: int) -> bool:
    """Whether the clause before ``at`` has someone else as its subject."""
    start = max(text.rfind(",", 0, at), text.rfind(";", 0, at), -1) + 1
    return bool(_OTHER_SUBJECT.search(text[start:at]))


# -- loss limits from reactions -----------------------------------------------------------------

#: Reactions that mark a loss as the user's limit ("a 30% fall and I'd bail").
LIMIT_REACTIONS = re.compile(
    r"\b(?:bail\w*|get(?:ting)? out|pull(?:ing)? (?:out|the plug)|cash(?:ing)? out|"
    r"throw in the towel|cut my losses|capitulat\w*|freak(?:ing)? out|jump(?:ing)? ship|"
    r"head(?:ing)? for the exits?|call(?:ing)? it quits|can'?t sleep|i'?m out|i am out|"
    r"i'?d be out|i would be out)\b",
    _I,
)
_GAIN = re.compile(r"\b(?:profits?|gains?|up|returns?|yield\w*|rall\w*|target|upside)\b", _I)


def bail_point(text: str) -> re.Match[str] | None:
    """A reaction that marks a limit with no loss named ("I'd jump ship long before that, say
    at 35%"), when nothing speaks of gains ("I'd cash out at 35% profit" is a target)."""
    found = LIMIT_REACTIONS.search(text)
    return None if found is None or _GAIN.search(text) else found


#: A negated reaction is no limit ("a 30% drop wouldn't make me sell").
NOT_A_LIMIT = re.compile(
    r"\b(?:wouldn'?t|would not|won'?t|will not|didn'?t|did not|never|not)\s+(?:\w+\s+){0,2}?"
    r"(?:sell|panic|bail|flinch|bother|worry|cash out|get out)\b"
    # a fall told as a chance to buy: "a 30% drawdown would just be a buying opportunity"
    r"|\b(?:buying opportunit\w*|chance to buy|(?:be|is|'s) (?:just )?a (?:sale|bargain|gift))\b",
    _I,
)


# -- a name or an address in passing ------------------------------------------------------------

#: A capitalised word of a name, with its prefixes and accents ("O'Neill", "McKay", "Tomás").
_WORD = r"(?:[A-Z]'|Mc|Mac)?[A-ZÀ-Þ][a-zß-ÿ'-]+"
#: Particles inside a name ("Pieter de Vries", "Ludwig van Beethoven").
_PARTICLE = r"(?:de|van|von|der|den|da|di|du|la|le|del|della|dos|das|bin|ibn|al|el)"
#: Two to four capitalised words: the shape of a full name as people type it.
_PERSON = (
    rf"(?-i:(?P<v>{_WORD}(?:\s+(?:{_WORD}|[A-Z]\.|{_PARTICLE}(?=\s+[A-Z]))){{0,3}}"
    rf"\s+{_WORD}))"
)
_NAME_END = (
    r"(?=\s*(?:$|[.,!;:)(]|-|by the way|btw|here\b|and\b|from\b|if\b|for\b|but\b|so\b|"
    r"please\b|writing\b|speaking\b|again\b|\d))"
)
_GREETING = (
    r"(?:(?:hi|hello|hey|hiya|howdy|greetings|ok|okay|so|well|oh|basically|anyway|good \w+|"
    r"(?:good\s+)?(?:morning|afternoon|evening)|by the way|btw|oh and|and|also)"
    r"(?:[,!.:\s]+|\s*-+\s*))*"
)
_NAMES = [
    re.compile(p, _I)
    for p in (
        rf"(?:^|[:;,.!-])\s*{_GREETING}(?:i'?m|i am|im|this is|it'?s|its)\s+{_PERSON}{_NAME_END}",
        rf"^\W*{_GREETING}{_PERSON}\s+here\b",
        # the full name after the first one: "This is Tom, Thomas Whitfield for the records"
        rf"(?:^|[:;,.!-])\s*{_GREETING}(?:i'?m|i am|im|this is|it'?s|its)\s+(?-i:{_WORD})\s*"
        rf"(?:,|-+|\()\s*{_PERSON}{_NAME_END}",
        # "Quick intro: Aisha Bello, 41, nurse"
        rf"\b(?:intro|introduction|about me)\s*[:-]\s*{_PERSON}\s*,",
        rf"^\W*as\s+{_PERSON},",
        rf"\b(?:my\s+)?full\s+name\s*(?:is|:|=|-)?\s+{_PERSON}{_NAME_END}",
        r"(?:^|\s-+\s|[.!]\s)\W*(?:thanks|thank you|many thanks|cheers|regards|best|"
        rf"best regards|kind regards|sincerely|thx|ta)[,!.]*\s+(?:-+\s*)?{_PERSON}\s*[.!]?\s*$",
        rf"^\W*-+\s*{_PERSON}\s*$",
        rf"\b(?:call me|i go by|people call me|the name'?s|the name is|name's)\s+{_PERSON}"
        rf"{_NAME_END}",
        rf"{_PERSON}\s+is\s+my\s+(?:full\s+)?name\b",
        # "Sign any letters to Tomás Herrera, that's me"
        rf"\b(?:to|for|under|as)\s+{_PERSON}\s*(?:,|-+)\s*(?:that'?s|that is|thats)\s+me\b",
    )
]
#: Capitalised words that open a sentence but name no one ("I'm Very Happy ...").
_NOT_NAMES = frozenset(
    """the a an in at on very so not just really here back still also from with happy glad
    sorry fine good ok okay done new retired based looking interested currently trying going
    planning working living investing saving buying selling thinking and or but for to of my
    your our is am are i me we you it this that tired busy excited curious worried nervous
    ready sure into over about never always mostly pretty quite kind bit big huge fan long
    short bullish bearish all investor trader mr mrs ms dr sir madam dear hi hello hey thanks
    cheers regards best great news today tomorrow yesterday now""".split()
)


def is_a_name(value: str) -> bool:
    """Whether ``value`` can be a person's name: no common word, no company."""
    words = [w.lower().rstrip(".") for w in value.split()]
    return not any(w in _NOT_NAMES or w in COMPANY_NAMES for w in words)


def looks_like_address(value: str) -> bool:
    """Whether ``value`` has a street or a postcode."""
    return bool(re.search(rf"\b{_STREET}\b\.?", value, _I) or re.search(_POSTCODE, value))


def names_in_passing(text: str) -> list[tuple[str, int]]:
    """The names ``text`` gives as its author's in passing ("I'm Dana Whitfield by the way",
    "Dana Whitfield here", a sign-off), with their positions."""
    out = []
    for pattern in _NAMES:
        for match in pattern.finditer(text):
            if not is_a_name(match["v"]):
                continue
            out.append((match["v"], match.start("v")))
    return sorted(out, key=lambda f: f[1])


_STREET = (
    r"(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|way|close|court|ct|place|pl|crescent|"
    r"boulevard|blvd|terrace|gardens|square|sq|row|hill|park|mews|grove|walk|parade|rue|"
    r"strasse|straße|str|gasse|weg|plein|via|calle|avenida|mnt|tee|allee|platz|highway|hwy|"
    r"circle|cir|parkway|pkwy|view|heights|green|rise|quay|wharf)"
)
_POSTCODE = (
    r"(?-i:\b[A-Z]{1,2}\d[A-Z\d]?\s*\d[A-Z]{2}\b|\b[A-Z]\d[A-Z]\s?\d[A-Z]\d\b|"
    r"\b[A-Z]\d{2}\s?[A-Z0-9]{4}\b|\b\d{5,6}(?:-\d{4})?\b|\b\d{4}\s?[A-Z]{2}\b)"
)
_ADDRESS_CUE = (
    r"\b(?:(?:i'?m|i am|im|we'?re|we are)(?:\s+(?:living|located|staying|based))?|"
    r"(?<=,\s)(?:based|located|living)|"
    r"(?:i|we)\s+(?:live|reside|(?:have\s+|just\s+|recently\s+)?moved)|living|"
    r"(?:my|our)\s+(?:house|home|flat|apartment|place|address|condo)\s+is|home is|"
    r"(?:my|our)\s+(?:new\s+)?(?:house|home|flat|apartment|place|condo)(?=\s+(?:at|on)\s+\d)|"
    r"writing\s+(?:in\s+)?from|"
    r"(?:reach|find|write to|visit)\s+(?:me|us)|"
    r"(?:send|post|mail|ship)\s+(?:\w+\s+){0,3}?(?:to\s+)?(?:me|us))"
)
_ADDRESS = re.compile(
    rf"{_ADDRESS_CUE}\s+(?:at|on|to|in|into)?\s*"
    r"(?P<v>(?:(?:flat|apt|apartment|unit|suite)\s+\w+,?\s+)?\d+[A-Za-z]?,?\s+[^;!?\n]{3,200}?)"
    r"\s*(?=[.!]?\s*$|,?\s+(?:if|in case|so|for|by the way|btw|since|and i|and we)\b)",
    _I,
)


def addresses_in_passing(text: str) -> list[tuple[str, int]]:
    """The postal addresses ``text`` gives as where its author lives or can be reached
    ("we're at 14 Elm Street, Leeds LS6 2AB"): a house number and a street or a postcode."""
    out = []
    for match in _ADDRESS.finditer(text):
        value = match["v"].strip(" ,")
        if looks_like_address(value):
            out.append((address_only(value), match.start("v")))
    return out


_AFTER_ADDRESS = re.compile(
    r",?\s+(?:and|but|so|if|which|loving|thanks|please|since|because|as)\b.*$", _I
)


def address_only(value: str) -> str:
    """``value`` up to the end of the address: through its postcode when it has one, else
    without a trailing clause ("..., and no I don't want to share my age")."""
    value = value.strip()
    codes = list(re.finditer(_POSTCODE, value))
    if codes and re.match(r"\s*,?\s*[a-z]", value[codes[-1].end() :]):
        return value[: codes[-1].end()].strip(" ,")
    return _AFTER_ADDRESS.sub("", value).strip(" ,.")


# -- holdings named outright ("I have Nvidia and Tesla") ---------------------------------------

#: What says the user holds what follows: "I own", "I'm holding", "I only own some", "a
#: long-time Apple shareholder", "I have money in".
HOLDING_CUE = re.compile(
    # "I personally only have Amazon", "I myself just own Nvidia"
    r"\b(?:i\s+(?:(?:personally|myself|only|just|also|still)\s+){0,2}(?:have|got|'ve got)|"
    r"i\s+(?:(?:personally|myself|only|just|already|also|still|currently)\s+){0,2}"
    r"(?:hold|own|bought)|"
    r"i've\s+got|ive\s+got|i'm\s+long|i\s+am\s+long|we\s+(?:hold|own)|"
    r"my\s+(?:(?:brokerage|trading|investment|retirement|pension|stocks?\s+and\s+shares)\s+)?"
    r"(?:portfolio|holdings|positions?|stocks?|shares|account|isa|ira|401\(?k\)?)\s+"
    r"(?:currently\s+|now\s+)?"
    r"(?:contains?|has|have|includes?|holds?|are|is|consists? of)|in my portfolio|"
    r"(?:my\s+)?(?:portfolio|holdings|positions|stocks|shares)\s*:|"
    r"^\W*(?:currently\s+|now\s+|still\s+)?holding|"
    r"\b(?:i'?m|i\s+am)\s+(?:currently\s+|still\s+)?holding|"
    r"i'?m\s+(?:\w+\s+)?invested\s+in|my\s+(?:money|savings|cash)\s+is\s+(?:\w+\s+)?in|"
    r"i'?m\s+(?:still\s+)?sitting\s+on|"
    # a holding said in passing: "my Nvidia shares carried the year", "my Apple stock is up"
    r"(?<![\w'])my\s+(?=[\w.$-]+(?:\s+[\w.$-]+)?\s+(?:shares|stock|stocks|position|stake)\b)|"
    r"\b(?:as|i'?m|i\s+am)\s+(?-i:[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+){1,3},\s+)?an?\s+"
    r"(?:[\w-]+\s+)?(?=[\w.$-]+\s+(?:shareholder|stockholder)\b"
    r"(?!\s+(?:meeting|vote|letter|call|attendee))))",
    _I,
)


#: A pronoun for the names said before a holding cue ("I own both", "I have money in both").
BOTH = re.compile(
    r"\s+(?:(?:some\s+)?(?:money|shares|stock)\s+in\s+)?(?:both|them both|both of them|"
    r"all of them|them all|all three|each of them)\b",
    _I,
)
_STOCKISH = re.compile(
    r"\b(?:shares?|stocks?|positions?|portfolio|holdings?|a bit of|"
    r"in (?:my|our) (?:\w+\s+)?(?:account|isa|ira|brokerage|401\(?k\)?))\b",
    _I,
)


_MONEY_IN = re.compile(
    r"\s+(?:some\s+|a lot of\s+|most of my\s+)?(?:money|cash|savings)\s+in\b", _I
)


#: The cues that may speak of things rather than holdings ("I also have a Tesla").
_LOOSE_CUE = re.compile(
    r"i\s+(?:(?:personally|myself|only|just|also|still)\s+){0,2}(?:have|got)\b|i'?m\s+sitting|"
    r"im\s+sitting",
    _I,
)


def cue_holds(part: str, cue: re.Match[str], known: set[str]) -> bool:
    """Whether the holding cue ``cue`` in ``part`` speaks of holdings: any cue but "I have" /
    "I got" / "I'm sitting on" does; those do with stock words in the clause ("I have Tesla shares") or nothing but
    names after them ("I have Nvidia and Tesla"), not in "I have a Tesla"."""
    if not _LOOSE_CUE.match(cue.group(0)):
        return True
    rest = part[cue.end() :]
    if BOTH.match(rest) and symbols.tickers_in(part[: cue.start()], known):
        return True
    money = _MONEY_IN.match(rest)  # "I have money in Tesla and Nvidia"
    return bool(_STOCKISH.search(part)) or names_only(rest[money.end() if money else 0 :], known)


#: What may stand between the names of a bare list of holdings.
_BETWEEN_NAMES = re.compile(
    r"(?:\s|,|&|\band\b|\bsome\b|\ba few\b|\ba bit of\b|\bonly\b|\btoo\b)*", _I
)


def names_only(rest: str, known: set[str]) -> bool:
    """Whether ``rest`` (what follows "I have") is nothing but ticker or company names ("Nvidia
    and Tesla", "some msft, aapl & amzn."): then "have" means holding them; "a Tesla" or "Tesla
    questions" is something else."""
    clause = re.split(r"[.;!?]|\s+-\s+|\bbut\b", rest, maxsplit=1)[0]
    named = symbols.tickers_in(clause, known)
    if not named:
        return False
    cursor = 0
    for _, at in named:
        gap = clause[cursor:at]
        if _BETWEEN_NAMES.fullmatch(gap) is None:
            return False
        word = re.match(r"\$?[\w.&'-]+", clause[at:])
        if word is None:
            return False
        cursor = at + len(word.group(0))
    if _BETWEEN_NAMES.fullmatch(clause[cursor:]) is not None:
        return True
    # "I also have Apple and Microsoft individually, my goal is ...": a list of two names or
    # more, then the next clause.
    return len(named) > 1 and _LIST_END.match(clause[cursor:]) is not None


#: What may end a list of names held before the next clause begins.
_LIST_END = re.compile(
    r"\s*(?:(?:individually|directly|outright|as well|also|too|personally)\s*)?(?:,|$)", _I
)
