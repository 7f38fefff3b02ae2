"""The sections of a report as functions, and the style table that selects what each shows.

A :class:`Layout` says what one report shows: which key-metric rows, which analysis parts,
the peer table or only the rank, how many risk factors, the signal notes, a compact memory
section, and the topics left out at a reviewer's request. :data:`STYLES` gives each report
style its layout (brief leaves out the full metrics table and the peer table; detailed adds
drawdown, sensitivity, peer and signal detail); :func:`layout_for` adjusts it for what a
procedure requires and for a rejection's edits (:mod:`agent.research.revision`). Each
``*_section`` function renders one ``##`` section's body from :class:`Material`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agent.research.revision import LEFT_OUT, SHOWN, Edits

if TYPE_CHECKING:
    from agent.reasoning.schemas import ReportNarrative
    from agent.research.suitability import Fit, Profile

#: Metric key, label, format — the rows of the key-metrics table, in order.
KEY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("last_close", "Last close", "price"),
    ("return_1m", "Return 1M", "pct"),
    ("return_3m", "Return 3M", "pct"),
    ("return_1y", "Return 1Y", "pct"),
    ("return_ytd", "Return YTD", "pct"),
    ("volatility_1y", "Volatility (1Y, annualised)", "pct_abs"),
    ("max_drawdown_1y", "Max drawdown (1Y)", "pct"),
    ("sma_50", "50-day moving average", "price"),
    ("sma_200", "200-day moving average", "price"),
    ("crossover", "Moving-average crossover", "text"),
    ("rsi_14", "RSI (14)", "num1"),
    ("beta", "Beta vs equal-weighted basket", "num2"),
)
ALL_ROWS = tuple(key for key, _, _ in KEY_METRICS)
#: The rows of a brief report's table.
BRIEF_ROWS = ("last_close", "return_1y", "volatility_1y", "max_drawdown_1y")
#: The rows each technical topic owns.
TOPIC_ROWS: Mapping[str, tuple[str, ...]] = {
    "rsi": ("rsi_14",),
    "moving averages": ("sma_50", "sma_200", "crossover"),
}
#: Analysis parts, in the order they appear.
PARTS = ("paragraph", "trend", "momentum", "risk", "relative", "drawdown", "sensitivity")


@dataclass(frozen=True)
class Layout:
    """What one report shows (see the module docstring)."""

    style: str = "standard"
    rows: tuple[str, ...] = ALL_ROWS
    analysis: tuple[str, ...] = ("trend", "momentum", "risk", "relative")
    peer_table: bool = True
    peer_notes: bool = False
    #: How many measured risk factors to list (``None``: all of them).
    risks: int | None = None
    signal_notes: bool = False
    compact_memory: bool = False
    #: Topics left out at a reviewer's request (:data:`agent.research.revision.SHOWN`).
    hidden: frozenset[str] = frozenset()
    #: The peer comparison is left out at a reviewer's request.
    no_peers: bool = False
    #: Why the style differs from standard: the fact or the feedback that asked.
    cause: str = ""

    def hides(self, text: str) -> bool:
        """Whether ``text`` names a topic this report leaves out."""
        return any(re.search(SHOWN[t], text, re.IGNORECASE) for t in self.hidden if t in SHOWN)

    def keep(self, texts: Sequence[str]) -> list[str]:
        return [t for t in texts if not self.hides(t)]


STYLES: Mapping[str, Layout] = {
    "brief": Layout(
        style="brief",
        rows=BRIEF_ROWS,
        analysis=("paragraph",),
        peer_table=False,
        risks=2,
        compact_memory=True,
    ),
    "standard": Layout(),
    "detailed": Layout(
        style="detailed",
        analysis=("trend", "momentum", "risk", "relative", "drawdown", "sensitivity"),
        peer_notes=True,
        signal_notes=True,
    ),
}


def layout_for(
    style: str, required: Mapping[str, str], edits: Edits | None = None, cause: str = ""
) -> Layout:
    """The layout of ``style`` with what a procedure ``required`` in full, then a rejection's
    ``edits`` (a length request has already chosen ``style``)."""
    out = replace(STYLES.get(style, STYLES["standard"]), cause=cause)
    if "Key metrics" in required:
        out = replace(out, rows=ALL_ROWS)
    if "Peer comparison" in required:
        out = replace(out, peer_table=True)
    if "Risk factors" in required:
        out = replace(out, risks=None)
    if "Analysis" in required and out.analysis == ("paragraph",):
        out = replace(out, analysis=STYLES["standard"].analysis)
    return _edited(out, edits) if edits is not None else out


def _edited(out: Layout, edits: Edits) -> Layout:
    more, drop = edits.more, edits.drop
    parts = set(out.analysis)
    rows = set(out.rows)
    if "risk" in more:
        out = replace(out, risks=None)
        parts |= {"drawdown"} if out.style == "brief" else {"risk", "drawdown", "sensitivity"}
    if "peers" in more:
        out = replace(out, peer_table=True, peer_notes=True)
    if "metrics" in more:
        rows |= set(ALL_ROWS)
    if "metrics" in drop:
        rows &= set(BRIEF_ROWS)
    for topic, owned in TOPIC_ROWS.items():
        if topic in more:
            rows |= set(owned)
            parts.add("trend" if topic == "moving averages" else "momentum")
            out = replace(out, signal_notes=True)
    if "momentum" in more:
        parts.add("momentum")
    if "momentum" in drop:
        parts.discard("momentum")
    hidden = frozenset(t for t in drop if t in SHOWN)
    if "moving averages" in hidden:
        parts.discard("trend")
    for topic in hidden & set(TOPIC_ROWS):
        rows -= set(TOPIC_ROWS[topic])
    if hidden & {"rsi", "moving averages"}:
        out = replace(out, signal_notes=False)
    if "peers" in drop:
        parts.discard("relative")
        out = replace(out, peer_table=False, peer_notes=False, no_peers=True)
    if "risk" in more:  # the risk detail replaces a brief report's overview paragraph
        parts.discard("paragraph")
    return replace(
        out,
        rows=tuple(k for k in ALL_ROWS if k in rows),
        analysis=tuple(p for p in PARTS if p in parts),
        hidden=hidden,
    )


# -- what the sections are rendered from -------------------------------------------------------


@dataclass(frozen=True)
class Material:
    """Everything a section renders: the computed results, the recommendation, the risks and,
    on the model path, the model's prose (already cut to the layout)."""

    ticker: str
    metrics: Mapping[str, Any]
    peers: Sequence[Mapping[str, Any]]
    as_of: str
    sources: Sequence[str]
    rec: Mapping[str, Any]
    found: Sequence[str]
    notes: Sequence[str]
    caveat: str
    requested: Sequence[str] = ()
    profile: Profile | None = None
    fit: Fit | None = None
    narrative: ReportNarrative | None = None
    personal: Sequence[str] = ()
    required: Mapping[str, str] = field(default_factory=dict)


