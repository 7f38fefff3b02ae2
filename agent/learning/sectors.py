"""Sectors said without a cue of interest or of refusal before them.

:func:`said` reads two ways of naming sectors the phrasing rules miss: a sector refused as
the subject of its clause ("oil and gas goes against everything I believe in", "crypto is a
scam in my book", "beer and wine are off the table for me"), and sectors added to the list
just named ("add healthcare to that too", "also add energy"), which goes to the list its
words belong to (a sector of interest, or one to exclude).
"""

from __future__ import annotations

import re

Found = tuple[str, object, int]

_I = re.IGNORECASE


#: A sector refused as the subject of the clause: "oil and gas goes against everything I
#: believe in", "crypto is a scam in my book", "beer and wine are off the table for me".
_REFUSED = re.compile(
    r"^\W*(?:(?:and|also|plus|honestly|so)\s+)?(?P<s>(?:[\w-]+[\s,]+){0,6}?)"
    r"(?:companies|stocks|names|firms|makers|producers|sector|industry|shares|stuff)?\s*"
    r"(?:go(?:es)?\s+against\s+(?:everything|all|my)|(?:is|are|'s|'re)\s+(?:(?:just|simply|"
    r"basically|totally|a)\s+)*(?:a\s+)?(?:scam|con|no(?:\s+from me|-go| go)?\b|off(?:\s+the "
    r"table|\s+limits)|out of the question|not for me|a hard no|unethical|immoral|evil|"
    r"a non-starter|dead to me))",
    _I,
)


def _refused(part: str, words: str, *, personal: bool) -> list[Found]:
    """Excluded sectors (``words``, an alternation) named as the subject of a refusal
    (:data:`_REFUSED`) by a user who speaks of themselves in the clause (``personal``), or
    says "no from me" or "off the table"."""
    match = _REFUSED.search(part)
    if match is None:
        return []
    personal = personal or bool(re.search(r"off the table|off limits|no from me", part, _I))
    named = list(re.finditer(rf"\b(?:{words})\b", match["s"], _I))
    if not (named and personal):
        return []
    return [("excluded_sectors", [m.group(0) for m in named], named[0].start())]


#: An addition to a list with no list named: "add healthcare to that too", "also add energy".
_ADD = re.compile(
    r"^\W*(?:(?:oh|and|also|please|pls|plus|ok|okay)[\s,]+)*(?:also\s+)?(?:add|include|throw in)\s+"
    r"(?P<v>[^,;.!?]+?)(?:\s+(?:to (?:that|it|the list|those|them)|in|too|as well|also))*\s*[.!]?\s*$",
    _I,
)


def said(part: str, interest: str, excluded: str, *, personal: bool) -> list[Found]:
    """Sectors ``part`` refuses (:func:`_refused`) or adds to a list (:data:`_ADD`); ``interest``
    and ``excluded`` are the alternations of each list's sector words."""
    refused = _refused(part, excluded, personal=personal)
    added = _ADD.search(part)
    if refused or added is None:
        return refused
    for attribute, words in (("sectors_of_interest", interest), ("excluded_sectors", excluded)):
        named = list(re.finditer(rf"\b(?:{words})\b", added["v"], _I))
        rest = re.sub(
            rf"\b(?:{words}|and|or|the|sectors?|stocks|names|&)\b|,", " ", added["v"], flags=_I
        )
        if named and not rest.strip():  # "add healthcare", not "add more detail on energy"
            at = added.start("v")
            return [(attribute, [m.group(0) for m in named], at + named[0].start())]
    return []
