"""The figures a report's model-written prose states, and which of them nothing computed backs.

The model writes the summary, analysis, risk factors and rationale of a model-path report
(:class:`agent.state.Draft` ``prose``); it can write "revenue grew 250%" or "a P/E of 12" as
easily as a figure it was given. :func:`unbacked_figures` finds each figure in that prose and
keeps those that match no computed figure in the draft within rounding: the draft's metrics,
its recommendation's confidence, and the numbers in the report's tables (rendered from the
computed results, peers included). Where the words around a figure name the metric
("volatility of 38%"), it must match a computed figure of that metric; a metric the analyst
never computes (revenue, earnings, P/E, dividends...) backs nothing.

What is not a figure: years, dates, times, windows ("50-day", "12 months", "1Y"), rankings
("ranks 1 of 5"), step numbers, thresholds ("RSI above 70"), anything quoted (the user's own
words, such as a constraint), identifiers with letters (tickers, "Q3", "RSI(14)"), and a bare
integer that no metric word is near (a count). The offline reporter writes no prose, so its
drafts have nothing to check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.research.report import KEY_METRICS

#: Metrics stored as fractions and shown as percentages (0.452 is "+45.20%").
_FRACTIONS = frozenset(
    {key for key, _, kind in KEY_METRICS if kind in ("pct", "pct_abs")} | {"price_vs_sma200"}
)

#: Which computed quantity a label, metric key or table column is, by its words.
_ENTRY_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("return", r"return|ytd|\bvs\b"),
        ("volatility", r"volatil"),
        ("drawdown", r"drawdown"),
        ("rsi", r"\brsi"),
        ("beta", r"\bbeta"),
        ("correlation", r"correlation"),
        ("average", r"\bsma|moving average|\bvs\b"),
        ("price", r"close|\bsma|moving average"),
        ("confidence", r"confidence"),
    )
)

#: Words in prose naming what a nearby figure is, and the computed kinds it may match.
_FIGURE_WORDS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), frozenset(kinds))
    for pattern, kinds in (
        (r"\breturn(?:s|ed)?\b|\bperform\w*|\bytd\b|year[- ]to[- ]date", {"return"}),
        (r"volatil\w*|standard deviation", {"volatility"}),
        (r"drawdown|peak[- ]to[- ]trough|from (?:its|the) peak", {"drawdown"}),
        (r"\brsi\b|relative strength", {"rsi"}),
        (r"\bbeta\b", {"beta"}),
        (r"correlat\w*", {"correlation"}),
        (r"\baverage\b|\bsma\b", {"average"}),
        (r"\bprice[sd]?\b|\bclos(?:e|ed|ing)\b|\btrad(?:es|ed|ing) at\b", {"price"}),
        (r"\bconfiden(?:ce|t)\b", {"confidence"}),
    )
)

#: Verbs of movement: they name a return or a fall only when no metric word is near.
_MOVES = re.compile(
    r"\b(?:gain(?:s|ed)?|rose|ris(?:e|en|ing)|rall(?:y|ied)|climb(?:ed)?|jump(?:ed)?|"
    r"up|fell|fall(?:en)?|drop(?:ped)?|declin(?:e|ed)|lost|loss|down|grew|growth)\b",
    re.IGNORECASE,
)
_MOVE_KINDS = frozenset({"return", "drawdown"})

#: Metrics the analyst never computes (it has daily prices only): a figure for one is unbacked.
_UNCOMPUTED = re.compile(
    r"\b(?:revenues?|sales|earnings|eps|profits?|net income|income|margins?|p/?e|"
    r"price[- /]to[- /](?:earnings|book|sales)|peg|p/b|book value|dividends?|yields?|"
    r"market cap\w*|valuation|ebitda|cash flows?|debt|guidance|forecasts?|projected|"
    r"expected to|estimates?|targets?|shares outstanding|buybacks?)\b",
    re.IGNORECASE,
)

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
#: Spans that hold digits but state no figure; blanked before figures are read.
_NOT_FIGURES = re.compile(
    "|".join(
        (
            r'"[^"\n]*"|“[^”\n]*”|‘[^’\n]*’|`[^`\n]*`',  # quoted: the user's words, names
            r"\b\d{4}-\d{2}(?:-\d{2})?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{1,2}:\d{2}\b",
            r"(?<![$€£.,\d])\b(?:19|20)\d{2}\b(?![.,]\d|\s?%)",  # a year
            rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?",
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b",
            r"\b\d+(?:\.\d+)?[- ]?(?:days?|weeks?|months?|years?|yrs?|quarters?|sessions?)\b",
            r"(?:\b(?:top|bottom|rank(?:s|ed)?|number|no\.)\s*#?|#)?\b\d+\s+of\s+\d+\b",
            r"\b(?:top|bottom|rank(?:s|ed)?|number|no\.)\s*#?\d+\b|#\d+\b",
            r"\bsteps?\s+#?\d+(?:\s*(?:-|–|to|and|,)\s*\d+)*",
            r"\(\d+\)",  # a parameter: RSI(14)
        )
    ),
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![\w.,/])(?P<currency>[$€£]\s?)?(?P<sign>[+\-−])?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<unit>\s?(?:%|percent\b|per\s?cent\b|x\b|bn\b|billion\b|million\b|trillion\b))?"
    r"(?![\w%]|[.,]\d)"
)
#: Words that make the integer after them a threshold or bound, not a stated value.
_THRESHOLD = re.compile(
    r"\b(?:above|below|over|under|exceed(?:s|ing)?|more than|less than|greater than|"
    r"at least|at most|beyond)\s*$",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?;](?:\s|$)")
#: How far (characters) a metric word may stand before / after the figure it names.
_BEFORE, _AFTER = 40, 25


@dataclass(frozen=True)
class Computed:
    """One computed figure as a report may state it: ``value`` in the units shown (percent
    points when ``percent``), and the kinds of quantity it is."""

    value: float
    percent: bool
    kinds: frozenset[str]


@dataclass(frozen=True)
class Unbacked:
    """A figure in the prose that no computed figure backs."""

    text: str  # the figure as written
    context: str  # the words around it
    metric: str | None  # the metric the words name, when they name one
    computed: bool  # whether the analyst computes that metric at all


def computed_figures(
    metrics: Mapping[str, Any], recommendation: Mapping[str, Any], markdown: str
) -> list[Computed]:
    """Every figure the draft's computed data can back: its metrics (a fraction both as
    itself and in percent), the recommendation's confidence, and each number in the report's
    tables (rendered from computed results), labelled by its row or column."""
    out: list[Computed] = []
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        kinds = _kinds(key.replace("_", " "))
        out.append(Computed(float(value), False, kinds))
        if key in _FRACTIONS:
            out.append(Computed(float(value) * 100, True, kinds))
    confidence = recommendation.get("confidence")
    if isinstance(confidence, int | float) and not isinstance(confidence, bool):
        kinds = frozenset({"confidence"})
        out += [Computed(float(confidence), False, kinds), Computed(confidence * 100, True, kinds)]
    for label, cell in _table_cells(markdown):
        out += [Computed(_value(m), _percent(m), _kinds(label)) for m in _NUMBER.finditer(cell)]
    # The fit to the user's profile is written by code from their facts (horizon, limits).
    statement = str((recommendation.get("profile_fit") or {}).get("statement") or "")
    for m in _NUMBER.finditer(statement):
        kinds = _named(statement, *m.span())[1]
        out.append(Computed(_value(m), _percent(m), kinds))
    return out


def unbacked_figures(prose: Iterable[str], figures: list[Computed]) -> list[Unbacked]:
    """The figures in ``prose`` that match none of ``figures`` within rounding (for the
    metric the words name, when they name one)."""
    found: list[Unbacked] = []
    for text in prose:
        masked = _NOT_FIGURES.sub(lambda m: " " * len(m.group(0)), text)
        for match in _NUMBER.finditer(masked):
            start, end = match.span()
            metric, kinds, computed = _named(text, start, end)
            bare = not (match["unit"] or match["currency"] or set(match["digits"]) & {".", ","})
            # A bare integer is a count unless a metric word names it; "above 70" is a bound.
            if bare and (metric is None or _THRESHOLD.search(text[max(0, start - 20) : start])):
                continue
            if computed and _backed(match, figures, kinds):
                continue
            found.append(
                Unbacked(
                    text=match.group(0).strip(),
                    context=_context(text, start, end),
                    metric=metric,
                    computed=computed,
                )
            )
    return found


def _kinds(label: str) -> frozenset[str]:
    return frozenset(kind for kind, pattern in _ENTRY_KINDS if pattern.search(label))


def _table_cells(markdown: str) -> Iterable[tuple[str, str]]:
    """(label, cell) for each value cell of the Markdown tables: a two-column table's row
    label, a wider table's column header."""
    header: list[str] = []
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue
        if not header:
            header = cells
            continue
        if len(cells) == 2:
            yield cells[0], cells[1]
        else:
            yield from zip(header[1:], cells[1:], strict=False)


