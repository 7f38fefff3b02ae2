"""HTML built so stored text cannot become markup: every string is escaped unless it is
:class:`Html`, and only this module's builders make :class:`Html`.

There is no template engine in the project's dependencies; these few builders play its
autoescaping part. A page is made of :func:`tag` calls, whose text children and attribute
values are escaped (``html.escape`` with quotes), so a memory holding ``<script>`` is shown
as those characters. :func:`raw` is for the module's own constant markup only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

__all__ = ["Html", "join", "raw", "tag", "text"]

#: Elements with no closing tag.
_VOID = frozenset({"br", "hr", "input", "meta", "link", "img"})


class Html(str):
    """Markup that is safe to send as it is (built here from escaped parts)."""

    __slots__ = ()


def raw(markup: str) -> Html:
    """Constant markup written in this package (never stored or typed text)."""
    return Html(markup)


def text(value: Any) -> Html:
    """Any value as escaped text (``None`` is empty)."""
    if isinstance(value, Html):
        return value
    return Html(escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[Any], sep: str = "") -> Html:
    """Parts (markup or text to escape) one after the other."""
    return Html(escape(sep).join(text(p) for p in parts))


def _attrs(attrs: Mapping[str, Any]) -> str:
    out = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        out.append(f" {name}" if value is True else f' {name}="{text(value)}"')
    return "".join(out)


def tag(name: str, attrs: Mapping[str, Any] | None = None, *children: Any) -> Html:
    """``<name attrs>children</name>``: attribute values and text children escaped;
    a child that is a list or tuple is joined; ``None`` children are left out."""
    flat: list[Any] = []
    for child in children:
        if isinstance(child, list | tuple):
            flat.extend(c for c in child if c is not None)
        elif child is not None:
            flat.append(child)
    opening = f"<{name}{_attrs(attrs or {})}>"
    if name in _VOID:
        return Html(opening)
    return Html(f"{opening}{join(flat)}</{name}>")
