"""Tickers a user rules out by a conflict or a dislike, not by an instruction.

"I work at the FTC so I can't own Meta", "can't stand Musk, keep Tesla out", "Meta gives me
the creeps, I don't want a single share of it", "Amazon treats its staff terribly, I refuse
to give them a cent": each names the company and says the user will not hold it. The readers
are small grammar over the words: a cue of refusal or conflict, then the tickers it governs,
named right after it, inside "keep ... out", or before it and taken up by a pronoun. The
phrasing rules (:mod:`agent.learning.phrasing`) propose the value from them; the registry
grounds it by the tickers the quote names. :func:`let_back` reads the opposite, a ticker let
back in off the list ("take Amazon off the exclusion list", "I'm fine with Nvidia now"), for
the list edits of :mod:`agent.learning.discourse`.
"""

from __future__ import annotations

import re

from agent.learning import symbols
from agent.learning.indirect import someone_else

Found = tuple[str, object, int]

_I = re.IGNORECASE
_HOLDING_VERB = (
    r"(?:own|owning|hold|holding|trade|trading|invest in|investing in|touch|touching|"
    r"deal in|be in|go near|have|put\s+(?:a|my|any|one)\s+(?:\w+\s+)?(?:penny|cent|dime|dollar|"
    r"money|savings)\s+(?:in|into))"
)
_EXCLUDE_BEFORE = re.compile(
    r"\b(?:(?:can'?t|cannot|can not|mustn'?t|must not|may not|not allowed to|not permitted to|"
    r"prohibited from|restricted from|barred from|banned from|forbidden (?:to|from))\s+"
    rf"(?:\w+\s+)?{_HOLDING_VERB}"
    rf"|(?:won'?t|doesn'?t|does not|will not|don'?t|do not)\s+(?:let|allow)\s+(?:me|us)\s+"
    rf"(?:to\s+)?(?:{_HOLDING_VERB}|buy)"
    rf"|(?:would never|i'?d never|will never|never|refuse to|won'?t ever)\s+(?:\w+\s+){{0,2}}?"
    rf"(?:{_HOLDING_VERB}|buy|recommend|include|consider)"
    r"|(?:won'?t|will not)\s+(?:ever\s+|even\s+)?(?:touch|own|hold|go near|invest in)"
    r"|(?:bars?|barred|bans?|banned|prohibits?|restricts?|forbids?|blocks?|blocked)\s+"
    rf"(?:me|us)\s+from(?:\s+{_HOLDING_VERB})?"
    r"|can'?t stand|cannot stand|can'?t bear|hate|despise|loathe|detest|boycott\w*"
    r"|(?:put|puts|turned|turns)\s+me\s+off"
    r"|(?:feel|be)\s+(?:\w+\s+)?(?:terrible|awful|bad|guilty|uncomfortable|icky|dirty|wrong)\s+"
    r"(?:about\s+)?(?:owning|holding|investing in|buying)"
    r"|(?:stay|steer|keep)\s+(?:well\s+|far\s+)?(?:clear|away)\s+(?:of|from)"
    r"|avoid|exclude|nothing to do with|(?:don'?t|do not)\s+want(?:\s+any)?)\b"
    r"(?P<filler>(?:\s+(?:any|anything|stuff|shares?|stocks?|of|from|with|to do with|the))*)"
    r"\s+(?=\$?[A-Za-z])",
    _I,
)
_EXCLUDE_AROUND = re.compile(
    r"\b(?:keep|leave)\s+(?P<t>(?:[\w$.&]+\s+){1,4}?)(?:out|off|away)\b"
    # for good, not out of one comparison: the clause ends, or names the user's money
    r"(?=\s*(?:$|[,.;!]|please|for good|entirely|completely|altogether|of\s+(?:my|our|any|all)\s+"
    r"(?:portfolio|money|recommendations|suggestions|reports|list|investments|picks|life)|"
    # out of what the analyst gives: "keep Meta out of whatever you suggest"
    r"of\s+(?:whatever|anything|everything|what|all)\s+(?:you|u)\b))"
    r"|(?P<u>(?:[\w$.&]+(?:,\s*|\s+(?:and|or|&)\s+))*[\w$.&]+)\s+(?:is|are|stays?)\s+"
    r"(?:off[\s-]limits|off the table|a no[\s-]go|a (?:hard|firm|flat|definite|big) no|"
    r"out of bounds|banned|dead to me|on my (?:restricted|banned|no[\s-]go|black) ?list)\b"
    # the user's own rule, not someone else's ("a firm no from my advisor")
    r"(?!\s+(?:from|according to|for|by)\s+(?:my|our|his|her|their|the)\b)",
    _I,
)
#: "no" before the names, out of what the analyst writes: "no Tesla and no Meta in my
#: analysis", "please, no Nvidia in the reports". Not out of the portfolio ("no Tesla in my
#: portfolio" says what is not held) and not a reply ("no, Meta in my reports is fine").
_NO_IN = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|also|but|so|please|pls)\s+)no\s+"
    r"(?P<t>[\w$.&]+(?:\s+[\w$.&]+)?(?:(?:,\s*|\s+(?:and|or|&|nor)\s+)(?:no\s+)?"
    r"[\w$.&]+(?:\s+[\w$.&]+)?)*?)\s+(?:stocks?\s+|shares\s+|names\s+)?"
    r"(?:in|into|on)\s+(?:my|our|the|your|any)\s+(?:\w+\s+)?(?:analys[ie]s|reports?|"
    r"recommendations?|suggestions?|picks|research|advice|ideas|briefings?|updates|coverage|"
    r"notes|summar(?:y|ies)|write-?ups?|newsletters?)\b",
    _I,
)
#: One more name added to such a request: "..., and no Google either".
_NO_EITHER = re.compile(r"\bno\s+(?P<t>[\w$.&]+(?:\s+[\w$.&]+)?)\s+(?:either|too|as well)\b", _I)
_NEGATED = re.compile(r"\b(?:don'?t|do not|doesn'?t|not|no longer)\s+(?:really\s+)?$", _I)
_LIST_END = re.compile(r"[,;.!?]|\s(?:because|since|as|but|so|due)\b", _I)
#: Words that make a refusal one of price or timing, not for good ("I don't want to buy it at
#: these levels", "not buying Amazon right now").
FOR_NOW = re.compile(
    r"\b(?:right now|for now|just now|at the moment|yet|today|this (?:week|month|year)|"
    r"at (?:these|this|that|current|today'?s) (?:levels?|prices?|valuations?)|at this point|"
    r"until|till|unless|too (?:expensive|pricey|high|rich)|overvalued)\b",
    _I,
)


