"""Quantities as people write them: numbers in words, durations, percentages and currencies.

The profile registry (:mod:`agent.learning.profile`) normalises values and checks quotes with
these readers, and the offline extraction rules find values with them, so "a couple of
decades", "thirty months", "a fifth of the portfolio" and "Swedish krona" are read the same
way by the rule that proposes a value and by the check that grounds it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

#: The number words below twenty, each at its value's place.
_UNITS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fourty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
#: Phrases that stand for a number before a unit ("a couple of decades", "half a year").
_PHRASES = {
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a pair of": 2,
    "a dozen": 12,
    "dozen": 12,
    "half a": 0.5,
    "half an": 0.5,
    "a quarter of a": 0.25,
    "a quarter of an": 0.25,
    "three quarters of a": 0.75,
    "a single": 1,
    "one single": 1,
    "a": 1,
    "an": 1,
}

_TEN = "|".join(sorted(_TENS, key=len, reverse=True))
_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_PHRASE = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(_PHRASES, key=len)[::-1])
#: A number in digits ("35", "2.5", "1,000") or words ("thirty five", "twenty-two", "a couple
#: of"). Used inside larger patterns; read it with :func:`number`.
#: A whole number in words ("thirty five", "twenty-two", "seven").
WORD_NUMBER = rf"(?:(?:{_TEN})(?:[\s-]+(?:{_UNIT}))?|(?:{_UNIT}))(?![a-z])"
NUMBER = (
    r"(?:\d+(?:,\d{3})*(?:\.\d+)?"
    rf"|(?:{_TEN})(?:[\s-]+(?:{_UNIT}))?(?![a-z])"
    rf"|(?:{_UNIT})(?![a-z])"
    rf"|(?:{_PHRASE})(?![a-z]))"
)
_NUMBER = re.compile(rf"^{NUMBER}$", re.IGNORECASE)


def number(text: str) -> float | None:
    """The value of a number written as :data:`NUMBER` matches it; None for anything else.

    ``number("thirty five") == 35``, ``number("a couple of") == 2``, ``number("1,000") == 1000``.
    """
    words = " ".join(re.sub(r"-", " ", text.strip().lower()).split())
    if not words or not _NUMBER.match(words):
        return None
    if re.fullmatch(r"[\d,]+(?:\.\d+)?", words):
        return float(words.replace(",", ""))
    if words in _PHRASES:
        return float(_PHRASES[words])
    total = 0
    for word in words.split():
        if word in _TENS:
            total += _TENS[word]
        elif word in _UNITS:
            total += _UNITS[word]
        else:
            return None
    return float(total)


def canonical_number(value: float) -> int | float:
    """``value`` rounded to two decimals, an ``int`` when whole (JSON keeps ``10``, not
    ``10.0``)."""
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


# -- durations -------------------------------------------------------------------------------

_UNIT_YEARS = {
    "year": 1.0,
    "yr": 1.0,
    "y": 1.0,
    "month": 1 / 12,
    "mo": 1 / 12,
    "mth": 1 / 12,
    "decade": 10.0,
    "century": 100.0,
    "centurie": 100.0,
    "week": 1 / 52,
    "wk": 1 / 52,
    # common misspellings
    "yaer": 1.0,
    "yera": 1.0,
    "yer": 1.0,
    "yeaer": 1.0,
    "monht": 1 / 12,
    "mnth": 1 / 12,
}
#: "The next decade", "the coming year": one of the unit.
_NEXT = r"the\s+(?:next|coming)"
#: A duration as users write it: "10 years", "18 months", "a decade", "5-year", "2.5 yrs",
#: "thirty months", "a couple of decades", "a year and a half", "a quarter of a century".
DURATION = (
    rf"(?P<amount>(?:{NUMBER}|{_NEXT})(?:\s+and\s+a\s+half)?)"
    # "twenty-plus years", "10+ years", "ten more years", "fifteen odd years"
    r"(?:\s*\+|[\s-]+(?:plus|more|odd|or\s+so|ish))?[\s-]*"
    r"(?P<unit>years?|yrs?|y|yaers?|yeras?|yers?|yeaers?|months?|monhts?|mnths?|mos?|mths?|"
    r"decades?|century|centuries|weeks?|wks?)\b"
    r"(?P<half>\s+and\s+a\s+half)?"
)
_DURATION = re.compile(rf"(?<![\w.]){DURATION}", re.IGNORECASE)


def years_of(amount: str, unit: str, half: str | None = None) -> float:
    """The years a duration's parts stand for: ``years_of("18", "months") == 1.5``."""
    whole, and_half = re.subn(r"\s+and\s+a\s+half$", "", amount.strip(), flags=re.I)
    value = 1.0 if re.fullmatch(_NEXT, whole, re.I) else number(whole)
    if value is not None and and_half:
        value += 0.5
    if value is None:
        raise ValueError(f"{amount!r} is not a number")
    value += 0.5 if half else 0
    return value * _UNIT_YEARS[unit.lower().rstrip("s")]