def fmt(value: Any, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "pct":
        return f"{value * 100:+.2f}%"
    if kind == "pct_abs":  # magnitudes such as volatility carry no sign
        return f"{value * 100:.2f}%"
    if kind == "price":
        return f"{value:,.2f}"
    if kind == "num1":
        return f"{value:.1f}"
    if kind == "num2":
        return f"{value:.2f}"
    return str(value)


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def kept_prose(text: str, layout: Layout) -> str:
    """The model's ``text`` without the sentences naming a topic the layout leaves out."""
    return " ".join(layout.keep(sentences(text)))


def summary_section(m: Material, layout: Layout) -> list[str]:
    if m.narrative is not None:
        written = kept_prose(m.narrative.summary, layout)
        if written:
            return [written if layout.style != "brief" else sentences(written)[0]]
    x, rec = m.metrics, m.rec
    if layout.style == "brief":
        return [
            f"{m.ticker}: **{rec['rating']}** ({rec['confidence_label']} confidence); "
            f"{fmt(x.get('return_1y'), 'pct')} over the last year at "
            f"{fmt(x.get('volatility_1y'), 'pct_abs')} annualised volatility."
        ]
    trend = "above" if x.get("crossover") == "bullish" else "below"
    said = [
        f"{m.ticker} closed at {fmt(x.get('last_close'), 'price')} and returned "
        f"{fmt(x.get('return_1y'), 'pct')} over the last year "
        f"({fmt(x.get('return_ytd'), 'pct')} year-to-date).",
        f"Its 50-day average is {trend} the 200-day average, RSI(14) is "
        f"{fmt(x.get('rsi_14'), 'num1')}, and annualised volatility is "
        f"{fmt(x.get('volatility_1y'), 'pct_abs')}.",
    ]
    if layout.hides(said[1]):
        said[1] = f"Annualised volatility is {fmt(x.get('volatility_1y'), 'pct_abs')}."
    return [" ".join([*said, f"Recommendation: **{rec['rating']}**."])]


def metrics_section(m: Material, layout: Layout) -> list[str]:
    rows = [
        f"| {label} | {fmt(m.metrics.get(key), kind)} |"
        for key, label, kind in KEY_METRICS
        if key in layout.rows
    ]
    out = ["| Metric | Value |", "| --- | --- |", *rows]
    if layout.hidden & set(TOPIC_ROWS):
        out += ["", f"{left_out(layout)}."]
    return out


def left_out(layout: Layout) -> str:
    """``Left out at your request: RSI, moving averages``."""
    names = ["RSI" if t == "rsi" else t for t in sorted(layout.hidden)]
    return f"{LEFT_OUT.capitalize()}: {', '.join(names)}"


def analysis_section(m: Material, layout: Layout) -> list[str]:
    out: list[str] = []
    if m.narrative is not None and "paragraph" not in layout.analysis:
        said = kept_prose(m.narrative.analysis, layout)
        if said:
            out += [said, ""]
    for part in layout.analysis:
        text = _ANALYSIS[part](m, layout)
        if text:
            out += [*(["", f"### {_TITLES[part]}", ""] if part != "paragraph" else [""]), text]
    while out and not out[0]:
        out.pop(0)
    return out


def _paragraph(m: Material, layout: Layout) -> str:
    x = m.metrics
    said = [
        f"{m.ticker}'s trend is {x.get('crossover') or 'n/a'} (50-day "
        f"{fmt(x.get('sma_50'), 'price')} vs 200-day {fmt(x.get('sma_200'), 'price')}),",
        f"RSI(14) {fmt(x.get('rsi_14'), 'num1')}.",
    ]
    kept = layout.keep(said)
    if kept:
        return " ".join(kept).rstrip(",.") + "."
    return (
        f"{m.ticker}'s deepest fall in the last year was "
        f"{fmt(x.get('max_drawdown_1y'), 'pct')}, at {fmt(x.get('volatility_1y'), 'pct_abs')} "
        "annualised volatility."
    )


def _trend(m: Material, layout: Layout) -> str:
    x = m.metrics
    cross, since = x.get("crossover"), x.get("last_cross_date")
    return (
        f"The 50-day average ({fmt(x.get('sma_50'), 'price')}) is "
        f"{'above' if cross == 'bullish' else 'below'} the 200-day average "
        f"({fmt(x.get('sma_200'), 'price')}): a {cross} configuration"
        + (f" since {since}." if since else ".")
        + f" The price stands {fmt(x.get('price_vs_sma200'), 'pct')} from its 200-day average."
    )


def _momentum(m: Material, layout: Layout) -> str:
    x = m.metrics
    rsi = x.get("rsi_14") or 50.0
    state = "overbought" if rsi > 70 else "oversold" if rsi < 30 else "neutral"
    said = [
        f"Returns: {fmt(x.get('return_1m'), 'pct')} over one month, "
        f"{fmt(x.get('return_3m'), 'pct')} over three months, "
        f"{fmt(x.get('return_1y'), 'pct')} over one year.",
        f"RSI(14) at {fmt(x.get('rsi_14'), 'num1')} is {state}.",
    ]
    return " ".join(layout.keep(said))


def _risk(m: Material, layout: Layout) -> str:
    x = m.metrics
    return (
        f"Annualised volatility {fmt(x.get('volatility_1y'), 'pct_abs')}; the deepest fall in "
        f"the last year was {fmt(x.get('max_drawdown_1y'), 'pct')}. Beta against an "
        f"equal-weighted basket of {', '.join(x.get('basket') or []) or 'the other tickers'} is "
        f"{fmt(x.get('beta'), 'num2')} (correlation {fmt(x.get('correlation'), 'num2')})."
    )


def _relative(m: Material, layout: Layout) -> str:
    ranked = [row["ticker"] for row in m.peers]
    if m.ticker not in ranked:
        return ""
    return (
        f"By one-year return {m.ticker} ranks {ranked.index(m.ticker) + 1} of {len(ranked)} "
        "tickers in the comparison set."
    )


def _drawdown(m: Material, layout: Layout) -> str:
    x = m.metrics
    return (
        f"The deepest fall of the last year was {fmt(x.get('max_drawdown_1y'), 'pct')}, from the "
        f"peak of {x.get('drawdown_peak_date') or 'n/a'} to the trough of "
        f"{x.get('drawdown_trough_date') or 'n/a'}. At {fmt(x.get('volatility_1y'), 'pct_abs')} "
        "annualised volatility, a one-standard-deviation year spans roughly that much either "
        "way."
    )


def _sensitivity(m: Material, layout: Layout) -> str:
    x = m.metrics
    return (
        f"Beta {fmt(x.get('beta'), 'num2')} with correlation {fmt(x.get('correlation'), 'num2')}: "
        f"{m.ticker} has moved "
        + ("more" if (x.get("beta") or 0) > 1 else "less")
        + " than the equal-weighted basket of the other tickers."
    )


_ANALYSIS = {
    "paragraph": _paragraph,
    "trend": _trend,
    "momentum": _momentum,
    "risk": _risk,
    "relative": _relative,
    "drawdown": _drawdown,
    "sensitivity": _sensitivity,
}
_TITLES = {
    "trend": "Trend",
    "momentum": "Momentum",
    "risk": "Risk",
    "relative": "Relative performance",
    "drawdown": "Drawdown",
    "sensitivity": "Market sensitivity",
}

#: Peer-table columns: header, key, format, the topic that owns it (if any).
_PEER_COLUMNS = (
    ("Last close", "last_close", "price", ""),
    ("Return 1Y", "return_1y", "pct", ""),
    ("Return YTD", "return_ytd", "pct", ""),
    ("Volatility 1Y", "volatility_1y", "pct_abs", ""),
    ("Max drawdown 1Y", "max_drawdown_1y", "pct", ""),
    ("RSI 14", "rsi_14", "num1", "rsi"),
    ("Trend", "crossover", "text", "moving averages"),
)


def peer_table(m: Material, layout: Layout) -> list[str]:
    columns = [c for c in _PEER_COLUMNS if c[3] not in layout.hidden]
    rows = [
        "| Ticker | " + " | ".join(c[0] for c in columns) + " |",
        "| --- | " + " | ".join("---" for _ in columns) + " |",
    ]
    for p in m.peers:
        bold = p["ticker"] == m.ticker or p["ticker"] in m.requested
        name = f"**{p['ticker']}**" if bold else p["ticker"]
        cells = [fmt(p.get(key), kind) for _, key, kind, _ in columns]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return rows


def peers_section(m: Material, layout: Layout) -> list[str]:
    ranked = [row["ticker"] for row in m.peers]
    if layout.no_peers:
        return [f"The peer comparison is {LEFT_OUT}."]
    if not layout.peer_table:
        rank = (
            f"By one-year return {m.ticker} ranks {ranked.index(m.ticker) + 1} of {len(ranked)}. "
            if m.ticker in ranked
            else ""
        )
        return [f"{rank}The peer table is left out of this brief report."]
    if not m.peers:
        return ["This run computed no peer comparison (its plan had no peer step)."]
    out = peer_table(m, layout)
    if layout.style == "brief" and "Peer comparison" in m.required:
        out += ["", f"The full table, because {m.required['Peer comparison']} requires it."]
    if layout.peer_notes:
        out += _peer_notes(m, layout)
    return out


def _peer_notes(m: Material, layout: Layout) -> list[str]:
    mine = next((p for p in m.peers if p["ticker"] == m.ticker), None)
    if mine is None:
        return []
    out = ["", "### Peer notes", ""]
    for p in m.peers:
        if p["ticker"] == m.ticker:
            continue
        diff = (p["return_1y"] or 0) - (mine["return_1y"] or 0)
        said = (
            f"- {p['ticker']}: 1Y return {fmt(p['return_1y'], 'pct')} ({fmt(diff, 'pct')} vs "
            f"{m.ticker}), volatility {fmt(p['volatility_1y'], 'pct_abs')}"
        )
        trend = f", trend {p['crossover']}"
        out.append(said + ("" if layout.hides(trend) else trend) + ".")
    return out


def risks_section(m: Material, layout: Layout) -> list[str]:
    found = layout.keep(m.found)
    if layout.risks is not None:
        found = found[: layout.risks]
    return [f"- {r}" for r in [*found, *m.notes, m.caveat]]


_SIGNAL_MEANING = {
    "trend": "the 50-day average against the 200-day",
    "momentum": "3-month and 1-year returns together",
    "rsi": "RSI(14) against 30 and 70",
    "relative_strength": "the one-year return's rank among peers",
}
#: The signals each hidden topic owns.
_SIGNAL_TOPIC = {"trend": "moving averages", "rsi": "rsi"}


def recommendation_section(m: Material, layout: Layout) -> list[str]:
    rec = m.rec
    shown = {k: v for k, v in rec["signals"].items() if _SIGNAL_TOPIC.get(k) not in layout.hidden}
    text = ", ".join(f"{k.replace('_', ' ')} {v:+d}" for k, v in shown.items())
    if len(shown) < len(rec["signals"]):
        text += f"; the technical signals are {LEFT_OUT}"
    head = (
        f"**{rec['rating']}** with {rec['confidence_label']} confidence ({rec['confidence']:.2f})."
    )
    if m.narrative is not None:
        why = kept_prose(m.narrative.rationale, layout)
        out = [
            f"{head} {why}".rstrip(),
            "",
            f"Price signals for reference: score {rec['score']:+d} from {text}.",
        ]
    elif layout.style == "brief":
        out = [head]
    else:
        out = [f"{head} Signal score {rec['score']:+d} from: {text}."]
    if m.fit is not None:
        out += ["", f"**Fit to your profile.** {fit_statement(m, layout)}"]
    if layout.signal_notes:
        out += [
            "",
            *[
                f"- {name.replace('_', ' ')} {value:+d}: {_SIGNAL_MEANING.get(name, name)}."
                for name, value in shown.items()
            ],
        ]
    return out


def fit_statement(m: Material, layout: Layout) -> str:
    """The fit's statement; a brief report cites the facts instead of spelling out each
    comparison."""
    fit, profile = m.fit, m.profile
    if fit is None or profile is None:
        return ""
    if layout.style != "brief":
        return fit.statement
    named = [
        profile.cite(n)
        for n in ("horizon_years", "risk_tolerance", "max_drawdown_pct")
        if profile.value(n) is not None
    ]
    if not fit.breaches:
        return f"Within your {', '.join(named)}: {fit.rating} stands."
    breached = [c for c in named if c in "; ".join(fit.breaches)]
    verdict = fit.statement[fit.statement.rindex("The price signals say") :]
    return f"Too risky for your {', '.join(breached)}. {verdict}"


def as_of_section(m: Material, layout: Layout) -> list[str]:
    return [f"Daily closes up to and including {m.as_of}."]


def sources_section(m: Material, layout: Layout) -> list[str]:
    out = [f"- {s}" for s in grouped_sources(m.sources)]
    if layout.style != "brief":
        out.append(
            "- Computations: analyst analytics (trailing returns, volatility, drawdown, "
            "moving averages, Wilder RSI, beta against an equal-weighted basket)."
        )
    return out


def grouped_sources(sources: Sequence[str]) -> list[str]:
    """Each source once: ``Label (folder/A.csv)`` and ``Label (folder/B.csv)`` become
    ``Label (folder/: A.csv, B.csv)``."""
    groups: dict[str, list[str]] = {}
    for s in dict.fromkeys(sources):
        match = re.fullmatch(r"(.*?) \(([^()]*)\)", s)
        label, detail = (match[1], match[2]) if match else (s, "")
        groups.setdefault(label, [])
        if detail:
            groups[label].append(detail)
    out = []
    for label, details in groups.items():
        if not details:
            out.append(label)
            continue
        folders = {d.rpartition("/")[0] for d in details}
        if len(details) > 1 and len(folders) == 1 and "" not in folders:
            names = ", ".join(d.rpartition("/")[2] for d in details)
            out.append(f"{label} ({folders.pop()}/: {names})")
        else:
            out.append(f"{label} ({', '.join(details)})")
    return out


_CITED = re.compile(r"^Your ([^:]+): .*\((?:\w+) since [\d-]+; (fact [^;]+); episodes [^)]*\)\.?$")


def memory_section(m: Material, layout: Layout) -> list[str]:
    if not m.personal:
        return []
    if not layout.compact_memory:
        return [f"- {line}" for line in m.personal]
    facts = [_CITED.match(line) for line in m.personal]
    short = [f"{f[1]} ({f[2]})" for f in facts if f]
    rest = [f"- {line}" for line, f in zip(m.personal, facts, strict=True) if not f]
    return [f"- Used from memory: {', '.join(short)}.", *rest] if short else rest


#: The ``##`` sections, by lower-case name, and the function that renders each.
BUILDERS = {
    "summary": summary_section,
    "key metrics": metrics_section,
    "analysis": analysis_section,
    "peer comparison": peers_section,
    "risk factors": risks_section,
    "recommendation": recommendation_section,
    "data as of": as_of_section,
    "sources": sources_section,
}
