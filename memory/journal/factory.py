"""Open the memory journal from the fact ledger's URL (``ANALYST_FACTS``).

The journal lives in the fact ledger's database, so it takes the same URLs:

- ``sqlite:///relative/path.sqlite``, ``sqlite:////absolute/path.sqlite`` (or
  ``sqlite:///:memory:``) -- the ledger's file; it is created and migrated on open, so
  whichever of the journal and the fact store opens a fresh file first creates the schema.
- ``postgresql://user@host:port/db`` (or ``postgres://``) -- connects as the application role;
  the owner must have run ``analyst facts setup --app-role <role>`` with this analyst's
  migrations (the journal's tables arrive with migration 5).

Anything else is an :class:`~memory.errors.UnsupportedBackendError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from memory.errors import MissingDependencyError
from memory.identity import Principal
from memory.journal.base import Journal
from memory.sql.connect import ledger_path
from memory.urls import backend_for


def _postgres_backend() -> Any:
    try:
        import memory.journal.postgres as postgres
    except ImportError as e:
        raise MissingDependencyError(
            "The Postgres memory journal", "psycopg[binary,pool]", "postgres"
        ) from e
    return postgres


@asynccontextmanager
async def open_journal(
    url: str, principal: Principal | None = None, *, server: bool = False, **options: Any
) -> AsyncIterator[Journal]:
    """Open the journal at ``url`` (the fact ledger's URL) for ``principal``.

    ``principal`` may be omitted when a caller serves many principals; then use
    ``journal.with_principal(p)`` per request. ``server`` is accepted for symmetry with
    :func:`memory.facts.open_fact_store`: the journal never blocks an event loop on either
    backend (SQLite calls always run on a worker thread). ``options`` go to the backend:
    ``clock``, ``audit_key``, ``cipher`` (a :class:`~memory.sealing.MemoryCipher`: content
    sealed at rest); for Postgres also ``min_size``, ``max_size`` and ``connect_timeout``.
    """
    del server  # both backends are safe on an API server's loop already
    if backend_for("fact ledger", url) == "sqlite":
        from memory.journal.sqlite import SqliteJournal

        async with SqliteJournal.open(ledger_path(url), principal, **options) as journal:
            yield journal
        return
    backend = _postgres_backend()
    async with backend.PostgresJournal.open(url, principal, **options) as pg_journal:
        yield pg_journal
