"""Scan raw bytes: is a forgotten text anywhere in a data folder's files (SQLite files with
their WAL, the Qdrant Edge folder, caches)? Used by the forget and account-deletion tests."""

from __future__ import annotations

from pathlib import Path


def raw_hits(folder: Path, needle: str) -> list[str]:
    """Files under ``folder`` whose bytes contain ``needle`` (any case; UTF-8 or UTF-16)."""
    forms = {needle.encode(), needle.lower().encode(), needle.encode("utf-16-le")}
    hits = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if any(form in data or form in data.lower() for form in forms):
                hits.append(str(path.relative_to(folder)))
    return hits