def durations(text: str) -> Iterator[tuple[re.Match[str], float]]:
    """Every duration in ``text`` with its length in years, in order."""
    for match in _DURATION.finditer(text):
        yield match, years_of(match["amount"], match["unit"], match["half"])


def duration_years(text: str) -> float | None:
    """``text`` read as exactly one duration (or a bare number of years), else None."""
    stripped = text.strip().lstrip("~").strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", stripped):
        return float(stripped)
    if re.fullmatch(WORD_NUMBER, stripped, re.IGNORECASE):  # "make it twelve"
        return number(stripped)
    match = re.fullmatch(DURATION, stripped, re.IGNORECASE)
    if match is None:
        return None
    return years_of(match["amount"], match["unit"], match["half"])


# -- percentages -----------------------------------------------------------------------------

_FRACTIONS = {
    "half": 50.0,
    "a half": 50.0,
    "a third": 100 / 3,
    "one third": 100 / 3,
    "a quarter": 25.0,
    "one quarter": 25.0,
    "a fourth": 25.0,
    "a fifth": 20.0,
    "one fifth": 20.0,
    "a tenth": 10.0,
    "one tenth": 10.0,
    "two thirds": 200 / 3,
    # the fall named by its verb: "I'd bail if it halved"
    "halved": 50.0,
    "cut in half": 50.0,
    "three quarters": 75.0,
}
_FRACTION = "|".join(re.escape(f).replace(r"\ ", r"\s+") for f in sorted(_FRACTIONS, key=len)[::-1])
#: A percentage: "20%", "35 percent", "thirty per cent", "15 pct", or a fraction in words
#: ("a fifth", "a quarter") of something.
PERCENT = (
    rf"(?:(?P<amount>{NUMBER})\s*(?:%|per\s*cent\b|pct\b)"
    rf"|(?<![a-z])(?P<fraction>{_FRACTION})(?![a-z]))"
)
_PERCENT = re.compile(PERCENT, re.IGNORECASE)


def percents(text: str) -> Iterator[tuple[re.Match[str], float]]:
    """Every percentage (or fraction in words) in ``text`` with its value in percent."""
    for match in _PERCENT.finditer(text):
        if match["amount"] is not None:
            value = number(match["amount"])
            if value is not None:
                yield match, value
        else:
            yield match, _FRACTIONS[" ".join(match["fraction"].lower().split())]


def percent_value(text: str) -> float | None:
    """``text`` read as one percentage ("20%", "a fifth") or a bare number, else None."""
    stripped = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", stripped):
        return float(stripped)
    match = re.fullmatch(PERCENT, stripped, re.IGNORECASE)
    if match is None:
        return None
    return next((v for _, v in percents(stripped)), None)


# -- currencies ------------------------------------------------------------------------------

