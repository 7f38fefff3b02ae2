"""Personal data in free text, found and replaced by a typed placeholder before it is stored.

:func:`redact` replaces every payment card number (Luhn), IBAN (country length and mod-97),
e-mail address, phone number and national id (US SSN format rules, French NIR key mod 97,
Spanish DNI/NIE check letter) in a text by ``[card number]``, ``[bank account]``, ``[e-mail]``,
``[phone]`` or ``[national id]``; the value itself is kept nowhere (``docs/privacy.md``).
:func:`redact_value` does the same to every string inside a JSON-like value.

Patterns are anchored on what is not part of a number (no letter, digit, decimal point or
thousands separator next to a match) and numbers must pass their checksum, so an equity
research text keeps its prices (``1,234.56``), years, dates, percentages (``+3.5%``) and
share counts (``10,000``). Redaction is idempotent: placeholders hold no digits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

PiiKind = Literal["card number", "bank account", "e-mail", "phone", "national id"]


def placeholder(kind: PiiKind) -> str:
    """What stands where a value of ``kind`` was: ``[card number]``, ``[bank account]``, ..."""
    return f"[{kind}]"


@dataclass(frozen=True)
class Finding:
    """One value found in a text: its kind and span (the value is ``text[start:end]``)."""

    kind: PiiKind
    start: int
    end: int


# -- checksums --------------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of a card number, digits only."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


#: IBAN length per country (the SWIFT IBAN registry).
IBAN_LENGTHS: Mapping[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27,
    "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def iban_valid(iban: str) -> bool:
    """An IBAN (no spaces, upper case): its country's length and the ISO 7064 mod-97 check."""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban.isalnum():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """US SSN rules: no area 000, 666 or 900-999; no group 00; no serial 0000."""
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def nir_valid(nir: str) -> bool:
    """A French NIR (13 characters, Corsica's 2A/2B included) and its 2-digit key: the key
    is 97 minus the number mod 97 (2A counts as 19, 2B as 18 in the department)."""
    body, key = nir[:13], nir[13:]
    number = int(body.replace("2A", "19").replace("2B", "18"))
    return body[0] in "12378" and 1 <= int(key) <= 97 and 97 - number % 97 == int(key)


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def dni_valid(value: str) -> bool:
    """A Spanish DNI (8 digits) or NIE (X, Y or Z and 7 digits) and its check letter."""
    number = str("XYZ".index(value[0])) + value[1:-1] if value[0] in "XYZ" else value[:-1]
    return _DNI_LETTERS[int(number) % 23] == value[-1]


# -- patterns -------------------------------------------------------------------------------

#: Not inside a word or a number: no letter, digit or joiner of numbers on either side.
_START = r"(?<![\w.,+\-/@])"
_END = r"(?![\w@]|[.,/]\d|%)"

_EMAIL = re.compile(
    r"(?<![\w.%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]*@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}(?![\w\-@])"
)
_IBAN = re.compile(
    r"(?<![\w])[A-Z]{2}\d{2}(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,3})?)(?!\w)"
)
_CARD = re.compile(
    _START + r"(?:\d{13,19}"
    r"|\d{4}(?P<s>[ \-])\d{4}(?P=s)\d{4}(?P=s)\d{1,4}(?:(?P=s)\d{1,3})?"
    r"|\d{4}(?P<a>[ \-])\d{6}(?P=a)\d{4,5})" + _END
)
_SSN = re.compile(_START + r"(\d{3})-(\d{2})-(\d{4})" + _END)
_NIR = re.compile(_START + r"[12378] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}" + _END)
_DNI = re.compile(r"(?<![\w\-])(?:\d{8}|[XYZ]\d{7})-?[A-Z](?![\w\-])")
_PHONES = (
    # International: +CC and the number run together, or in groups that each start with a
    # space, a dash or a parenthesis (so a run of digits is read one way only: no backtracking).
    re.compile(
        r"(?<![\w+])\+(?:[1-9]\d{7,14}|[1-9]\d{0,3}(?:[ \-]?\(\d{1,5}\)|[ \-]\d{1,5}){2,7})" + _END
    ),
    # North America: (415) 555-2671, 415-555-2671, 415.555.2671 (area and exchange 2-9).
    re.compile(_START + r"(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[ .\-])[2-9]\d{2}[ .\-]\d{4}" + _END),
    # France: 06 12 34 56 78, 06.12.34.56.78, 0612345678 (one separator throughout).
    re.compile(_START + r"0[1-9](?P<f>[ .\-]?)\d{2}(?:(?P=f)\d{2}){3}" + _END),
    # UK and other trunk-0 numbers: 020 7946 0958, 07700 900123, 030 12345678.
    re.compile(_START + r"0\d{2,4}[ \-]\d{3,8}(?:[ \-]\d{3,4})?" + _END),
)
#: Digits a phone number has, country code included (E.164 allows at most 15).
PHONE_DIGITS = range(9, 16)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


