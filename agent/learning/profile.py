"""The user profile: the typed attributes semantic memory may hold about a user.

A profile attribute is a fact about the user (subject ``memory.facts.subject_for(principal)``,
``"user:<id>"``) whose value has one canonical JSON form. The registry is the single place that
says which attributes exist and what their values may be; extraction, the grounding check and
the write path all validate through :func:`validate`, so a value reaches the fact ledger only
in its canonical form ("cautious" is stored as ``"conservative"``, "18 months" as ``1.5``).

Each :class:`ProfileAttribute` also says how a new value combines with the stored one
(``merge``): scalars are replaced, ticker lists are unioned. Extraction states only what the
user said ("add NVDA to my watchlist" is ``["NVDA"]``); the learning step merges it into the
current list.

:func:`ProfileAttribute.supports` answers the grounding question for a value: does this quote
actually state it? A real quote paired with an invented value is as wrong as an invented quote.

Attributes that identify a person (``full_name``, ``address``) are tagged ``personal``
(names, addresses and financial details are labelled and handled with care): their
values never appear in the memory audit (it holds keyed hashes only, for every attribute), in
error messages, or in the "Memory context" of a published report (:func:`shown`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from agent.errors import InvalidProfileValueError, UnknownProfileAttributeError
from agent.research.tickers import COMPANY_NAMES

Merge = Literal["replace", "union"]


class _Invalid(ValueError):
    """A normaliser's refusal; :func:`validate` turns it into InvalidProfileValueError."""


@dataclass(frozen=True)
class ProfileAttribute:
    """One typed profile attribute.

    ``normalise`` returns the canonical JSON value or raises ``ValueError`` saying what is wrong;
    ``accepted`` describes the accepted values for error messages and prompts; ``mentions``
    tells whether a text states a canonical value (used by the grounding check).
    """

    name: str
    description: str
    accepted: str
    examples: tuple[JsonValue, ...]
    merge: Merge
    normalise: Callable[[object], JsonValue]
    mentions: Callable[[JsonValue, str], bool]
    #: Words that name a value, for an enumerated attribute ("cautious", "balanced", ...).
    vocabulary: tuple[str, ...] = ()
    #: Personal data (identifies a person): the value is never shown outside the profile views
    #: of its own user -- not in errors, logs, the audit or a published report.
    personal: bool = False

    def validate(self, value: object) -> JsonValue:
        """The canonical form of ``value``; :class:`InvalidProfileValueError` if it has none
        (naming the value, unless the attribute is personal)."""
        try:
            return self.normalise(value)
        except ValueError as e:
            if self.personal:
                raise InvalidProfileValueError(
                    self.name,
                    REDACTED,
                    self.accepted,
                    message=f"Invalid value for the personal profile attribute '{self.name}' "
                    f"(not shown: personal data): {e}. Accepted: {self.accepted}.",
                ) from None
            raise InvalidProfileValueError(self.name, value, self.accepted, str(e)) from e

    def supports(self, value: JsonValue, text: str) -> bool:
        """Whether ``text`` states ``value`` (canonical) for this attribute."""
        return self.mentions(value, text)


# -- words and enumerations ---------------------------------------------------------------------


def _words(text: str) -> str:
    """Lower-case, hyphens and underscores as spaces, single spaces: 'Risk-Averse' -> 'risk averse'."""
    return " ".join(re.sub(r"[-_]", " ", text.lower()).split())


def _enumeration(
    synonyms: Mapping[str, Iterable[str]],
) -> tuple[Callable[[object], JsonValue], Callable[[JsonValue, str], bool]]:
    """A normaliser and a ``mentions`` check for a closed set of values with synonyms."""
    canonical = {_words(s): value for value, words in synonyms.items() for s in (value, *words)}

    def normalise(value: object) -> JsonValue:
        if not isinstance(value, str):
            raise _Invalid(f"expected text, got {type(value).__name__}")
        key = _words(value)
        key = re.sub(r"^(?:very|fairly|pretty|quite|rather|a|an)\s+", "", key)
        key = re.sub(r"\s+(?:investor|investing|reports?|style)$", "", key)
        if key not in canonical:
            raise _Invalid("not one of the accepted values or their synonyms")
        return canonical[key]

    def mentions(value: JsonValue, text: str) -> bool:
        plain = f" {_words(re.sub(r'[^A-Za-z_-]+', ' ', text))} "
        return any(f" {_words(s)} " in plain for s, v in canonical.items() if v == value)

    return normalise, mentions


