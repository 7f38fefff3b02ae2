"""Listings, ids and messages of the command line, in-process.

Every listing is one line per item within the console's width: optional columns are dropped
first, free text is shortened, ids and dates are never cut. Thread ids that could name a path
are refused, and every id gets its own chart folder. Small messages say exactly what happened.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from agent.cli import render
from agent.cli.render import Column
from agent.errors import ConfigurationError, InvalidThreadIdError
from agent.reasoning.chat_model import resolve_model
from agent.settings import Settings
from agent.thread_ids import check_thread_id, thread_folder

LONG_ID = "mem-" + "0123456789ab"


def printed(width: int, columns: list[Column]) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    render.listing(console, columns)
    return out.getvalue().splitlines()


def test_a_listing_fits_80_columns_without_cutting_ids_or_dates() -> None:
    keys = [LONG_ID, "mem-fedcba987654"]
    text = ["I prefer conservative positions " * 20, "line one\nline two\n\nline three"]
    lines = printed(
        80,
        [
            Column("key", keys),
            Column("importance", ["8", "5"], drop=2, right=True),
            Column("about", ["risk tolerance " * 3, ""], drop=3),
            Column("updated (UTC)", ["2026-12-01 00:06:37"] * 2, drop=1),
            Column("text", text, elastic=True, min_width=30),
        ],
    )
    assert len(lines) == 3  # a header and one line per item, newlines in the text included
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[1].startswith(LONG_ID + "  ") and lines[2].startswith("mem-fedcba987654  ")
    assert all("2026-12-01 00:06:37" in line for line in lines[1:])
    assert "about" not in lines[0]  # dropped first: the widest optional column
    assert lines[1].endswith("…")
    assert "line one line two line three" in lines[2]


def test_a_listing_never_cuts_an_id_wider_than_the_screen() -> None:
    huge = "t-" + "x" * 100
    lines = printed(40, [Column("thread", [huge]), Column("query", ["q" * 50], elastic=True)])
    assert huge in lines[1]


def test_a_wide_console_shows_every_column() -> None:
    lines = printed(
        200, [Column("a", ["1"]), Column("b", ["2"], drop=5), Column("c", ["3"], drop=1)]
    )
    assert lines[0].split() == ["a", "b", "c"]


def test_empty_optional_columns_are_left_out() -> None:
    lines = printed(80, [Column("a", ["1"]), Column("episode", [""], drop=1)])
    assert lines[0].split() == ["a"]


@pytest.mark.parametrize(
    ("count", "text"), [(0, "(0 findings)"), (1, "(1 finding)"), (2, "(2 findings)")]
)
def test_the_critic_progress_line_counts_findings_in_good_english(count: int, text: str) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    finding = {"severity": "info", "message": "m"}
    render.progress(
        console, "critic", {"critique": {"verdict": "pass", "findings": [finding] * count}}
    )
    assert text in out.getvalue()


@pytest.mark.parametrize(
    "bad", ["", "   ", "..", ".", "a/b", "../escape", "a\\b", " padded", "tab\there", "x" * 129]
)
def test_thread_ids_that_could_name_a_path_or_nothing_are_refused(bad: str) -> None:
    with pytest.raises(InvalidThreadIdError) as refused:
        check_thread_id(bad)
    assert refused.value.exit_code == 2
    assert "thread id" in str(refused.value)


@pytest.mark.parametrize(
    "good", ["T", "my-nvda", "t-0123456789", "a_b", "a.b", "ünïcode", "x" * 128]
)
def test_ordinary_thread_ids_are_accepted(good: str) -> None:
    assert check_thread_id(good) == good


def test_every_thread_id_gets_its_own_safe_folder(tmp_path: Path) -> None:
    ids = ["a/b", "a_b", "a%2Fb", "..", ".", ".hidden", "%2Ehidden", "", "x" * 300, "x" * 301]
    ids += ["é" * 128, "a\\b", "%~empty", "A", "a"]
    names = [thread_folder(i) for i in ids]
    assert len(set(names)) == len(ids), names
    for name in names:
        assert name not in ("", ".", "..") and not name.startswith(".")
        assert "/" not in name and "\\" not in name
        assert len(name.encode()) <= 255
        folder = (tmp_path / name).resolve()
        assert folder.parent == tmp_path.resolve()
    assert thread_folder("my-nvda") == "my-nvda"  # ordinary ids keep their name


def test_a_model_flag_that_cannot_be_honoured_is_an_error_naming_the_flag() -> None:
    settings = Settings.from_env({}, model="openai:gpt-4o-mini")
    with pytest.raises(ConfigurationError) as refused:
        resolve_model(settings, flag="--model")
    message = str(refused.value)
    assert message.startswith("--model openai:gpt-4o-mini needs OPENAI_API_KEY or OPENAI_BASE_URL")
    assert "ANALYST_MODEL" not in message
    assert "--model offline" in message
    assert resolve_model(Settings.from_env({}, model="offline"), flag="--model").offline
    with pytest.raises(ConfigurationError, match="--model claude:x is not supported"):
        resolve_model(Settings.from_env({}, model="claude:x"), flag="--model")


def test_size_limits_come_from_settings() -> None:
    settings = Settings.from_env({})
    assert (settings.max_query_chars, settings.max_memory_chars, settings.max_edit_chars) == (
        2000,
        2000,
        100_000,
    )
    tuned = Settings.from_env({"ANALYST_MAX_QUERY_CHARS": "50", "ANALYST_MAX_EDIT_CHARS": "10"})
    assert (tuned.max_query_chars, tuned.max_edit_chars) == (50, 10)
    for bad in ("0", "-1", "2.5", "lots"):
        with pytest.raises(ConfigurationError, match="ANALYST_MAX_MEMORY_CHARS"):
            Settings.from_env({"ANALYST_MAX_MEMORY_CHARS": bad})
