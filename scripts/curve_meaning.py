"""Precision and recall on a corpus split as the meaning threshold varies: how it was chosen.

    python scripts/curve_meaning.py [--split develop|dev] [--thresholds 0.4,0.45,...]
        [--misses]

A quick stand-in for ``scripts/eval_learning.py`` (which runs each case as a real chat and
takes minutes): each case's turns are read with :func:`agent.learning.understanding.read`
in order, the user's own readings applied to a profile the way the learner applies them
(a replaced value, a list grown or edited, a withdrawn value gone), and the profile scored
against the case's ``expect`` as the eval scores it. Claims of someone else are candidates,
never facts, and are not counted. It is a proxy: figures differ a little from the eval's
(adoptions across turns and stored-list reads are the chat path's), so the chosen threshold
is checked with the eval afterwards. The ``frozen`` split is not offered: it is never tuned on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_learning import SPLITS, equal, load_cases  # noqa: E402

from agent.learning import meaning, profile, understanding  # noqa: E402
from agent.research.tickers import COMPANY_NAMES  # noqa: E402


def learned(turns: list[str], known: set[str]) -> dict[str, Any]:
    """The profile the turns leave, read offline."""
    facts: dict[str, Any] = {}
    stated: list[str] = []
    for turn in turns:
        readings = understanding.read(turn, known=known, recent=[*facts, *stated], held=facts)
        stated += [r.attribute for r in readings]
        for r in readings:
            if r.reported:
                continue
            if r.withdrawn:
                facts.pop(r.attribute, None)
            elif profile.attribute(r.attribute).merge == "replace" or r.whole:
                facts[r.attribute] = r.value
            else:
                held = [v for v in facts.get(r.attribute, []) if v not in r.removed]
                added = r.value if isinstance(r.value, list) else []
                value = [*held, *(v for v in added if v not in held)]
                if value:
                    facts[r.attribute] = value
                else:
                    facts.pop(r.attribute, None)
    return facts


def tally(cases: list[dict[str, Any]], known: set[str], misses: bool) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for case in cases:
        facts = learned(case["turns"], known)
        expect = case.get("expect") or {}
        for attribute, value in facts.items():
            right = attribute in expect and equal(value, expect[attribute])
            for key in ("all", attribute):
                counts[key][0 if right else 1] += 1
            if misses and not right:
                print(f"  FP {case['id']} {attribute}={value!r}  | {' || '.join(case['turns'])}")
        for attribute, value in expect.items():
            if not (attribute in facts and equal(facts[attribute], value)):
                for key in ("all", attribute):
                    counts[key][2] += 1
                if misses:
                    print(
                        f"  FN {case['id']} {attribute}={value!r}  | {' || '.join(case['turns'])}"
                    )
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["develop", "dev"], default="develop")
    parser.add_argument("--thresholds", default="")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument(
        "--meaning-only",
        action="store_true",
        help="switch the phrasing rules off: what meaning alone reads, the curve's real trade-off",
    )
    parser.add_argument(
        "--risk", action="store_true", help="vary RISK_THRESHOLD instead of THRESHOLD"
    )
    args = parser.parse_args()
    cases = load_cases(SPLITS[args.split])
    if args.meaning_only:
        understanding.phrasing.detect = lambda part, known: []
    known = set(COMPANY_NAMES.values())
    default = meaning.RISK_THRESHOLD if args.risk else meaning.THRESHOLD
    thresholds = [float(t) for t in args.thresholds.split(",") if t] or [default]
    for threshold in thresholds:
        setattr(meaning, "RISK_THRESHOLD" if args.risk else "THRESHOLD", threshold)
        counts = tally(cases, known, args.misses)
        row = {}
        for key, (tp, fp, fn) in sorted(counts.items()):
            p = tp / (tp + fp) if tp + fp else 1.0
            r = tp / (tp + fn) if tp + fn else 1.0
            row[key] = f"P {p:.2f} R {r:.2f} ({tp}/{fp}/{fn})"
        print(json.dumps({"threshold": threshold, "risk": args.risk, **row}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
