"""The discourse layer: how what a user says revises what was said before, and whose words a
claim is.

:func:`list_edits` reads the edits of a ticker list one part of a sentence makes: what the
user took out ("I sold my TSLA", "drop Meta from my watchlist", "I no longer hold Apple"),
what they swapped ("swap AMZN for MSFT", "instead of GOOGL, watch TSLA"), what they added
("also add GOOGL", and a purchase told with its subject left out, "bought back into
Nvidia") and whether they named the whole list as it now is ("just NVDA now"); taking out
includes bringing to nothing ("trimmed Tesla to zero"), saying it is gone ("Apple's gone
from my portfolio", "the TSLA position is closed"), off a list ("Nvidia's off the list") or
no longer needed on it ("Meta is no longer of interest"), let back in off the exclusion list
("take Amazon off the exclusion list", "I'm fine with Nvidia now", "Tesla you can show
again"), an object said before its subject
("the Microsoft I don't have more"), an object that refers to the list said before ("got
out of both": :attr:`ListEdit.refers`, read by :mod:`agent.learning.revisions`), taking back the part of what was
said that named it ("forget the Tesla part"), a sale whose object is a pronoun for the ticker
named before it ("Amazon, I have sell it") and repairing a name in the list ("Tesla, Meta - not
Meta, Microsoft"); "add it back" and "added back some Apple" add. An
edit names its list when the words do ("watchlist", "portfolio", a verb of owning); else it
edits the list stated last (``recent``), else the stored list that holds the ticker taken out
(``held``), else the verb's own list (sold: holdings; drop: the watchlist).

:func:`removal_stated` and :func:`whole_stated` are the grounding checks of an edit: a
removal's quote names each removed ticker together with its removal cue; a whole list's quote
says "just" or "only" of it.

:func:`source_of` names who a reported claim comes from ("my wife thinks ...": ``wife``;
"the risk quiz in my banking app says ...": ``risk quiz``); :func:`adopts` tells whether a
message makes someone else's claim the user's own ("and I agree, that's me too", "she's
right").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agent.learning import symbols
from agent.learning.exclusions import LET_BACK, let_back

_I = re.IGNORECASE

#: The ticker-list attributes of the profile.
LISTS = ("watchlist", "holdings", "excluded_tickers")


@dataclass(frozen=True)
class ListEdit:
    """An edit of one ticker list: what it adds, what it takes out, whether ``added`` is now
    the whole list, and where in the part it starts."""

    attribute: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    whole: bool
    at: int
    #: A removal whose object refers to the list said before ("sold them both"): "it" (its one
    #: ticker), "both" (its two) or "all"; what it takes out is read from that message.
    refers: str = ""


_OWNING = (
    r"sold|sold off|selling off|selled|(?:have|has|had|did|already) sell|dumped|got rid of|exited|closed(?: out)?(?: of)?|offloaded|"
    r"unloaded|cashed out(?: of)?|liquidated|let go of|parted with|bailed on|bailed out of|"
    r"got out of|pulled out of|pulled (?:my|our) money out of|walked away from|"
    r"no longer (?:hold|own|have|hold any|own any|have any)|"
    r"(?:don't|do not|dont) (?:hold|own|have)(?= [^,;.]*\b(?:anymore|any more|now)\b)|"
    # "I don't have it more": "no longer" in the word order of German, French or Dutch
    r"(?:don't|do not|dont|not) (?:hold|own|have)(?: (?:it|them))? (?:no )?more\b|"
    r"(?:not holding|not in)(?= [^,;.]*\b(?:anymore|any more)\b)|(?:i'm|im|i am) out of"
)
_WATCHING = (
    r"stop(?:ped)? (?:watching|following|tracking|monitoring)|unfollow(?:ed)?|"
    r"no longer (?:watch|follow|track|monitor|interested in|care about)|"
    r"(?:don't|do not|dont) (?:watch|follow|track|care about)(?= [^,;.]*\b(?:anymore|any more)\b)"
)
_NEUTRAL = (
    r"drop(?:ped)?|remove[sd]?|removing|delete[sd]?|deleting|ditch(?:ed)?|scrap(?:ped)?|"
    r"cut|kick(?:ed)? out|take|took|taken|"
    # a retraction with a ticker for its object: "never mind Tesla" ("forget ..." asks the
    # agent to forget, which the chat answers on its own)
    r"nvm|never ?mind"
)
_REMOVE = re.compile(
    rf"(?<![\w'])(?:(?P<own>{_OWNING})|(?P<watch>{_WATCHING})|(?P<neutral>{_NEUTRAL}))\b", _I
)
#: What ends the tickers a cue applies to.
_SCOPE_END = re.compile(
    r"[,;.!?]|\s+(?:but|and\s+(?:just|only|now|i|bought|added?|put|keep|kept|then|so)|"
    r"so|just|only|now|for|with|into|because|since|as)\b|\s+-+\s+",
    _I,
)
_NEGATED = re.compile(r"\b(?:not|never|haven't|hasn't|didn't|won't|don't|can't)\s+(?:\w+\s+)?$", _I)
_SWAP = re.compile(
    r"(?<![\w'])(?:swap(?:ped|ping)?|switch(?:ed|ing)?|replace[ds]?|replacing|"
    r"trade[ds]?|rotate[ds]?|exchange[ds]?|change[ds]?|changing)\s+(?:out\s+)?(?P<a>[^,;.!?]+?)\s+"
    r"(?:for|with|into|to)\s+(?P<b>[^,;.!?]+)",
    _I,
)
#: "instead of", as typed in a hurry too ("insted of", "instad of").
_INSTEAD = r"i(?:n?st|nt)e?a?d of"
_INSTEAD_FIRST = re.compile(rf"\b{_INSTEAD}\s+(?P<a>[^,;.!?]+?)\s*[,;:]\s*(?P<b>[^;.!?]+)", _I)
_INSTEAD_AFTER = re.compile(
    rf"(?P<b>[^,;.!?]+?)\s+(?:{_INSTEAD}|rather than|in place of)\s+(?P<a>[^,;.!?]+)", _I
)
_ONLY = re.compile(
    r"\b(?:now\s+)?(?:just|only)\s+(?:(?:hold|own|have|watch|follow)(?:ing)?\s+)?"
    r"(?P<v>[^,;.!?]+?)\s*(?:now|left|these days|remaining|"
    r"anymore|any more|at the moment|today)\b|\bnow\s+(?:just|only)\s+(?P<w>[^,;.!?]+)|"
    r"\b(?:just|only)\s+(?P<y>[^,;.!?]+?)\s+(?:i|we)\s+(?:still\s+)?(?:have|hold|own|keep|watch|"
    r"follow)\b|\b(?:just|only)\s+(?P<x>[^,;.!?]+?)\s*(?=[,;.!?]|$)",
    _I,
)
_ADD = re.compile(
    r"(?:^|[,;.]\s*|\b(?:also|and|then|pls|please|plus|oh)\s+)(?:also\s+)?"
    r"(?:add|added|throw in|include|also|put|stick|pop)\s+(?P<v>[^,;.!?]+?)"
    r"(?:\s+(?:on|in|back on|back in|back))?"
    r"(?:\s+(?:too|as well|also|instead|to (?:it|that|the list|the mix|my list)))?\s*(?=[,;.!?]|$)",
    _I,
)
_BOUGHT = re.compile(
    r"\b(?:bought(?: back)?(?: in)?(?:to)?|picked up|added(?: back)?|"
    r"opened (?:a (?:new )?position|one|a stake|a small one|a new one) in)\s+(?:some\s+|a bit of\s+|shares of\s+|"
    r"more\s+)?(?P<v>[^,;.!?]+)",
    _I,
)
#: A purchase told with the subject left out, as chat does ("bought back into Nvidia"): the
#: user's own.
_BOUGHT_ELIDED = re.compile(
    r"^\W*(?:(?:also|just|then|and|so|recently|finally|yesterday|today|oh|ok|okay)[\s,]+)*"
    r"(?:(?:i|we)(?:'ve| have)?\s+(?:(?:also|just|then|recently|finally|since)\s+)*)?"
    r"(?:bought|picked up|added back|opened)\b",
    _I,
)
#: Taken down to nothing: "trimmed Tesla to zero", "cut my Meta position to nothing".
_TO_ZERO = re.compile(
    r"\b(?:trimmed|trim|cut|reduced|took|brought|sold|wound|scaled)\s+(?:down\s+)?(?P<a>[^,;.!?]+?)"
    r"\s+(?:all the way\s+)?(?:down\s+)?to\s+(?:zero|nothing|nil|0)\b",
    _I,
)
#: Said to be gone: "Apple's gone from my portfolio", "the Tesla shares are out".
_GONE = re.compile(
    r"(?P<a>[^,;.!?]+?)(?:'s|'re|\s+is|\s+are|\s+has been|\s+have been)\s+(?:now\s+|all\s+)?"
    r"(?:gone|out|sold|closed(?: out)?|exited|liquidated)\b",
    _I,
)
#: A position said to have been sold: "the Microsoft position was liquidated". Only a
#: position, a stake or shares: "Nvidia got dumped today" is the market, not the user.
_CLOSED = re.compile(
    r"(?P<a>[^,;.!?]*?\b(?:positions?|stakes?|shares|holdings?))\s+(?:was|were|got|has been|"
    r"have been|is|are)\s+(?:now\s+|all\s+)?(?:sold(?: off)?|closed(?: out)?|exited|liquidated|"
    r"dumped|offloaded|unloaded|cashed out)\b",
    _I,
)
#: Said to be no longer part of a list: "Amazon's not needed on there anymore", "Meta is no
#: longer of interest to me"): a predicate of membership said of the user or the list, not
#: one about the company ("Tesla is not cheap anymore", "Meta is not interesting" keep it).
_UNNEEDED = re.compile(
    r"(?P<a>[^,;.!?]+?)(?:(?:'s|'re|\s+is|\s+are)\s+(?:not|no longer)|\s+(?:isn't|aren't|isnt|arent))"
    r"\s+(?:really\s+)?"
    r"(?:needed|wanted|necessary|interesting|of interest|required|on (?:my|the) \w+)"
    r"(?=[^,;.!?]*\b(?:anymore|any more|on (?:my|the) (?:list|watch[\s-]?list|radar)|on there)\b|"
    r"\s+(?:for me|to me)\b)",
    _I,
)
#: Said to be off a list: "Nvidia's off the list", "Tesla is off my radar now".
_OFF = re.compile(
    r"(?P<a>[^,;.!?]+?)(?:'s|'re|\s+is|\s+are|\s+goes|\s+comes|\s+has been|\s+have been)\s+"
    r"(?:now\s+)?off\s+(?:the|my|our)\s+(?:list|watch[\s-]?list|radar)\b",
    _I,
)
#: One part of what was said taken back: "forget the Tesla part", "scratch the horizon bit".
RETRACT_PART = re.compile(
    r"\b(?:forget|scratch|ignore|disregard|strike|skip|drop|delete|remove|cancel)\s+"
    r"(?:about\s+)?(?:the|that|my)\s+(?P<a>[\w' -]+?)\s+(?:part|bit|thing|piece)\b",
    _I,
)
#: A removal whose object is a pronoun ("Amazon, I sold it"): it names what came before.
_PRONOUN_OBJECT = re.compile(r"\s*(?:it|them|those|these|that|all of (?:it|them))\b", _I)
#: A repair inside a list: "Tesla, Meta - not Meta, Microsoft".
_NOT_BUT = re.compile(
    r"\bnot\s+(?P<a>[^,;.!?]+?)\s*[,;:]\s*(?:but\s+|i meant\s+|it's\s+|its\s+)?(?P<b>[^,;.!?]+)",
    _I,
)
_NAMES_WATCH = re.compile(r"\bwatch[\s-]?list|\bradar\b|\bwatching\b|\bfollow", _I)
_NAMES_HOLD = re.compile(
    r"\b(?:portfolio|holdings?|positions?|shares|stocks|hold|own|owned|sold|bought|stake)\b", _I
)
_NAMES_EXCLUDED = re.compile(r"\b(?:exclu\w*|blacklist|black list|banned|do-not-touch)\b", _I)


def list_edits(
    part: str,
    known: set[str],
    recent: Sequence[str] = (),
    held: Mapping[str, object] | None = None,
) -> list[ListEdit]:
    """The edits of ticker lists ``part`` states, one per list, in order."""
    found: list[tuple[str | None, list[str], list[str], bool, int]] = []
    referred: list[tuple[str | None, str, int]] = []
    for pattern in (_SWAP, _INSTEAD_FIRST, _INSTEAD_AFTER):
        for match in pattern.finditer(part):
            out, into = _named(match["a"], known), _named(match["b"], known)
            if out and into:
                found.append((None, into, out, False, match.start()))
    for match in _NOT_BUT.finditer(part):
        out, into = _named(match["a"], known), _named(match["b"], known)
        if out and into and set(out) <= set(_named(part[: match.start()], known)):
            found.append((None, into, out, False, match.start()))  # the repair of a name said
    for pattern, list_of in (
        (_TO_ZERO, "holdings"),
        (_GONE, "holdings"),
        (_CLOSED, "holdings"),
        (_OFF, None),
        (_UNNEEDED, None),
    ):
        for match in pattern.finditer(part):
            out = _named(match["a"], known)
            if out and not _NEGATED.search(part[: match.start("a")]):
                found.append((list_of, [], out, False, match.start()))
    found += [("excluded_tickers", [], out, False, at) for out, at in let_back(part, known)]
    for match in RETRACT_PART.finditer(part):
        out = _bare_tickers(match["a"], known)
        if out:
            found.append((None, [], out, False, match.start()))
    for match in _REMOVE.finditer(part):
        if _NEGATED.search(part[: match.start()]):
            continue
        scope = _scope(part[match.end() :], take=match.group(0).lower())
        if _PARTIAL.match(scope):
            continue  # "sold half my NVDA": still held
        out = _named(scope, known)
        if not out and _PRONOUN_OBJECT.match(scope):
            out = _named(part[: match.start()], known)  # "Meta, I have sell it"
        elif not out and _FRONTED.search(part[: match.start()]):
            # "the Microsoft I don't have more": the object said first, in the same clause
            out = _named(_clause_before(part[: match.start()]), known)
        kind = "holdings" if match["own"] else "watchlist" if match["watch"] else None
        referring = _REFERS.match(scope)
        if out:
            found.append((kind, [], out, False, match.start()))
        elif (
            referring
            and not match["neutral"]
            and _SUBJECT_ONLY.match(_clause_before(part[: match.start()]))
            and not _named(part[: match.start()], known)
        ):
            referred.append((kind, _referent(referring[0]), match.start()))
    for match in _ADD.finditer(part):
        into = _bare_tickers(match["v"], known)
        if into:
            found.append((None, into, [], False, match.start()))
    if any(f[2] for f in found) or _BOUGHT_ELIDED.match(part):
        for match in _BOUGHT.finditer(part):
            into = _named(_scope(match["v"]), known)
            named_before = list(dict.fromkeys(_named(part[: match.start()], known)))
            if not into and _PRONOUN_OBJECT.match(match["v"]) and len(named_before) == 1:
                into = named_before  # "Amazon's not needed on there anymore, I bought it"
            if into:
                found.append(("holdings", into, [], False, match.start()))
    # "only nvidia" said alone right after a list: that list, whole.
    alone = _ALONE.fullmatch(part.strip(" .!")) is not None and bool(recent) and recent[-1] in LISTS
    named_list = found or _SOLD_BEFORE.search(part) or _MINE.search(part) or alone
    only = _only(part, known) if named_list else None
    if only is not None:
        found.append((None, only[0], [], True, only[1]))
    return _by_list(part, found, referred, recent, held)


def _by_list(
    part: str,
    found: Sequence[tuple[str | None, list[str], list[str], bool, int]],
    referred: Sequence[tuple[str | None, str, int]],
    recent: Sequence[str],
    held: Mapping[str, object] | None,
) -> list[ListEdit]:
    """The edits ``found`` in ``part`` merged into one per list, in order; a referring
    removal (``referred``) is the edit of a list nothing else edits."""
    edits: dict[str, ListEdit] = {}
    for kind, into, out, whole, at in sorted(found, key=lambda f: f[4]):
        # A verb's own list ("I bought it") outranks a list named in another clause.
        words = _own_clause(part, at) if kind else _through_clause(part, at)
        attribute = _target(words, kind, out, recent, held, edits)
        before = edits.get(attribute)
        if before is not None:
            into = [*before.added, *into]
            out = [*before.removed, *out]
            whole = whole or before.whole
            at = before.at
        added = tuple(dict.fromkeys(into))
        edits[attribute] = ListEdit(
            attribute, added, tuple(t for t in dict.fromkeys(out) if t not in added), whole, at
        )
    for kind, refers, at in referred:
        attribute = _target(_through_clause(part, at), kind, (), recent, held, edits)
        if attribute not in edits:
            edits[attribute] = ListEdit(attribute, (), (), False, at, refers=refers)
    return sorted(edits.values(), key=lambda e: e.at)


#: The object of a removal that refers to the list said before: "sold them both", "got out of
#: both", "dumped the lot", "sold it".
_REFERS = re.compile(
    r"\s*(?:off\s+)?(?:(?:them|those|these) (?:both|two|all)|both(?: of (?:them|those|these|my \w+))?|"
    r"all (?:of )?(?:them|those|these|it)|them all|the lot|the whole lot|everything|them|it)\b",
    _I,
)


#: What a referring removal's clause may say before its cue: its subject and a few words of
#: time or manner, nothing that could be what "it" refers to ("my car broke down so I sold it").
_SUBJECT_ONLY = re.compile(
    r"^\W*(?:(?:i|we|i've|we've|i have|we have|i just|just|also|then|and|so|finally|already|"
    r"yesterday|today|recently|ok|okay|well|actually|update|quick update|heads up)\W+)*$",
    _I,
)


def _referent(said: str) -> str:
    """What a referring object takes: "it" one ticker, "both" two, anything else all."""
    said = said.strip().lower()
    return "it" if said == "it" else "both" if "both" in said or "two" in said else "all"


#: A clause whose object comes before its subject ("the Microsoft I [don't have more]").
_FRONTED = re.compile(r"(?:^|[,;:.!?]\s*)(?:the\s+)?[$\w.&'-]+(?:\s+shares)?\s+(?:i|we)\s*$", _I)


def _through_clause(part: str, at: int) -> str:
    """``part`` up to the end of the comma clause at ``at``: the words that may name the list
    an edit there changes ("Amazon's not needed anymore, I bought it": not the holdings)."""
    end = re.compile(r"[,;]").search(part, at)
    return part if end is None else part[: end.start()]


def _own_clause(part: str, at: int) -> str:
    """The comma clause of ``part`` at ``at``."""
    start = max((m.end() for m in re.finditer(r"[,;]", part[:at])), default=0)
    return _through_clause(part, at)[start:]


def _clause_before(words: str) -> str:
    """The clause ``words`` ends with: after its last comma, semicolon, colon or full stop."""
    return re.split(r"[,;:.!?]", words)[-1]


#: A part that is only "just X" or "only X".
_ALONE = re.compile(
    r"(?:(?:so|and|now|actually|no|ok|okay|well|sorry|wait|then)[\s,]+)*(?:just|only)\s+[^,;.!?]+",
    _I,
)


def holds(held: Mapping[str, object] | None, attribute: str, tickers: Sequence[str]) -> bool:
    """Whether the stored list ``attribute`` of ``held`` holds one of ``tickers``."""
    stored = (held or {}).get(attribute)
    return isinstance(stored, list) and any(t in stored for t in tickers)


_PARTIAL = re.compile(
    r"\s*(?:half|some|part|a part|a bit|a little|a few|a portion|a chunk|a third|a quarter|"
    r"most|a lot|\d+\s*%|\d+ percent|\d+ shares)\b",
    _I,
)
_MINE = re.compile(
    r"\b(?:mine(?:'s| is| are)|my (?:holdings?|portfolio|watch[\s-]?list|list|positions?)"
    r"(?:\s*:|\s+(?:is|are|'s)(?: now)?\b)|i (?:now )?(?:just|only) (?:hold|own|have|watch|follow)\b)",
    _I,
)
_SOLD_BEFORE = re.compile(rf"(?<![\w'])(?:{_OWNING})\b", _I)


def _named(words: str, known: set[str]) -> list[str]:
    return [s for s, _ in symbols.tickers_in(words, known)]


def _bare_tickers(words: str, known: set[str]) -> list[str]:
    """The tickers ``words`` name when it names nothing else ("GOOGL", "NVDA and MSFT")."""
    named = symbols.tickers_in(words, known)
    rest = re.sub(
        r"\$?[\w.-]+", lambda m: "" if _is_named(m.group(0), named) else m.group(0), words
    )
    rest = re.sub(
        r"\b(?:and|or|plus|too|also|my|the|shares?|stocks?|of|a few|some|a bit|a little|a couple)\b"
        r"|[,&+/]",
        " ",
        rest,
        flags=_I,
    )
    return [s for s, _ in named] if named and not rest.strip() else []


def _is_named(word: str, named: Sequence[tuple[str, int]]) -> bool:
    return any(symbols.mentions_ticker(s, word) for s, _ in named)


def _scope(after: str, take: str = "") -> str:
    """The words a removal cue applies to: up to the clause's end ("take X off": up to off)."""
    if take.startswith(("take", "took")):
        off = re.search(r"\s+(?:off|out)\b", after, _I)
        return after[: off.start()] if off else ""
    end = _SCOPE_END.search(after)
    return after if end is None else after[: end.start()]


