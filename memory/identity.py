"""Identity: the principal every memory operation is scoped by.

A :class:`Principal` (tenant, user) is established once per process or request by the
application (the CLI from ``--tenant``/``--user`` and the environment, the API server from the
run context) and handed down. Storage scopes every read and write by it; a thread id, a key
or anything a model produced grants nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """Who is acting: established by the CLI or the server, never by model output."""

    tenant_id: str
    user_id: str
