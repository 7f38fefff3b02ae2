"""The offline reporter: a complete research report rendered from computed step results.

Every figure in the report is read from the executor's results; nothing is estimated. The
rendering is deterministic (no wall-clock time in the text), so re-running the reporter on the
same results yields the same draft and therefore the same content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.records import Draft, Mode
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


def content_hash(markdown: str) -> str:
    """The identity of a draft: SHA-256 of its exact Markdown text."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


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
) -> Draft:
    """Render the full report for ``ticker`` from step results.

    ``sections`` (from the project conventions) fixes which ``##`` sections appear and in what
    order; a section the analyst has no content for says so instead of inventing any. With a
    model ``narrative`` the prose (summary, analysis, risks, rating) is the model's, while every
    table is still rendered from the computed metrics. ``personal`` lines (what memory says
    about this user, each citing its source) make a closing "Memory context" section.

    A ``profile`` (:mod:`agent.research.suitability`) shapes the report, each change citing
    the fact or procedure behind it: ``report_style`` brief gives a short report (one-paragraph
    analysis, the peer rank instead of the table unless a procedure requires it, the two main
    risks) and detailed a long one (drawdown, peer and signal detail); the recommendation
    states its fit to the horizon, risk tolerance and drawdown limit (a Buy that does not fit
    is a Hold for this user); holdings, the employer and sectors of interest add risk notes.
    """
    profile = profile or Profile()
    style = profile.style
    required = profile.required()
    metrics, peers, as_of, sources = collect(ticker, results)
    metrics["ticker"] = ticker
    rec = recommend(metrics, peers)
    risks = risk_factors(metrics, as_of)
    claims: list[dict[str, Any]] = []
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
        claims = [c.model_dump() for c in narrative.cited_metrics]
    matched = fit(ticker, metrics, rec["rating"], profile)
    if matched is not None:
        rec = {**rec, "rating": matched.rating, "profile_fit": matched.to_json()}
    notes = profile_notes(ticker, profile)
    *found, caveat = risks
    risks = [*found, *notes, caveat]
    title = f"{ticker} equity research: {rec['rating']} ({rec['confidence_label']} confidence)"
    mode_label = "deep research" if mode == "deep" else "quick snapshot"
    signal_text = ", ".join(f"{k.replace('_', ' ')} {v:+d}" for k, v in rec["signals"].items())
    if narrative is not None:
        summary = [narrative.summary]
        analysis = [narrative.analysis, "", *_analysis(ticker, metrics, peers)]
        recommendation = [
            f"**{rec['rating']}** with {rec['confidence_label']} confidence "
            f"({rec['confidence']:.2f}). {narrative.rationale}",
            "",
            f"Price signals for reference: score {rec['score']:+d} from {signal_text}.",
        ]
    else:
        summary = [_summary(ticker, metrics, rec)]
        analysis = _analysis(ticker, metrics, peers)
        recommendation = [
            f"**{rec['rating']}** with {rec['confidence_label']} confidence "
            f"({rec['confidence']:.2f}). Signal score {rec['score']:+d} from: {signal_text}."
        ]
    if matched is not None:
        recommendation += ["", f"**Fit to your profile.** {matched.statement}"]
    peer_rows = _peer_table(peers, ticker, requested)
    if style == "brief":
        summary = summary[:1] if narrative is not None else [_brief_summary(ticker, metrics, rec)]
        if "Analysis" not in required:
            analysis = [_brief_analysis(ticker, metrics)]
        peer_rows = _brief_peers(peers, ticker, profile, required)
        if "Risk factors" not in required:
            risks = [*found[:2], *notes, caveat]
    elif style == "detailed":
        analysis = [*analysis, *_detailed_analysis(ticker, metrics)]
        peer_rows = [*peer_rows, *_peer_notes(peers, ticker)]
        recommendation = [*recommendation, "", *_signal_notes(rec["signals"])]
    builders: dict[str, list[str]] = {
        "summary": summary,
        "key metrics": [
            "| Metric | Value |",
            "| --- | --- |",
            *[f"| {label} | {fmt(metrics.get(key), kind)} |" for key, label, kind in KEY_METRICS],
        ],
        "analysis": analysis,
        "peer comparison": peer_rows,
        "risk factors": [f"- {r}" for r in risks],
        "recommendation": recommendation,
        "data as of": [f"Daily closes up to and including {as_of}."],
        "sources": [
            *[f"- {s}" for s in sources],
            "- Computations: analyst analytics (trailing returns, volatility, drawdown, "
            "moving averages, Wilder RSI, beta against an equal-weighted basket).",
        ],
    }
    lines: list[str] = [
        f"# {title}",
        "",
        f"**Ticker:** {ticker} · **Mode:** {mode_label} · **Data as of:** {as_of} · "
        f"**Revision:** {revision}",
    ]
    if style != "standard":
        lines += ["", f"*A {style} report, as your {profile.cite('report_style')} asks.*"]
    for name in sections:
        body = builders.get(name.strip().lower()) or [
            f"Not covered: the analyst has only daily price data, so there is nothing "
            f"computed for '{name}'."
        ]
        lines += ["", f"## {name}", "", *body]
    if feedback:
        lines += ["", "## Revision notes", ""]
        for n, note in enumerate(feedback, start=1):
            lines += [
                f'{n}. Reviewer feedback: "{note.strip()}"',
                f"   - {_address(note, metrics, peers)}",
            ]
    if personal:
        lines += ["", "## Memory context", "", *[f"- {line}" for line in personal]]
    markdown = "\n".join(lines).rstrip() + "\n"
    draft = Draft(
        ticker=ticker,
        title=title,
        markdown=markdown,
        hash=content_hash(markdown),
        revision=revision,
        as_of=as_of,
        sources=sources,
        chart_path=None,
        metrics=metrics,
        recommendation=rec,
        claims=claims,
    )
    if narrative is not None:  # what the report shows of the model's prose (a style may cut)
        written = [narrative.summary, narrative.analysis, *narrative.risk_factors]
        draft["prose"] = [t for t in [*written, narrative.rationale] if t in markdown]
    return draft


