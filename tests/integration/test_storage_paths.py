"""Where the embedded files live, and that reading never creates one.

A relative ``sqlite:///PATH`` is resolved inside the data folder, whatever folder the command
starts in; a command that only reads never leaves a new, empty database behind (a typo in a
path used to create one, after which every thread showed as ``new``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.integration.conftest import EXE, Run

READS = [
    ("threads",),
    ("show", "t-none"),
    ("history", "t-none"),
    ("facts", "current", "me", "horizon"),
    ("facts", "as-of", "me", "horizon", "2026-01-01"),
    ("facts", "history", "me", "horizon"),
    ("facts", "profile", "me"),
    ("memory", "list", "--memories"),
    ("memory", "search", "risk tolerance"),
    ("notes", "list"),
]


def files_under(folder: Path) -> list[str]:
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_read_commands_on_a_fresh_install_create_no_file(analyst: Any) -> None:
    for args in READS:
        run = analyst(*args)
        assert run.code in (0, 3) and "Traceback" not in run.err, str(run)
        assert files_under(analyst.data_dir) == [], (args, files_under(analyst.data_dir))


def test_a_mistyped_checkpointer_path_is_an_error_not_a_new_empty_database(analyst: Any) -> None:
    thread = analyst.json("run", "Analyze NVDA")["thread_id"]
    typo = {**analyst.env, "ANALYST_CHECKPOINTER": "sqlite:///checkpoint.sqlite"}
    for args in (("threads",), ("show", thread), ("history", thread)):
        done = subprocess.run(
            [str(EXE), *args], env=typo, capture_output=True, text=True, timeout=60
        )
        run = Run(args, done.returncode, done.stdout, done.stderr)
        assert run.refused, str(run)
        assert str(analyst.data_dir / "checkpoint.sqlite") in run.err, str(run)
        assert "does not exist" in run.err and "ANALYST_CHECKPOINTER" in run.err
    assert not (analyst.data_dir / "checkpoint.sqlite").exists()
    assert analyst.json("show", thread)["status"] == "awaiting_approval"


def test_a_mistyped_fact_ledger_path_is_an_error_for_reads(analyst: Any) -> None:
    env = {**analyst.env, "ANALYST_FACTS": "sqlite:///fact.sqlite"}
    done = subprocess.run(
        [str(EXE), "facts", "profile", "me"], env=env, capture_output=True, text=True, timeout=60
    )
    run = Run(("facts", "profile", "me"), done.returncode, done.stdout, done.stderr)
    assert run.refused and "ANALYST_FACTS" in run.err, str(run)
    assert not (analyst.data_dir / "fact.sqlite").exists()


def test_a_relative_sqlite_path_is_inside_the_data_folder_from_any_folder(
    analyst: Any, tmp_path: Path
) -> None:
    env = {
        **analyst.env,
        "ANALYST_CHECKPOINTER": "sqlite:///hot/checkpoints.sqlite",
        "ANALYST_FACTS": "sqlite:///ledger.sqlite",
    }
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()

    def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(EXE), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done

    thread = cli(here, "run", "Analyze NVDA", "--json")
    cli(here, "facts", "record", "me", "horizon", '"long-term"')
    assert (analyst.data_dir / "hot" / "checkpoints.sqlite").is_file()
    assert (analyst.data_dir / "ledger.sqlite").is_file()
    assert files_under(here) == [] and files_under(there) == []
    import json

    thread_id = json.loads(thread.stdout)["thread_id"]
    shown = json.loads(cli(there, "show", thread_id, "--json").stdout)
    assert shown["status"] == "awaiting_approval"
    assert "long-term" in cli(there, "facts", "current", "me", "horizon").stdout
