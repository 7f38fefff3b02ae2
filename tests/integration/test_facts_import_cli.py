"""``analyst facts import FILE.jsonl`` as a user runs it: a separate process per command.

The file's facts go through the ledger's rules (supersession, delayed inserts, duplicates
kept as provenance); lines the ledger refuses are reported by line number, the rest are
stored, and the exit code says some were refused. Both backends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

EXE = Path(sys.executable).with_name("analyst")


@pytest.fixture(params=["sqlite", "postgres"])
def cli_env(request: pytest.FixtureRequest, isolated_env: Path) -> Iterator[dict[str, str]]:
    assert EXE.is_file(), f"the analyst console script is not installed next to {sys.executable}"
    env = {
        **os.environ,
        "ANALYST_TENANT": "acme",
        "ANALYST_USER": "mira",
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    if request.param == "sqlite":
        yield {**env, "ANALYST_FACTS": f"sqlite:///{isolated_env / 'data' / 'facts.sqlite'}"}
        return
    with postgres_ledger() as ledger:
        yield {**env, "ANALYST_FACTS": ledger.app_url}


def _cli(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "facts", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _json(run: subprocess.CompletedProcess[str]) -> Any:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_import_applies_the_ledger_rules_and_reports_each_outcome(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    lines: list[dict[str, Any]] = [
        {"subject": "me", "attribute": "passport_deadline", "value": "2026-07-15",
         "valid_from": "2026-06-01T09:00:00Z", "source_episode_id": "e1"},
        {"subject": "me", "attribute": "passport_deadline", "value": "2026-06-30",
         "valid_from": "2026-06-03T10:00:00Z", "source_episode_id": "e2"},
        # A delayed extraction: ends where e1 begins, leaves e2 current.
        {"subject": "me", "attribute": "passport_deadline", "value": "2026-08-01",
         "valid_from": "2026-05-30T08:00", "source_episode_id": "e0"},
        {"subject": "user:mira", "attribute": "risk", "value": {"level": 3},
         "valid_from": "2026-01-01", "memory_type": "profile", "source": "confirmed"},
    ]  # fmt: skip
    path = tmp_path / "facts.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")

    report = _json(_cli(cli_env, "import", str(path), "--json"))
    assert {k: report[k] for k in ("recorded", "replaced", "duplicates", "refused")} == {
        "recorded": 4,
        "replaced": 0,
        "duplicates": 0,
        "refused": [],
    }
    history = _json(_cli(cli_env, "history", "me", "passport_deadline", "--json"))
    assert [(r["source_episode_id"], r["status"]) for r in history] == [
        ("e0", "superseded"),
        ("e1", "superseded"),
        ("e2", "open"),
    ]
    assert history[0]["valid_to"] == history[1]["valid_from"]
    risk = _json(_cli(cli_env, "current", "me", "risk", "--json"))
    assert (risk["value"], risk["memory_type"], risk["source"]) == (
        {"level": 3},
        "profile",
        "confirmed",
    )

    # Again, from standard input, with a restatement, a conflict and a broken line.
    again = [
        json.dumps({**lines[1], "source_episode_id": "e2-again"}),
        json.dumps({**lines[1], "value": "2026-06-29", "source_episode_id": "e9"}),
        "{not json",
        json.dumps({"subject": "me", "attribute": "x", "value": 1, "valid_from": "soon"}),
    ]
    run = _cli(cli_env, "import", "-", stdin="\n".join(again) + "\n")
    assert run.returncode == 3, run.stderr
    assert "1 duplicate(s), 3 refused" in run.stdout
    assert "line 2:" in run.stdout and "conflict" in run.stdout
    assert "line 3:" in run.stdout and "line 4:" in run.stdout and "ISO-8601" in run.stdout
    assert "3 of 4 fact(s)" in run.stderr and "Traceback" not in run.stderr
    current = _json(_cli(cli_env, "current", "me", "passport_deadline", "--json"))
    assert (current["value"], current["restated_in"]) == ("2026-06-30", ["e2-again"])


def test_import_refuses_an_unreadable_file_or_policy(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    missing = _cli(cli_env, "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "Cannot read" in missing.stderr
    path = tmp_path / "one.jsonl"
    path.write_text('{"subject": "me", "attribute": "a", "value": 1, "valid_from": "2026-01-01"}\n')
    bad = _cli(cli_env, "import", str(path), "--policy", "loudest")
    assert bad.returncode == 2 and "--policy" in bad.stderr
    # Nothing was written (a SQLite ledger was not even created).
    url = cli_env["ANALYST_FACTS"]
    if url.startswith("sqlite:///"):
        assert not Path(url[len("sqlite:///") :]).exists()
    else:
        assert _json(_cli(cli_env, "history", "me", "a", "--json")) == []
