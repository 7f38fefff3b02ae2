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

Attributes that identify a person (``full_name``, ``address``, ``age``) are tagged ``personal``
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
from agent.learning import (
    currencies,
    indirect,
    quantities,
    spelling,
    symbols,
    timeline,
    vocabulary,
)

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
        """Whether ``text`` states ``value`` (canonical) for this attribute, as typed or with
        its misspellings put back (:func:`agent.learning.spelling.respelled`)."""
        if self.mentions(value, text):
            return True
        fixed = spelling.respelled(text)
        return fixed != text and self.mentions(value, fixed)


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
        if key not in canonical:  # "balanced-risk", "cautious risk"
            key = re.sub(r"\s+risk$", "", key)
        if key not in canonical:
            raise _Invalid("not one of the accepted values or their synonyms")
        return canonical[key]

    def mentions(value: JsonValue, text: str) -> bool:
        plain = f" {_words(re.sub(r'[^A-Za-z_-]+', ' ', text))} "
        return any(f" {_words(s)} " in plain for s, v in canonical.items() if v == value)

    return normalise, mentions


def _vocabulary(synonyms: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    words = {w for value, more in synonyms.items() for w in (value, *more)}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))  # longest first, for regex alternation


_risk_normalise, _risk_words = _enumeration(vocabulary.RISK)


def _risk_mentions(value: JsonValue, text: str) -> bool:
    """A text states a risk tolerance by a word for it, or by a reaction to losses ("I
    panicked and sold everything in 2020" states conservative), or a clause of it in the
    first person means that level (:func:`agent.learning.meaning.states_risk`)."""
    if _risk_words(value, text) or indirect.states_risk(value, text):
        return True
    from agent.learning import meaning  # loads MiniLM on first use, never at import

    return meaning.states_risk(value, text)


_style_normalise, _style_mentions = _enumeration(vocabulary.STYLE)
_goal_normalise, _goal_mentions = _enumeration(vocabulary.GOAL)
_income_normalise, _income_words = _enumeration(vocabulary.INCOME)


def _income_mentions(value: JsonValue, text: str) -> bool:
    """A text states "balanced" when it names a balance, or both dividends and growth."""
    if _income_words(value, text):
        return True
    return (
        value == "balanced" and _income_words("dividends", text) and _income_words("growth", text)
    )


#: Words after a sector's name that do not change it ("tobacco stocks", "weapons makers").
_SECTOR_TAIL = re.compile(
    r"\s+(?:stocks?|shares?|sectors?|companies|company|industry|industries|names|firms|"
    r"manufacturers?|makers?|producers?|businesses|plays|space)$"
)


def _sector_list(
    synonyms: Mapping[str, Iterable[str]],
) -> tuple[Callable[[object], JsonValue], Callable[[JsonValue, str], bool]]:
    """A normaliser and a ``mentions`` check for a list drawn from a closed set of sectors."""
    one, mentions_one = _enumeration(synonyms)

    def normalise(value: object) -> JsonValue:
        if isinstance(value, str):
            items: list[object] = [
                w for w in re.split(r"\s*(?:,|;|/|&|\band\b|\bor\b)\s*", value) if w.strip()
            ]
        elif isinstance(value, list | tuple):
            items = list(value)
        else:
            raise _Invalid(f"expected a list of sectors, got {type(value).__name__}")
        out: list[JsonValue] = []
        for item in items:
            if not isinstance(item, str):
                raise _Invalid(f"{item!r} is not a sector")
            try:
                sector = one(item)
            except _Invalid:
                sector = one(_SECTOR_TAIL.sub("", _words(item)))
            if sector not in out:
                out.append(sector)
        return out

    def mentions(value: JsonValue, text: str) -> bool:
        return (
            isinstance(value, list)
            and bool(value)
            and all(isinstance(v, str) and mentions_one(v, text) for v in value)
        )

    return normalise, mentions


_excluded_normalise, _excluded_mentions = _sector_list(vocabulary.EXCLUDED_SECTORS)
_sectors_normalise, _sectors_mentions = _sector_list(vocabulary.SECTORS)


# -- durations ------------------------------------------------------------------------------------

#: A duration as users write it (see :mod:`agent.learning.quantities`).
DURATION = quantities.DURATION
_MAX_HORIZON = 60
_canonical_number = quantities.canonical_number


