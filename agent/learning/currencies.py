"""Currencies said without their code: by symbol, country, nationality or answer.

"I'm € based", "I live in Switzerland and keep everything in local currency", "I'm in Germany
so euros", "I'm Danish so please use kroner", "we moved to Chile, so pesos", "USD for me",
"show me amounts in won", "I live in Zurich so everything's in francs", "being in Tokyo, yen is
what counts": each names the user's base currency another way than "my base currency is
EUR". A place lived in (a country or a city, :data:`PLACE_CURRENCIES`) says which currency a
name several countries share is, and a currency named beside it that is not its own is left
to the other readers. The phrasing rules (:mod:`agent.learning.phrasing`) propose the value with
these readers and the registry (:mod:`agent.learning.profile`) grounds a quote with the same
ones, so a wording that proposes a currency is always one the check accepts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.learning import quantities

_I = re.IGNORECASE

#: Countries (and their adjectives) and the currency that is local there.
COUNTRY_CURRENCIES: dict[str, str] = {
    "japan": "JPY",
    "japanese": "JPY",
    "switzerland": "CHF",
    "swiss": "CHF",
    "uk": "GBP",
    "united kingdom": "GBP",
    "britain": "GBP",
    "great britain": "GBP",
    "british": "GBP",
    "england": "GBP",
    "scotland": "GBP",
    "wales": "GBP",
    "us": "USD",
    "usa": "USD",
    "united states": "USD",
    "america": "USD",
    "the states": "USD",
    "canada": "CAD",
    "canadian": "CAD",
    "australia": "AUD",
    "australian": "AUD",
    "new zealand": "NZD",
    "germany": "EUR",
    "france": "EUR",
    "spain": "EUR",
    "italy": "EUR",
    "ireland": "EUR",
    "netherlands": "EUR",
    "belgium": "EUR",
    "austria": "EUR",
    "portugal": "EUR",
    "finland": "EUR",
    "greece": "EUR",
    "estonia": "EUR",
    "the eurozone": "EUR",
    "eurozone": "EUR",
    "sweden": "SEK",
    "swedish": "SEK",
    "norway": "NOK",
    "norwegian": "NOK",
    "denmark": "DKK",
    "danish": "DKK",
    "poland": "PLN",
    "czechia": "CZK",
    "czech republic": "CZK",
    "hungary": "HUF",
    "india": "INR",
    "indian": "INR",
    "china": "CNY",
    "chinese": "CNY",
    "hong kong": "HKD",
    "singapore": "SGD",
    "south korea": "KRW",
    "korea": "KRW",
    "korean": "KRW",
    "brazil": "BRL",
    "mexico": "MXN",
    "mexican": "MXN",
    "chile": "CLP",
    "chilean": "CLP",
    "colombia": "COP",
    "argentina": "ARS",
    "philippines": "PHP",
    "egypt": "EGP",
    "nigeria": "NGN",
    "kenya": "KES",
    "pakistan": "PKR",
    "czech": "CZK",
    "polish": "PLN",
    "hungarian": "HUF",
    "brazilian": "BRL",
    "turkish": "TRY",
    "israeli": "ILS",
    "thailand": "THB",
    "thai": "THB",
    "malaysia": "MYR",
    "indonesia": "IDR",
    "vietnam": "VND",
    "new zealander": "NZD",
    "kiwi": "NZD",
    "aussie": "AUD",
    "german": "EUR",
    "french": "EUR",
    "spanish": "EUR",
    "italian": "EUR",
    "irish": "EUR",
    "dutch": "EUR",
    "belgian": "EUR",
    "austrian": "EUR",
    "portuguese": "EUR",
    "finnish": "EUR",
    "greek": "EUR",
    "south africa": "ZAR",
    "israel": "ILS",
    "turkey": "TRY",
    "uae": "AED",
    "dubai": "AED",
}
#: Cities people say they live in, and the currency that is local there: a city names its
#: country's currency as the country does ("I live in Zurich so everything's in francs").
CITY_CURRENCIES: dict[str, str] = {
    **dict.fromkeys(("zurich", "zürich", "geneva", "basel", "bern", "lausanne", "lugano"), "CHF"),
    **dict.fromkeys(("tokyo", "osaka", "kyoto", "yokohama", "nagoya", "fukuoka"), "JPY"),
    **dict.fromkeys(
        (
            "london",
            "manchester",
            "edinburgh",
            "glasgow",
            "birmingham",
            "bristol",
            "leeds",
            "liverpool",
            "cardiff",
            "belfast",
            "oxford",
            "cambridge",
        ),
        "GBP",
    ),
    **dict.fromkeys(
        (
            "new york",
            "nyc",
            "san francisco",
            "chicago",
            "boston",
            "seattle",
            "austin",
            "los angeles",
            "miami",
            "denver",
            "atlanta",
            "houston",
            "dallas",
            "washington dc",
        ),
        "USD",
    ),
    **dict.fromkeys(("toronto", "vancouver", "montreal", "calgary", "ottawa"), "CAD"),
    **dict.fromkeys(("sydney", "melbourne", "brisbane", "perth", "adelaide"), "AUD"),
    **dict.fromkeys(("auckland", "wellington", "christchurch"), "NZD"),
    **dict.fromkeys(
        (
            "berlin",
            "munich",
            "frankfurt",
            "hamburg",
            "cologne",
            "stuttgart",
            "paris",
            "lyon",
            "marseille",
            "madrid",
            "barcelona",
            "valencia",
            "rome",
            "milan",
            "turin",
            "dublin",
            "amsterdam",
            "rotterdam",
            "brussels",
            "antwerp",
            "vienna",
            "lisbon",
            "porto",
            "helsinki",
            "athens",
            "tallinn",
        ),
        "EUR",
    ),
    **dict.fromkeys(("stockholm", "gothenburg", "malmo", "malmö"), "SEK"),
    **dict.fromkeys(("oslo", "bergen"), "NOK"),
    **dict.fromkeys(("copenhagen", "aarhus"), "DKK"),
    **dict.fromkeys(("warsaw", "krakow", "kraków"), "PLN"),
    "prague": "CZK",
    "budapest": "HUF",
    **dict.fromkeys(
        (
            "mumbai",
            "delhi",
            "new delhi",
            "bangalore",
            "bengaluru",
            "chennai",
            "hyderabad",
            "pune",
            "kolkata",
        ),
        "INR",
    ),
    **dict.fromkeys(("beijing", "shanghai", "shenzhen", "guangzhou"), "CNY"),
    "seoul": "KRW",
    **dict.fromkeys(("sao paulo", "são paulo", "rio de janeiro", "rio"), "BRL"),
    **dict.fromkeys(("mexico city", "guadalajara", "monterrey"), "MXN"),
    "santiago": "CLP",
    **dict.fromkeys(("bogota", "bogotá", "medellin", "medellín"), "COP"),
    "buenos aires": "ARS",
    "manila": "PHP",
    "cairo": "EGP",
    "lagos": "NGN",
    "nairobi": "KES",
    **dict.fromkeys(("karachi", "lahore"), "PKR"),
    "istanbul": "TRY",
    "tel aviv": "ILS",
    "bangkok": "THB",
    "kuala lumpur": "MYR",
    "jakarta": "IDR",
    **dict.fromkeys(("hanoi", "ho chi minh city", "saigon"), "VND"),
    **dict.fromkeys(("johannesburg", "cape town"), "ZAR"),
    "abu dhabi": "AED",
}
#: Where a place's currency is looked up: a country (or its adjective) or a city.
PLACE_CURRENCIES: dict[str, str] = {**COUNTRY_CURRENCIES, **CITY_CURRENCIES}


def _alternation(names: Iterable[str]) -> str:
    """A regex alternation of ``names``, longest first (so "new york" wins over "york"), a
    space in a name matching any run of whitespace."""
    return "|".join(
        re.escape(n).replace(r"\ ", r"\s+") for n in sorted(names, key=len, reverse=True)
    )


_COUNTRY = _alternation(COUNTRY_CURRENCIES)
_LOCAL = re.compile(
    rf"\b(?P<country>{_COUNTRY})\b[^.;!?]{{0,80}}?\b(?:(?:the\s+)?(?:local|home|domestic|"
    r"national)\s+(?:currency|money))\b"
    r"|\b(?:local|home|domestic)\s+currency\b[^.;!?]{0,30}?\b(?:here\s+in|in)\s+"
    rf"(?P<after>{_COUNTRY})\b",
    _I,
)


def local_currencies(text: str) -> list[tuple[str, int]]:
    """The currencies ``text`` names as the local currency of a country ("I live in
    Switzerland and keep everything in local currency" is CHF), with where each is named."""
    out = []
    for match in _LOCAL.finditer(text):
        group = "country" if match["country"] else "after"
        key = " ".join(match[group].lower().split())
        out.append((COUNTRY_CURRENCIES[key], match.start(group)))
    return out


#: A currency written before "based" or "denominated" ("€ based", "a CHF-based investor").
_CURRENCY_BASED = re.compile(
    r"(?P<c>[$€£¥]|\b[A-Za-z]{3,}(?:\s+[A-Za-z]+)?)[\s-]*(?:based|denominated)\b", _I
)


def currencies_based(text: str) -> list[tuple[str, int]]:
    """The currencies ``text`` writes before "based"/"denominated", with their positions."""
    out = []
    for match in _CURRENCY_BASED.finditer(text):
        named = list(quantities.currencies(match["c"]))
        if named and named[-1][0].end() == len(match["c"]):
            out.append((named[-1][1], match.start("c") + named[-1][0].start()))
    return out


#: A currency given as an answer ("USD for me", "€ for everything please", "C$ please").
_CURRENCY_ANSWER = re.compile(
    r"^[\s\-*>]*(?:in\s+|use\s+)?(?P<c>\S+(?:\s+\S+)?)\s*(?=(?:for\s+(?:me|us|everything|all)|"
    r"please|pls|everywhere|is fine|works)\b)",
    _I,
)
#: Where the user lives, then "so" and the currency ("I'm in Germany so euros").
_CURRENCY_BECAUSE = re.compile(
    r"\b(?:(?:i|we)(?:'m|'re|\s+am|\s+are|\s+live|\s+moved|'ve moved|\s+reside)?\s+"
    r"(?:\w+\s+){0,2}?|living\s+|based\s+)(?:in|to|out of|from)\s+[^.;!?]{2,40}?[,\s]+"
    r"(?:so|which means|meaning|hence)\s+(?:it'?s\s+|its\s+|it is\s+|"
    r"(?:everything|all|my money|amounts|figures|numbers|reports|prices|values)"
    r"(?:'s|\s+is|\s+are)?\s+)?(?:in\s+)?",
    _I,
)


#: A nationality or a country lived in, then "so" and the currency ("I'm Danish so please use
#: kroner", "we moved to Chile, so pesos").
_NATIONAL = re.compile(
    r"\b(?:(?:i'?m|i\s+am|im|we'?re|we\s+are)\s+(?:an?\s+|(?:based\s+|living\s+)?in\s+)?|"
    r"(?:i|we)\s+(?:live|reside|(?:have\s+|just\s+)?moved|'ve\s+moved)\s+(?:back\s+)?(?:in|to)\s+|"
    rf"(?:living|based)\s+in\s+)(?P<n>{_COUNTRY})\b[,\s]+"
    r"(?:so|which means|meaning|hence)\s+(?:(?:please|pls)\s+)?(?:(?:use|show|report|"
    r"everything|all|amounts|figures|numbers)\s+)?(?:in\s+)?",
    _I,
)
#: Currency names several countries share, and the codes each may be: the country says which.
_SHARED = {
    "dollar": frozenset({"USD", "CAD", "AUD", "NZD", "HKD", "SGD", "TWD"}),
    "krone": frozenset({"DKK", "NOK", "SEK", "ISK", "CZK"}),
    "franc": frozenset({"CHF"}),
    "peso": frozenset({"MXN", "CLP", "COP", "ARS", "PHP"}),
    "rupee": frozenset({"INR", "PKR", "LKR", "NPR"}),
    "pound": frozenset({"GBP", "EGP"}),
    "riyal": frozenset({"SAR", "QAR"}),
}
_SHARED_NAME = re.compile(
    r"(?:(?P<dollar>dollars?|bucks)|(?P<krone>kron(?:e|er|a|or)|crowns?)|(?P<franc>francs?)|"
    r"(?P<peso>pesos?)|(?P<rupee>rupees?)|(?P<pound>pounds?)|(?P<riyal>riyals?))\b",
    _I,
)


def currencies_of_nation(text: str) -> list[tuple[str, int]]:
    """The currency ``text`` names after its author's nationality or country ("I'm Danish so
    please use kroner" is DKK, "we moved to Chile, so pesos" CLP), with its position: a name
    several countries share is that country's own currency."""
    out = []
    for match in _NATIONAL.finditer(text):
        tail = text[match.end() :]
        named = list(quantities.currencies(tail))
        shared = _SHARED_NAME.match(tail)
        local = COUNTRY_CURRENCIES[" ".join(match["n"].lower().split())]
        if shared is not None and local in _SHARED[str(shared.lastgroup)]:
            out.append((local, match.end()))
        elif named and named[0][0].start() == 0:
            out.append((named[0][1], match.end()))
    return out


#: "won" is a currency only where money is shown in it ("show me amounts in won"); elsewhere
#: it is the verb ("the Lakers won").
_IN_WON = re.compile(
    r"\b(?:amounts?|figures|numbers|prices|values|everything|reports?|it all|money|savings|"
    r"portfolio|accounts?)\s+(?:\w+\s+){0,2}?in\s+(?:south\s+)?(?:korean\s+)?(?P<c>won)\b",
    _I,
)


def currencies_in_words(text: str) -> list[tuple[str, int]]:
    """The currencies ``text`` names by a word that is also an ordinary word ("amounts in won"
    is KRW), with where each is named."""
    return [("KRW", match.start("c")) for match in _IN_WON.finditer(text)]


def currencies_answered(text: str) -> list[tuple[str, int]]:
    """The currency ``text`` gives as its answer ("USD for me") or as a consequence of where
    its author lives ("living in Auckland, so NZ dollars"), with its position."""
    out = currencies_in_words(text)
    answer = _CURRENCY_ANSWER.match(text)
    if answer is not None:
        named = list(quantities.currencies(answer["c"]))
        if named and named[0][0].start() == 0:
            out.append((named[0][1], answer.start("c")))
    for match in _CURRENCY_BECAUSE.finditer(text):
        named = list(quantities.currencies(text[match.end() :]))
        if named and named[0][0].start() == 0:
            out.append((named[0][1], match.end()))
    return out


_PLACE = _alternation(PLACE_CURRENCIES)
#: The place the author lives in now: "I live in Zurich", "being in Tokyo", "we moved back to
#: Brazil", "I'm based in London", "I've been in Munich for eight years", "living there" after
#: a country named ("I am from India and living there"). Not where they grew up or will move.
_LIVES_IN = re.compile(
    r"\b(?:(?:i|we)\s+(?:still\s+|now\s+|currently\s+)?(?:live|reside)|"
    r"(?:i'?m|i\s+am|im|we'?re|we\s+are)\s+(?:now\s+|currently\s+)?(?:living|based|settled|"
    r"staying|residing|located)?|(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+)?(?:been\s+living|been|"
    r"moved(?:\s+back)?|relocated|settled)|(?:being|living|based|residing)|since\s+i\s+moved"
    r"(?:\s+back)?)\s+(?:here\s+)?(?:in|to|out\s+of)\s+(?:the\s+)?(?P<p>" + _PLACE + r")\b"
    r"|\b(?:i'?m|i\s+am|im)\s+from\s+(?P<f>" + _PLACE + r")\b(?=[^.;!?]*\bliving\s+there\b)",
    _I,
)
#: A currency said as the one of the place lived in: "our crown", "local money", "the local
#: currency".
_PLACE_OWN = re.compile(
    r"\b(?:our|the\s+local|local|home|domestic|national)\s+(?:currency|money)\b", _I
)


def currencies_of_place(text: str) -> list[tuple[str, int]]:
    """The currency ``text`` names that is the local one of the place (a country or a city)
    its author lives in ("I live in Zurich so everything I do is in francs" is CHF, "being in
    Tokyo, yen is what counts" JPY, "living in Stockholm ... all values in our crown" SEK),
    with where it is named. The name must agree with the place: a shared name ("crowns",
    "dollars") is the place's own, another place's currency ("I live in London but keep
    everything in dollars") is not read here."""
    out: list[tuple[str, int]] = []
    for place in _LIVES_IN.finditer(text):
        key = " ".join((place["p"] or place["f"]).lower().split())
        local = PLACE_CURRENCIES[key]
        named = [(code, m.start()) for m, code in quantities.currencies(text)]
        named += [
            (local, m.start())
            for m in _SHARED_NAME.finditer(text)
            if local in _SHARED[str(m.lastgroup)]
        ]
        named += [(local, m.start()) for m in _PLACE_OWN.finditer(text)]
        agreeing = sorted(at for code, at in named if code == local)
        if agreeing:
            out.append((local, agreeing[0]))
    return out