def _summary(ticker: str, m: Mapping[str, Any], rec: Mapping[str, Any]) -> str:
    trend = "above" if m.get("crossover") == "bullish" else "below"
    return (
        f"{ticker} closed at {fmt(m.get('last_close'), 'price')} and returned "
        f"{fmt(m.get('return_1y'), 'pct')} over the last year ({fmt(m.get('return_ytd'), 'pct')} "
        f"year-to-date). Its 50-day average is {trend} the 200-day average, RSI(14) is "
        f"{fmt(m.get('rsi_14'), 'num1')}, and annualised volatility is "
        f"{fmt(m.get('volatility_1y'), 'pct_abs')}. Recommendation: **{rec['rating']}**."
    )


def _analysis(ticker: str, m: Mapping[str, Any], peers: Sequence[Mapping[str, Any]]) -> list[str]:
    cross = m.get("crossover")
    since = m.get("last_cross_date")
    cross_text = (
        f"The 50-day average ({fmt(m.get('sma_50'), 'price')}) is "
        f"{'above' if cross == 'bullish' else 'below'} the 200-day average "
        f"({fmt(m.get('sma_200'), 'price')}): a {cross} configuration"
        + (f" since {since}." if since else ".")
    )
    rsi = m.get("rsi_14") or 50.0
    rsi_text = "overbought" if rsi > 70 else "oversold" if rsi < 30 else "neutral"
    out = [
        "### Trend",
        "",
        cross_text
        + f" The price stands {fmt(m.get('price_vs_sma200'), 'pct')} from its 200-day average.",
        "",
        "### Momentum",
        "",
        f"Returns: {fmt(m.get('return_1m'), 'pct')} over one month, "
        f"{fmt(m.get('return_3m'), 'pct')} over three months, "
        f"{fmt(m.get('return_1y'), 'pct')} over one year. RSI(14) at "
        f"{fmt(m.get('rsi_14'), 'num1')} is {rsi_text}.",
        "",
        "### Risk",
        "",
        f"Annualised volatility {fmt(m.get('volatility_1y'), 'pct_abs')}; the deepest fall in the "
        f"last year was {fmt(m.get('max_drawdown_1y'), 'pct')}. Beta against an equal-weighted "
        f"basket of {', '.join(m.get('basket') or []) or 'the other tickers'} is "
        f"{fmt(m.get('beta'), 'num2')} (correlation {fmt(m.get('correlation'), 'num2')}).",
    ]
    ranked = [row["ticker"] for row in peers]
    if ticker in ranked:
        out += [
            "",
            "### Relative performance",
            "",
            f"By one-year return {ticker} ranks {ranked.index(ticker) + 1} of {len(ranked)} "
            "tickers in the comparison set.",
        ]
    return out