_RISK = {
    "conservative": (
        "low",
        "cautious",
        "careful",
        "risk averse",
        "low risk",
        "defensive",
        "capital preservation",
    ),
    "moderate": ("balanced", "medium", "medium risk", "middle of the road"),
    "aggressive": (
        "high",
        "growth",
        "high risk",
        "risk seeking",
        "risk taking",
        "adventurous",
        "bold",
    ),
}
_STYLE = {
    "brief": ("short", "concise", "succinct", "terse", "quick", "compact"),
    "detailed": ("long", "thorough", "in depth", "comprehensive", "full", "deep", "extensive"),
}


def _vocabulary(synonyms: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    words = {w for value, more in synonyms.items() for w in (value, *more)}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))  # longest first, for regex alternation


_risk_normalise, _risk_mentions = _enumeration(_RISK)
_style_normalise, _style_mentions = _enumeration(_STYLE)


# -- durations ------------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "eighteen": 18,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
}
_UNIT_YEARS = {"year": 1.0, "yr": 1.0, "y": 1.0, "month": 1 / 12, "mo": 1 / 12, "decade": 10.0}
#: A duration as users write it: "10 years", "18 months", "a decade", "5-year", "2.5 yrs".
DURATION = (
    r"(?P<amount>\d+(?:\.\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
    r"[\s-]*(?P<unit>years?|yrs?|y|months?|mos?|decades?)\b"
)
_DURATION = re.compile(rf"\b{DURATION}", re.IGNORECASE)
_MAX_HORIZON = 60


def _years(amount: str, unit: str) -> float:
    number = float(_NUMBER_WORDS.get(amount.lower(), 0) or amount)
    return number * _UNIT_YEARS[unit.lower().rstrip("s")]


def _canonical_number(years: float) -> int | float:
    rounded = round(years, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def _horizon_normalise(value: object) -> JsonValue:
    if isinstance(value, bool):
        raise _Invalid("expected a number of years, got a boolean")
    if isinstance(value, int | float):
        years = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            years = float(text)
        else:
            match = re.fullmatch(DURATION, text, re.IGNORECASE)
            if match is None:
                raise _Invalid("not a number of years or a duration such as '18 months'")
            years = _years(match["amount"], match["unit"])
    else:
        raise _Invalid(f"expected a number of years, got {type(value).__name__}")
    if not 0 < years <= _MAX_HORIZON:
        raise _Invalid(f"a horizon must be more than 0 and at most {_MAX_HORIZON} years")
    return _canonical_number(years)


def _horizon_mentions(value: JsonValue, text: str) -> bool:
    for match in _DURATION.finditer(text):
        if _canonical_number(_years(match["amount"], match["unit"])) == value:
            return True
    # A bare number next to "horizon" ("horizon: 10"), read as years.
    return any(
        _canonical_number(float(n)) == value
        for n in re.findall(
            r"horizon\D{0,20}?(\d+(?:\.\d+)?)(?![\d.]*\s*(?:months?|mos?)\b)", text, re.I
        )
    )


# -- tickers --------------------------------------------------------------------------------------

_SYMBOL = re.compile(r"[A-Z][A-Z0-9]{0,5}(?:[.-][A-Z]{1,2})?")


def ticker_symbol(word: str) -> str:
    """``word`` as a ticker symbol: '$nvda' -> 'NVDA', 'Nvidia' -> 'NVDA', 'brk.b' -> 'BRK.B'."""
    bare = word.strip().lstrip("$").strip()
    symbol = COMPANY_NAMES.get(bare.lower()) or bare.upper()
    if not _SYMBOL.fullmatch(symbol):
        raise _Invalid(f"{word!r} is not a ticker symbol")
    return symbol


def _tickers_normalise(value: object) -> JsonValue:
    if isinstance(value, str):
        items: list[object] = [w for w in re.split(r"\s*(?:,|;|\band\b|\s)\s*", value) if w]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise _Invalid(f"expected a list of ticker symbols, got {type(value).__name__}")
    symbols: list[JsonValue] = []
    for item in items:
        if not isinstance(item, str):
            raise _Invalid(f"{item!r} is not a ticker symbol")
        symbol = ticker_symbol(item)
        if symbol not in symbols:
            symbols.append(symbol)
    return symbols


def mentions_ticker(symbol: str, text: str) -> bool:
    """Whether ``text`` names ``symbol``: the symbol in any case (``$`` allowed) or its company."""
    for word in re.findall(r"\$?[A-Za-z][A-Za-z0-9]*(?:[.-][A-Za-z]{1,2}\b)?", text):
        bare = word.lstrip("$")
        if bare.upper() == symbol or COMPANY_NAMES.get(bare.lower()) == symbol:
            return True
    return False


def _tickers_mentions(value: JsonValue, text: str) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(s, str) and mentions_ticker(s, text) for s in value)
    )


