"""Every command's ``--help`` reads as paragraphs in an 80-column terminal.

The ``analyst`` console script runs in subprocesses with ``COLUMNS=80``, once per command and
subcommand (hidden ones included), listed from the command line the script builds. A help
text fails on a line over 80 columns, or on a sentence broken mid-line: inside a paragraph, a
line that ends without punctuation while the next line's first word would still have fitted
on it (the terminal did not wrap there; a hard line break of the source did).
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from agent.cli.helptext import reflow

pytestmark = pytest.mark.integration

WIDTH = 80
#: Box-drawing characters of Rich's panels (options, arguments, commands).
_PANEL = set("╭╮╰╯│─")


def every_command() -> list[tuple[str, ...]]:
    """The path of every command and group the ``analyst`` script offers."""
    import typer.main

    from agent.cli.app import app

    found: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def broken_lines(text: str, width: int = WIDTH) -> list[str]:
    """The problems of one help text as rendered: lines over ``width``, and lines broken
    where a terminal would not have wrapped them, in the prose and in the panels' cells."""
    lines = text.splitlines()
    problems = [f"over {width} columns: {line!r}" for line in lines if len(line) > width]
    prose = [line.rstrip() for line in lines if not set(line) & _PANEL]
    for line, after in itertools.pairwise(prose):
        item = after.lstrip().startswith(("-", "*", "•"))
        if after.strip() and not item and _unwrapped(line, after, width - 2):
            problems.append(f"broken mid-line: {line!r} / {after!r}")
    # A panel's row and the next line continuing its last cell (indented past the names).
    cells = [line[1:-1] for line in lines if line[:1] == "│" and line[-1:] == "│"]
    for cell, after in itertools.pairwise(cells):
        continues = after.strip() and len(after) - len(after.lstrip()) >= 8
        if continues and _unwrapped(cell.rstrip(), after, len(cell) - 1):
            problems.append(f"broken mid-cell: {cell.strip()!r} / {after.strip()!r}")
    return problems


def _unwrapped(line: str, after: str, room: int) -> bool:
    """Whether ``after`` continues ``line``'s sentence although its first word fitted."""
    if not line.strip():
        return False
    first = after.split()[0]
    ends_sentence = line.endswith((".", ":", ";", "!", "?", ")"))
    return not ends_sentence and first[:1].islower() and len(line) + 1 + len(first) <= room


def test_the_checker_finds_a_sentence_broken_mid_line() -> None:
    rendered = " Each forget cascades to what was derived (facts, summaries, candidates,\n"
    rendered += " memories, their\n vectors and cache rows.\n"
    assert broken_lines(rendered) == [
        "broken mid-line: ' memories, their' / ' vectors and cache rows.'"
    ]
    assert broken_lines(" " + "x" * 80 + "\n")  # too wide
    panel = "│ resume   Continue a thread from its last checkpoint, or               │\n"
    panel += "│          answer the question it is paused on.                         │\n"
    assert broken_lines(panel) == [
        "broken mid-cell: 'resume   Continue a thread from its last checkpoint, or' / "
        "'answer the question it is paused on.'"
    ]


def test_reflow_joins_paragraph_lines_and_keeps_lists_and_examples() -> None:
    doc = """First line
    goes on.

    A paragraph wrapped
    in the source.

    Examples:
      analyst run "Analyze NVDA"
      analyst approve T

    - one item
      continued
    - two
    """
    assert reflow(doc) == (
        "First line goes on.\n\nA paragraph wrapped in the source.\n\n"
        'Examples:\n  analyst run "Analyze NVDA"\n  analyst approve T\n\n'
        "- one item continued\n- two"
    )


def test_every_commands_help_reads_as_paragraphs_at_80_columns(analyst: Any) -> None:
    narrow = replace(analyst, env={**analyst.env, "COLUMNS": str(WIDTH)})
    commands = every_command()
    assert ("memory", "forget") in commands and ("resume",) in commands
    runs = narrow.many(*[(*path, "--help") for path in commands])
    problems: dict[str, list[str]] = {}
    for path, run in zip(commands, runs, strict=True):
        assert run.code == 0 and "Usage: analyst" in run.out, str(run)
        if found := broken_lines(run.out):
            problems[" ".join(("analyst", *path))] = found
    assert problems == {}
