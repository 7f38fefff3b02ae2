"""Explicit user constraints: captured on the hot path, kept outside any conversation summary.

"Never include TSLA", "from now on only quick snapshots", "always mention the data date" are
instructions from the authenticated user about their own session. They are extracted
deterministically from the user's own message (never from model output or memory text), stored
in graph state as an authoritative list, and honoured on every later request even after older
messages have been summarised away. Ticker exclusions and a forced mode are enforced in code;
every constraint is also handed to the model path's prompts verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent.records import Mode
from agent.research.tickers import COMPANY_NAMES

# A clause states a standing rule when it speaks about the future ("from now on"), or opens
# with an imperative such as "never ..." / "always ..." / "don't ..." / "exclude ...".
_STANDING = re.compile(
    r"\b(from now on|going forward|from here on|in future|in the future)\b", re.IGNORECASE
)
_IMPERATIVE = re.compile(
    r"^(?:(?:please|and|but|also|so)[\s,]+)*"
    r"(never|always|don't|dont|do not|avoid|exclude|skip|no more)\b",
    re.IGNORECASE,
)
# Idioms that open like a rule but are not one.
_IDIOMS = re.compile(
    r"\b(never mind|nevermind|don't forget|dont forget|do not forget|don't worry|dont worry)\b",
    re.IGNORECASE,
)
# Negative phrasing that removes a ticker: "never include X", "don't analyse X", "exclude X".
_EXCLUSION = re.compile(
    r"\b(?:(?:never|don't|dont|do not|no more)\s+(?:\w+\s+){0,2}?"
    r"(?:include|includ\w*|analy[sz]\w*|cover\w*|mention\w*|recommend\w*|show\w*|"
    r"consider\w*|research\w*|look\s+at|touch\w*|use|using|bring\w*\s+up|suggest\w*|"
    r"pitch\w*|talk\w*\s+about)"
    r"|avoid|exclude|skip|leave\s+out|drop|no\s+more)\b(?P<rest>.*)",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
# A comma followed by a rule starts a new clause: "Analyze NVDA, but never include TSLA".
_CLAUSES = re.compile(
    r",\s*(?!never mind|nevermind|don't forget|dont forget|do not forget)"
    r"(?=(?:(?:but|and|also|so|please|pls)\s+)?(?:never|always|don't|dont|do not|avoid|exclude|"
    r"from now on|going forward)\b)",
    re.IGNORECASE,
)
_WORD = re.compile(r"\$?[A-Za-z][A-Za-z.]*")


def _clauses(text: str) -> list[str]:
    """Sentences, with a rule after a comma split off the request before it; each clause is
    a verbatim span of ``text`` (rule pieces kept together keep their comma as written), so
    a quote of it is found in the text again."""
    out: list[str] = []
    for sentence in _SENTENCES.split(text or ""):
        spans: list[tuple[int, int]] = []
        start = 0
        for comma in _CLAUSES.finditer(sentence):
            spans.append((start, comma.start()))
            start = comma.end()
        spans.append((start, len(sentence)))
        merged: list[tuple[int, int]] = []
        for begin, end in spans:
            piece = sentence[begin:end].strip()
            if not piece:
                continue
            # "Going forward, always ..." is one rule: keep rule pieces together.
            if merged and is_constraint(piece):
                first, last = merged[-1]
                if is_constraint(sentence[first:last].strip()):
                    merged[-1] = (first, end)
                    continue
            merged.append((begin, end))
        out += [sentence[begin:end].strip() for begin, end in merged]
    return out


def clauses(text: str) -> list[str]:
    """The clauses of ``text`` as :func:`split_constraints` sees them: its sentences, with a
    rule after a comma ("Analyze NVDA, but never include TSLA") split off the request."""
    return _clauses(text)


def is_constraint(clause: str) -> bool:
    plain = _IDIOMS.sub(" ", clause).strip()
    return bool(_STANDING.search(plain) or _IMPERATIVE.search(plain))


def split_constraints(text: str) -> tuple[list[str], str]:
    """Split a user message into (standing-rule clauses, the remaining request text)."""
    constraints: list[str] = []
    rest: list[str] = []
    for clause in _clauses(text):
        (constraints if is_constraint(clause) else rest).append(clause)
    return constraints, " ".join(rest)


def merge(existing: Sequence[str], new: Iterable[str]) -> list[str]:
    out = list(existing)
    seen = {c.lower() for c in out}
    for c in new:
        if c.lower() not in seen:
            out.append(c)
            seen.add(c.lower())
    return out


def excluded_tickers(constraints: Iterable[str], known: Iterable[str]) -> dict[str, str]:
    """Tickers a negative constraint removes, mapped to the constraint that removes them.

    Only tickers named after an exclusion phrase count: "never include TSLA" excludes TSLA;
    "don't forget the beta for NVDA" or "I never owned TSLA" exclude nothing.
    """
    symbols = {k.upper() for k in known}
    out: dict[str, str] = {}
    for constraint in constraints:
        for clause in _clauses(_IDIOMS.sub(" ", constraint)):
            match = _EXCLUSION.search(clause)
            if not match:
                continue
            for word in _WORD.findall(match.group("rest")):
                bare = word.lstrip("$").rstrip(".")
                upper = bare.upper()
                symbol = upper if upper in symbols else COMPANY_NAMES.get(bare.lower())
                if symbol and symbol in symbols:
                    out.setdefault(symbol, constraint)
    return out


def forced_mode(constraints: Iterable[str]) -> Mode | None:
    """'only quick snapshots' → flash; 'always deep research' → deep (the latest one wins)."""
    mode: Mode | None = None
    for constraint in constraints:
        lowered = constraint.lower()
        if re.search(r"\b(only|always)\b", lowered):
            if re.search(r"\b(snapshot|quick|brief|flash)", lowered):
                mode = "flash"
            elif re.search(r"\b(deep|full|thorough)", lowered):
                mode = "deep"
    return mode


#: Report sections a standing rule may ask to always include, by the words that name them.
SECTION_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Peer comparison", re.compile(r"\b(peer|peers|competitors?|comparison)\b", re.IGNORECASE)),
    ("Risk factors", re.compile(r"\b(risk factors?|risks?|downside)\b", re.IGNORECASE)),
    ("Analysis", re.compile(r"\b(analysis|technicals?|trend|momentum)\b", re.IGNORECASE)),
)
_ALWAYS = re.compile(r"\b(?:always|from now on|going forward|in future)\b", re.IGNORECASE)
_INCLUDE = re.compile(
    r"\b(?:include|includ\w+|show|add|keep|give|mention|want|need)\b(?P<rest>.*)",
    re.IGNORECASE,
)


def included_sections(text: str, *, standing: bool = False) -> list[str]:
    """Report sections a rule asks to always include: "Always include the peer table" names
    ``Peer comparison``. Without "always" (or "from now on") a clause counts only when the
    text is already ``standing`` (a confirmed procedure or preference: "Include the peer
    table"). A negative rule ("never include ...") names none."""
    sections: list[str] = []
    for clause in _clauses(_IDIOMS.sub(" ", text)):
        if _EXCLUSION.search(clause) or not (standing or _ALWAYS.search(clause)):
            continue
        match = _INCLUDE.search(clause)
        if match:
            sections += [name for name, words in SECTION_WORDS if words.search(match["rest"])]
    return list(dict.fromkeys(sections))


def required_sections(procedures: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Report sections the user's confirmed procedures require in full, each mapped to the
    procedure that says so: the rule ``{"include_section": NAME}``, or a procedure whose own
    words ask to always include it (:func:`included_sections`)."""
    out: dict[str, str] = {}
    names = {name.lower(): name for name, _ in SECTION_WORDS}
    for p in procedures:
        rule = p.get("rule") or {}
        wanted = rule.get("include_section")
        found = (
            [names.get(str(wanted).lower(), str(wanted))]
            if isinstance(wanted, str) and wanted
            else included_sections(str(p.get("text") or ""), standing=True)
        )
        for name in found:
            out.setdefault(name, f'procedure {p.get("procedure_id")} ("{p.get("text")}")')
    return out