def _only(part: str, known: set[str]) -> tuple[list[str], int] | None:
    for match in _ONLY.finditer(part):
        words = match["v"] or match["w"] or match["y"] or match["x"] or ""
        named = _bare_tickers(words, known)
        if named:
            return named, match.start()
    return None


def _target(
    part: str,
    kind: str | None,
    removed: Sequence[str],
    recent: Sequence[str],
    held: Mapping[str, object] | None,
    edits: Mapping[str, ListEdit],
) -> str:
    """Which list an edit changes (see the module's docstring)."""
    if _NAMES_EXCLUDED.search(part):
        return "excluded_tickers"
    if _NAMES_WATCH.search(part):
        return "watchlist"
    if kind is not None:
        return kind
    if _NAMES_HOLD.search(part):
        return "holdings"
    if edits:
        return list(edits)[-1]
    stored = [a for a in LISTS if holds(held, a, removed)]
    for attribute in reversed(recent):
        if attribute in LISTS and (not stored or attribute in stored):
            return attribute
    return stored[0] if stored else "watchlist"


def removal_stated(
    removed: Sequence[str],
    quote: str,
    names: Callable[[str, str], bool] = symbols.mentions_ticker,
) -> bool:
    """Whether ``quote`` takes each of ``removed`` out: it names each (``names``: a ticker by
    default) and says it goes (sold, dropped, no longer held, swapped or replaced)."""
    if not removed:
        return True
    cue = _REMOVE.search(quote) or _SWAP.search(quote) or _NOT_BUT.search(quote)
    cue = cue or _INSTEAD_FIRST.search(quote) or _INSTEAD_AFTER.search(quote)
    cue = cue or _TO_ZERO.search(quote) or _GONE.search(quote) or _OFF.search(quote)
    cue = cue or _UNNEEDED.search(quote) or _CLOSED.search(quote)
    cue = cue or RETRACT_PART.search(quote) or LET_BACK.search(quote)
    return cue is not None and all(names(t, quote) for t in removed)


