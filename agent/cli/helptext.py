"""Command help as paragraphs: docstrings' hard line breaks removed before Typer renders them.

Typer's Rich help keeps every newline of a command's help text after its first paragraph, so
a docstring wrapped at 100 columns in the source breaks its sentences mid-line in an 80-column
terminal. :func:`reflow_commands` rewrites the help of every command and group once, where
:func:`agent.cli.common.run` builds the command line: a blank line separates paragraphs, and
the lines of a paragraph are joined for the terminal to wrap, except where the layout is the
point (a list, an indented example, a block marked with click's ``\\b``), whose lines stay.

Only the standard library is imported (``analyst --help`` stays fast).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

#: A line that starts a list item: ``- x``, ``* x``, ``• x``, ``1. x``, ``2) x``.
_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s+\S")


def reflow(text: str) -> str:
    """``text`` (a docstring or a help string) with each paragraph's lines joined by single
    spaces. A paragraph with a list item or an indented line keeps its lines, a list item's
    indented continuation lines joined to it; a paragraph starting with ``\\b`` is kept as it
    is; whatever follows a ``\\f`` line (click's "help ends here") is dropped."""
    text = inspect.cleandoc(text).partition("\f")[0]
    paragraphs = re.split(r"\n[ \t]*\n", text.strip("\n"))
    return "\n\n".join(_paragraph(p) for p in paragraphs if p.strip())


def _paragraph(paragraph: str) -> str:
    lines = paragraph.splitlines()
    if lines[0].startswith("\b"):
        return paragraph
    if not any(_ITEM.match(line) or line[:1].isspace() for line in lines):
        return " ".join(line.strip() for line in lines)
    kept: list[str] = []
    in_item = False
    for line in lines:
        if _ITEM.match(line):
            kept.append(line.rstrip())
            in_item = True
        elif in_item and line[:1].isspace() and not _ITEM.match(line.lstrip()):
            kept[-1] += " " + line.strip()  # a list item's wrapped continuation
        else:
            kept.append(line.rstrip())
            in_item = False
    return "\n".join(kept)


def reflow_commands(command: Any) -> Any:
    """Reflow the help of ``command`` (a click command, as Typer builds it) and of every
    command under it; ``command`` itself, for chaining."""
    if command.help:
        command.help = reflow(command.help)
    for sub in getattr(command, "commands", {}).values():
        reflow_commands(sub)
    return command