def _value(match: re.Match[str]) -> float:
    return float(match["digits"].replace(",", ""))


def _percent(match: re.Match[str]) -> bool:
    unit = match["unit"] or ""
    return "%" in unit or "cent" in unit


def _named(text: str, start: int, end: int) -> tuple[str | None, frozenset[str], bool]:
    """The metric the words near ``text[start:end]`` name (same sentence; the nearest metric
    word, one the analyst never computes winning a tie, else a verb of movement): its name,
    the kinds it may match, and whether the analyst computes it. ``(None, empty, True)``: no
    metric word is near."""

    def near(pattern: re.Pattern[str]) -> list[tuple[int, str, bool]]:
        """(gap, word, whether it stands before) of each match near the figure, nearest first."""
        hits = []
        for m in pattern.finditer(text, max(0, start - _BEFORE), min(len(text), end + _AFTER)):
            if m.end() <= start:
                gap, between = start - m.end(), text[m.end() : start]
            elif m.start() >= end:
                gap, between = m.start() - end, text[end : m.start()]
            else:
                continue
            if not _SENTENCE_END.search(between):
                hits.append((gap, m.group(0), m.end() <= start))
        return sorted(hits)

    best: tuple[int, frozenset[str]] | None = None
    for pattern, kinds in _FIGURE_WORDS:
        for gap, _, _ in near(pattern)[:1]:
            if best is None or gap < best[0]:
                best = (gap, kinds)
    moves = near(_MOVES)[:1]
    moved = best is None and bool(moves)
    if moved:
        best = (moves[0][0], _MOVE_KINDS)
    uncomputed = near(_UNCOMPUTED)[:1]
    if uncomputed:
        gap, word, before = uncomputed[0]
        # "revenue grew 250%": what stands before a verb of movement is what moved.
        if best is None or gap <= best[0] or (before and moved):
            return word.lower(), frozenset(), False
    if best is None:
        return None, frozenset(), True
    return " or ".join(sorted(best[1])), best[1], True