#: A correction that replaces what was said before rather than adding to it.
_REPLACES = re.compile(
    r"\b(?:(?:replace|swap|switch|change|exchange|trade) (?:it|that|this|them|those)(?: out)? "
    r"(?:with|for|to|into)|make (?:it|that)|i meant|i mean|meant to say|misspoke|scratch that|"
    r"strike that|no wait|wrong one|typo|oops|whoops|sorry|not that one)\b",
    _I,
)
_ADDS = re.compile(r"\b(?:add|added|also|too|as well|plus|include|another|more)\b", _I)


def replaces(quote: str) -> bool:
    """Whether ``quote`` replaces the values said before ("replace it with GOOGL", "sorry, I
    meant Amazon") rather than adding to them ("oh, also GOOGL")."""
    return bool(_REPLACES.search(quote)) and not _ADDS.search(quote)


def replacement_stated(removed: Sequence[str], quote: str, before: Sequence[str]) -> bool:
    """Whether a revision that names only its new values takes ``removed`` out: ``quote``
    replaces (:func:`replaces`) and one of the earlier messages it cites (``before``) names
    each removed ticker."""
    return replaces(quote) and any(
        all(symbols.mentions_ticker(t, text) for t in removed) for text in before
    )


def removed_words(part: str, words: str) -> list[str]:
    """The words of the alternation ``words`` that ``part`` takes out ("drop healthcare"):
    each after a removal cue in the same comma clause."""
    out: list[str] = []
    for clause in re.split(r"[,;]|\s+(?:and|but)\s+", part):
        cue = _REMOVE.search(clause)
        if cue is not None and not _NEGATED.search(clause[: cue.start()]):
            out += re.findall(rf"\b(?:{words})\b", clause[cue.end() :], _I)
    return out


