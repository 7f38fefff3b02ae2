"""The offline reporter: a complete research report rendered from computed step results.

Every figure in the report is read from the executor's results; nothing is estimated. The
rendering is deterministic (no wall-clock time in the text), so re-running the reporter on the
same results yields the same draft and therefore the same content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

__all__ = ["KEY_METRICS", "REQUIRED_SECTIONS", "compose_report", "content_hash", "fmt"]

from agent.records import Draft, Mode
from agent.research.revision import (
    COVERS,
    Edits,
    Outline,
    Request,
    Status,
    edits_of,
    outline,
    prior_statuses,
    statuses,
)
from agent.research.sections import (
    BUILDERS,
    KEY_METRICS,
    Layout,
    Material,
    fmt,
    kept_prose,
    layout_for,
    memory_section,
)
from agent.research.suitability import Profile, fit, profile_notes

if TYPE_CHECKING:
    from agent.reasoning.schemas import ReportNarrative

REQUIRED_SECTIONS: tuple[str, ...] = (
    "Summary",
    "Key metrics",
    "Analysis",
    "Peer comparison",
    "Risk factors",
    "Recommendation",
    "Data as of",
    "Sources",
)


def content_hash(markdown: str) -> str:
    """The identity of a draft: SHA-256 of its exact Markdown text."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def collect(ticker: str, results: Mapping[str, Mapping[str, Any]]) -> tuple[dict, list, str, list]:
    """Merge step results into (metrics for ``ticker``, peer rows, as-of date, sources)."""
    metrics: dict[str, Any] = {}
    peers: list[dict[str, Any]] = []
    as_of = ""
    sources: set[str] = set()
    for result in results.values():
        data = dict(result["data"])
        rows = data.pop("peers", None)
        if rows is not None and (result["ticker"] == ticker or not peers):
            peers = list(rows)
        if result["ticker"] == ticker:
            metrics.update(data)
            as_of = max(as_of, result["as_of"])
        sources.update(result["sources"])
    return metrics, peers, as_of, sorted(sources)


def confidence_label(confidence: float) -> str:
    """high from 0.75, medium from 0.6, low below: one scale for rules and models."""
    return "high" if confidence >= 0.75 else "medium" if confidence >= 0.6 else "low"