def _peer_table(
    peers: Sequence[Mapping[str, Any]], ticker: str, requested: Sequence[str]
) -> list[str]:
    rows = [
        "| Ticker | Last close | Return 1Y | Return YTD | Volatility 1Y | Max drawdown 1Y | RSI 14 | Trend |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in peers:
        name = (
            f"**{p['ticker']}**"
            if p["ticker"] == ticker or p["ticker"] in requested
            else p["ticker"]
        )
        rows.append(
            f"| {name} | {fmt(p['last_close'], 'price')} | {fmt(p['return_1y'], 'pct')} | "
            f"{fmt(p['return_ytd'], 'pct')} | {fmt(p['volatility_1y'], 'pct_abs')} | "
            f"{fmt(p['max_drawdown_1y'], 'pct')} | {fmt(p['rsi_14'], 'num1')} | {p['crossover']} |"
        )
    return rows


def _address(note: str, m: Mapping[str, Any], peers: Sequence[Mapping[str, Any]]) -> str:
    """Say, deterministically, how this revision responds to a piece of feedback."""
    text = note.lower()
    if any(w in text for w in ("peer", "competitor", "compar")):
        best = peers[0]["ticker"] if peers else "n/a"
        return f"Addressed: the peer comparison covers {len(peers)} tickers; {best} leads on 1Y return."
    if any(w in text for w in ("risk", "volatil", "drawdown", "downside")):
        return (
            f"Addressed: risk detail — volatility {fmt(m.get('volatility_1y'), 'pct_abs')}, "
            f"max drawdown {fmt(m.get('max_drawdown_1y'), 'pct')}, beta {fmt(m.get('beta'), 'num2')}."
        )
    if any(w in text for w in ("rsi", "moving average", "trend", "technical")):
        return (
            f"Addressed: technicals — RSI(14) {fmt(m.get('rsi_14'), 'num1')}, 50-day "
            f"{fmt(m.get('sma_50'), 'price')} vs 200-day {fmt(m.get('sma_200'), 'price')}."
        )
    return "Noted: the offline analyst records this feedback; figures are unchanged because the prices are."


# -- report styles --------------------------------------------------------------------------


def _brief_summary(ticker: str, m: Mapping[str, Any], rec: Mapping[str, Any]) -> str:
    return (
        f"{ticker}: **{rec['rating']}** ({rec['confidence_label']} confidence); "
        f"{fmt(m.get('return_1y'), 'pct')} over the last year at "
        f"{fmt(m.get('volatility_1y'), 'pct_abs')} annualised volatility."
    )


def _brief_analysis(ticker: str, m: Mapping[str, Any]) -> str:
    cross = m.get("crossover") or "n/a"
    return (
        f"{ticker}'s trend is {cross} (50-day {fmt(m.get('sma_50'), 'price')} vs 200-day "
        f"{fmt(m.get('sma_200'), 'price')}), RSI(14) {fmt(m.get('rsi_14'), 'num1')}, deepest "
        f"fall in the last year {fmt(m.get('max_drawdown_1y'), 'pct')}."
    )


def _brief_peers(
    peers: Sequence[Mapping[str, Any]],
    ticker: str,
    profile: Profile,
    required: Mapping[str, str],
) -> list[str]:
    """The peer section of a brief report: the table only when something requires it."""
    if "Peer comparison" in required:
        return [
            *_peer_table(peers, ticker, ()),
            "",
            f"The full table, because {required['Peer comparison']} requires it.",
        ]
    ranked = [row["ticker"] for row in peers]
    rank = (
        f"By one-year return {ticker} ranks {ranked.index(ticker) + 1} of {len(ranked)}. "
        if ticker in ranked
        else ""
    )
    return [
        f"{rank}The peer table is left out of this brief report, as your "
        f'{profile.cite("report_style")} asks; a standing "always include the peer table" '
        "brings it back."
    ]


def _detailed_analysis(ticker: str, m: Mapping[str, Any]) -> list[str]:
    dd = m.get("max_drawdown_1y")
    out = [
        "",
        "### Drawdown",
        "",
        f"The deepest fall of the last year was {fmt(dd, 'pct')}, from the peak of "
        f"{m.get('drawdown_peak_date') or 'n/a'} to the trough of "
        f"{m.get('drawdown_trough_date') or 'n/a'}. At {fmt(m.get('volatility_1y'), 'pct_abs')} "
        "annualised volatility, a one-standard-deviation year spans roughly that much either "
        "way.",
        "",
        "### Market sensitivity",
        "",
        f"Beta {fmt(m.get('beta'), 'num2')} with correlation {fmt(m.get('correlation'), 'num2')}: "
        f"{ticker} has moved "
        + ("more" if (m.get("beta") or 0) > 1 else "less")
        + " than the equal-weighted basket of the other tickers.",
    ]
    return out


def _peer_notes(peers: Sequence[Mapping[str, Any]], ticker: str) -> list[str]:
    mine = next((p for p in peers if p["ticker"] == ticker), None)
    if mine is None:
        return []
    out = ["", "### Peer notes", ""]
    for p in peers:
        if p["ticker"] == ticker:
            continue
        diff = (p["return_1y"] or 0) - (mine["return_1y"] or 0)
        out.append(
            f"- {p['ticker']}: 1Y return {fmt(p['return_1y'], 'pct')} ({fmt(diff, 'pct')} vs "
            f"{ticker}), volatility {fmt(p['volatility_1y'], 'pct_abs')}, trend {p['crossover']}."
        )
    return out


_SIGNAL_MEANING = {
    "trend": "the 50-day average against the 200-day",
    "momentum": "3-month and 1-year returns together",
    "rsi": "RSI(14) against 30 and 70",
    "relative_strength": "the one-year return's rank among peers",
}


def _signal_notes(signals: Mapping[str, int]) -> list[str]:
    return [
        f"- {name.replace('_', ' ')} {value:+d}: {_SIGNAL_MEANING.get(name, name)}."
        for name, value in signals.items()
    ]