def swapped_words(part: str, words: str) -> list[tuple[list[str], list[str]]]:
    """The words of the alternation ``words`` that ``part`` swaps, each as (taken out, put
    in): "swap energy for healthcare", "healthcare instead of energy"."""
    out = []
    for pattern in (_SWAP, _INSTEAD_FIRST, _INSTEAD_AFTER):
        for match in pattern.finditer(part):
            gone = re.findall(rf"\b(?:{words})\b", match["a"], _I)
            into = re.findall(rf"\b(?:{words})\b", match["b"], _I)
            if gone and into:
                out.append((gone, into))
    return out


def referred_stated(removed: Sequence[str], quote: str, before: Sequence[str]) -> bool:
    """Whether a removal that names none of its tickers takes ``removed`` out: ``quote`` has a
    removal cue whose object refers to a list said before ("got out of both") and one of the
    earlier messages it cites (``before``) names each removed ticker."""
    cue = next(
        (
            m
            for m in _REMOVE.finditer(quote)
            if m["neutral"] is None and _REFERS.match(quote[m.end() :])
        ),
        None,
    )
    return (
        cue is not None
        and bool(removed)
        and any(all(symbols.mentions_ticker(t, text) for t in removed) for text in before)
    )


def whole_stated(value: Sequence[str], quote: str) -> bool:
    """Whether ``quote`` names ``value`` as the whole list ("just NVDA now")."""
    return bool(re.search(r"\b(?:just|only)\b", quote, _I)) and all(
        symbols.mentions_ticker(t, quote) for t in value
    )