def recommend(metrics: Mapping[str, Any], peers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rule-based recommendation from price signals, with the signals that produced it.

    Signals (each -1, 0 or +1): trend (+1 if the 50-day average is above the 200-day),
    momentum (+1 if both 3M and 1Y returns are positive, -1 if both negative), RSI (-1 above
    70, +1 below 30), relative strength (+1 in the top third of peers by 1Y return, -1 in the
    bottom third). Score >= 2 is Buy, <= -2 Sell, else Hold. Confidence is 0.5 + 0.1 * |score|,
    less 0.1 when annualised volatility exceeds 50%.
    """
    signals: dict[str, int] = {}
    signals["trend"] = 1 if metrics.get("crossover") == "bullish" else -1
    r3, r1y = metrics.get("return_3m"), metrics.get("return_1y")
    if r3 is not None and r1y is not None:
        signals["momentum"] = 1 if r3 > 0 and r1y > 0 else -1 if r3 < 0 and r1y < 0 else 0
    rsi = metrics.get("rsi_14")
    if rsi is not None:
        signals["rsi"] = -1 if rsi > 70 else 1 if rsi < 30 else 0
    ranked = [row["ticker"] for row in peers]
    ticker = metrics.get("ticker")
    if ticker in ranked and len(ranked) >= 3:
        position = ranked.index(ticker) / (len(ranked) - 1)
        signals["relative_strength"] = 1 if position <= 1 / 3 else -1 if position >= 2 / 3 else 0
    score = sum(signals.values())
    rating = "Buy" if score >= 2 else "Sell" if score <= -2 else "Hold"
    confidence = 0.5 + 0.1 * abs(score)
    if (metrics.get("volatility_1y") or 0) > 0.5:
        confidence -= 0.1
    confidence = round(min(max(confidence, 0.3), 0.9), 2)
    label = confidence_label(confidence)
    return {
        "rating": rating,
        "score": score,
        "confidence": confidence,
        "confidence_label": label,
        "signals": signals,
    }


def risk_factors(metrics: Mapping[str, Any], as_of: str) -> list[str]:
    factors: list[str] = []
    vol = metrics.get("volatility_1y")
    if vol is not None:
        level = "High" if vol > 0.4 else "Moderate" if vol > 0.25 else "Low"
        factors.append(f"{level} volatility: {fmt(vol, 'pct_abs')} annualised over the last year.")
    dd = metrics.get("max_drawdown_1y")
    if dd is not None and dd < -0.1:
        factors.append(
            f"Drawdown: the price fell {fmt(-dd, 'pct_abs')} from its peak "
            f"({metrics.get('drawdown_peak_date')}) to its trough "
            f"({metrics.get('drawdown_trough_date')}) within the last year."
        )
    beta = metrics.get("beta")
    if beta is not None and beta > 1.3:
        factors.append(f"Market sensitivity: beta {beta:.2f} amplifies moves of the basket.")
    elif beta is not None and beta < 0.7:
        factors.append(f"Low co-movement: beta {beta:.2f}; diversifies against the basket.")
    rsi = metrics.get("rsi_14")
    if rsi is not None and rsi > 70:
        factors.append(f"Overbought: RSI(14) at {rsi:.1f} is above 70.")
    elif rsi is not None and rsi < 30:
        factors.append(f"Oversold: RSI(14) at {rsi:.1f} is below 30.")
    ext = metrics.get("price_vs_sma200")
    if ext is not None and abs(ext) > 0.25:
        side = "above" if ext > 0 else "below"
        factors.append(
            f"Extended: the price is {fmt(abs(ext), 'pct_abs')} {side} its 200-day average."
        )
    factors.append(
        "Price-only analysis: no earnings, valuation or news data were used; "
        f"prices after {as_of} are not reflected."
    )
    return factors


def compose_report(
    *,
    ticker: str,
    mode: Mode,
    results: Mapping[str, Mapping[str, Any]],
    feedback: Sequence[str] = (),
    revision: int = 0,
    requested: Sequence[str] = (),
    sections: Sequence[str] = REQUIRED_SECTIONS,
    narrative: ReportNarrative | None = None,
    personal: Sequence[str] = (),
    profile: Profile | None = None,
    previous: Draft | None = None,
) -> Draft:
    """Render the full report for ``ticker`` from step results.

    ``sections`` (from the project conventions) fixes which ``##`` sections appear and in what
    order; a section the analyst has no content for says so instead of inventing any. With a
    model ``narrative`` the prose (summary, analysis, risks, rating) is the model's, while every
    table is still rendered from the computed metrics. ``personal`` lines (what memory says
    about this user, each citing its source) make a closing "Memory context" section.

    A ``profile`` (:mod:`agent.research.suitability`) shapes the report, each change citing
    the fact or procedure behind it: its ``report_style`` picks a layout of
    :data:`agent.research.sections.STYLES`; the recommendation states its fit to the horizon,
    risk tolerance and drawdown limit (a Buy that does not fit is a Hold for this user);
    holdings, the employer and sectors of interest add risk notes. ``feedback`` (every
    rejection so far) becomes edits of the layout (:func:`agent.research.revision.edits_of`);
    the revision notes say, per request, what the revision visibly changed against the
    ``previous`` draft, and what it could not do.
    """
    profile = profile or Profile()
    edits = edits_of(feedback)
    material = _material(ticker, results, requested, narrative, personal, profile)
    layout = _layout(profile, edits)
    rec = material.rec
    title = f"{ticker} equity research: {rec['rating']} ({rec['confidence_label']} confidence)"
    lines = _heading(title, material, mode, revision, layout)
    for name in sections:
        builder = BUILDERS.get(name.strip().lower())
        body = builder(material, layout) if builder else []
        body = body or [
            f"Not covered: the analyst has only daily price data, so there is nothing "
            f"computed for '{name}'."
        ]
        lines += ["", f"## {name}", "", *body]
    memory = memory_section(material, layout)
    if memory:
        memory = ["", "## Memory context", "", *memory]
    after = outline("\n".join([*lines, *memory]))
    before = outline(previous["markdown"]) if previous else None
    prior = prior_statuses(previous.get("revised") if previous else None)
    judged = statuses(edits, before, after, prior)
    if feedback:
        lines += ["", "## Revision notes", ""]
        lines += revision_notes(feedback, judged, before, after, layout, bool(material.peers))
    markdown = "\n".join([*lines, *memory]).rstrip() + "\n"
    return _draft(material, title, markdown, revision, layout, judged, before)


def _material(
    ticker: str,
    results: Mapping[str, Mapping[str, Any]],
    requested: Sequence[str],
    narrative: ReportNarrative | None,
    personal: Sequence[str],
    profile: Profile,
) -> Material:
    """The computed results, the recommendation (the model's rating when it wrote one, then
    the profile's fit) and the risks a report renders."""
    metrics, peers, as_of, sources = collect(ticker, results)
    metrics["ticker"] = ticker
    rec = recommend(metrics, peers)
    risks = risk_factors(metrics, as_of)
    if narrative is not None:
        rec = {
            **rec,
            "rating": narrative.rating,
            "confidence": round(narrative.confidence, 2),
            "confidence_label": confidence_label(narrative.confidence),
            "rationale": narrative.rationale,
            "source": "model",
        }
        risks = [*narrative.risk_factors, risks[-1]]  # keep the price-only caveat
    matched = fit(ticker, metrics, rec["rating"], profile)
    if matched is not None:
        rec = {**rec, "rating": matched.rating, "profile_fit": matched.to_json()}
    *found, caveat = risks
    return Material(
        ticker=ticker,
        metrics=metrics,
        peers=peers,
        as_of=as_of,
        sources=sources,
        rec=rec,
        found=found,
        notes=profile_notes(ticker, profile),
        caveat=caveat,
        requested=requested,
        profile=profile,
        fit=matched,
        narrative=narrative,
        personal=personal,
        required=profile.required(),
    )


def _layout(profile: Profile, edits: Edits) -> Layout:
    """The profile's report style, unless a rejection asked for another length."""
    style = edits.style(profile.style)
    cause = f", as your {profile.cite('report_style')} asks" if style != "standard" else ""
    if edits.length is not None:
        cause = f", as your feedback asks (revision note {edits.length_note})"
    return layout_for(style, profile.required(), edits, cause)


def _heading(title: str, m: Material, mode: Mode, revision: int, layout: Layout) -> list[str]:
    mode_label = "deep research" if mode == "deep" else "quick snapshot"
    lines = [
        f"# {title}",
        "",
        f"**Ticker:** {m.ticker} · **Mode:** {mode_label} · **Data as of:** {m.as_of} · "
        f"**Revision:** {revision}",
    ]
    if layout.style != "standard":
        lines += ["", f"*A {layout.style} report{layout.cause}.*"]
    return lines


def _draft(
    m: Material,
    title: str,
    markdown: str,
    revision: int,
    layout: Layout,
    judged: Sequence[Sequence[tuple[Request, Status]]],
    before: Outline | None,
) -> Draft:
    draft = Draft(
        ticker=m.ticker,
        title=title,
        markdown=markdown,
        hash=content_hash(markdown),
        revision=revision,
        as_of=m.as_of,
        sources=list(m.sources),
        chart_path=None,
        metrics=dict(m.metrics),
        recommendation=dict(m.rec),
        claims=[c.model_dump() for c in m.narrative.cited_metrics] if m.narrative else [],
    )
    draft["shown_metrics"] = list(layout.rows)
    if before is not None and judged:
        draft["revised"] = {
            "previous": before.to_json(),
            "requests": [
                {"note": n, "action": r.action, "topic": r.topic, "status": status}
                for n, asked in enumerate(judged, start=1)
                for r, status in asked
            ],
        }
    n = m.narrative
    if n is not None:  # what the report shows of the model's prose (a style may cut)
        written = [n.summary, n.analysis, *n.risk_factors, n.rationale]
        kept = [kept_prose(t, layout) for t in written]
        draft["prose"] = [t for t in dict.fromkeys(kept) if t and t in markdown]
    return draft


def revision_notes(
    feedback: Sequence[str],
    judged: Sequence[Sequence[tuple[Request, Status]]],
    before: Outline | None,
    after: Outline,
    layout: Layout,
    peers: bool = True,
) -> list[str]:
    """One numbered note per feedback, quoting it, then one line per request it made saying
    what the revision did; a feedback with no request the analyst recognises says so. With
    no ``peers`` in the run's results, more on peers is not possible."""
    lines: list[str] = []
    last = len(feedback)
    for n, (note, asked) in enumerate(zip(feedback, judged, strict=True), start=1):
        lines.append(f'{n}. Reviewer feedback: "{note.strip()}"')
        if not asked:
            lines.append(
                "   - Noted: no change recognised (length, a section or topic to leave out, "
                "or one to cover in more depth); the report is otherwise unchanged by it."
            )
        for request, status in asked:
            said = _said(request, status, before, after, layout, newest=n == last, note=n)
            if status == "not done" and request.topic == "peers" and not peers:
                said = (
                    f"Not possible: {request.label}: this run computed no peer comparison (its "
                    "plan had no peer step); ask for it in a new run."
                )
            lines.append(f"   - {said}")
    return lines


def _said(
    request: Request,
    status: Status,
    before: Outline | None,
    after: Outline,
    layout: Layout,
    *,
    newest: bool,
    note: int,
) -> str:
    label = request.label
    if status == "addressed" and not newest:
        return f"Addressed in revision {note}: {label}."
    if status == "addressed" and before is not None:
        if request.action in ("shorter", "longer"):
            return f"Addressed: {label}: a {layout.style} report, {before.words} -> {after.words} words."
        if request.action == "drop":
            return f"Addressed: {label}: the report no longer shows it."
        topics = COVERS.get(request.topic, (request.topic,))
        gained = sum(after.depth(t) - before.depth(t) for t in topics)
        return f"Addressed: {label}: {gained} more words on it."
    if status == "not possible":
        if request.action == "drop":
            return f"Not possible: {label}: every report keeps its risk factors."
        return (
            f"Not possible: {label}: the analyst has daily prices only, with no earnings, "
            "valuation or news data."
        )
    if status == "already":
        return f"Already so: {label}: the previous draft did not show it either."
    if status == "superseded":
        return f"Superseded: {label}: later feedback asks otherwise."
    if request.action == "shorter" and layout.style == "brief":
        return f"Not done: {label}: this is already a brief report, the shortest style."
    return f"Not done: {label}: this revision could not show that change."