def _number(value: object, unit: str, read: Callable[[str], float | None], unread: str) -> float:
    """``value`` as a number: a JSON number (never a boolean) or text that ``read`` reads as one.
    ``unit`` names what was expected; ``unread`` refuses text that ``read`` cannot read."""
    if isinstance(value, bool):
        raise _Invalid(f"expected {unit}, got a boolean")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise _Invalid(f"expected {unit}, got {type(value).__name__}")
    read_value = read(value)
    if read_value is None:
        raise _Invalid(unread)
    return read_value


def _positive(
    unit: str, read: Callable[[str], float | None], unread: str, most: float, beyond: str
) -> Callable[[object], JsonValue]:
    """A normaliser for a number more than 0 and at most ``most`` (``beyond`` refuses any
    other), given as a number or as text that ``read`` reads (see :func:`_number`)."""

    def normalise(value: object) -> JsonValue:
        number = _number(value, unit, read, unread)
        if not 0 < number <= most:
            raise _Invalid(beyond)
        return _canonical_number(number)

    return normalise


_horizon_normalise = _positive(
    "a number of years",
    quantities.duration_years,
    "not a number of years or a duration such as '18 months'",
    _MAX_HORIZON,
    f"a horizon must be more than 0 and at most {_MAX_HORIZON} years",
)


def _horizon_mentions(value: JsonValue, text: str) -> bool:
    if any(_canonical_number(years) == value for _, years in quantities.durations(text)):
        return True
    # "I'm 40 and won't touch it until I'm 65": the years between two ages it names.
    if any(_canonical_number(years) == value for years, _ in timeline.horizons_by_age(text)):
        return True
    # A bare number next to "horizon" ("horizon: 10", "14. typo" after "no sorry"), read as
    # years: any number not followed by a unit of time other than years.
    return any(
        _canonical_number(n) == value
        for n in _bare_numbers(
            text, r"(?:months?|mos?|weeks?|decades?|%|percent|(?:years?|yrs?)[\s-]+old)"
        )
    )


def _bare_numbers(text: str, not_before: str) -> list[float]:
    """The numbers written in ``text`` (digits or words) not followed by ``not_before``."""
    found = []
    pattern = rf"(?<![\w.])({quantities.NUMBER})(?![\d.,]*\s*{not_before})"
    for match in re.finditer(pattern, text, re.IGNORECASE):
        value = quantities.number(match.group(1))
        if value is not None and re.search(r"\d|[a-z]{3}", match.group(1), re.I):
            found.append(value)
    return found


# -- percentages and ages -------------------------------------------------------------------------


_drawdown_normalise = _positive(
    "a percentage",
    quantities.percent_value,
    "not a percentage such as 20, '20%' or 'a fifth'",
    100,
    "a drawdown is more than 0 and at most 100 percent",
)


def _drawdown_mentions(value: JsonValue, text: str) -> bool:
    shares = [*quantities.percents(text), *quantities.money_shares(text)]
    if any(_canonical_number(p) == value for _, p in shares):
        return True
    return any(
        _canonical_number(n) == value
        for n in _bare_numbers(text, r"(?:years?|yrs?|months?|decades?)")
    )


def _years_of_age(text: str) -> float | None:
    """``text`` read as a number of years, with or without "years (old)" after it."""
    return quantities.number(
        re.sub(r"\s*(?:years?|yrs?)(?:\s+old)?$", "", text.strip(), flags=re.I)
    )


def _age_normalise(value: object) -> JsonValue:
    age = _number(value, "a number of years", _years_of_age, "not a number of years")
    if age != int(age) or not 1 <= age <= 120:
        raise _Invalid("an age is a whole number of years from 1 to 120")
    return int(age)


#: What follows a number that is no age: a duration (not "years old"), a percentage.
_NOT_AN_AGE = r"(?:months?|%|percent|decades?|(?:years?|yrs?)\b(?![\s-]+old))"


#: An age said with "years" and no "old": "sixty-three years young", "I have 46 years".
_YEARS_OF_AGE = re.compile(
    rf"(?:\bi\s+have\s+)?\b({quantities.NUMBER})\s+years?\s+(?:young\b|and\s+(?:\w+\s+)?"
    r"(?:children|kids|a\s+\w+)\b)|\bi\s+have\s+(\d{2})\s+years\b|"
    # "I am 37 years." (no "old"): a sentence that ends with the years
    r"\b(?:i'?m|i\s+am|im)\s+(\d{1,3})\s+years?\s*(?:[.!;]|$)",
    re.IGNORECASE,
)