# -- withdrawals ---------------------------------------------------------------------------------

_WITHDRAW = re.compile(
    r"\b(?:scratch (?:that|it|my)|strike that|forget (?:that|what i said|i said|i mentioned)|"
    r"ignore (?:that|what i said)|disregard (?:that|what i said)|(?:let me )?take (?:that|it) "
    r"back|never ?mind|(?:delete|remove|erase|drop|scrap|bin) (?:that|it|my)|on second thought)\b",
    _I,
)
#: Why a withdrawn value has no successor: the user does not know it, or keeps it private.
_UNKNOWN = re.compile(
    r"\b(?:(?:don't|do not|dont) (?:really |honestly |actually )?know|not sure|no idea|"
    r"undecided|(?:haven't|have not|not) (?:yet )?decided|"
    r"(?:i'd|i would|i'd much) rather (?:not|you didn't|you did not|keep)|prefer not to|"
    r"(?:keep|kept) (?:it|that|this) (?:private|to myself)|"
    r"(?:don't|do not|dont) (?:want|need) (?:it|that|this|my \w+(?: \w+)?) (?:stored|saved|"
    r"kept|recorded|on file|remembered|in (?:here|there|your memory))|"
    r"(?:don't|do not|dont) (?:keep|store|save|record|remember))\b",
    _I,
)
#: A withdrawal that needs no other cue ("don't keep my address").
_UNKEEP = re.compile(
    r"\b(?:don't|do not|dont|please don't|stop) (?:keep(?:ing)?|stor(?:e|ing)|sav(?:e|ing)|"
    r"record(?:ing)?|remember(?:ing)?) my\b",
    _I,
)
#: The words that name an attribute a user may withdraw ("my horizon").
NOUNS = {
    "horizon_years": r"horizon|time ?frame|timeline",
    "risk_tolerance": r"risk(?: tolerance| appetite| profile| level)?|tolerance(?: for risk)?",
    "max_drawdown_pct": r"(?:max(?:imum)? )?drawdown|loss limit|max(?:imum)? loss",
    "base_currency": r"(?:base )?currency",
    "goal": r"goal",
    "income_preference": r"income preference",
    "report_style": r"report style",
    "employer": r"employer",
    "age": r"age",
    "address": r"address",
}