# -- currencies -----------------------------------------------------------------------------------

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
_CURRENCY_NAMES = {
    "euro": "EUR",
    "euros": "EUR",
    "€": "EUR",
    "dollar": "USD",
    "dollars": "USD",
    "us dollar": "USD",
    "us dollars": "USD",
    "$": "USD",
    "pound": "GBP",
    "pounds": "GBP",
    "sterling": "GBP",
    "pound sterling": "GBP",
    "british pounds": "GBP",
    "£": "GBP",
    "yen": "JPY",
    "¥": "JPY",
    "swiss franc": "CHF",
    "swiss francs": "CHF",
    "franc": "CHF",
    "francs": "CHF",
    "canadian dollar": "CAD",
    "canadian dollars": "CAD",
    "australian dollar": "AUD",
    "australian dollars": "AUD",
}


def _currency_normalise(value: object) -> JsonValue:
    if not isinstance(value, str):
        raise _Invalid(f"expected a currency code, got {type(value).__name__}")
    text = " ".join(value.strip().lower().split())
    code = _CURRENCY_NAMES.get(text) or text.upper()
    if not re.fullmatch(r"[A-Z]{3}", code):
        raise _Invalid("a currency is a three-letter ISO 4217 code")
    if code not in ISO_4217:
        raise _Invalid(f"{code} is not an ISO 4217 currency code")
    return code


def _currency_mentions(value: JsonValue, text: str) -> bool:
    lowered = f" {' '.join(text.lower().split())} "
    names = [n for n, code in _CURRENCY_NAMES.items() if code == value]
    if any(n in "€$£¥" and n in lowered for n in names):
        return True
    words = f" {' '.join(re.findall(r'[a-z]+', lowered))} "
    return isinstance(value, str) and any(
        f" {n} " in words for n in [value.lower(), *names] if n not in "€$£¥"
    )


# -- personal data --------------------------------------------------------------------------------

#: What stands for a personal value wherever it must not be shown.
REDACTED = "[personal data]"

_NAME = re.compile(r"[^\W\d_]+(?:['.-][^\W\d_]*)*\.?")


def _text(value: object, what: str, shortest: int, longest: int) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"expected text, got {type(value).__name__}")
    text = " ".join(value.split()).strip(" ,;")
    if not shortest <= len(text) <= longest:
        raise _Invalid(f"{what} has {shortest} to {longest} characters")
    return text


def _name_normalise(value: object) -> JsonValue:
    text = _text(value, "a name", 2, 100)
    if not re.search(r"\b[^\W\d_]\.$", text):  # a sentence's full stop, not an initial's
        text = text.rstrip(".")
    words = text.split(" ")
    if len(words) > 6 or not all(_NAME.fullmatch(w) for w in words):
        raise _Invalid("a name is one to six words of letters (with ' . or -)")
    return text


def _address_normalise(value: object) -> JsonValue:
    text = _text(value, "an address", 5, 200)
    if not re.search(r"[^\W\d_]", text):
        raise _Invalid("an address has letters (a street, a town)")
    return text


def _text_mentions(value: JsonValue, text: str) -> bool:
    return isinstance(value, str) and " ".join(value.lower().split()) in " ".join(
        text.lower().split()
    )


# -- the registry ---------------------------------------------------------------------------------

