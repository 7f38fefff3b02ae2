"""Markdown documents as data: YAML front matter, and the stat of a file as the index sees it.

Shared by the document store (:mod:`memory.documents`) and its search index
(:mod:`memory.doc_index`), which therefore do not import each other's internals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DocumentStat:
    """A file's identity for incremental indexing: path, modification time and size."""

    path: str
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class RawDocument:
    """A document's exact bytes with the stat taken before they were read."""

    path: str
    data: bytes
    mtime_ns: int
    size: int


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body). No leading ``---`` block, or a block that is not a mapping: ({}, text).

    Raises ValueError if the block is not valid YAML.
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    import yaml

    try:
        meta = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError as e:
        raise ValueError(str(e).replace("\n", " ")) from e
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return {}, text
    return meta, text[match.end() :]


def join_front_matter(metadata: dict[str, Any], body: str) -> str:
    """The inverse of :func:`split_front_matter` (round-trips any body)."""
    if not metadata:
        # A body that itself starts like front matter gets an empty block, so reading it
        # back yields the same body instead of metadata.
        return "---\n{}\n---\n" + body if front_matter_block(body) else body
    import yaml

    head = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True).strip()
    return f"---\n{head}\n---\n{body}"


def front_matter_block(text: str) -> bool:
    """Whether ``text`` starts with a ``---`` front matter block."""
    return _FRONT_MATTER.match(text) is not None


# -- structure -------------------------------------------------------------------------------

#: An ATX heading: its level (the ``#`` run) and its title.
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def outside_fences(text: str) -> Iterator[tuple[str, bool]]:
    """(line, is_code) for each line; code means inside a fenced block."""
    fence: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
            yield line, True
        elif fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= {fence[0]}:
                fence = None
            yield line, True
        else:
            yield line, False


# -- document paths ----------------------------------------------------------------------------


def glob_regex(parts: list[str]) -> re.Pattern[str]:
    """Translate glob segments: ``**`` spans folders, ``*``/``?``/``[...]`` stay in one."""
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment_regex(part) + ("" if last else "/"))
    return re.compile("".join(out))


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = segment[i + 1 : end]
                negate = body.startswith("!")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("^", "\\^")
                out.append(f"[{'^/' if negate else ''}{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)