def withdrawn(sentence: str) -> str | None:
    """The attribute ``sentence`` withdraws without a new value ("scratch that, I honestly
    don't know my horizon yet", "forget I said my age, I'd rather not share it", "don't keep
    my address", "scratch the horizon bit"): the part taken back named by its noun, or a
    retraction cue with a statement of not knowing or of keeping it private
    (or a request not to keep it), and the attribute named with "my"; ``None`` otherwise."""
    part = RETRACT_PART.search(sentence)
    if part is not None:
        # "scratch the horizon bit": the attribute the part taken back names by its noun.
        for attribute, noun in NOUNS.items():
            if re.fullmatch(rf"(?:{noun})(?: one)?", part["a"].strip(), _I):
                return attribute
    if not ((_WITHDRAW.search(sentence) and _UNKNOWN.search(sentence)) or _UNKEEP.search(sentence)):
        return None
    for attribute, noun in NOUNS.items():
        if re.search(rf"\bmy\s+(?:{noun})\b", sentence, _I):
            return attribute
    return None


# -- whose words ----------------------------------------------------------------------------------

#: Reporting verbs both the reading of a claim and :func:`source_of` know ("swears",
#: "pointed out", "classed me as").
REPORTS = (
    r"swears|swore|swear|pointed out|points out|mentioned|mentions|warned|warns|"
    r"(?:is|was|seems) convinced|classed|classes|categori[sz]ed|ranked|ranks|sees me as|"
    r"saw me as|views me as|viewed me as|described me as|describes me as|would say|"
    r"would call|figured|assumes|assumed|guesses|guessed|advises|advised|reminds me|"
    r"reminded me|(?:is|was|'s|seems|seemed) (?:\w+ )?(?:adamant|sure|certain|positive|confident)|"
    r"put (?:me|my (?:\w+ ){1,2})down"
)
_DETERMINER = re.compile(
    r"^\W*(?:(?:well|so|and|also|oh|btw|fyi|fwiw|plus|honestly|apparently|but)[\s,]+)*"
    r"(?:according to\s+)?(?:(?:my|mi|our|the|his|her|their|a|an)\s+)?(?P<who>[^,;.!?]*?)\s+"
    r"(?:says|said|say|thinks|thought|think|insists|insisted|believes|reckons|reckoned|claims|"
    r"claimed|(?:would|will|can|could) tell|told|tells|wrote|writes|put|puts|noted|recorded|rated|rates|labels|labelled|"
    r"labeled|called|calls|classified|classifies|considers|suggests|suggested|recommends|"
    r"recommended|wants|figures|feels|felt|argues|keeps|has|had|marked|scored|gave|gives|"
    r"came back|came out|set|sets|assigned|estimated|pegged|calculated|dice|cree|is always|"
    rf"always|{REPORTS})\b",
    _I,
)