_GROUP_BEFORE = re.compile(r"\d[ .\-]?\Z")
_GROUP_AFTER = re.compile(r"[ .\-]?\d")


def _alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole run of digit groups, not the middle of a longer
    one (a phone or card pattern inside an account number or a table row of figures)."""
    before = _GROUP_BEFORE.search(text, max(0, start - 2), start)
    return not before and not _GROUP_AFTER.match(text, end)


def _cards(text: str) -> Iterator[tuple[int, int]]:
    for m in _CARD.finditer(text):
        digits = _digits(m.group())
        card = 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)
        if card and _alone(text, *m.span()):
            yield m.span()


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for m in _IBAN.finditer(text):
        # A grouped match may run on into the next words ("... 7034 AB12"): it ends after
        # as many characters as its country's IBAN has.
        want, seen, end = IBAN_LENGTHS.get(m.group()[:2], 0), 0, m.start()
        while end < m.end() and seen < want:
            seen += text[end] != " "
            end += 1
        ends = end == len(text) or not text[end].isalnum()
        if seen == want and ends and iban_valid(text[m.start() : end].replace(" ", "")):
            yield m.start(), end


def _national_ids(text: str) -> Iterator[tuple[int, int]]:
    for m in _SSN.finditer(text):
        if ssn_valid(*m.groups()):
            yield m.span()
    for m in _NIR.finditer(text):
        if nir_valid(m.group().replace(" ", "")):
            yield m.span()
    for m in _DNI.finditer(text):
        if dni_valid(m.group().replace("-", "")):
            yield m.span()


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for pattern in _PHONES:
        for m in pattern.finditer(text):
            count = len(_digits(m.group()))
            if count in PHONE_DIGITS and _alone(text, *m.span()):
                yield m.span()


def _emails(text: str) -> Iterator[tuple[int, int]]:
    for m in _EMAIL.finditer(text):
        yield m.span()


#: Detectors in priority order: an earlier kind's span wins an overlap.
_DETECTORS: tuple[tuple[PiiKind, Callable[[str], Iterator[tuple[int, int]]]], ...] = (
    ("e-mail", _emails),
    ("bank account", _ibans),
    ("card number", _cards),
    ("national id", _national_ids),
    ("phone", _phones),
)


def find(text: str) -> list[Finding]:
    """Every personal value in ``text``, in order, none overlapping another."""
    found: list[Finding] = []
    taken = bytearray(len(text))  # 1 where an earlier finding is
    for kind, detect in _DETECTORS:
        for start, end in detect(text):
            if not any(taken[start:end]):
                found.append(Finding(kind, start, end))
                taken[start:end] = b"\x01" * (end - start)
    return sorted(found, key=lambda f: f.start)


def redact(text: str) -> str:
    """``text`` with every value :func:`find` finds replaced by its kind's placeholder."""
    if not any(ch.isdigit() or ch == "@" for ch in text):
        return text  # every kind holds a digit or an @: most texts cost one scan
    parts: list[str] = []
    at = 0
    for f in find(text):
        parts += [text[at : f.start], placeholder(f.kind)]
        at = f.end
    return "".join([*parts, text[at:]])


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact` applied to every string in it (mapping values, list and
    tuple items, recursively); keys, numbers and other scalars are left as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v) for v in value)
    return value
