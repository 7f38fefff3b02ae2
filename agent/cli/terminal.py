"""Terminal safety: text from storage or from a user is shown on the terminal, never obeyed.

A request, a memory, a fact value or a document can hold bytes a terminal acts on: an escape
sequence clears the screen (``\\x1b[2J``), recolours it (``\\x1b[31m``) or sets the window title
(``\\x1b]0;...\\x07``); a bidi override reorders what is read. Text like ``[bold red]`` is Rich
markup when it reaches ``console.print`` as part of a markup string.

- :func:`printable` shows every such character escaped, as Python writes it (``\\x1b[2J`` is
  printed as the six characters ``\\x1b[2J``): nothing is obeyed and nothing is hidden from
  the reader, who can see that the stored text holds a control sequence.
- :func:`literal` is :func:`printable` plus Rich markup escaping, for a value placed inside a
  markup string (``console.print(f"[bold]{literal(name)}[/]")``).
- :class:`Printable`, a Rich render hook the CLI's consoles carry
  (:func:`agent.cli.common.console`), applies :func:`printable` to every text segment a
  console writes, whatever the renderable (tables, panels, Markdown), so a printing site that
  forgot to clean its text still cannot drive the terminal. Listings clean their cells
  themselves first, so their widths are measured on what is shown.

JSON output (``--json``) is for programs: ``json.dumps`` already escapes C0 characters, and
:func:`agent.cli.common.print_json` escapes the rest of what :func:`printable` escapes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.console import RenderHook
from rich.markup import escape
from rich.segment import Segment

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderResult

#: What a terminal may act on instead of showing: C0 controls, DEL, C1 controls (``\x9b`` is
#: a one-byte CSI), the bidi embeddings, overrides, isolates and marks, and the line and
#: paragraph separators.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, keep: str = "") -> str:
    """``text`` (made a string) with every character in :data:`UNSAFE` shown escaped
    (``\\x1b``, ``\\u202e``); characters in ``keep`` (``"\\n"`` for text shown on several
    lines) stay as they are."""
    value = str(text)
    if keep:
        return UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escaped(m), value)
    return UNSAFE.sub(_escaped, value)


def literal(text: object) -> str:
    """``text`` for a place inside a Rich markup string: control characters escaped
    (:func:`printable`) and markup escaped (``[bold]`` is shown, not applied)."""
    return escape(printable(text))


def say(*parts: object) -> None:
    """``print`` for plain lines that may carry stored or user text (a path, a query, a
    refused line's reason): each part :func:`printable`, line breaks and tabs kept."""
    print(*(printable(part, keep="\n\t") for part in parts))


class _Escaped:
    """A renderable whose text segments are :func:`printable` (control segments, the cursor
    moves Rich itself makes, are kept)."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control or not UNSAFE.search(segment.text):
                yield segment
            else:
                yield Segment(printable(segment.text, keep="\n\t"), segment.style)


class Printable(RenderHook):
    """The render hook that makes everything a console prints :func:`printable`."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Escaped(r) for r in renderables]


def safe_console(console: Console) -> Console:
    """``console`` carrying the :class:`Printable` hook (returned for chaining)."""
    console.push_render_hook(Printable())
    return console