#: A view named by whose it is ("in my advisor's opinion"); group 1 is who.
IN_VIEW = (
    r"\bin\s+(?:my|our|the|his|her|their)\s+([\w -]+?)(?:'s|s')\s+(?:opinion|view|eyes|"
    r"book|estimation|words)\b"
)


def source_of(part: str, subject: str = "") -> str:
    """Who a reported claim in ``part`` comes from, in a few words ("wife", "risk quiz"): its
    reporting verb's subject, or ``subject`` (the grammatical subject a reader found) when the
    verb is none this module knows; "someone else" when the words do not say."""
    according = re.search(
        r"\b(?:according to|per|going by|judging by|based on|if i go by)\s+"
        r"(?:my|our|the|his|her|their|a|an)?\s*([\w -]+)",
        part,
        _I,
    ) or re.search(IN_VIEW, part, _I)
    if according is not None:
        return _short(according.group(1))
    match = _DETERMINER.search(part)
    if match is not None and match["who"].strip():
        return _short(match["who"])
    subject = re.sub(
        r"^(?:my|our|the|his|her|their|a|an|some|this|that|one|another)\s+",
        "",
        subject.strip(),
        flags=_I,
    )
    return _short(subject) if subject else "someone else"


def _short(who: str) -> str:
    # "the planner I met last week": who ends where a clause about them begins.
    who = re.split(
        r"\s+(?:in|on|from|at|of|for|with|who|that|which|i|we|you)\s+",
        who.strip(),
        maxsplit=1,
        flags=_I,
    )[0]
    words = re.sub(r"'s$", "", who.lower().strip()).split()[-3:]
    return " ".join(words) or "someone else"


