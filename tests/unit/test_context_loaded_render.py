"""The chat's first-turn line about memory: never "Nothing remembered yet." above a plan
that used a recalled memory."""

from __future__ import annotations

from rich.console import Console

from agent.cli import render

EMPTY = {"profile": {}, "procedures": [], "sessions": [], "open_items": [], "tokens": 0}


def shown(*args: object) -> str:
    console = Console(record=True, width=100)
    render.context_loaded(console, *args)  # type: ignore[arg-type]
    return console.export_text()


def test_an_empty_session_start_with_a_recalled_memory_says_what_was_recalled() -> None:
    assert shown(EMPTY) == "Nothing remembered yet.\n"
    assert shown(EMPTY, ["k1"]) == "Recalled for this request: 1 memory (k1).\n"
    assert "Nothing remembered" not in shown(EMPTY, ["k1", "k2"])
