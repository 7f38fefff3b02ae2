"""Score what the analyst learns from ordinary chat messages (offline extraction, chat path).

    python scripts/eval_learning.py [--corpus PATH] [--cases d001,d034] [--workers 2] [--json]

The corpus (default ``../shared/data/utterances-dev/dev.jsonl`` beside the checkout, read in
place, never copied) holds short chats, each labelled with the facts that should hold after
it (see the README beside the corpus). Each case runs as a person would run it: in a fresh
data folder, user and tenant (``ANALYST_DATA_DIR``, ``ANALYST_USER``, ``ANALYST_TENANT``, and
``ANALYST_MEMORY_DIR`` a temporary copy of the checkout's ``.agent-memory``), each turn is
typed into the real ``analyst chat`` at its prompt (any "remember it?" question is answered
``l``ater, so proposals stay pending), then ``/quit`` ends the session and runs extraction.
What was learned is read back through the CLI's JSON:

- facts: ``analyst facts profile me --json`` (a record with ``source: inferred`` counts as a
  candidate), plus active procedures of ``analyst memory procedures --json`` whose rule
  excludes a ticker (``excluded_tickers``: they are enforced);
- candidates: ``analyst memory review --all --json`` (pending ``fact`` candidates; pending
  preferences and procedures with an ``exclude_ticker`` rule give ``excluded_tickers``).

A learned fact is a true positive when the case expects that attribute with an equal value
(numbers within 1%, lists as case-insensitive sets, strings case- and punctuation-
insensitive), a false positive otherwise; an expected attribute with no matching fact is a
false negative. Printed: precision, recall and F1 overall, per kind and per attribute; the
third-party candidate accuracy; misses held as a pending candidate with the right value; the
time per case; and every false positive and negative with its turns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import string
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pexpect

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "utterances-dev" / "dev.jsonl"
EXE = Path(sys.executable).with_name("analyst")
PROMPT = "you> "
REMEMBER = "remember it? [y]es / [n]o / [l]ater: "
FORGET = "Forget these?"
_INHERITED = ("ANALYST_",)


@dataclass
class Outcome:
    """One case as it ran: what was learned, and how it scored."""

    case: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)
    candidates: dict[str, list[Any]] = field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""
    tp: list[str] = field(default_factory=list)
    fp: list[tuple[str, Any]] = field(default_factory=list)
    fn: list[tuple[str, Any]] = field(default_factory=list)
    transcript: str = ""


# -- comparing values ------------------------------------------------------------------------


def _text(value: Any) -> str:
    kept = "".join(c for c in str(value).lower() if c not in string.punctuation)
    return " ".join(kept.split())


def equal(learned: Any, expected: Any) -> bool:
    """Numbers within 1%, lists as case-insensitive sets, strings case- and punctuation-
    insensitive."""
    if isinstance(expected, bool) or isinstance(learned, bool):
        return learned == expected
    if isinstance(expected, int | float) and isinstance(learned, int | float):
        return abs(learned - expected) <= 0.01 * abs(expected)
    if isinstance(expected, list) and isinstance(learned, list):
        return {_text(v) for v in learned} == {_text(v) for v in expected}
    return _text(learned) == _text(expected)


# -- running one case ------------------------------------------------------------------------


def _environ(data_dir: Path, memory_dir: Path, case_id: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED)}
    env.update(
        ANALYST_DATA_DIR=str(data_dir),
        ANALYST_MEMORY_DIR=str(memory_dir),
        ANALYST_USER=f"eval-{case_id}",
        ANALYST_TENANT=f"eval-{case_id}",
        COLUMNS="200",
        LINES="50",
        TERM="dumb",
        NO_COLOR="1",
    )
    return env


def _chat(turns: Sequence[str], env: Mapping[str, str], timeout: float) -> str:
    """Type ``turns`` into ``analyst chat``, answer "later" to every question, quit."""
    child = pexpect.spawn(
        str(EXE),
        ["chat"],
        env=dict(env),
        encoding="utf-8",
        timeout=timeout,
        dimensions=(50, 200),
    )
    log: list[str] = []
    try:
        child.expect_exact(PROMPT)
        log.append(child.before or "")
        for line in [*turns, "/quit"]:
            child.sendline(line)
            while True:
                index = child.expect_exact([PROMPT, REMEMBER, FORGET, pexpect.EOF])
                log.append((child.before or "") + str(child.after or ""))
                if index == 1:
                    child.sendline("l")
                elif index == 2:
                    child.sendline("n")
                else:
                    break
            if index == 3:
                break
        if child.isalive():
            child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return "".join(log)


def _cli(env: Mapping[str, str], *args: str) -> Any:
    import subprocess

    run = subprocess.run(
        [str(EXE), *args, "--json"],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    if run.returncode != 0:
        raise RuntimeError(f"analyst {' '.join(args)} exited {run.returncode}: {run.stderr}")
    return json.loads(run.stdout or "null")


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    if isinstance(data, dict):
        for key in ("items", "rows", "candidates", "procedures"):
            if isinstance(data.get(key), list):
                return [r for r in data[key] if isinstance(r, dict)]
    return []


def read_back(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(facts, candidates) as the CLI shows them: attribute -> value, attribute -> values."""
    facts: dict[str, Any] = {}
    candidates: dict[str, list[Any]] = defaultdict(list)
    commands = [("facts", "profile", "me"), ("memory", "procedures"), ("memory", "review", "--all")]
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        profile, procedures, review = pool.map(lambda c: _cli(env, *c), commands)
    profile = profile or {}
    for name, record in profile.items():
        if record.get("source") == "inferred":
            candidates[name].append(record.get("value"))
        else:
            facts[name] = record.get("value")
    for row in _rows(procedures):
        rule = row.get("rule") or {}
        if row.get("status", "active") == "active" and rule.get("exclude_ticker"):
            held = facts.setdefault("excluded_tickers", [])
            if rule["exclude_ticker"] not in held:
                held.append(rule["exclude_ticker"])
    for row in _rows(review):
        if row.get("status") != "pending":
            continue
        payload = row.get("payload") or {}
        if row.get("kind") == "fact" and "attribute" in payload:
            candidates[str(payload["attribute"])].append(payload.get("value"))
        rule = payload.get("rule") or {}
        if row.get("kind") in ("preference", "procedure", "behaviour") and rule.get(
            "exclude_ticker"
        ):
            candidates["excluded_tickers"].append([rule["exclude_ticker"]])
    return facts, dict(candidates)


