"""The memory audit's keyed hash: what an audit entry holds instead of content.

An :class:`~memory.journal.records.AuditEntry` names the items an operation touched by id and
the content itself only as ``HMAC-SHA256(key, content)`` (hex). Content is never stored in
the audit, so forgetting an item leaves nothing of it there; yet whoever holds the key can
check whether a given text was written, read or deleted (and the forget flow's tombstones can
use the same hash).

The key, by choice:

- **Default: a per-database secret.** Migration 6 creates ``memory_secrets`` with 32 random
  bytes (SQLite ``randomblob``; Postgres ``gen_random_uuid``, hashed) under the name ``audit``.
  Nothing to configure, and hashes are comparable for the life of the database (a backup
  carries its key). The limit: anyone who can read the database can read the key too, and so
  test guesses of a short value (a currency code) against a hash.
- **``ANALYST_AUDIT_KEY``** (at least 16 characters), when set, is used instead and never
  stored; a copy of the database alone then confirms no guess. Changing it makes earlier
  hashes incomparable with later ones (nothing else breaks).

The application role may read ``memory_secrets`` but never change it (triggers refuse any
UPDATE or DELETE of a key, so stored hashes keep their meaning).
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