def _age_mentions(value: JsonValue, text: str) -> bool:
    if any(n == value for n in _bare_numbers(text, _NOT_AN_AGE)):
        return True
    return any(
        quantities.number(m.group(1) or m.group(2) or m.group(3)) == value
        for m in _YEARS_OF_AGE.finditer(text)
    )


# -- tickers --------------------------------------------------------------------------------------

_tickers_normalise, _tickers_mentions = symbols.normalise_tickers, symbols.tickers_stated


# -- currencies -----------------------------------------------------------------------------------

ISO_4217 = quantities.ISO_4217


def _currency_normalise(value: object) -> JsonValue:
    if not isinstance(value, str):
        raise _Invalid(f"expected a currency code, got {type(value).__name__}")
    code = quantities.currency_code(value)
    if code is None:
        text = value.strip().upper()
        if not re.fullmatch(r"[A-Z]{3}", text):
            raise _Invalid("a currency is a three-letter ISO 4217 code")
        raise _Invalid(f"{text} is not an ISO 4217 currency code")
    return code


def _currency_mentions(value: JsonValue, text: str) -> bool:
    """A text states a currency by its code, name or symbol, as the local currency of a
    country it names ("I live in Switzerland and keep everything in local currency"), or by
    a name the author's nationality qualifies ("I'm Danish so please use kroner"), or as the
    currency of the place the author lives in ("I live in Zurich so everything's in francs")."""
    if any(code == value for _, code in quantities.currencies(text)):
        return True
    named = [
        *currencies.local_currencies(text),
        *currencies.currencies_in_words(text),
        *currencies.currencies_of_nation(text),
        *currencies.currencies_of_place(text),
    ]
    return any(code == value for code, _ in named)


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


def _employer_normalise(value: object) -> JsonValue:
    text = _text(value, "a company name", 1, 100).rstrip(".")
    if not re.search(r"[^\W\d_]", text) or len(text.split()) > 8:
        raise _Invalid("a company name is one to eight words with letters")
    return text


def _text_mentions(value: JsonValue, text: str) -> bool:
    return isinstance(value, str) and " ".join(value.lower().split()) in " ".join(
        text.lower().split()
    )


# -- the registry ---------------------------------------------------------------------------------

#: The kinds of value an attribute holds: how a value is made canonical, how a quote states it,
#: how a new value combines with the stored one, and the words that name the values (for an
#: enumeration). A list of tickers or sectors is unioned; every other value replaces.
_KINDS: Mapping[
    str,
    tuple[
        Callable[[object], JsonValue],
        Callable[[JsonValue, str], bool],
        Merge,
        Mapping[str, Iterable[str]],
    ],
] = {
    "risk": (_risk_normalise, _risk_mentions, "replace", vocabulary.RISK),
    "years": (_horizon_normalise, _horizon_mentions, "replace", {}),
    "tickers": (_tickers_normalise, _tickers_mentions, "union", {}),
    "style": (_style_normalise, _style_mentions, "replace", vocabulary.STYLE),
    "currency": (_currency_normalise, _currency_mentions, "replace", {}),
    "goal": (_goal_normalise, _goal_mentions, "replace", vocabulary.GOAL),
    "income": (_income_normalise, _income_mentions, "replace", vocabulary.INCOME),
    "percent": (_drawdown_normalise, _drawdown_mentions, "replace", {}),
    "excluded": (_excluded_normalise, _excluded_mentions, "union", vocabulary.EXCLUDED_SECTORS),
    "sectors": (_sectors_normalise, _sectors_mentions, "union", vocabulary.SECTORS),
    "company": (_employer_normalise, _text_mentions, "replace", {}),
    "name": (_name_normalise, _text_mentions, "replace", {}),
    "address": (_address_normalise, _text_mentions, "replace", {}),
    "age": (_age_normalise, _age_mentions, "replace", {}),
}