def run_case(case: dict[str, Any], memory_source: Path, timeout: float) -> Outcome:
    outcome = Outcome(case)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"eval-learning-{case['id']}-") as tmp:
        memory_dir = Path(tmp) / "memory"
        if memory_source.is_dir():
            shutil.copytree(memory_source, memory_dir)
        else:
            memory_dir.mkdir()
        env = _environ(Path(tmp) / "data", memory_dir, case["id"])
        try:
            outcome.transcript = _chat(case["turns"], env, timeout)
            outcome.facts, outcome.candidates = read_back(env)
        except Exception as e:  # one broken case is reported, not fatal to the run
            outcome.error = f"{type(e).__name__}: {e}"
    outcome.seconds = time.perf_counter() - started
    score(outcome)
    return outcome


def score(outcome: Outcome) -> None:
    expect: dict[str, Any] = outcome.case.get("expect") or {}
    for name, value in outcome.facts.items():
        if name in expect and equal(value, expect[name]):
            outcome.tp.append(name)
        else:
            outcome.fp.append((name, value))
    for name, value in expect.items():
        if name not in outcome.tp:
            outcome.fn.append((name, value))


# -- reporting -------------------------------------------------------------------------------


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1}


def _counts(outcomes: Iterable[Outcome], key: Any) -> dict[str, dict[str, float]]:
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for o in outcomes:
        for name in o.tp:
            tally[key(o, name)][0] += 1
        for name, _ in o.fp:
            tally[key(o, name)][1] += 1
        for name, _ in o.fn:
            tally[key(o, name)][2] += 1
    return {k: prf(*v) for k, v in sorted(tally.items())}


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    third = [o for o in outcomes if o.case.get("kind") == "third_party"]
    right = [
        o
        for o in third
        if all(
            name in o.candidates and name not in o.facts
            for name in o.case.get("expect_candidates") or []
        )
    ]
    held = sum(
        1
        for o in outcomes
        for name, value in o.fn
        if any(equal(v, value) for v in o.candidates.get(name, []))
    )
    seconds = sorted(o.seconds for o in outcomes)
    return {
        "cases": len(outcomes),
        "errors": {o.case["id"]: o.error for o in outcomes if o.error},
        "overall": _counts(outcomes, lambda o, n: "all").get("all", prf(0, 0, 0)),
        # Every kind of the corpus, those with nothing to count too (hedges: no fact, no FP).
        "per_kind": {
            kind: _counts(outcomes, lambda o, n: o.case.get("kind", "?")).get(kind, prf(0, 0, 0))
            for kind in sorted({o.case.get("kind", "?") for o in outcomes})
        },
        "per_attribute": _counts(outcomes, lambda o, n: n),
        "third_party_accuracy": len(right) / len(third) if third else None,
        "misses_held_as_candidates": held,
        "seconds_per_case": {
            "median": seconds[len(seconds) // 2] if seconds else 0.0,
            "max": seconds[-1] if seconds else 0.0,
            "total": sum(seconds),
        },
        "false_positives": [
            {"id": o.case["id"], "attribute": n, "value": v, "turns": o.case["turns"]}
            for o in outcomes
            for n, v in o.fp
        ],
        "false_negatives": [
            {
                "id": o.case["id"],
                "attribute": n,
                "expected": v,
                "learned": o.facts.get(n),
                "candidates": o.candidates.get(n, []),
                "turns": o.case["turns"],
            }
            for o in outcomes
            for n, v in o.fn
        ],
    }


def _line(name: str, m: Mapping[str, float]) -> str:
    return (
        f"  {name:<22} P {m['precision']:.3f}  R {m['recall']:.3f}  F1 {m['f1']:.3f}"
        f"   (tp {m['tp']:.0f}, fp {m['fp']:.0f}, fn {m['fn']:.0f})"
    )


def render(report: Mapping[str, Any]) -> str:
    out = [f"Learning evaluation: {report['cases']} cases through `analyst chat`"]
    out.append(_line("overall", report["overall"]))
    out.append("per kind:")
    out += [_line(k, m) for k, m in report["per_kind"].items()]
    out.append("per attribute:")
    out += [_line(k, m) for k, m in report["per_attribute"].items()]
    accuracy = report["third_party_accuracy"]
    if accuracy is not None:
        out.append(f"third-party candidate accuracy: {accuracy:.3f}")
    out.append(f"misses held as a pending candidate: {report['misses_held_as_candidates']}")
    s = report["seconds_per_case"]
    out.append(
        f"time per case: median {s['median']:.1f} s, max {s['max']:.1f} s, total {s['total']:.0f} s"
    )
    for fp in report["false_positives"]:
        out.append(f"FP {fp['id']} {fp['attribute']}={fp['value']!r}  turns={fp['turns']}")
    for fn in report["false_negatives"]:
        out.append(
            f"FN {fn['id']} {fn['attribute']} expected {fn['expected']!r}, learned "
            f"{fn['learned']!r}, candidates {fn['candidates']!r}  turns={fn['turns']}"
        )
    for case_id, error in report["errors"].items():
        out.append(f"ERROR {case_id}: {error}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per chat step")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if not args.corpus.is_file():
        print(f"error: no corpus at {args.corpus} (pass --corpus PATH)", file=sys.stderr)
        return 2
    if not EXE.is_file():
        print(f"error: the analyst console script is not installed at {EXE}", file=sys.stderr)
        return 2
    cases = [json.loads(line) for line in args.corpus.read_text().splitlines() if line.strip()]
    wanted = {c.strip() for c in args.cases.split(",") if c.strip()}
    if wanted:
        unknown = wanted - {c["id"] for c in cases}
        if unknown:
            print(f"error: unknown case ids: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        cases = [c for c in cases if c["id"] in wanted]
    memory = ROOT / ".agent-memory"
    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        outcomes = list(pool.map(lambda c: run_case(c, memory, args.timeout), cases))
    report = summarise(outcomes)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else render(report))
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
