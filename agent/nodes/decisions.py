"""Human decisions at the approval point: validation and binding to one exact draft.

A decision is a dict (it crosses process boundaries: CLI, scripts, the LangGraph API) with an
action, the hash of the draft it answers, and who decided. :func:`validate_decision` is the one
gate: the application calls it before resuming a thread (to give the caller a precise error)
and the approval node calls it again (so a decision sent straight through the API is held to
the same rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from agent.errors import InvalidDecisionError, StaleDraftError
from agent.state import Decision, Draft

ACTIONS = ("approve", "reject", "edit")
MAX_EDIT_BYTES = 500_000
MIN_HASH_PREFIX = 8


def validate_decision(
    raw: Any, draft: Draft, *, thread_id: str, now: datetime, approver: str | None = None
) -> Decision:
    """``raw`` as a :class:`Decision` on ``draft``, or the error saying why it is refused.

    ``approver``, when given, is who decided as the caller's authentication established it
    (the API server's user): it is recorded whatever the decision names. Without it the
    decision names its approver (the CLI's ``--as``, defaulting to the user)."""
    if not isinstance(raw, Mapping):
        raise InvalidDecisionError(
            f"A decision must be an object with action, draft_hash and approver; got {raw!r}."
        )
    action = raw.get("action")
    if action not in ACTIONS:
        raise InvalidDecisionError(
            f"Unknown decision action {action!r}; use one of: {', '.join(ACTIONS)}."
        )
    given = str(raw.get("draft_hash") or "")
    if not given:
        raise InvalidDecisionError(
            "The decision does not say which draft it answers (draft_hash is missing)."
        )
    if len(given) < MIN_HASH_PREFIX:
        raise InvalidDecisionError(
            f"Draft hash '{given}' is too short to identify a draft; give at least "
            f"{MIN_HASH_PREFIX} characters of the hash shown with the draft."
        )
    if not draft["hash"].startswith(given):
        raise StaleDraftError(thread_id, given, draft["hash"])
    approver = approver or str(raw.get("approver") or "").strip()
    if not approver:
        raise InvalidDecisionError("The decision does not say who decided (approver is empty).")
    decided_at = str(raw.get("decided_at") or now.isoformat(timespec="seconds"))
    decision = Decision(
        action=action, draft_hash=draft["hash"], approver=approver, decided_at=decided_at
    )
    if action == "reject":
        feedback = str(raw.get("feedback") or "").strip()
        if not feedback:
            raise InvalidDecisionError(
                'A rejection needs feedback for the next revision: --feedback "what to change".'
            )
        decision["feedback"] = feedback
    if action == "edit":
        text = str(raw.get("text") or "")
        if not text.strip():
            raise InvalidDecisionError("The edited report is empty; nothing to publish.")
        if len(text.encode("utf-8")) > MAX_EDIT_BYTES:
            raise InvalidDecisionError(
                f"The edited report is over {MAX_EDIT_BYTES} bytes; shorten it."
            )
        decision["text"] = text if text.endswith("\n") else text + "\n"
    return decision