_ADOPTS = re.compile(
    r"\b(?:i agree|i'd agree|i would agree|agreed|(?:and )?(?:that's|thats|that is) (?:me|true|"
    r"right|accurate|fair|correct)(?: too| as well)?|"
    r"(?:he|she|they|it)(?:'s|'re| is| are) (?:probably |totally |absolutely |kind of |kinda )?"
    r"(?:right|correct|spot on)|"
    r"(?:he|she|they) (?:has|have|got) (?:a point|it right)|fair enough|spot on|"
    r"(?:i'm|i am|im) with (?:him|her|them) on that|same (?:here|for me)|me too|so am i|"
    r"(?:that's|thats|that is|it's) (?:my|our) (?:\w+ ){0,2}?(?:too|as well)|mine too|"
    r"(?:he|she|they) (?:is|are|was|were) right about (?:that|me)|"
    r"(?:which|and) (?:is|it's) (?:true|right|fair)|true,? that's me|"
    # conceding it: "I can't argue with that", "no argument from me", "guilty as charged"
    r"(?:i )?(?:can't|cannot|can not|couldn't) argue(?: with (?:that|it|him|her|them))?|"
    r"no argument(?: there| here| from me)?|hard to argue(?: with (?:that|it))?|"
    r"(?:he|she|they)(?:'s| has|'ve| have) got a point|fair point|true enough|"
    r"guilty as charged|(?:he|she|they|it) nailed it|(?:that's|thats|that is|sounds) "
    r"(?:about |pretty much |more or less )?(?:right|accurate|me)|bang on)\b",
    _I,
)
_DOUBT = re.compile(r"\b(?:not|don't|dont|disagree|wrong|doubt|but|no way)\b", _I)
#: What leaves an adoption open anywhere in its sentence: a question, a condition, a hedge
#: ("I haven't decided if I agree", "do I agree?", "I'd agree if ...", "whether she's right").
_OPEN = re.compile(
    r"\?|\b(?:if(?!\s+(?:(?:i'm|i am|im)\s+(?:being\s+)?honest|you ask me)\b)|whether|unless|maybe|perhaps|might|not sure|unsure|undecided|"
    r"(?:haven't|have not|not) (?:yet )?decided|don't know|do not know|dunno|wonder\w*|"
    r"not convinced|on the fence|(?:do|does|did|would|should|could|can) (?:i|you) agree)\b",
    _I,
)


def adopts(sentence: str) -> bool:
    """Whether ``sentence`` makes the claim before it the user's own ("and I agree, that's me
    too", "she's right"); not when it doubts it ("I don't agree", "she's not right"), asks it,
    or leaves it open or on a condition ("I haven't decided if I agree", "I'd agree if ...")."""
    found = _ADOPTS.search(sentence)
    return (
        found is not None
        and not _DOUBT.search(sentence[: found.end()])
        and not _OPEN.search(sentence)
    )