#: Active ISO 4217 currency codes (plus XAU/XAG, which some portfolios report in).
ISO_4217 = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP
    BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP
    GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR
    KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK
    MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR
    SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS
    UAH UGX USD UYU UZS VES VND VUV WST XAF XAG XAU XCD XOF XPF YER ZAR ZMW ZWL
    """.split()
)

#: Currency names (lower case; a name matches its plural too) and the code each stands for.
#: A qualified name ("hong kong dollar") wins over its bare form ("dollar").
CURRENCY_NAMES: dict[str, str] = {
    "euro": "EUR",
    "€": "EUR",
    "dollar": "USD",
    "us dollar": "USD",
    "u.s. dollar": "USD",
    "american dollar": "USD",
    "greenback": "USD",
    "buck": "USD",
    "$": "USD",
    "pound": "GBP",
    "sterling": "GBP",
    "pound sterling": "GBP",
    "pounds sterling": "GBP",
    "british pound": "GBP",
    "quid": "GBP",
    "£": "GBP",
    "yen": "JPY",
    "japanese yen": "JPY",
    "¥": "JPY",
    "franc": "CHF",
    "swiss franc": "CHF",
    "canadian dollar": "CAD",
    "c$": "CAD",
    "ca$": "CAD",
    "cad$": "CAD",
    "a$": "AUD",
    "au$": "AUD",
    "nz$": "NZD",
    "nz dollar": "NZD",
    "us$": "USD",
    "hk$": "HKD",
    "s$": "SGD",
    "loonie": "CAD",
    "australian dollar": "AUD",
    "aussie dollar": "AUD",
    "new zealand dollar": "NZD",
    "kiwi dollar": "NZD",
    "hong kong dollar": "HKD",
    "singapore dollar": "SGD",
    "taiwan dollar": "TWD",
    "new taiwan dollar": "TWD",
    "rupee": "INR",
    "indian rupee": "INR",
    "pakistani rupee": "PKR",
    "sri lankan rupee": "LKR",
    "nepalese rupee": "NPR",
    "yuan": "CNY",
    "renminbi": "CNY",
    "chinese yuan": "CNY",
    "rmb": "CNY",
    "korean won": "KRW",
    "south korean won": "KRW",
    "krona": "SEK",
    "kronor": "SEK",
    "swedish krona": "SEK",
    "swedish kronor": "SEK",
    "swedish crown": "SEK",
    "norwegian krone": "NOK",
    "norwegian kroner": "NOK",
    "norwegian crown": "NOK",
    "danish krone": "DKK",
    "danish kroner": "DKK",
    "danish crown": "DKK",
    "icelandic krona": "ISK",
    "czech koruna": "CZK",
    "koruna": "CZK",
    "zloty": "PLN",
    "polish zloty": "PLN",
    "forint": "HUF",
    "hungarian forint": "HUF",
    "romanian leu": "RON",
    "turkish lira": "TRY",
    "lira": "TRY",
    "shekel": "ILS",
    "israeli shekel": "ILS",
    "new shekel": "ILS",
    "rand": "ZAR",
    "south african rand": "ZAR",
    "dirham": "AED",
    "uae dirham": "AED",
    "emirati dirham": "AED",
    "saudi riyal": "SAR",
    "qatari riyal": "QAR",
    "ruble": "RUB",
    "rouble": "RUB",
    "russian ruble": "RUB",
    "hryvnia": "UAH",
    "baht": "THB",
    "thai baht": "THB",
    "ringgit": "MYR",
    "malaysian ringgit": "MYR",
    "rupiah": "IDR",
    "indonesian rupiah": "IDR",
    "vietnamese dong": "VND",
    "philippine peso": "PHP",
    "mexican peso": "MXN",
    "chilean peso": "CLP",
    "colombian peso": "COP",
    "argentine peso": "ARS",
    "argentinian peso": "ARS",
    "brazilian real": "BRL",
    "reais": "BRL",
    "naira": "NGN",
    "nigerian naira": "NGN",
    "kenyan shilling": "KES",
    "egyptian pound": "EGP",
}
_CURRENCY_WORDS = sorted(CURRENCY_NAMES, key=len, reverse=True)


def _plural(name: str) -> str:
    escaped = re.escape(name).replace(r"\ ", r"\s+")
    if name[-1].isalpha() and not name.endswith(("s", "a", "or", "er")):
        return escaped + "s?"
    return escaped


_CURRENCY = re.compile(
    r"(?<![\w$€£¥])(?:"
    + "|".join(
        f"(?P<c{i}>{_plural(n)})" + ("" if not n[-1].isalnum() else r"(?![\w])")
        for i, n in enumerate(_CURRENCY_WORDS)
    )
    + r"|(?P<code>(?-i:[A-Z]{3})|[a-z]{3})(?![\w]))",
    re.IGNORECASE,
)


def currencies(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Every currency ``text`` names, by ISO code ("HKD", "hkd") or by name (the longest
    name wins: "Hong Kong dollars" is HKD, not USD), with its code, in order. A name is read
    with its letters' accents and strokes taken off, as it is typed in a hurry ("złoty" is
    "zloty"); the matches are spans of that folded text, where ``text`` has the same ones."""
    for match in _CURRENCY.finditer(folded(text)):
        if match["code"] is not None:
            code = match["code"].upper()
            written = match["code"]
            if code in ISO_4217 and (
                written.isupper() or (written.islower() and written not in _COMMON_WORDS)
            ):
                yield match, code
            continue
        index = next(int(k[1:]) for k, v in match.groupdict().items() if v and k != "code")
        yield match, CURRENCY_NAMES[_CURRENCY_WORDS[index]]


