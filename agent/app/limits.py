"""The size limits of what a user sends: a request, an edit, a memory."""

from __future__ import annotations

from agent.errors import AnalystError


def within_limit(
    text: str, limit: int, what: str, variable: str, error: type[AnalystError]
) -> None:
    """Refuse ``text`` longer than ``limit`` characters with ``error``, naming the setting: an
    oversized request would bloat every checkpoint, listing and prompt it reaches."""
    if len(text) > limit:
        raise error(
            f"The {what} is {len(text):,} characters long; the limit is {limit:,} "
            f"({variable}). Shorten it, or raise {variable}."
        )
