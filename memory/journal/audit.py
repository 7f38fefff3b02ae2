"""The memory audit's keyed hash: what an audit entry holds instead of content.

An :class:`~memory.journal.records.AuditEntry` names items by id and content only as
``HMAC-SHA256(key, content)`` (hex). The key is the database's own secret (``memory_secrets``,
migration 6) unless ``ANALYST_AUDIT_KEY`` (16+ characters, never stored) replaces it; the
trade-off is in ``docs/memory-lifecycle.md`` (The memory audit's key).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from memory.errors import JournalError

#: The name of the audit key in ``memory_secrets``.
AUDIT_SECRET = "audit"
#: The shortest ``ANALYST_AUDIT_KEY`` accepted.
MIN_KEY_CHARS = 16


def audit_key(value: str | bytes) -> bytes:
    """An explicit audit key (``ANALYST_AUDIT_KEY``) as bytes; too short a key is refused."""
    key = value.encode() if isinstance(value, str) else bytes(value)
    if len(key) < MIN_KEY_CHARS:
        raise JournalError(
            f"The audit key (ANALYST_AUDIT_KEY) has {len(key)} characters; use at least "
            f"{MIN_KEY_CHARS}, e.g. the output of: python -c 'import secrets; "
            "print(secrets.token_hex(32))'"
        )
    return key


def keyed_hash(key: bytes, content: Any) -> str:
    """HMAC-SHA256 of ``content`` (a string as it is; anything else as canonical JSON), hex."""
    if isinstance(content, str):
        text = content
    else:
        text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