def excluded_tickers(text: str, known: set[str]) -> list[Found]:
    """The tickers ``text`` rules out by a conflict or a dislike, as one finding: the tickers
    right after the cue (joined by commas, "and", "or"), inside "keep ... out", or named
    before a refusal whose object is a pronoun for it."""
    named: list[tuple[str, int]] = []
    for match in _EXCLUDE_BEFORE.finditer(text):
        if _NEGATED.search(text[: match.start()]) or someone_else(text, match.start()):
            continue
        rest = text[match.end() :]
        end = _LIST_END.search(rest)
        span = rest[: end.start()] if end else rest
        if re.search(r"\b(?:any\s+longer|any\s*more|now)\b", span, _I) or FOR_NOW.search(span):
            continue  # "I can't hold NVDA any longer" is a sale, "not at these prices" a view
        first = symbols.tickers_in(span, known)
        if first and first[0][1] == 0:
            named += [(s, match.end() + at) for s, at in first if _joined(span, at)]
    for match in _EXCLUDE_AROUND.finditer(text):
        group = "t" if match["t"] else "u"
        if someone_else(text, match.start()):
            continue
        named += [(s, match.start(group) + at) for s, at in symbols.tickers_in(match[group], known)]
    named += _pronoun_exclusions(text, known)
    named += _no_in(text, known)
    if not named:
        return []
    tickers = list(dict.fromkeys(s for s, _ in named))
    return [("excluded_tickers", tickers, min(at for _, at in named))]


def _no_in(text: str, known: set[str]) -> list[tuple[str, int]]:
    """The tickers ``text`` asks to see none of in what the analyst writes (:data:`_NO_IN`),
    and any added to that request by "no X either"."""
    out: list[tuple[str, int]] = []
    for match in _NO_IN.finditer(text):
        if not someone_else(text, match.start()):
            out += [(s, match.start("t") + at) for s, at in symbols.tickers_in(match["t"], known)]
    if out:
        for match in _NO_EITHER.finditer(text):
            out += [(s, match.start("t") + at) for s, at in symbols.tickers_in(match["t"], known)]
    return out


def _joined(span: str, at: int) -> bool:
    """Whether the ticker at ``at`` continues the list that starts ``span`` ("Nvidia and
    Microsoft", "META, AMZN")."""
    return at == 0 or bool(re.search(r"(?:,|/|&|\band\b|\bor\b|\bnor\b)\s*$", span[:at]))