#: The attributes, one record each, read by :func:`_attribute`: name, kind of value (a key of
#: :data:`_KINDS`), personal data or not, description, accepted values (for errors and
#: prompts), examples.
_RECORDS: tuple[tuple[str, str, bool, str, str, tuple[JsonValue, ...]], ...] = (
    ("risk_tolerance", "risk", False,
     "How much risk the user accepts in their investments.",
     "conservative, moderate or aggressive (synonyms such as cautious, risk-averse, balanced "
     "or high-risk are mapped to these)",
     ("conservative", "moderate", "aggressive")),
    ("horizon_years", "years", False,
     "The user's investment horizon, in years.",
     f"a number of years above 0 and at most {_MAX_HORIZON}, or a duration such as '2 years', "
     "'18 months' or '6 months'",
     (10, 2, 1.5, 0.5)),
    ("watchlist", "tickers", False,
     "Tickers the user follows. A fact lists only the tickers the user named; learning adds "
     "them to the stored list.",
     "a list of ticker symbols such as ['NVDA', 'MSFT'] (company names such as Nvidia are "
     "mapped to their symbol)",
     (["NVDA"], ["AAPL", "MSFT"])),
    ("excluded_tickers", "tickers", False,
     "Tickers the user never wants analysed, compared or recommended.",
     "a list of ticker symbols such as ['TSLA']",
     (["TSLA"], ["META", "AMZN"])),
    ("holdings", "tickers", False,
     "Tickers the user owns. A fact lists only the tickers the user named; learning adds them "
     "to the stored list (a correction replaces what it corrects).",
     "a list of ticker symbols such as ['AAPL', 'MSFT'] (company names such as Apple are "
     "mapped to their symbol)",
     (["AAPL"], ["GOOGL", "AMZN"])),
    ("report_style", "style", False,
     "How long the user wants research reports to be.",
     "brief or detailed (short/concise map to brief; thorough/in-depth to detailed)",
     ("brief", "detailed")),
    ("base_currency", "currency", False,
     "The currency the user measures their portfolio in.",
     "a three-letter ISO 4217 code such as EUR, USD or GBP",
     ("EUR", "USD", "GBP")),
    ("goal", "goal", False,
     "What the user's money is for.",
     "retirement, home_purchase, education, income, growth or preservation (pension, buying "
     "a house, college, steady income, capital preservation ... are mapped to these)",
     ("retirement", "home_purchase", "education", "income", "growth", "preservation")),
    ("income_preference", "income", False,
     "Whether the user prefers dividend income, growth, or a balance of both.",
     "dividends, growth or balanced",
     ("dividends", "growth", "balanced")),
    ("max_drawdown_pct", "percent", False,
     "The largest loss, in percent of the portfolio, the user accepts.",
     "a percentage above 0 and at most 100, such as 20, '20%' or 'a fifth'",
     (20, 35, 12.5)),
    ("excluded_sectors", "excluded", False,
     "Sectors the user never wants analysed or recommended.",
     "a list from tobacco, weapons, crypto, fossil_fuels, gambling, alcohol (cigarettes, "
     "arms, bitcoin, oil and coal, casinos, booze ... are mapped to these)",
     (["tobacco"], ["weapons", "gambling"])),
    ("sectors_of_interest", "sectors", False,
     "Sectors the user wants to hear about.",
     "a list from semiconductors, software, healthcare, energy, financials, consumer, "
     "industrials, utilities, real_estate, telecom, materials (chips, pharma, banks, "
     "REITs ... are mapped to these)",
     (["semiconductors"], ["healthcare", "financials"])),
    ("employer", "company", False,
     "The company the user works for, named as the user named it.",
     "a company name of one to eight words, e.g. 'Nvidia'",
     ("Nvidia", "Alphabet")),
    ("full_name", "name", True,
     "The user's name, as they gave it (personal data).",
     "one to six words of letters, 2 to 100 characters, e.g. 'Alice Tamm'",
     ("Alice Tamm", "Jean-Luc O'Neil")),
    ("address", "address", True,
     "The user's postal address, as they gave it (personal data).",
     "5 to 200 characters with letters, e.g. '12 Rue de la Paix, Paris'",
     ("12 Rue de la Paix, Paris", "Narva mnt 5, Tallinn")),
    ("age", "age", True,
     "The user's age in years (personal data).",
     "a whole number of years from 1 to 120",
     (42, 61)),
)  # fmt: skip


def _attribute(
    name: str,
    kind: str,
    personal: bool,
    description: str,
    accepted: str,
    examples: tuple[JsonValue, ...],
) -> ProfileAttribute:
    """The attribute one record of :data:`_RECORDS` describes."""
    normalise, mentions, merge, synonyms = _KINDS[kind]
    return ProfileAttribute(
        name=name,
        description=description,
        accepted=accepted,
        examples=examples,
        merge=merge,
        normalise=normalise,
        mentions=mentions,
        vocabulary=_vocabulary(synonyms) if synonyms else (),
        personal=personal,
    )


ATTRIBUTES: tuple[ProfileAttribute, ...] = tuple(_attribute(*record) for record in _RECORDS)
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