ATTRIBUTES: tuple[ProfileAttribute, ...] = (
    ProfileAttribute(
        name="risk_tolerance",
        description="How much risk the user accepts in their investments.",
        accepted="conservative, moderate or aggressive (synonyms such as cautious, "
        "risk-averse, balanced or high-risk are mapped to these)",
        examples=("conservative", "moderate", "aggressive"),
        merge="replace",
        normalise=_risk_normalise,
        mentions=_risk_mentions,
        vocabulary=_vocabulary(_RISK),
    ),
    ProfileAttribute(
        name="horizon_years",
        description="The user's investment horizon, in years.",
        accepted=f"a number of years above 0 and at most {_MAX_HORIZON}, or a duration such as "
        "'2 years', '18 months' or '6 months'",
        examples=(10, 2, 1.5, 0.5),
        merge="replace",
        normalise=_horizon_normalise,
        mentions=_horizon_mentions,
    ),
    ProfileAttribute(
        name="watchlist",
        description="Tickers the user follows. A fact lists only the tickers the user named; "
        "learning adds them to the stored list.",
        accepted="a list of ticker symbols such as ['NVDA', 'MSFT'] (company names such as "
        "Nvidia are mapped to their symbol)",
        examples=(["NVDA"], ["AAPL", "MSFT"]),
        merge="union",
        normalise=_tickers_normalise,
        mentions=_tickers_mentions,
    ),
    ProfileAttribute(
        name="excluded_tickers",
        description="Tickers the user never wants analysed, compared or recommended.",
        accepted="a list of ticker symbols such as ['TSLA']",
        examples=(["TSLA"], ["META", "AMZN"]),
        merge="union",
        normalise=_tickers_normalise,
        mentions=_tickers_mentions,
    ),
    ProfileAttribute(
        name="report_style",
        description="How long the user wants research reports to be.",
        accepted="brief or detailed (short/concise map to brief; thorough/in-depth to detailed)",
        examples=("brief", "detailed"),
        merge="replace",
        normalise=_style_normalise,
        mentions=_style_mentions,
        vocabulary=_vocabulary(_STYLE),
    ),
    ProfileAttribute(
        name="base_currency",
        description="The currency the user measures their portfolio in.",
        accepted="a three-letter ISO 4217 code such as EUR, USD or GBP",
        examples=("EUR", "USD", "GBP"),
        merge="replace",
        normalise=_currency_normalise,
        mentions=_currency_mentions,
    ),
    ProfileAttribute(
        name="full_name",
        description="The user's name, as they gave it (personal data).",
        accepted="one to six words of letters, 2 to 100 characters, e.g. 'Alice Tamm'",
        examples=("Alice Tamm", "Jean-Luc O'Neil"),
        merge="replace",
        normalise=_name_normalise,
        mentions=_text_mentions,
        personal=True,
    ),
    ProfileAttribute(
        name="address",
        description="The user's postal address, as they gave it (personal data).",
        accepted="5 to 200 characters with letters, e.g. '12 Rue de la Paix, Paris'",
        examples=("12 Rue de la Paix, Paris", "Narva mnt 5, Tallinn"),
        merge="replace",
        normalise=_address_normalise,
        mentions=_text_mentions,
        personal=True,
    ),
)

REGISTRY: Mapping[str, ProfileAttribute] = {a.name: a for a in ATTRIBUTES}


def attribute(name: str) -> ProfileAttribute:
    """The registered attribute ``name``; :class:`UnknownProfileAttributeError` otherwise."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownProfileAttributeError(name, REGISTRY) from None


def is_personal(name: str) -> bool:
    """Whether ``name`` is a registered attribute tagged personal data."""
    found = REGISTRY.get(name)
    return found is not None and found.personal


def shown(name: str, value: object) -> str:
    """``value`` as text fit for a log, an error or a published report: ``repr`` of it, or
    :data:`REDACTED` for a personal attribute."""
    return REDACTED if is_personal(name) else repr(value)


def error_text(error: BaseException) -> str:
    """``Type: message`` of ``error``, fit for a log or a job's last error: a ledger conflict
    over a personal attribute names the fact, never the value stored."""
    from memory.errors import FactConflictError

    if isinstance(error, FactConflictError) and is_personal(error.attribute):
        return (
            f"FactConflictError: {error.subject}.{error.attribute} already has value "
            f"{REDACTED} from {error.valid_from} (fact {error.existing_memory_id}); "
            f"{error.reason}"
        )
    return f"{type(error).__name__}: {error}"


def validate(name: str, value: object) -> JsonValue:
    """The canonical value of profile attribute ``name`` for ``value``.

    Raises :class:`UnknownProfileAttributeError` for a name not in the registry and
    :class:`InvalidProfileValueError` (naming the attribute, the value and what is accepted)
    for a value that has no canonical form.
    """
    return attribute(name).validate(value)


def describe() -> str:
    """The registry as plain lines for a prompt: name, meaning, accepted values, examples."""
    return "\n".join(
        f"- {a.name}: {a.description} Accepted: {a.accepted}. "
        f"Examples: {', '.join(repr(e) for e in a.examples)}."
        for a in ATTRIBUTES
    )
