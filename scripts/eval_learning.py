"""Score what the analyst learns from ordinary chat messages, on every corpus split side by side.

    python scripts/eval_learning.py [--split develop|frozen|dev|all] [--corpus PATH]
        [--cases u001,d034] [--model [--no-offline]] [--workers 2] [--json]
        [--save FILE] [--load FILE]

Splits: ``develop`` and ``frozen`` are the project's own corpus (``evals/utterances/``, written
before the rules they judge; ``frozen`` is scored only at the end of a change, never tuned on,
so its failures are listed by id and attribute only); ``dev`` is
``../shared/data/utterances-dev/dev.jsonl`` beside the checkout, read in place, never copied.
``all`` (the default) runs the three; ``--corpus PATH`` scores one other file instead. Each
case runs as a person would run it: in a fresh data folder, user and tenant
(``ANALYST_DATA_DIR``, ``ANALYST_USER``, ``ANALYST_TENANT``; ``ANALYST_MEMORY_DIR`` a temporary
copy of the checkout's ``.agent-memory``), each turn is typed into the real ``analyst chat``
(any "remember it?" question is answered ``l``ater, so proposals stay pending), then
``/quit`` ends the session and runs extraction; a turn that is exactly ``/quit`` ends a
session early and the turns after it go into a new session of the same user. The offline path runs with
``ANALYST_MODEL=offline``; ``--model`` runs the same cases on the model path too
(``OPENAI_BASE_URL`` and ``ANALYST_MODEL=openai:<name>`` from the environment, else the local
server of ``scripts/model_server.sh env``; ``ANALYST_STRUCTURED_OUTPUT=json_schema`` and a
patient ``ANALYST_MODEL_TIMEOUT`` unless set), in columns next to the offline ones. What was
learned is read back through the CLI's JSON:

- facts: ``analyst facts profile me --json`` (a record with ``source: inferred`` counts as a
  candidate), plus active procedures of ``analyst memory procedures --json`` whose rule
  excludes a ticker (``excluded_tickers``: they are enforced);
- candidates: ``analyst memory review --all --json`` (pending ``fact`` candidates; pending
  preferences and procedures with an ``exclude_ticker`` rule give ``excluded_tickers``).

A learned fact is a true positive when the case expects that attribute with an equal value
(numbers within 1%, lists as case-insensitive sets, strings case- and punctuation-
insensitive), a false positive otherwise; an expected attribute with no matching fact is a
false negative. Printed per split: precision, recall and F1 overall, per kind and per
attribute; third-party handling (:func:`third_party_right`; claims held as candidates and
stored as facts); corrections ending with the revised value (:func:`correction_right`);
misses held as a pending candidate with the right value; the time per case; and every false
positive and negative. ``--save`` appends each case's raw outcome (JSON lines); ``--load``
scores saved outcomes again without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "utterances-dev" / "dev.jsonl"
SPLITS = {
    "develop": ROOT / "evals" / "utterances" / "develop.jsonl",
    "frozen": ROOT / "evals" / "utterances" / "frozen.jsonl",
    "dev": DEFAULT_CORPUS,
}
#: Splits whose failures are listed without turns or values: scored, never tuned on.
SEALED = frozenset({"frozen"})
EXE = Path(sys.executable).with_name("analyst")
PROMPT = "you> "
REMEMBER = "remember it? [y]es / [n]o / [l]ater: "
FORGET = "Forget these?"
#: A research request while a draft awaits a decision; "n" answers it beside the draft.
SET_ASIDE = "start this request in a new thread? [y/N]: "
_INHERITED = ("ANALYST_", "OPENAI_")
#: The model path's settings when the environment does not give them (a slow CPU server).
MODEL_DEFAULTS = {
    "OPENAI_API_KEY": "not-needed",
    "ANALYST_STRUCTURED_OUTPUT": "json_schema",
    "ANALYST_MODEL_TIMEOUT": "600",
    "ANALYST_MODEL_MAX_TOKENS": "1024",
    "ANALYST_MODEL_RETRIES": "2",
    "ANALYST_MODEL_BACKOFF": "0.1",
}
MODEL_KEYS = (*MODEL_DEFAULTS, "OPENAI_BASE_URL", "ANALYST_MODEL")


@dataclass
class Outcome:
    """One case as it ran: what was learned, and how it scored."""

    case: dict[str, Any]
    split: str = ""
    path: str = "offline"
    facts: dict[str, Any] = field(default_factory=dict)
    candidates: dict[str, list[Any]] = field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""
    tp: list[str] = field(default_factory=list)
    fp: list[tuple[str, Any]] = field(default_factory=list)
    fn: list[tuple[str, Any]] = field(default_factory=list)
    transcript: str = ""

    @property
    def column(self) -> str:
        return self.split if self.path == "offline" else f"{self.split}/{self.path}"

    def raw(self) -> dict[str, Any]:
        """What ran, without its score (``--save``; ``--load`` scores it again)."""
        return {
            "split": self.split,
            "path": self.path,
            "case": self.case,
            "facts": self.facts,
            "candidates": self.candidates,
            "seconds": self.seconds,
            "error": self.error,
        }

    @classmethod
    def from_raw(cls, row: Mapping[str, Any]) -> Outcome:
        outcome = cls(
            dict(row["case"]),
            split=str(row.get("split") or "corpus"),
            path=str(row.get("path") or "offline"),
            facts=dict(row.get("facts") or {}),
            candidates={k: list(v) for k, v in (row.get("candidates") or {}).items()},
            seconds=float(row.get("seconds") or 0.0),
            error=str(row.get("error") or ""),
        )
        score(outcome)
        return outcome


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


def _environ(
    data_dir: Path, memory_dir: Path, case_id: str, model: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A fresh user's environment: offline (``ANALYST_MODEL=offline``) unless ``model`` gives
    the model path's settings; no inherited ``ANALYST_*`` or ``OPENAI_*`` setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED)}
    env.update(
        ANALYST_DATA_DIR=str(data_dir),
        ANALYST_MEMORY_DIR=str(memory_dir),
        ANALYST_USER=f"eval-{case_id}",
        ANALYST_TENANT=f"eval-{case_id}",
        ANALYST_MODEL="offline",
        COLUMNS="200",
        LINES="50",
        TERM="dumb",
        NO_COLOR="1",
    )
    env.update(model or {})
    return env


def _chat(turns: Sequence[str], env: Mapping[str, str], timeout: float) -> str:
    """Type ``turns`` into ``analyst chat``, answer "later" to every "remember it?", "no" to
    every other question (forget these? set a draft aside?), quit."""
    import pexpect

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
                index = child.expect_exact([PROMPT, REMEMBER, FORGET, SET_ASIDE, pexpect.EOF])
                log.append((child.before or "") + str(child.after or ""))
                if index == 1:
                    child.sendline("l")
                elif index in (2, 3):
                    child.sendline("n")
                else:
                    break
            if index == 4:
                break
        if child.isalive():
            child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return "".join(log)


def sessions(turns: Sequence[str]) -> list[list[str]]:
    """The chat sessions of a case: a turn that is exactly ``/quit`` ends one session and the
    turns after it are typed into a new ``analyst chat`` with the same data folder and user."""
    out: list[list[str]] = [[]]
    for turn in turns:
        if turn.strip() == "/quit":
            out.append([])
        else:
            out[-1].append(turn)
    return [s for s in out if s] or [[]]


def _cli(env: Mapping[str, str], *args: str) -> Any:
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


def run_case(
    case: dict[str, Any],
    memory_source: Path,
    timeout: float,
    *,
    split: str = "corpus",
    model: Mapping[str, str] | None = None,
) -> Outcome:
    """One case typed into a fresh ``analyst chat``, read back and scored; on the model path
    when ``model`` holds its settings."""
    outcome = Outcome(case, split=split, path="model" if model else "offline")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"eval-learning-{case['id']}-") as tmp:
        memory_dir = Path(tmp) / "memory"
        if memory_source.is_dir():
            shutil.copytree(memory_source, memory_dir)
        else:
            memory_dir.mkdir()
        env = _environ(Path(tmp) / "data", memory_dir, case["id"], model)
        try:
            outcome.transcript = "".join(
                _chat(turns, env, timeout) for turns in sessions(case["turns"])
            )
            outcome.facts, outcome.candidates = read_back(env)
        except Exception as e:  # one broken case is reported, not fatal to the run
            outcome.error = f"{type(e).__name__}: {e}"
    outcome.seconds = time.perf_counter() - started
    score(outcome)
    return outcome


def score(outcome: Outcome) -> None:
    """Each learned fact a true or a false positive, each expected one not learned a false
    negative (a wrong value is one of each)."""
    outcome.tp, outcome.fp, outcome.fn = [], [], []
    expect: dict[str, Any] = outcome.case.get("expect") or {}
    for name, value in outcome.facts.items():
        if name in expect and equal(value, expect[name]):
            outcome.tp.append(name)
        else:
            outcome.fp.append((name, value))
    for name, value in expect.items():
        if name not in outcome.tp:
            outcome.fn.append((name, value))


def is_third_party(case: Mapping[str, Any]) -> bool:
    """A case about someone else's claim: kind ``third_party``, or any with candidates."""
    return case.get("kind") == "third_party" or bool(case.get("expect_candidates"))