#: Letters that carry a stroke rather than an accent, and no decomposition of their own.
_STROKED = str.maketrans("łŁøØđĐħĦßæÆœŒ", "lLoOdDhHsaAoO")


def folded(text: str) -> str:
    """``text`` with each letter's accents and strokes taken off, one letter for one ("złoty"
    is "zloty", "Zürich" "Zurich"), so every position in it is the same as in ``text``."""
    if text.isascii():
        return text
    out = []
    for char in text.translate(_STROKED):
        base = unicodedata.normalize("NFKD", char)
        out.append(base[0] if len(char) == 1 and base and base[0].isascii() else char)
    return "".join(out)


#: Three-letter words that are also ISO codes; in lower case they are read as words.
_COMMON_WORDS = frozenset({"all", "top", "mad", "cup", "try", "bob", "php", "pen", "mop"})


def currency_code(text: str) -> str | None:
    """``text`` read as one currency (a code or a name, "the" allowed before it), else None."""
    stripped = " ".join(text.strip().lower().split())
    stripped = re.sub(r"^the\s+", "", stripped)
    found = list(currencies(stripped))
    if len(found) == 1 and found[0][0].group(0).lower() == folded(stripped):
        code = found[0][1]
        return code
    upper = stripped.upper()
    return upper if upper in ISO_4217 else None


#: An amount of money: grouped digits ("80,000"), a multiplier ("200k", "1.5 million", "50
#: grand"), or a currency sign or word beside it ("$9000", "9000 dollars"); a bare year is none.
_MONEY = re.compile(
    r"(?P<sign>[$€£]\s*)?(?<![\w.,])(?P<n>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.,]*\d)\s*"
    r"(?P<k>k\b|grand\b|thousand\b|m\b|mn\b|million\b)?"
    r"(?P<word>\s*(?:dollars?|bucks|euros?|pounds?|quid)\b)?",
    re.IGNORECASE,
)
#: Before the amount that is a floor ("drop below 150k"), not the loss itself.
_FLOOR = re.compile(r"\b(?:below|under|beneath|less than|to|down to)\s*$", re.IGNORECASE)


def money_shares(text: str) -> Iterator[tuple[re.Match[str], float]]:
    """A loss said as two amounts of money, in percent of the larger: "I have 80,000 and can
    lose 12,000" (15), "200k invested, below 150k I'm done" (the amount after "below" a floor:
    25). Only when ``text`` names exactly two amounts; the match is the second one's."""
    found = []
    for match in _MONEY.finditer(text):
        if not (match["sign"] or match["k"] or match["word"] or "," in match["n"]):
            continue
        value = float(match["n"].replace(",", ""))
        multiplier = (match["k"] or "").lower()
        value *= 1e6 if multiplier.startswith("m") else 1e3 if multiplier else 1
        found.append((match, value))
    if len(found) != 2:
        return
    (_, first), (second_match, second) = found
    total, other = max(first, second), min(first, second)
    loss = total - other if _FLOOR.search(text[: second_match.start()]) else other
    if total > 0 and 0 < loss < total:
        yield second_match, round(100 * loss / total, 1)
