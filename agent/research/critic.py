"""The critic: an independent check of one draft, with no access to the run's history.

:func:`critique` takes the draft (and optionally the date to judge freshness against) and
nothing else: not the messages, not the plan, not the step results. It reports a verdict and
findings for the human reviewer. It never approves or publishes; only a human decision does.
"""

from __future__ import annotations

import re
from datetime import date

from agent.records import Critique, Draft, Finding, Verdict
from agent.research.conventions import (
    MEMORY_SECTION,
    Conventions,
    default_conventions,
    report_section_bullets,
)
from agent.research.figures import Unbacked, computed_figures, unbacked_figures
from agent.research.report import KEY_METRICS, fmt
from agent.research.revision import unverified

STALE_AFTER_DAYS = 30


def critique(draft: Draft, *, today: date, conventions: Conventions | None = None) -> Critique:
    """Check one draft against ``conventions`` (the built-in ones when there are no files):
    sections and citation forms as the conventions judge them, then the table's figures (the
    rows the draft's layout shows), freshness, the revision notes (each "addressed" change
    must show against the previous draft: :func:`agent.research.revision.unverified`), the
    cited claims, the figures in the model's prose (:func:`prose_figures`) and sources. Problems reading the conventions are reported as info."""
    findings: list[Finding] = []
    markdown = draft["markdown"]
    rules = conventions if conventions is not None else default_conventions()
    # Problems reading the conventions concern the project, not this draft: info only.
    findings += [Finding(severity="info", message=f"Conventions: {w}") for w in rules.warnings]
    findings += [
        Finding(severity=problem.severity, message=problem.message)
        for problem in rules.check_report(markdown)
    ]

    findings += [
        Finding(severity="warning", message=problem) for problem in memory_problems(markdown)
    ]

    findings += [Finding(severity="error", message=m) for m in table_problems(draft)]

    if draft["as_of"]:
        age = (today - date.fromisoformat(draft["as_of"])).days
        if age > STALE_AFTER_DAYS:
            findings.append(
                Finding(
                    severity="warning",
                    message=f"Data is {age} days old (as of {draft['as_of']}); say so to readers "
                    "or refresh prices before relying on the recommendation.",
                )
            )
    else:
        findings.append(Finding(severity="error", message="The draft has no data as-of date."))

    for claim in draft.get("claims") or []:
        problem = _check_claim(claim, draft["metrics"])
        if problem:
            findings.append(Finding(severity="error", message=problem))
    findings += [
        Finding(severity="error", message=prose_problem(figure)) for figure in prose_figures(draft)
    ]
    findings += [
        Finding(severity="error", message=problem)
        for problem in unverified(draft.get("revised"), markdown)
    ]

    rec = draft["recommendation"]
    if rec and rec.get("confidence_label") == "low":
        findings.append(
            Finding(
                severity="info",
                message=f"Low-confidence {rec.get('rating')}: the price signals disagree.",
            )
        )
    if not draft["sources"]:
        findings.append(Finding(severity="error", message="The draft cites no sources."))

    severities = {f["severity"] for f in findings}
    verdict: Verdict = (
        "fail"
        if "error" in severities
        else "needs_attention"
        if "warning" in severities
        else "pass"
    )
    return Critique(draft_hash=draft["hash"], verdict=verdict, findings=findings)


def table_problems(draft: Draft) -> list[str]:
    """Each key-metric row the draft's layout shows must be in its table with the computed
    value (every row when the draft does not say which it shows)."""
    markdown = draft["markdown"]
    table = dict(re.findall(r"^\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$", markdown, re.MULTILINE))
    rows = draft.get("shown_metrics")
    problems = []
    for key, label, kind in KEY_METRICS:
        if key not in draft["metrics"] or (rows is not None and key not in rows):
            continue
        expected = fmt(draft["metrics"][key], kind)
        shown = table.get(label)
        if shown is None:
            problems.append(f"Key metric '{label}' is not in the table.")
        elif shown != expected:
            problems.append(f"'{label}' shows {shown} but the computed value is {expected}.")
    return problems


def _check_claim(claim: dict, metrics: dict) -> str | None:
    """A value the prose states must equal the computed one (to display precision)."""
    name, value = claim.get("name"), claim.get("value")
    if name not in metrics:
        return f"The report states a value for '{name}', which is not a computed metric."
    actual = metrics[name]
    if isinstance(actual, (int, float)) and not isinstance(actual, bool):
        try:
            stated = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return f"The report states '{name}' = {value!r}; the computed value is {actual}."
        if abs(stated - actual) > max(5e-3 * abs(actual), 5e-4):
            return (
                f"The report states '{name}' = {stated:g} but the computed value is "
                f"{actual:g}: the figure does not come from the tool results."
            )
        return None
    if str(value) != str(actual):
        return f"The report states '{name}' = {value!r}; the computed value is {actual!r}."
    return None


def prose_figures(draft: Draft) -> list[Unbacked]:
    """The figures the model's prose states that nothing computed in ``draft`` backs (none
    for an offline draft, whose prose is all rendered from the computed results)."""
    prose = draft.get("prose") or []
    if not prose:
        return []
    figures = computed_figures(draft["metrics"], draft["recommendation"], draft["markdown"])
    return unbacked_figures(prose, figures)


def prose_problem(figure: Unbacked) -> str:
    """A finding naming an unbacked figure, the words it stands in, and why it fails."""
    where = f"The report's prose states {figure.text} ({figure.context!r})"
    if not figure.computed:
        return (
            f"{where}: a figure for {figure.metric}, which the analyst does not compute (it "
            "has daily prices only); the figure does not come from the tool results."
        )
    about = f" {figure.metric}" if figure.metric else ""
    return (
        f"{where}, which matches no computed{about} figure within rounding: the figure does "
        "not come from the tool results."
    )


#: How a "Memory context" bullet cites its source: a fact, procedure or memory id.
_MEMORY_CITATION = re.compile(r"\b(?:fact|procedure|memory)\s+[\w:.-]*\w")


def memory_problems(markdown: str) -> list[str]:
    """Each bullet of the report's "Memory context" section must cite the fact, procedure
    or memory it states (whether the section may appear at all is the conventions' call)."""
    return [
        f"{MEMORY_SECTION} states {bullet[:80]!r} without citing its source (a fact, "
        "procedure or memory id)."
        for bullet in report_section_bullets(markdown, MEMORY_SECTION)
        if not _MEMORY_CITATION.search(bullet)
    ]
