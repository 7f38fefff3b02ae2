"""The shape of one numbered schema migration, shared by every tier in the ledger's database.

A :class:`Migration` holds a version, a description and its statements for each backend; its
checksum (whitespace collapsed) is what a database records when it applies it, so an edit of a
released migration is detected. Postgres keeps the tables in :data:`PG_SCHEMA`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

Backend = Literal["sqlite", "postgres"]

#: The Postgres schema that holds the ledger's and the journal's tables.
PG_SCHEMA = "analyst_facts"
#: The acting user of a Postgres transaction, as row-security policies read it.
PG_USER = "current_setting('app.user_id', true)"


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]

    def statements(self, backend: Backend) -> tuple[str, ...]:
        return self.sqlite if backend == "sqlite" else self.postgres

    def checksum(self, backend: Backend) -> str:
        """SHA-256 of the statements with whitespace collapsed (layout edits do not count)."""
        text = "\n;\n".join(" ".join(s.split()) for s in self.statements(backend))
        return hashlib.sha256(text.encode()).hexdigest()
