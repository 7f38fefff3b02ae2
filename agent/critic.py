"""The critic: an independent check of one draft, with no access to the run's history.

:func:`critique` takes the draft (and optionally the date to judge freshness against) and
nothing else: not the messages, not the plan, not the step results. It reports a verdict and
findings for the human reviewer. It never approves or publishes; only a human decision does.
"""

from __future__ import annotations

import re
from datetime import date

from agent.report import KEY_METRICS, REQUIRED_SECTIONS, fmt
from agent.state import Critique, Draft, Finding, Verdict

STALE_AFTER_DAYS = 30


def critique(
    draft: Draft, *, today: date, required_sections: tuple[str, ...] = REQUIRED_SECTIONS
) -> Critique:
    findings: list[Finding] = []
    markdown = draft["markdown"]
    headings = {h.strip().lower() for h in re.findall(r"^##\s+(.+)$", markdown, re.MULTILINE)}
    for section in required_sections:
        if section.lower() not in headings:
            findings.append(
                Finding(severity="error", message=f"Missing required section '{section}'.")
            )

    table = dict(re.findall(r"^\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$", markdown, re.MULTILINE))
    for key, label, kind in KEY_METRICS:
        if key not in draft["metrics"]:
            continue
        expected = fmt(draft["metrics"][key], kind)
        shown = table.get(label)
        if shown is None:
            findings.append(
                Finding(severity="error", message=f"Key metric '{label}' is not in the table.")
            )
        elif shown != expected:
            findings.append(
                Finding(
                    severity="error",
                    message=f"'{label}' shows {shown} but the computed value is {expected}.",
                )
            )

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
