"""Open the fact ledger from a URL (``ANALYST_FACTS``).

``open_fact_store(url, principal)`` is an async context manager that owns the connections and
yields a ready :class:`FactStore`:

- ``sqlite:///relative/path.sqlite``, ``sqlite:////absolute/path.sqlite`` (or
  ``sqlite:///:memory:``) -- the embedded default; the file is created and migrated on open.
- ``postgresql://user@host:port/db`` (or ``postgres://``) -- connects as an application role
  that cannot bypass row-level security; the schema must have been set up beforehand by the
  owner with :func:`setup_fact_store` (``analyst facts setup``).

Anything else is an :class:`UnsupportedBackendError`. ``principal`` may be omitted when a
caller serves many principals; then use ``store.with_principal(p)`` per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memory.errors import ConfigurationError, MissingDependencyError
from memory.facts.base import FactStore
from memory.identity import Principal
from memory.sql.connect import ledger_path
from memory.urls import backend_for, examples

SCHEMES = examples("fact ledger")


def _postgres_backend() -> Any:
    try:
        import memory.facts.postgres as postgres
    except ImportError as e:
        raise MissingDependencyError(
            "The Postgres fact ledger", "psycopg[binary,pool]", "postgres"
        ) from e
    return postgres


@asynccontextmanager
async def open_fact_store(
    url: str, principal: Principal | None = None, *, server: bool = False, **options: Any
) -> AsyncIterator[FactStore]:
    """Open the ledger at ``url`` for ``principal``.

    ``server``: the ledger serves an API server's event loop, which must never block (SQLite
    reads then run on a worker thread; Postgres is asynchronous either way).
    ``options`` go to the store: ``policy`` (a :class:`ConflictPolicy`, default reject),
    ``source_ranks``, ``clock``, ``max_attempts``, ``cipher`` (a
    :class:`~memory.sealing.MemoryCipher`: values sealed at rest); for Postgres also ``min_size``,
    ``max_size`` and ``connect_timeout``.
    """
    if backend_for("fact ledger", url) == "sqlite":
        from memory.facts.sqlite import SqliteFactStore

        async with SqliteFactStore.open(
            ledger_path(url), principal, reads_off_loop=server, **options
        ) as store:
            yield store
        return
    backend = _postgres_backend()
    async with backend.PostgresFactStore.open(url, principal, **options) as pg_store:
        yield pg_store


async def setup_fact_store(
    url: str, *, app_roles: Iterable[str] = (), target: int | None = None
) -> list[int]:
    """Create or upgrade the ledger's schema at ``url``; return the versions applied now.

    For Postgres, ``url`` names the owner (or a superuser), and each of ``app_roles`` is
    granted access after a check that it cannot bypass row-level security. SQLite migrates on
    every open, so this only makes that explicit.
    """
    roles = list(app_roles)
    if backend_for("fact ledger", url) == "sqlite":
        if roles:
            raise ConfigurationError(
                "Application roles apply to a Postgres fact ledger only; drop --app-role for "
                f"{url}."
            )
        from memory.facts.migrations import migrate_sqlite

        if target is not None:
            import aiosqlite

            path = Path(ledger_path(url))
            path.parent.mkdir(parents=True, exist_ok=True)
            async with aiosqlite.connect(str(path), isolation_level=None) as conn:
                return await migrate_sqlite(conn, where=str(path), target=target)
        from memory.facts.sqlite import SqliteFactStore

        async with SqliteFactStore.open(ledger_path(url)) as store:
            return store.applied_migrations
    applied: list[int] = await _postgres_backend().setup_postgres(
        url, app_roles=roles, target=target
    )
    return applied
