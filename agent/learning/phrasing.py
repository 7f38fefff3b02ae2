"""How people state each profile attribute: the detectors :mod:`agent.learning.understanding`
runs over the user's own words.

:func:`detect` returns ``(attribute, raw value, position)`` for every value a part of a
sentence states with a cue that it is about the user: a self-reference ("I", "my", "for
me"), a key ("risk: high", "Goal = ..."), or an instruction ("short answers only"). The raw
value is normalised by :mod:`agent.learning.profile`; the words for enumerated values come
from :mod:`agent.learning.vocabulary`, numbers, durations, percentages and currencies from
:mod:`agent.learning.quantities`. (:func:`agent.learning.repairs.bare_value` reads a value
with no cue of its own for a known attribute, the "14" of "no sorry, 14".)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from agent.learning import (
    currencies,
    employment,
    exclusions,
    indirect,
    quantities,
    scope,
    sectors,
    symbols,
    timeline,
    vocabulary,
)
from agent.research.constraints import clauses, is_constraint
from agent.research.constraints import excluded_tickers as rule_exclusions

Found = tuple[str, object, int]

#: Attributes whose statements carry a negation ("no tobacco", "no more than 20%").
NEGATIVE_FORMS = frozenset({"excluded_sectors", "excluded_tickers", "max_drawdown_pct"})

#: Attributes a conditional sentence may state ("I'd sell if it fell over 20%"): a limit, a reaction.
CONDITIONAL = frozenset({"max_drawdown_pct", "risk_tolerance"})
#: A condition or supposition: a trait named in it is no statement ("if I were aggressive").
_SUPPOSING = re.compile(
    # "if I'm honest" concedes and "if you need it" offers: neither supposes anything.
    r"\b(?:if(?!\s+(?:(?:i'm|i am|im)\s+(?:being\s+)?(?:honest|truthful)|(?:you|u)\s+"
    r"(?:ever\s+)?(?:need|want|like|have to|must)\b))|unless|suppose|supposing|assuming|"
    r"imagine|hypothetically|in case|let'?s say|were i|had i|whether)\b",
    re.IGNORECASE,
)

#: A supposition contrary to the user's own case: what follows it is not their trait.
_COUNTERFACTUAL = re.compile(
    r"\b(?:if\s+(?:i|we)\s+(?:were|was|had)|were\s+(?:i|we)|had\s+(?:i|we))\b", re.IGNORECASE
)

_I = re.IGNORECASE
_SELF = re.compile(r"\b(?:i|i'm|im|i've|ive|i'd|i'll|me|my|mine|myself|we|we're|our|us)\b", _I)
_DEGREE = (
    r"(?:(?:very|fairly|pretty|prety|realy|quite|rather|really|super|way too|too|kinda|kind of|sort of|"
    r"somewhat|a bit|a little|more of|a|an|more|mostly|definitely|honestly|totally|"
    r"generally|overall|basically|extremely)\s+)*"
)


def words_of(table: Mapping[str, tuple[str, ...]]) -> str:
    return vocabulary.alternation(
        [v.replace("_", " ") for v in table] + [w for ws in table.values() for w in ws]
    )


def _has_self(text: str) -> bool:
    return bool(_SELF.search(text))


# -- risk tolerance ----------------------------------------------------------------------------

_RISK_ALL = words_of(vocabulary.RISK)
#: Risk words that describe a person on their own ("I'm cautious"); "high" or "low" need
#: the word "risk" beside them.
_RISK_PERSON = vocabulary.alternation(
    w
    for value, words in vocabulary.RISK.items()
    for w in (value, *words)
    if w
    not in {
        "high",
        "low",
        "medium",
        "growth",
        "balanced",
        "bold",
        "careful",
        "big",
        "huge",
        "large",
        "small",
        "limited",
        "side of caution",
        "in the middle",
    }
)
_RISK_NOUN = r"(?:tolerance|appetite|profile|level|attitude|preference|capacity)"
_RISK_TAIL = (
    r"(?=\s*(?:investor|person|type|guy|gal|saver|trader|one|with (?:(?:my|our|the|his|her) )?"
    r"\w+|on risk|risk[\s-]?wise|when it comes to (?:risk|investing|money)|overall|really|"
    r"at heart|by nature|tbh|to be honest|honestly|tho|though|lol|imo|now|these days|nowadays|"
    r"again|from now on|[.,;!)]|-|$))"
)
#: The way someone invests, which a risk level may describe ("aggressive growth").
_APPROACH = (
    r"(?:growth|approach|strategy|style|investing|portfolio|allocation|mix|picks|plays|bets|"
    r"positions|investments)"
)
_RISK = [
    rf"(?:\bmy\s+risk(?:\s+{_RISK_NOUN})?|\brisk\s+{_RISK_NOUN}|^\W*risk|"
    r"\bmy\s+(?:appetite|tolerance)\s+for\s+risk)"
    rf"\s*(?:is|:|=|-|would be|as|of)?\s*{_DEGREE}(?P<v>{_RISK_ALL})\b(?!\s+risk)",
    rf"\b(?:comfortable|ok|okay|fine|happy|good)\s+with\s+{_DEGREE}(?P<v>{_RISK_ALL})"
    r"[\s-]+risk\b",
    r"\bi\s+(?:\w+\s+){0,2}(?P<v>play it safe)\b",
    rf"\bi\s+(?:keep|like|prefer|stick|stay|go|want|choose)\b[^.,;]{{0,25}}?\b"
    rf"(?P<v>{_RISK_ALL})[\s-]+risk\b",
    rf"\b(?:(?:me|myself)\s+(?:down\s+)?as|(?:rated|rates|called|calls|labell?ed|labels|"
    r"classified|classifies|scored|scores|considers?|made|makes|pegged|pegs)\s+me"
    rf"(?:\s+down)?(?:\s+as)?)\s+(?:an?\s+)?{_DEGREE}"
    rf"(?P<v>{_RISK_PERSON}|(?:{_RISK_ALL})[\s-]+risk)\b",
    rf"\b(?:i'?m|i\s+am|im)\s+{_DEGREE}(?P<v>{_RISK_PERSON}){_RISK_TAIL}",
    # "I'd say I'm somewhere in the middle now risk wise": the middle of what, said after
    r"\b(?:i'?m|i\s+am|im)\s+(?:somewhere\s+|right\s+|kind of\s+|kinda\s+|about\s+)?"
    r"(?P<v>in the middle)\b(?=[^.;!?]{0,25}\brisk)",
    rf"\b(?:i'?m|i\s+am|im)\s+{_DEGREE}(?P<v>{_RISK_ALL})\s*(?:on|with|about|regarding)?"
    r"[\s-]+risk\b",
    rf"\b(?:i|we)\s+(?:\w+\s+)?(?:prefer|like|want|choose|go for|stick (?:to|with)|favou?r|"
    rf"need|take|accept)\s+{_DEGREE}(?P<v>{_RISK_ALL})[\s-]+risk\b",
    rf"\b(?P<v>{_RISK_ALL})(?:[\s-]+risk)?\s+(?:fits|suits|describes|is)\s+me\b",
    rf"\b(?:i'?m|i\s+am|im)\s+[^.,;]{{1,25}}?\s+and\s+{_DEGREE}(?P<v>{_RISK_PERSON}){_RISK_TAIL}",
    rf"^\W*{_DEGREE}(?P<v>{_RISK_ALL})(?:[\s-]+risk)?\s+(?:investor|saver|type|person|"
    rf"(?:\d{{1,3}}|{quantities.WORD_NUMBER})[\s-]+years?[\s-]+old(?:\s+[\w-]+)?)\s+here\b",
    rf"\bi\s+(?:\w+\s+)?(?:prefer|like|want|try|choose|need|tend)\s+to\s+(?:be|play it|stay|"
    rf"keep it|err on the)\s+{_DEGREE}(?P<v>{_RISK_ALL})\b",
    # "risk I can take is low", and with the object first in another language's order:
    # "risk I want to take only small"
    r"\brisk\s+(?:i|we)\s+(?:can|could|am willing to|'m willing to|want to|like to)\s+"
    rf"(?:take|handle|accept|stomach|tolerate|live with)\s+(?:(?:is|=|:)\s+)?(?:only\s+)?{_DEGREE}"
    rf"(?P<v>{_RISK_ALL})\b",
    # a level said of the way the user invests: "I want aggressive growth", "a cautious
    # approach suits me"
    r"\b(?:(?:i|we|and)\s+(?:\w+\s+)?(?:prefer|like|want|choose|go for|need)|"
    r"(?:i'?m|i am|we're|we are)\s+(?:\w+\s+)?after)\s+"
    rf"(?:an?\s+|the\s+|some\s+|more\s+)?{_DEGREE}(?P<v>{_RISK_PERSON})[\s-]+{_APPROACH}\b",
    rf"\b{_DEGREE}(?P<v>{_RISK_PERSON})[\s-]+{_APPROACH}\s+(?:fits|suits|works for|is right for|"
    r"describes)\s+me\b",
]


# -- horizon -----------------------------------------------------------------------------------

_D = (
    quantities.DURATION.replace("(?P<amount>", "(?:")
    .replace("(?P<unit>", "(?:")
    .replace("(?P<half>", "(?:")
)
_HCUE = (
    r"(?:horizon|horzion|horizion|horizen|time[\s-]?frame|investing window|investment window|"
    r"time window|window|"
    r"time[\s-]?line|holding period)"
)
_NOT_OLD = r"(?![\s-]*old\b)"
_HORIZON = [
    rf"\b{_HCUE}\b[^.;!?\d]{{0,30}}?(?P<v>{_D}){_NOT_OLD}",
    rf"(?P<v>{_D}){_NOT_OLD}[^.;!?]{{0,40}}?\b{_HCUE}\b",
    r"\b(?:horizon|time[\s-]?frame)\b\W{0,3}(?:is\s+)?(?:~|about\s+|around\s+|roughly\s+)?"
    r"(?P<v>\d+(?:\.\d+)?)(?![\d.%]|\s*(?:%|percent|months?|mos?|weeks?|decades?|[-\w]))",
]
_HORIZON_SELF = [
    r"\b(?:invest(?:ing)?|grow(?:ing)? (?:it|my money|the money|my savings)|"
    r"hold(?:ing)?(?: it| them| on)?|keep(?:ing)? (?:it|the money|this)|"
    r"need (?:the|this|my|it|that)?\s*(?:money|cash|funds)?|stop(?:ping)? work(?:ing)?|"
    r"retir(?:e|ing)|quit(?:ting)? work(?:ing)?|buy\w*\s+(?:a|an|my|our)\s+\w+|"
    r"for(?=\s+the\s+(?:next|coming)\b)|stick(?:ing)? with (?:it|this|them)|leave it|leave the money|park(?:ing)? (?:it|the money)|"
    r"finish(?:ing)? work(?:ing)?|touch (?:it|the money|this money|my money)|"
    r"stay(?:ing)? invested|keep(?:ing)? (?:these|the|my|our) investments|"
    r"untouch(?:able|ed)|locked (?:up|away)|tied up|"
    r"in (?:it )?for the long (?:haul|run|term))\b"
    r"[^.;!?]{0,25}?\b(?:in|for|within|after|another|during)?\s*"
    rf"(?:~|about\s+|around\s+|roughly\s+|at least\s+)?(?P<v>{_D}){_NOT_OLD}",
    rf"(?P<v>{_D})\s+(?:from|away from|until|till|to|before)\s+(?:my\s+)?"
    r"(?:retirement|retiring|i retire|i stop work\w*|pension)",
    # "retiring is roughly nine years off", "retirement is about 12 years away"
    r"\b(?:retirement|retiring|my retirement)\s+is\s+(?:only\s+|just\s+)?"
    rf"(?:~|about\s+|around\s+|roughly\s+)?(?P<v>{_D})\s+(?:away|off|out)\b",
    # "a decade and a half before I touch this money", "nine months from now I need the cash"
    rf"(?P<v>{_D})\s+(?:(?:from now|out)\s+)?(?:before|until|till|when)?\s*(?:i|we)\s+"
    r"(?:need|touch|use|withdraw|spend|want)\b",
]
_RANGE = re.compile(r"\d\s*(?:-|–|to|or)\s*$", _I)
#: The user's money as the subject ("this money is locked away for 15 years").
_POT = re.compile(r"\b(?:the|this|that)\s+(?:money|pot|cash|portfolio|savings|nest egg)\b", _I)
_EXPERIENCE = re.compile(r"\b(?:been|past|last|ago|since|experience|already)\b", _I)


# -- drawdown ----------------------------------------------------------------------------------

_LOSS = re.compile(
    r"\b(?:drawdown|draw[\s-]?d(?:ow|wo|w|o)n|drops?|dropped|dip|declines?|declined|falls?|fell|"
    r"loss(?:es)?|lose|loses|losing|lost|down|hit|tank\w*|plunge\w*|"
    r"haircut|red|crash\w*|halved|cut in half|shr[iau]nk\w*|vanish\w*|evaporat\w*|disappear\w*|"
    r"wiped out|go(?:ne|ing)? up in smoke)\b|-\s*\d+(?:\.\d+)?\s*%",
    _I,
)
#: A fall told as what happened, just before its size ("fell like 25%", "lost about 30%").
_PAST_FALL = re.compile(
    r"\b(?:fell|dropped|lost|tanked|crashed|plunged|plummeted|declined|sank|was down|went down|"
    r"were down)\s+(?:(?:like|by|about|around|almost|nearly|over|roughly|some|a good|a full)\s+)*$",
    _I,
)
_LIMIT = re.compile(
    r"\b(?:max|maximum|most|up to|tolerat\w*|accept\w*|stomach|handle|take|bear|afford|"
    r"live with|ok(?:ay)? (?:with|for me)|fine (?:with|for me)|comfortable|limit|cap|no more|not more|more than|"
    r"beyond|after that|threshold|i'm out|pain|over|above|past|lose sleep|panic|sell|"
    r"keep (?:my |the |our )?(?:losses|drawdowns?|downside) (?:under|below|within|to)|tops)\b|"
    r"\bdraw[\s-]?d(?:ow|wo|w|o)n\b",
    _I,
)


# -- goal and income ---------------------------------------------------------------------------

_GOAL_WORDS = words_of(vocabulary.GOAL)
_GOAL_CUE = re.compile(
    r"\b(?:goals?|purpose|aim|objective|target|priority|priorities|saving|save|saved|"
    r"putting (?:it|money) (?:aside|away)|money is for|it'?s for|this is for|"
    r"above (?:everything|all)|most important|matters? (?:most )?to me|main thing|"
    r"want to|wanna|going to|gonna|planning to|plan to|plan is|point is|the plan|"
    r"investing for|invest for|investing towards|money for|fund for|looking to|hope to|"
    r"hoping to|aim to|aiming to|would like to|'d like to|'d love to|plan on|planning on|"
    # the money's purpose said of the money: "this pot is for my son's college", "the money
    # needs to last until she finishes university", "eighteen years until pension"
    r"(?:pot|money|fund|savings|cash|account)\s+(?:is|are|will be)\s+(?:\w+\s+)?for|"
    r"needs? to last|set aside for|earmarked for|until (?:my\s+|the\s+)?pension)\b",
    _I,
)
#: Goal phrases that name a pot of money for a purpose: a goal on their own.
_GOAL_NOUNS = re.compile(
    r"\b(?:(?:pension|retirement|house|home|college|university|education|tuition)\s+"
    r"(?:pot|fund|money|savings|account|nest egg|deposit)|nest egg|down payment)\b",
    _I,
)
_POTS = ("pot", "fund", "money", "savings", "account", "deposit")
_RETIRING = re.compile(
    r"\b(?:i|we)(?:'m|'re| am| are| will|'ll| plan to| want to|'d like to|'d love to| would like"
    r" to| hope to| aim to| plan on| intend to|'m going to|'m planning to|'m hoping to|"
    r"'m looking to)?\s+"
    r"(?P<v>stop work\w*|stopping work\w*|retire|retiring|quit work\w*)\b",
    _I,
)
_DIVIDENDS = (
    r"(?:dividends?(?:[\s-]+(?:payers?|stocks?|income|paying\s+\w+))?|yield|payouts?|"
    r"income stocks|income payers)"
)
_GROWTH = r"(?:growth(?:\s+stocks?|\s+names)?|growers|capital gains|appreciation)"
_BALANCE = re.compile(
    r"\b(?:half|mix|mixed|blend|balance|balanced|both|equal|equally|50/50|50-50|split)\b", _I
)
_PREFER = re.compile(
    r"\b(?:prefer\w*|like|love|want|matters?|important|priority|focus|style|for me|into|"
    r"care about|favou?r|rather|more than|over)\b",
    _I,
)


# -- report style ------------------------------------------------------------------------------

_STYLE_WORDS = words_of(vocabulary.STYLE)
_REPORT_NOUN = (
    r"(?:reports?|answers?|replies|reply|responses?|summar(?:y|ies)|analys[ie]s|"
    r"write[\s-]?ups?|notes|updates|briefings?|versions?|ones|texts?|explanations?|"
    r"research|coverage|overviews?)"
)
_STYLE = [
    rf"\b(?P<v>{_STYLE_WORDS})\s+(?:\w+\s+)?{_REPORT_NOUN}\b",
    rf"\b{_REPORT_NOUN}\s+(?:to\s+be\s+|kept\s+|should\s+be\s+|that\s+are\s+|are\s+|"
    rf"(?:being\s+)?)(?:{_DEGREE})(?P<v>{_STYLE_WORDS})\b",
    rf"\b(?:report\s+style|style|length)\s*(?:is|:|=|-)\s*(?P<v>{_STYLE_WORDS})\b",
    r"\b(?:go|dive|dig)\s+(?P<v>deep)\b",
    r"\bkeep\s+(?:it|them|things)\s+(?P<v>short|brief|concise)\b",
    r"\b(?P<v>lots of detail|all the details?|every detail|full detail|in detail|tl;?dr|"
    r"bullet points)\b",
    r"\b(?:just|only)\s+(?:the\s+)?(?P<v>highlights|key points|headlines|gist)\b",
    rf"^\W*(?:and\s+|but\s+|also\s+)?(?:keep\s+it\s+)?(?P<v>{_STYLE_WORDS})\s*,?\s*"
    r"(?:please|pls|plz|thanks|thank you)\W*$",
    r"\b(?P<v>deep)[\s-]+dives?\s+(?:every time|always|each time|by default|from now on|"
    r"for everything|on everything)\b",
]


# -- tickers -----------------------------------------------------------------------------------

_WATCH = re.compile(
    r"\b(?:follow(?:ing)?|track(?:ing)?|watch(?:ing)?|monitor(?:ing)?|keep(?:ing)? (?:an )?eye on|"
    r"keep(?:ing)? tabs on|(?:add|put)\b[^.;!?]*?\bon\s+my\s+radar|"
    r"on my (?:watch[\s-]?list|radar)|add\b[^.;!?]*?\bwatch[\s-]?list|"
    r"put\b[^.;!?]*?\bwatch[\s-]?list|watch[\s-]?list|(?:add|put)\b[^.;!?]*?\bmy\s+list|"
    r"updates?\s+on|news\s+(?:on|about)|alerts?\s+(?:on|about|for)|(?:tell|let)\s+me\s+(?:know\s+)?(?:when|whenever|if)\s+"
    r"(?:something|anything)|(?:alert|notify|ping)\s+me\s+(?:when|whenever|if|about|on)|"
    r"keep\s+me\s+(?:posted|updated|informed|in\s+the\s+loop)\s+(?:on|about))\b",
    _I,
)
_SUBJECTLESS = re.compile(
    r"^\W*(?:(?:pls|please|plz|also|and|so|just|kindly|can you|could you|would you|you can|"
    r"you could|you|"
    r"i'd like you to|i want you to|you should)[\s,]+)*$",
    _I,
)
_SOLD = re.compile(r"\b(?:sold|selling|sell|dumped|got rid of|exited|closed)\b", _I)
_GONE = re.compile(
    r"\b(?:sold|selling|sell|dumped|got rid of|exited|closed|gone|used to|no longer|any\s*more|"
    r"would|could|if)\b",
    _I,
)


# -- currency, sectors, personal data ----------------------------------------------------------

_CURRENCY_CUE = re.compile(
    r"\b(?:currency|currnecy|curency|currancy|base|denominated|(?:accounts?|savings|money|portfolio|everything|it all|"
    r"all of it|reporting|report|think|measure\w*|invest\w*|keep\s+\w+|paid|figures|"
    r"salary|pay|wages?|earn\w*|income|"
    r"numbers|prices|values|amounts|quote\w*|show\w*)\b[^.;!?]{0,25}?\bin|use|using)\b",
    _I,
)
_EXCLUDED_WORDS = words_of(vocabulary.EXCLUDED_SECTORS)
_EXCLUDE = re.compile(
    r"\b(?:never|don'?t|do not|no|avoid|exclude|excluding|skip|without|(?:keep|leave)\s+"
    r"(?:\w+\s+){0,3}?(?:out|away)|leave out|stay away from|not interested in|nothing (?:in|to do with)|"
    r"won'?t|will not|refuse|ban|boycott|against|not)\b",
    _I,
)
_SECTOR_WORDS = words_of(vocabulary.SECTORS)
_INTEREST = re.compile(
    r"\b(?:my\s+sectors?|sectors?\s+(?:i|we)\s+\w+|interest(?:s|ed|ing)?|into|"
    r"focus(?:ed|ing)?\s+on|keen\s+on|(?<!for\s)like|love|prefer|favou?rite|exposure\s+to|overweight|"
    r"care\s+about|want\s+to\s+hear\s+about|follow(?:ing)?|track(?:ing)?|excited about|"
    r"my\s+focus|focus|my\s+thing|my\s+area|areas?\s+(?:i|we)\s+\w+|explore|my\s+corner)\b",
    _I,
)
_NAME = r"(?-i:[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,4})"
_FULL_NAME = [
    rf"\bmy\s+(?:full\s+)?name\s+is\s+(?P<v>{_NAME})",
    rf"\bmy\s+name's\s+(?P<v>{_NAME})",
    rf"^\W*(?:full\s+)?name\s*[:=-]\s*(?P<v>{_NAME})",
    rf"\bi'?m\s+called\s+(?P<v>{_NAME})",
    r"^\W*(?:(?:hi|hello|hey|good \w+)[,!.\s]+)?(?:i'?m|i am|this is)\s+"
    r"(?P<v>(?-i:[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+){1,3}))\s*[.,!]?\s*$",
]
_ADDRESS = [
    r"\b(?:(?:my|our)\s+)?(?:new\s+)?(?:home\s+|postal\s+|mailing\s+)?address\s*(?:is|:|=|-)\s*"
    r"(?P<v>[^;!?\n]{5,200}?)\.?\s*$",
    r"\b(?:send|mail|post|forward|ship)\s+(?:\w+\s+){0,3}?to\s+"
    r"(?:(?:my|our)\s+(?:place|home|house|flat|apartment)\s*[:,-]?\s*)?"
    r"(?P<v>[^;!?\n]*\d[^;!?\n]{3,200}?)\.?\s*$",
    r"\bi\s+live\s+at\s+(?P<v>[^;!?\n]*\d[^;!?\n]{3,200}?)\.?\s*$",
]


# -- detection ---------------------------------------------------------------------------------


def _first(patterns: list[str], text: str) -> re.Match[str] | None:
    found = [m for p in patterns if (m := re.search(p, text, _I)) is not None]
    return min(found, key=lambda m: m.start("v")) if found else None


def _all(patterns: list[str], text: str) -> list[re.Match[str]]:
    out = [m for p in patterns for m in re.finditer(p, text, _I)]
    return sorted(out, key=lambda m: m.start("v"))


def _risk(part: str, known: set[str]) -> list[Found]:
    reactions: list[Found] = [("risk_tolerance", v, at) for v, at in indirect.risk_reactions(part)]
    if reactions and reactions[0][1] == "conservative" and _drawdown(part, known):
        # A fearful reaction beside a percentage is a loss limit ("anything over 25% down
        # and I'd lose sleep"), not a risk tolerance.
        reactions = []
    if _COUNTERFACTUAL.search(part):  # "if I were braver I'd buy more": they are not
        return []
    if _SUPPOSING.search(part):  # "if it dropped 30% I'd buy more", not "if I were bold"
        return reactions[:1]
    named: list[Found] = [("risk_tolerance", m["v"], m.start("v")) for m in _all(_RISK, part)]
    if len(reactions) > 1 and _NOWADAYS.search(part, reactions[0][2]):
        # "when I was younger I panicked and sold, now I just buy more": the later one holds
        reactions = reactions[-1:]
    return named or reactions[:1]


_NOWADAYS = re.compile(r"\b(?:now|nowadays|these days|today|since then)\b", _I)


def _horizon(part: str, known: set[str]) -> list[Found]:
    found = [("horizon_years", m["v"], m.start("v")) for m in _all(_HORIZON, part)]
    if (_has_self(part) or _GOAL_CUE.search(part) or _POT.search(part)) and not _EXPERIENCE.search(
        part
    ):
        found += [("horizon_years", m["v"], m.start("v")) for m in _all(_HORIZON_SELF, part)]
        # "I'm 40 and won't touch it until I'm 65": the difference of two ages.
        found += [("horizon_years", y, at) for y, at in timeline.horizons_by_age(part)]
    if _goal(part, known):  # "a down payment on a flat in 3 years"
        found += [
            ("horizon_years", m[g], m.start(g))
            for m in re.finditer(
                rf"\b(?:in|within|after)\s+(?:(?:about|around|roughly|approximately)\s+|~)?"
                rf"(?P<v>{_D})"
                # "around fifteen years from now"
                rf"|(?P<x>{_D})\s+from\s+now\b"
                rf"|^\W*(?:about\s+|around\s+)?(?P<w>{_D})(?:\s+at\s+least)?\s*,",
                part,
                _I,
            )
            for g in ("v" if m["v"] else "x" if m["x"] else "w",)
        ]
    # A range ("5-7 years", "5 to 7 years") names no one horizon.
    return [f for f in found if not _RANGE.search(part[: f[2]])]


def _age(part: str, known: set[str]) -> list[Found]:
    return [("age", v, at) for v, at in timeline.ages(part)]


def _drawdown(part: str, known: set[str]) -> list[Found]:
    loss = _LOSS.search(part) or indirect.bail_point(part)
    if loss is None or indirect.NOT_A_LIMIT.search(part):
        return []
    if not (_LIMIT.search(part) or indirect.LIMIT_REACTIONS.search(part)):
        return []
    if not (_has_self(part) or re.search(r"\b(?:max|maximum)\b", part, _I)):
        return []
    # "when my portfolio fell like 25% in 2022 I couldn't sleep": a past fall's size is
    # history, not a limit.
    told = not (_SUPPOSING.search(part) or re.search(r"\b(?:would|i'?d|could)\b", part, _I))
    found = [
        f
        for f in [*quantities.percents(part), *quantities.money_shares(part)]
        if not (told and _PAST_FALL.search(part[: f[0].start()]))
    ]
    if not found:
        return []
    # The percentage beside a limit ("15% max") over the one beside the loss ("a 40% crash").
    limits = [m.start() for m in _LIMIT.finditer(part)]
    near = [f for f in found if any(abs(at - f[0].start()) <= 12 for at in limits)]
    # "a 40% drawdown would wipe me out, 15% is about my max": a limit named as one ("max",
    # "limit", "most") beside a percentage says which, over the word "drawdown".
    named = [m for m in _LIMIT.finditer(part) if m.group(0).lower() in _LIMIT_NOUNS]
    beside = [f for f in found if any(_gap(f[0], m) <= 15 for m in named)]
    near = beside or near
    anchor = loss.start()
    match, value = min(near or found, key=lambda f: abs(f[0].start() - anchor))
    return [("max_drawdown_pct", value, match.start())]


_LIMIT_NOUNS = frozenset({"max", "maximum", "most", "limit", "cap", "threshold", "tops"})


def _gap(a: re.Match[str], b: re.Match[str]) -> int:
    """The characters between two matches."""
    return max(a.start() - b.end(), b.start() - a.end(), 0)


def _goal(part: str, known: set[str]) -> list[Found]:
    found: list[Found] = []
    noun = _GOAL_NOUNS.search(part)
    if noun is not None:
        words = noun.group(0).split()
        pot = len(words) == 2 and words[1] in _POTS and words[0].lower() not in ("nest", "down")
        found.append(("goal", words[0] if pot else noun.group(0), noun.start()))
    retiring = _RETIRING.search(part)
    if retiring is not None:
        found.append(("goal", retiring["v"], retiring.start("v")))
    cue = _GOAL_CUE.search(part)
    if cue is not None and not _income_comparison(part):
        for match in re.finditer(
            rf"(?<![\w-])(?:{_GOAL_WORDS})(?![\w-])(?!\s+(?:investor|stocks?|names))", part, _I
        ):
            found.append(("goal", match.group(0), match.start()))
            break
    return sorted(found, key=lambda f: f[2])[:1]


def _income_comparison(part: str) -> bool:
    return bool(
        re.search(_DIVIDENDS, part, _I)
        and re.search(rf"\b{_GROWTH}\b", part, _I)
        and re.search(r"\b(?:than|over|rather|instead|versus|vs)\b", part, _I)
    )


def _income(part: str, known: set[str]) -> list[Found]:
    dividends = re.search(rf"\b{_DIVIDENDS}\b", part, _I)
    growth = re.search(rf"\b{_GROWTH}\b", part, _I)
    investor = re.search(
        r"\b(?P<v>growth|dividends?|income)\s+(?:investor|guy|gal|person|type|kind of \w+)\b",
        part,
        _I,
    )
    if investor is not None and _has_self(part):
        value = "growth" if investor["v"].lower() == "growth" else "dividends"
        return [("income_preference", value, investor.start())]
    if dividends is None and growth is not None:
        dividends = re.search(r"\bincome\b", part, _I)  # "a mix of income and growth"
    if dividends is None and growth is None:
        return []
    if not (_has_self(part) or _PREFER.search(part)):
        return []
    if dividends and growth:
        if _BALANCE.search(part):
            return [("income_preference", "balanced", min(dividends.start(), growth.start()))]
        if re.search(r"\b(?:than|over|rather|instead|versus|vs|before|above)\b", part, _I):
            first = dividends if dividends.start() < growth.start() else growth
            value = "dividends" if first is dividends else "growth"
            return [("income_preference", value, first.start())]
        return []
    if dividends is not None and _PREFER.search(part):
        return [("income_preference", "dividends", dividends.start())]
    if growth is not None and growth.group(0).lower() != "growth" and _PREFER.search(part):
        return [("income_preference", "growth", growth.start())]
    return []


def _style(part: str, known: set[str]) -> list[Found]:
    return [("report_style", m["v"], m.start("v")) for m in _all(_STYLE, part)]


def _watchlist(part: str, known: set[str]) -> list[Found]:
    cue = _WATCH.search(part)
    if cue is None:
        return []
    span = scope.clause_around(part, cue.start())
    # "What I need is simple: tell me when ...": a colon opens the request.
    before = part[span[0] : cue.start()].rsplit(":", 1)[-1]
    if not (
        _SUBJECTLESS.match(before)
        or re.search(r"\b(?:i|i'm|im|i'd|i'll|we|we're|we'd)\s+(?:\w+\s+){0,3}$", before, _I)
        or re.search(r"\bmy\s+watch[\s-]?list\b", part, _I)
    ):
        return []
    named = scope.within(symbols.tickers_in(part, known), span)
    return [("watchlist", [s for s, _ in named], named[0][1])] if named else []


def _holdings(part: str, known: set[str]) -> list[Found]:
    cue = indirect.HOLDING_CUE.search(part)
    if cue is None or _SOLD.search(part[: cue.start()] + " " + cue.group(0)):
        return []
    if cue.group(0).lower().startswith("my") and _GONE.search(part[cue.end() :]):
        return []  # "my Tesla shares went when I sold in May", "my Meta stock used to ..."
    if not indirect.cue_holds(part, cue, known):
        return []
    _, end = scope.clause_around(part, cue.start())
    named = scope.within(symbols.tickers_in(part, known), (cue.start(), end))
    if not named and indirect.BOTH.match(part, cue.end()):
        # "Apple and Amazon - I own both": the names before the cue.
        named = symbols.tickers_in(part[: cue.start()], known)
    return [("holdings", [s for s, _ in named], named[0][1])] if named else []


def _currency(part: str, known: set[str]) -> list[Found]:
    named = (
        currencies.currencies_of_nation(part)
        or currencies.currencies_based(part)
        or currencies.local_currencies(part)
    )
    if named and _has_self(part):
        return [("base_currency", named[0][0], named[0][1])]
    # The cue of living somewhere is the author's own ("being in Tokyo, yen is what counts").
    named = [
        n
        for n in currencies.currencies_of_place(part)
        if not indirect.said_of_someone_else(part, n[1])
    ]
    if named:
        return [("base_currency", named[0][0], named[0][1])]
    named = currencies.currencies_answered(part)
    if named:
        return [("base_currency", named[0][0], named[0][1])]
    cue = _CURRENCY_CUE.search(part)
    if cue is None or indirect.said_of_someone_else(part, cue.start()):
        return []
    for match, code in quantities.currencies(part[cue.start() :]):
        if match.group(0) in "$€£¥" and re.match(r"\s*\d", part[cue.start() + match.end() :]):
            continue
        return [("base_currency", code, cue.start() + match.start())]
    return []


def _sectors(part: str, known: set[str]) -> list[Found]:
    if said := sectors.said(part, _SECTOR_WORDS, _EXCLUDED_WORDS, personal=_has_self(part)):
        return said
    excluding = _EXCLUDE.search(part)
    if excluding is not None:
        named = [
            m
            for m in re.finditer(rf"\b(?:{_EXCLUDED_WORDS})\b", part, _I)
            if m.start() > excluding.start()
        ]
        if named:
            return [("excluded_sectors", [m.group(0) for m in named], named[0].start())]
        # "crypto is a casino, keep it away from me": the sector before a pronoun kept out
        if re.search(
            r"\b(?:keep|leave)\s+(?:it|them|that|those)\s+(?:\w+\s+)?(?:out|away)\b", part, _I
        ):
            first = re.search(rf"\b(?:{_EXCLUDED_WORDS})\b", part, _I)
            if first is not None and first.start() < excluding.start():
                return [("excluded_sectors", [first.group(0)], first.start())]
        return []
    if not (_INTEREST.search(part) and (_has_self(part) or re.match(r"^\W*sectors?\b", part, _I))):
        return []
    named = list(re.finditer(rf"\b(?:{_SECTOR_WORDS})\b", part, _I))
    if not named:
        return []
    return [("sectors_of_interest", [m.group(0) for m in named], named[0].start())]


def _personal(part: str, known: set[str]) -> list[Found]:
    found: list[Found] = []
    name = _first(_FULL_NAME, part)
    if name is not None and not indirect.is_a_name(name["v"]):
        name = None
    if name is not None:
        found.append(("full_name", name["v"], name.start("v")))
    address = _first(_ADDRESS, part)
    if address is not None and (
        re.match(r"(?:is|was)\b|on file\b", address["v"], _I)
        or (address.re.pattern == _ADDRESS[1] and not indirect.looks_like_address(address["v"]))
    ):
        address = None  # "send it to 5 people" names no address
    if address is not None:
        found.append(("address", indirect.address_only(address["v"]), address.start("v")))
    if name is None:
        found += [("full_name", v, at) for v, at in indirect.names_in_passing(part)[:1]]
    if address is None:
        found += [("address", v, at) for v, at in indirect.addresses_in_passing(part)[:1]]
    return found


def _excluded_tickers(part: str, known: set[str]) -> list[Found]:
    # A ticker an instruction rules out ("never include TSLA") is a standing rule the user
    # confirms (agent.research.constraints), not a fact read from a conflict or a dislike.
    found: list[Found] = []
    for clause in clauses(part):
        ruled = set(rule_exclusions([clause], known)) if is_constraint(clause) else set()
        offset = max(part.find(clause), 0)
        for attribute, value, at in exclusions.excluded_tickers(clause, known):
            kept = [s for s in value if s not in ruled] if isinstance(value, list) else []
            if kept:
                found.append((attribute, kept, offset + at))
    return found[:1]


_DETECTORS: tuple[Callable[[str, set[str]], list[Found]], ...] = (
    _risk,
    _excluded_tickers,
    _horizon,
    _age,
    _drawdown,
    _goal,
    _income,
    _style,
    _watchlist,
    _holdings,
    employment.employer,
    _currency,
    _sectors,
    _personal,
)


def detect(part: str, known: set[str]) -> list[Found]:
    """Every ``(attribute, raw value, position)`` the detectors find in ``part``, in order."""
    found = [f for detector in _DETECTORS for f in detector(part, known)]
    return sorted(found, key=lambda f: f[2])
