"""Issue 23, terminal safety: a request or a memory holding terminal escape sequences or Rich
markup is shown escaped in every listing, never obeyed, through the real ``analyst`` CLI (its
output captured as the terminal would receive it); and the console hook keeps text any printing
site forgot to clean from driving the terminal."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.cli.common import print_json
from agent.cli.terminal import literal, printable, safe_console

pytestmark = pytest.mark.integration

#: Clears the screen, turns text red, sets the window title, a one-byte CSI, a bidi override,
#: and Rich markup.
PAYLOAD = "\x1b[2J\x1b[31mred\x1b]0;pwned\x07\x9b1m[bold red]x[/] \u202eevil"
SHOWN = ("\\x1b[2J\\x1b[31mred\\x1b]0;pwned", "\\x9b1m[bold red]x[/]", "\\u202eevil")
RAW = ("\x1b", "\x9b", "\u202e", "\x07")


def assert_shown_escaped(out: str) -> None:
    for raw in RAW:
        assert raw not in out, repr(out)
    for part in SHOWN:
        assert part in out, repr(out)


def test_a_stored_escape_sequence_is_shown_escaped_in_every_listing(analyst: Any) -> None:
    ran = analyst("run", f"Note that I like {PAYLOAD}", "--thread", "T1")
    assert ran.code == 0, str(ran)
    for raw in RAW:
        assert raw not in ran.out + ran.err
    added = analyst("memory", "add", f"I prefer {PAYLOAD}")
    assert added.code == 0, str(added)

    listings = analyst.many(
        ("threads",),
        ("memories", "list"),
        ("memory", "list"),
        ("memory", "episodes"),
        ("memory", "show"),
        ("show", "T1"),
    )
    for run in listings:
        assert run.code == 0, str(run)
        assert_shown_escaped(run.out)
        for raw in RAW:
            assert raw not in run.err, str(run)

    # JSON keeps the text exact for programs, and escaped for a terminal all the same.
    as_json = analyst("memory", "episodes", "--json")
    assert not any(raw in as_json.out for raw in RAW), as_json.out
    texts = [e["text"] for e in json.loads(as_json.out)["episodes"]]
    assert any(PAYLOAD in text for text in texts), texts


def test_an_error_quoting_a_bad_value_is_plain_text(analyst: Any) -> None:
    refused = analyst("threads", "--user", "[bold red]x[/]\x1b[2J")
    assert refused.refused and refused.code == 2, str(refused)
    assert "'[bold red]x[/]\\x1b[2J'" in refused.err and "\x1b" not in refused.err


def test_a_fact_with_no_value_names_its_key_as_plain_text(analyst: Any) -> None:
    """The "no value" line quotes the key the user typed; Rich markup in it is shown, not obeyed."""
    ran = analyst("facts", "current", "me", "[bold]x[/]")
    assert ran.code == 0, str(ran)
    assert ran.out.strip() == "user:tester.[bold]x[/]: no value", repr(ran.out)


def test_the_console_hook_escapes_what_any_renderable_prints() -> None:
    out = io.StringIO()
    console = safe_console(Console(file=out, force_terminal=True, width=100, highlight=False))
    table = Table("text")
    table.add_row(Text(PAYLOAD))  # a str cell would be markup: text from storage goes as Text
    console.print(table)
    console.print(PAYLOAD, markup=False)
    console.print(f"[bold]{literal(PAYLOAD)}[/]")
    written = out.getvalue()
    # The only escape sequences left are the console's own styles (bold), never the payload's.
    assert "\x1b[2J" not in written and "\x1b]0;" not in written and "\x1b[31m" not in written
    assert "\x9b" not in written and "\u202e" not in written
    assert written.count("[bold red]x[/]") == 3


def test_printable_and_print_json_escape_every_terminal_control(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert printable("a\x1bb\x00c\x7fd\x85e\u2028f") == "a\\x1bb\\x00c\\x7fd\\x85e\\u2028f"
    assert printable("two\nlines\ttab", keep="\n\t") == "two\nlines\ttab"
    assert printable("two\nlines") == "two\\x0alines"
    assert literal("[bold]x[/]") == "\\[bold]x\\[/]"
    print_json({"text": PAYLOAD, "n": [1, 2]}, ensure_ascii=False)
    printed = capsys.readouterr().out
    assert not any(raw in printed for raw in RAW)
    assert json.loads(printed) == {"text": PAYLOAD, "n": [1, 2]}
