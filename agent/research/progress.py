"""The run log in ``PROGRESS.md``: one dated line per finished run, for the next person.

:func:`update_progress` appends one line under ``## Log`` atomically and under the document
store's lock (concurrent runs do not lose entries), leaving everything above the heading as
people wrote it; a ``key`` makes the append idempotent (a retried run logs once).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memory.markdown import HEADING, outside_fences

if TYPE_CHECKING:
    from pathlib import Path

    from memory.documents import FileMemory

PROGRESS_PATH = "PROGRESS.md"
LOG_HEADING = "## Log"

PROGRESS_TEMPLATE = """# Progress — handoff between runs

What was done, what is next. The part above "## Log" is written by people; the analyst
appends one line per finished run under "## Log" and never rewrites anything above it.

## Done

## Next

## Log

"""

_LOG_ENTRY = re.compile(r"^- \d{4}-\d{2}-\d{2} ")


def update_progress(
    documents: FileMemory,
    entry: str,
    *,
    when: datetime | None = None,
    key: str | None = None,
    keep: int = 200,
) -> Path:
    """Append ``- <UTC date time> — <entry>`` under ``## Log`` in PROGRESS.md.

    The entry is flattened to one line. With ``key``, an entry with the same key already in
    the log makes this a no-op (a retried run logs once). Only the newest ``keep`` log
    entries are kept; text people wrote anywhere else in the file is left as it is.
    """
    stamp = (when or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    line = f"- {stamp} — {' '.join(entry.split())}"
    marker = None
    if key is not None:
        marker = f"<!-- run:{' '.join(key.split()).replace('--', '-')} -->"
        line = f"{line} {marker}"

    def change(current: str | None) -> str:
        text = current if current is not None else PROGRESS_TEMPLATE
        if marker is not None and marker in text:
            return text
        return _append_log(text, line, keep)

    return documents.update(PROGRESS_PATH, change)


def _append_log(text: str, line: str, keep: int) -> str:
    lines = text.splitlines()
    start = next(
        (
            i
            for i, (row, code) in enumerate(outside_fences(text))
            if not code and row.strip().casefold() == LOG_HEADING.casefold()
        ),
        None,
    )
    if start is None:
        body = text.rstrip("\n")
        return f"{body}\n\n{LOG_HEADING}\n\n{line}\n" if body else f"{LOG_HEADING}\n\n{line}\n"
    end = next(
        (
            j
            for j in range(start + 1, len(lines))
            if (m := HEADING.match(lines[j])) and len(m.group(1)) <= 2
        ),
        len(lines),
    )
    section = lines[start + 1 : end]
    while section and not section[-1].strip():
        section.pop()
    section.append(line)
    entries = [i for i, row in enumerate(section) if _LOG_ENTRY.match(row)]
    drop = set(entries[: max(0, len(entries) - keep)])
    section = [row for i, row in enumerate(section) if i not in drop]
    if section and section[0].strip():
        section.insert(0, "")
    rest = lines[end:]
    out = [*lines[:start], lines[start], *section]
    if rest:
        out += ["", *rest]
    return "\n".join(out) + "\n"