def third_party_right(outcome: Outcome) -> bool:
    """Every claimed attribute held as a pending candidate and none as a fact, no forbidden
    attribute a fact, and in a ``third_party`` case every expected fact (a claim the user
    adopted) a true positive."""
    case = outcome.case
    claimed = case.get("expect_candidates") or []
    return (
        not outcome.error
        and all(n in outcome.candidates and n not in outcome.facts for n in claimed)
        and not any(n in outcome.facts for n in case.get("forbid") or [])
        and not (case.get("kind") == "third_party" and outcome.fn)
    )


def correction_right(outcome: Outcome) -> bool:
    """A correction ends right when every expected attribute holds its revised value and no
    withdrawn value remains: no false negative, no false positive."""
    return not outcome.error and not outcome.fp and not outcome.fn


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


def _third_party(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    cases = [o for o in outcomes if is_third_party(o.case)]
    claims = [(o, n) for o in cases for n in o.case.get("expect_candidates") or []]
    right = sum(1 for o in cases if third_party_right(o))
    return {
        "cases": len(cases),
        "right": right,
        "accuracy": right / len(cases) if cases else None,
        "claims": len(claims),
        "claims_held_as_candidates": sum(1 for o, n in claims if n in o.candidates),
        "claims_stored_as_facts": sum(1 for o, n in claims if n in o.facts),
    }


def _corrections(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    cases = [o for o in outcomes if o.case.get("kind") == "correction"]
    right = sum(1 for o in cases if correction_right(o))
    return {"cases": len(cases), "right": right, "share": right / len(cases) if cases else None}


def _failures(outcomes: Sequence[Outcome]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every false positive and negative; a sealed split's by id and attribute only."""
    fps, fns = [], []
    for o in outcomes:
        sealed = o.split in SEALED
        for n, v in o.fp:
            row = {"id": o.case["id"], "attribute": n}
            fps.append(row if sealed else {**row, "value": v, "turns": o.case["turns"]})
        for n, v in o.fn:
            row = {"id": o.case["id"], "attribute": n}
            if not sealed:
                row.update(
                    expected=v,
                    learned=o.facts.get(n),
                    candidates=o.candidates.get(n, []),
                    turns=o.case["turns"],
                )
            fns.append(row)
    return fps, fns


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """One split's figures (one column of the report)."""
    held = sum(
        1
        for o in outcomes
        for name, value in o.fn
        if any(equal(v, value) for v in o.candidates.get(name, []))
    )
    seconds = sorted(o.seconds for o in outcomes)
    kinds = _counts(outcomes, lambda o, n: o.case.get("kind", "?"))
    third = _third_party(outcomes)
    fps, fns = _failures(outcomes)
    return {
        "cases": len(outcomes),
        "errors": {o.case["id"]: o.error for o in outcomes if o.error},
        "overall": _counts(outcomes, lambda o, n: "all").get("all", prf(0, 0, 0)),
        # Every kind of the corpus, those with nothing to count too (hedges: no fact, no FP).
        "per_kind": {
            kind: kinds.get(kind, prf(0, 0, 0))
            for kind in sorted({o.case.get("kind", "?") for o in outcomes})
        },
        "per_attribute": _counts(outcomes, lambda o, n: n),
        "third_party": third,
        "third_party_accuracy": third["accuracy"],
        "corrections": _corrections(outcomes),
        "misses_held_as_candidates": held,
        "seconds_per_case": {
            "median": seconds[len(seconds) // 2] if seconds else 0.0,
            "max": seconds[-1] if seconds else 0.0,
            "total": sum(seconds),
        },
        "false_positives": fps,
        "false_negatives": fns,
    }


def report(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Every split's figures side by side: offline columns first, then the model path's."""
    columns: dict[str, list[Outcome]] = {}
    order = {name: i for i, name in enumerate(SPLITS)}
    for o in sorted(outcomes, key=lambda o: (o.path != "offline", order.get(o.split, 99))):
        columns.setdefault(o.column, []).append(o)
    return {"columns": list(columns), "splits": {c: summarise(os_) for c, os_ in columns.items()}}


# -- rendering -------------------------------------------------------------------------------

_WIDTH = 24


def _cell(m: Mapping[str, float] | None) -> str:
    if m is None:
        return "-"
    figures = f"{m['precision']:.2f} {m['recall']:.2f} {m['f1']:.2f}"
    return f"{figures} {m['tp']:.0f}/{m['fp']:.0f}/{m['fn']:.0f}"


def _share(right: int, cases: int) -> str:
    return f"{right / cases:.2f} ({right}/{cases})" if cases else "-"


def _row(name: str, cells: Iterable[str]) -> str:
    return f"  {name:<22}" + " ".join(cell.ljust(_WIDTH) for cell in cells)


def _table(report: Mapping[str, Any]) -> list[str]:
    names, cols = report["columns"], [report["splits"][c] for c in report["columns"]]
    out = [_row("", (f"{c} ({s['cases']})" for c, s in zip(names, cols, strict=True)))]
    out.append(_row("P R F1 tp/fp/fn", ("" for _ in cols)))
    out.append(_row("overall", (_cell(s["overall"]) for s in cols)))
    for title, key in (("per kind:", "per_kind"), ("per attribute:", "per_attribute")):
        out.append(title)
        rows = sorted({n for s in cols for n in s[key]})
        out += [_row(n, (_cell(s[key].get(n)) for s in cols)) for n in rows]
    t, c = [s["third_party"] for s in cols], [s["corrections"] for s in cols]
    out.append("third parties:")
    out.append(_row("handled right", (_share(x["right"], x["cases"]) for x in t)))
    held = (_share(x["claims_held_as_candidates"], x["claims"]) for x in t)
    out.append(_row("claims as candidates", held))
    out.append(
        _row("claims as facts", (_share(x["claims_stored_as_facts"], x["claims"]) for x in t))
    )
    out.append(_row("corrections right", (_share(x["right"], x["cases"]) for x in c)))
    out.append(_row("misses as candidates", (str(s["misses_held_as_candidates"]) for s in cols)))
    times = (s["seconds_per_case"] for s in cols)
    out.append(_row("s/case median, max", (f"{t['median']:.1f}, {t['max']:.1f}" for t in times)))
    return out


def render(report: Mapping[str, Any]) -> str:
    out = ["Learning evaluation through `analyst chat`, every split side by side"]
    out += _table(report)
    for column in report["columns"]:
        split = report["splits"][column]
        for fp in split["false_positives"]:
            shown = f"={fp['value']!r}  turns={fp['turns']}" if "turns" in fp else ""
            out.append(f"FP [{column}] {fp['id']} {fp['attribute']}{shown}")
        for fn in split["false_negatives"]:
            shown = (
                f" expected {fn['expected']!r}, learned {fn['learned']!r}, candidates "
                f"{fn['candidates']!r}  turns={fn['turns']}"
                if "turns" in fn
                else ""
            )
            out.append(f"FN [{column}] {fn['id']} {fn['attribute']}{shown}")
        for case_id, error in split["errors"].items():
            out.append(f"ERROR [{column}] {case_id}: {error}")
    return "\n".join(out)


# -- choosing and running the cases ----------------------------------------------------------


def load_cases(path: Path) -> list[dict[str, Any]]:
    """A corpus file's cases; a line that is not a JSON object is an error naming it."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{number}: not JSON ({e.msg}); fix or remove the line") from e
        if not isinstance(case, dict) or "id" not in case or "turns" not in case:
            raise ValueError(f"{path}:{number}: a case needs an 'id' and 'turns'")
        cases.append(case)
    return cases


def choose(split: str, corpus: Path | None, wanted: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """(split, case) pairs to run: the named split(s) or one ``--corpus`` file, then only the
    ``wanted`` ids when any are given (an unknown id is an error)."""
    if corpus is not None:
        sources = {corpus.stem: corpus}
    else:
        sources = dict(SPLITS) if split == "all" else {split: SPLITS[split]}
    missing = [f"{name} ({path})" for name, path in sources.items() if not path.is_file()]
    if missing:
        raise ValueError(f"no corpus at {', '.join(missing)} (pass --corpus PATH or --split)")
    chosen = [(name, case) for name, path in sources.items() for case in load_cases(path)]
    if wanted:
        unknown = wanted - {case["id"] for _, case in chosen}
        if unknown:
            raise ValueError(f"unknown case ids: {', '.join(sorted(unknown))}")
        chosen = [(name, case) for name, case in chosen if case["id"] in wanted]
    return chosen


def model_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The model path's settings: ``OPENAI_BASE_URL`` and ``ANALYST_MODEL=openai:<name>`` from
    ``environ``, else the local server's (``ANALYST_REAL_MODEL_URL``/``ANALYST_REAL_MODEL``, as
    ``scripts/model_server.sh env`` prints them); other ``MODEL_KEYS`` from ``environ`` or
    ``MODEL_DEFAULTS``."""
    settings = {k: environ[k] for k in MODEL_KEYS if environ.get(k)}
    if "OPENAI_BASE_URL" not in settings:
        local = dict(environ)
        if not local.get("ANALYST_REAL_MODEL_URL"):
            local.update(_local_server())
        if local.get("ANALYST_REAL_MODEL_URL"):
            settings["OPENAI_BASE_URL"] = local["ANALYST_REAL_MODEL_URL"]
            settings.setdefault(
                "ANALYST_MODEL", f"openai:{local.get('ANALYST_REAL_MODEL', 'local')}"
            )
    if "OPENAI_BASE_URL" not in settings:
        raise ValueError(
            "--model needs a model server: set OPENAI_BASE_URL and ANALYST_MODEL=openai:<name>, "
            "or start the local one (bash scripts/model_server.sh start)"
        )
    if not settings.get("ANALYST_MODEL", "").startswith("openai:"):
        raise ValueError(
            f"--model needs ANALYST_MODEL=openai:<name>, not {settings.get('ANALYST_MODEL')!r}"
        )
    return {**MODEL_DEFAULTS, **settings}


def _local_server() -> dict[str, str]:
    script = ROOT / "scripts" / "model_server.sh"
    try:
        run = subprocess.run(
            ["bash", str(script), "env"], capture_output=True, text=True, timeout=30, cwd=ROOT
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(re.findall(r"^export (\w+)=(\S+)$", run.stdout, flags=re.MULTILINE))


def run_all(
    chosen: Sequence[tuple[str, dict[str, Any]]],
    *,
    workers: int,
    timeout: float,
    model: Mapping[str, str] | None,
    save: Path | None,
    offline: bool = True,
) -> list[Outcome]:
    """Every chosen case offline (unless not ``offline``), then (with ``model``) on the model
    path; each outcome is appended to ``save`` as it ends."""
    memory = ROOT / ".agent-memory"
    jobs: list[tuple[str, dict[str, Any], Mapping[str, str] | None]] = [
        (split, case, None) for split, case in chosen if offline
    ]
    if model is not None:
        jobs += [(split, case, model) for split, case in chosen]

    def one(job: tuple[str, dict[str, Any], Mapping[str, str] | None]) -> Outcome:
        split, case, settings = job
        patience = (
            max(timeout, float(settings["ANALYST_MODEL_TIMEOUT"]) * 2) if settings else timeout
        )
        outcome = run_case(case, memory, patience, split=split, model=settings)
        if save is not None:
            with save.open("a", encoding="utf-8") as f:
                f.write(json.dumps(outcome.raw(), ensure_ascii=False) + "\n")
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, jobs))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--corpus", type=Path, default=None, help="score this file instead")
    parser.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    parser.add_argument("--model", action="store_true", help="also run on the model path")
    parser.add_argument(
        "--no-offline", action="store_true", help="with --model: the model path only"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per chat step")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--save", type=Path, default=None, help="append raw outcomes here")
    parser.add_argument("--load", type=Path, default=None, help="score saved outcomes instead")
    args = parser.parse_args(argv)
    try:
        outcomes = load_outcomes(args.load, args.cases) if args.load else _run(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = report(outcomes)
    print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else render(result))
    return 1 if any(s["errors"] for s in result["splits"].values()) else 0


def _run(args: argparse.Namespace) -> list[Outcome]:
    if not EXE.is_file():
        raise ValueError(f"the analyst console script is not installed at {EXE}")
    wanted = {c.strip() for c in args.cases.split(",") if c.strip()}
    chosen = choose(args.split, args.corpus, wanted)
    model = model_settings(os.environ) if args.model else None
    if args.no_offline and model is None:
        raise ValueError("--no-offline needs --model (there would be nothing to run)")
    return run_all(
        chosen,
        workers=args.workers,
        timeout=args.timeout,
        model=model,
        save=args.save,
        offline=not args.no_offline,
    )


def load_outcomes(path: Path, cases: str = "") -> list[Outcome]:
    """Outcomes saved by ``--save`` (JSON lines), scored again; only ``cases`` when given."""
    if not path.is_file():
        raise ValueError(f"no saved outcomes at {path} (write them with --save FILE)")
    wanted = {c.strip() for c in cases.split(",") if c.strip()}
    rows = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    rows = [r for r in rows if not wanted or r["case"]["id"] in wanted]
    # A case still in its split with the same turns is scored on today's labels.
    current = {
        (name, case["id"]): case
        for name in {r.get("split") for r in rows} & set(SPLITS)
        if SPLITS[name].is_file()
        for case in load_cases(SPLITS[name])
    }
    for row in rows:
        case = current.get((row.get("split"), row["case"]["id"]))
        if case is not None and case["turns"] == row["case"]["turns"]:
            row["case"] = case
    return [Outcome.from_raw(r) for r in rows]


if __name__ == "__main__":
    raise SystemExit(main())