#: A refusal whose object is a pronoun for a company named before it in the sentence ("Meta
#: gives me the creeps, I don't want a single share of it", "I refuse to give them a cent").
_REFUSED_PRONOUN = re.compile(
    r"\b(?:(?:don'?t|do not)\s+want(?:\s+to\s+(?:own|hold|buy|touch|have))?"
    r"(?:\s+(?:my|any|a)\s+(?:money|savings|cash|pension|dollars?|penny|cent)\s+(?:in|into))?|"
    r"(?:(?:won'?t|will not|would never|'d never|will never|refuse to|never|can'?t|cannot|"
    r"(?:not|never)\s+(?:allowed|permitted)\s+to|(?:prohibited|restricted|barred|banned)\s+"
    r"from)\s+(?:ever\s+)?(?:own|hold|buy|trade|touch|give|invest in|put (?:my|a) \w+ (?:in|into))"
    r"(?:ing)?)|(?:keep|leave)(?=\s+(?:it|them)\s+(?:out|off|away)\b))\s+"
    r"(?:(?:a\s+single\s+share|any\s+shares?|a\s+(?:cent|penny|dime)|anything|any|a\s+piece)"
    r"\s+(?:of\s+)?)?(?P<p>it|them|its\s+(?:shares|stock)|their\s+(?:shares|stock)|"
    r"that\s+(?:company|stock|one))\b"
    # for good: not "at this price", "yet", "forever", "any longer"
    r"(?!\s+(?:now|yet|today|here|at|until|till|forever|long|any\s*longer|any\s*more|"
    r"anymore|too|for|again|back|above|below|over|under))",
    _I,
)
#: Owning a company would be a conflict ("owning Tesla stock would be awkward for us").
_CONFLICT = re.compile(
    r"\b(?:owning|holding|trading|buying)\s+(?P<t>(?:[\w$.&]+\s+){1,3}?)(?:stock\s+|shares\s+)?"
    r"(?:would|could|might)\s+(?:be|create|look like)\s+(?:\w+\s+)?(?:awkward|a conflict|"
    r"conflict of interest|a problem|an issue|inappropriate|a compliance \w+|insider trading)\b",
    _I,
)


def _pronoun_exclusions(text: str, known: set[str]) -> list[tuple[str, int]]:
    """The one company a refusal's pronoun stands for: the only one named before it."""
    out = []
    for match in _REFUSED_PRONOUN.finditer(text):
        if _NEGATED.search(text[: match.start()]) or someone_else(text, match.start()):
            continue
        if FOR_NOW.search(text[match.end() :]):
            continue
        before = symbols.tickers_in(text[: match.start()], known)
        if len({s for s, _ in before}) == 1:
            out.append(before[0])
    for match in _CONFLICT.finditer(text):
        if not someone_else(text, match.start()):
            out += [(s, match.start("t") + at) for s, at in symbols.tickers_in(match["t"], known)]
    return out


#: A ticker let back in, off the exclusion list: "take Amazon off the exclusion list", "I'm
#: fine with Nvidia now", "Tesla can come back", "Tesla you can show again", "unblock Meta".
LET_BACK = re.compile(
    r"\b(?:i'?m|i\s+am|im|we'?re|we\s+are)\s+(?:now\s+|totally\s+|actually\s+|honestly\s+)?"
    r"(?:fine|ok(?:ay)?|good|cool|alright|all\s+right)\s+with\s+(?P<a>[^,;.!?]+)"
    r"|\b(?:take|get|remove|drop)\s+(?P<b>[^,;.!?]+?)\s+(?:off|from)\s+(?:the|my|that)\s+"
    r"(?:exclu\w*|block(?:ed)?|black|ban(?:ned)?|do-not-touch)(?:\s+list|list)\b"
    r"|(?P<c>[^,;.!?]+?)\s+(?:can|may|could)\s+come\s+back\b"
    r"|(?P<d>[^,;.!?]+?)\s+you\s+(?:can|may|could)\s+(?:show|include|recommend|analy[sz]e|cover)"
    r"(?:\s+\w+)?\s+again\b"
    r"|\b(?:unblock|un-?exclude)\s+(?P<e>[^,;.!?]+)",
    _I,
)
_LET_BACK_END = re.compile(
    r"[,;.!?]|\s+(?:but|and|so|now|for|because|since|as|these\s+days|again|too)\b", _I
)


def let_back(text: str, known: set[str]) -> list[tuple[list[str], int]]:
    """The tickers ``text`` lets back in off the exclusion list (:data:`LET_BACK`), each group
    with where its cue is. Before the cue ("Tesla can come back") the subject is the last
    clause's; after it, the names up to the clause's end."""
    out = []
    for match in LET_BACK.finditer(text):
        said = str(match[match.lastgroup or "a"])
        if match.lastgroup in ("c", "d"):
            said = re.split(r"\s+(?:but|and|so|while)\s+|\s+-+\s+", said, flags=_I)[-1]
        else:
            end = _LET_BACK_END.search(said)
            said = said if end is None else said[: end.start()]
        named = [s for s, _ in symbols.tickers_in(said, known)]
        if named and not _NEGATED.search(text[: match.start()]):
            out.append((named, match.start()))
    return out