def _backed(match: re.Match[str], figures: list[Computed], kinds: frozenset[str]) -> bool:
    """Whether a computed figure (of ``kinds``, when given) equals the stated one to the
    stated precision: half a unit of its last decimal, or 0.5% of the computed value.
    Magnitudes are compared: "fell 12%" states a return of -12%."""
    stated, percent = _value(match), _percent(match)
    decimals = len(match["digits"].partition(".")[2])
    for figure in figures:
        if kinds and not kinds & figure.kinds:
            continue
        if percent and not figure.percent:
            continue
        actual = abs(figure.value)
        if abs(stated - actual) <= max(0.5 * 10**-decimals, 5e-3 * actual) + 1e-9:
            return True
    return False


def _context(text: str, start: int, end: int) -> str:
    """The words around a figure, within its sentence, for a finding to quote."""
    left = text[max(0, start - 30) : start]
    cut = [m.end() for m in _SENTENCE_END.finditer(left)]
    if cut:
        left = left[cut[-1] :]
    elif start > 30:  # begin at a whole word
        left = left.partition(" ")[2]
    right = text[end : end + 20]
    stop = _SENTENCE_END.search(right)
    if stop:
        right = right[: stop.start()]
    elif end + 20 < len(text):  # end at a whole word
        right = right.rpartition(" ")[0]
    return " ".join((left + text[start:end] + right).split())
