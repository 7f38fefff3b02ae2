"""Numbered schema migrations of the ledger's database and the one runner that applies them.

A :class:`Migration` holds a version, a description and its statements for each backend; its
checksum (whitespace collapsed) is what a database records when it applies it. The runners
take the whole ordered list (:data:`memory.facts.migrations.MIGRATIONS`): each applies the
pending versions in one transaction and records them in a bookkeeping table (SQLite
``fact_migrations``, Postgres ``analyst_facts.migrations``); a record that disagrees with the
list (an edited migration, a version this code does not know, a gap) is a
:class:`~memory.errors.FactLedgerSchemaError`. Postgres keeps the tables in :data:`PG_SCHEMA`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memory.errors import FactLedgerSchemaError, UnsafeDatabaseRoleError

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite
    import psycopg

Backend = Literal["sqlite", "postgres"]

#: The Postgres schema that holds the ledger's and the journal's tables.
PG_SCHEMA = "analyst_facts"
#: The acting user of a Postgres transaction, as row-security policies read it.
PG_USER = "current_setting('app.user_id', true)"
#: Advisory lock taken by the Postgres runner so two setups cannot interleave.
PG_MIGRATION_LOCK = 0x616E_6C66_6D69_67  # "anlfmig"


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


def check_applied(
    applied: Iterable[Sequence[Any]],
    migrations: Sequence[Migration],
    backend: Backend,
    where: str,
) -> int:
    """Validate the (version, checksum) rows a database recorded; return its version."""
    known = {m.version: m for m in migrations}
    latest = migrations[-1].version
    version = 0
    for row in applied:
        number, checksum = int(row[0]), str(row[1])
        migration = known.get(number)
        if migration is None:
            raise FactLedgerSchemaError(
                f"The fact ledger at {where} has schema version {number}, newer than this "
                f"analyst knows ({latest}). Upgrade analyst before using this database."
            )
        if migration.checksum(backend) != checksum:
            raise FactLedgerSchemaError(
                f"Migration {number} ('{migration.description}') applied to the fact ledger at "
                f"{where} differs from the one in this code: a released migration was edited. "
                "Restore it and add the change as a new migration."
            )
        if number != version + 1:
            raise FactLedgerSchemaError(
                f"The fact ledger at {where} skipped migrations before version {number}."
            )
        version = number
    return version


def target_version(migrations: Sequence[Migration], target: int | None) -> int:
    """``target`` checked against the list (``None``: its latest version)."""
    latest = migrations[-1].version
    if target is None:
        return latest
    if not 0 <= target <= latest:
        raise ValueError(f"migration target {target} is outside 0..{latest}")
    return target


# -- SQLite ---------------------------------------------------------------------------------

_SQLITE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS fact_migrations (
    version     INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  TEXT NOT NULL
)
"""


def migrate_sqlite_sync(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration],
    *,
    where: str,
    target: int | None = None,
) -> list[int]:
    """Apply pending migrations (up to ``target``) in one IMMEDIATE transaction.

    The connection must be in autocommit mode (``isolation_level=None``). Concurrent openers
    serialize on the write lock; the second finds nothing left to do. Returns the versions
    applied now.
    """
    goal = target_version(migrations, target)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_SQLITE_MIGRATIONS_TABLE)
        rows = conn.execute(
            "SELECT version, checksum FROM fact_migrations ORDER BY version"
        ).fetchall()
        current = check_applied(rows, migrations, "sqlite", where)
        applied: list[int] = []
        for migration in migrations:
            if current < migration.version <= goal:
                for statement in migration.sqlite:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO fact_migrations (version, description, checksum, applied_at)"
                    " VALUES (?, ?, ?, ?)",
                    (
                        migration.version,
                        migration.description,
                        migration.checksum("sqlite"),
                        datetime.now(UTC).isoformat(),
                    ),
                )
                applied.append(migration.version)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied


async def migrate_sqlite(
    conn: aiosqlite.Connection,
    migrations: Sequence[Migration],
    *,
    where: str,
    target: int | None = None,
) -> list[int]:
    """:func:`migrate_sqlite_sync` on an aiosqlite connection's own thread."""
    result: list[int] = await conn._execute(
        migrate_sqlite_sync, conn._conn, migrations, where=where, target=target
    )
    return result


# -- Postgres -------------------------------------------------------------------------------

_PG_MIGRATIONS_TABLE = f"""
CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.migrations (
    version     integer PRIMARY KEY,
    description text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


#: Have the server check, in this transaction, every second while a statement runs or waits,
#: that the client is still there (Postgres 14 on; a no-op on older servers).
_CHECK_CLIENT = (
    "SELECT set_config(name, '1s', true) FROM pg_settings"
    " WHERE name = 'client_connection_check_interval'"
)


async def migrate_postgres(
    conn: psycopg.AsyncConnection[Any],
    migrations: Sequence[Migration],
    *,
    where: str,
    target: int | None = None,
    then: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]] | None = None,
) -> list[int]:
    """Apply pending migrations, then run ``then`` (e.g. the grants), in one transaction
    under :data:`PG_MIGRATION_LOCK`. Run as the tables' owner (or a superuser). Returns the
    versions applied now. If the client dies, the server rolls it all back within a second
    or so, even mid-statement (``client_connection_check_interval``)."""
    goal = target_version(migrations, target)
    async with conn.transaction():
        # A server notices a vanished client only when it next reads from it: a migration
        # killed mid-statement would keep rewriting (or waiting on a lock) and hold the
        # ledger's locks until the statement ends. Checked each second, it rolls back then.
        await conn.execute(_CHECK_CLIENT)
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_MIGRATION_LOCK,))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
        await conn.execute(_PG_MIGRATIONS_TABLE)
        cursor = await conn.execute(
            f"SELECT version, checksum FROM {PG_SCHEMA}.migrations ORDER BY version"
        )
        current = check_applied(await cursor.fetchall(), migrations, "postgres", where)
        applied: list[int] = []
        for migration in migrations:
            if current < migration.version <= goal:
                for statement in migration.postgres:
                    await conn.execute(statement)
                await conn.execute(
                    f"INSERT INTO {PG_SCHEMA}.migrations (version, description, checksum)"
                    " VALUES (%s, %s, %s)",
                    (migration.version, migration.description, migration.checksum("postgres")),
                )
                applied.append(migration.version)
        if then is not None:
            await then(conn)
    return applied


async def postgres_version(
    conn: psycopg.AsyncConnection[Any], migrations: Sequence[Migration], *, where: str
) -> int:
    """The applied version as the connected role sees it; checksums verified."""
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.migrations",))
    row = await cursor.fetchone()
    if row is None or row[0] is None:
        return 0
    cursor = await conn.execute(
        f"SELECT version, checksum FROM {PG_SCHEMA}.migrations ORDER BY version"
    )
    return check_applied(await cursor.fetchall(), migrations, "postgres", where)


async def refuse_unsafe_role(conn: psycopg.AsyncConnection[Any], *, what: str, where: str) -> str:
    """The connected role's name; :class:`~memory.errors.UnsafeDatabaseRoleError` if it is a
    superuser or bypasses row-level security (then nothing would separate tenants and users)."""
    cursor = await conn.execute(
        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
    )
    row = await cursor.fetchone()
    assert row is not None
    user, superuser, bypass = row
    if superuser or bypass:
        raise UnsafeDatabaseRoleError(
            f"The {what} at {where} connects as '{user}', which is "
            f"{'a superuser' if superuser else 'BYPASSRLS'}: row-level security would not "
            "separate tenants and users. Create an application role (CREATE ROLE analyst_app "
            "LOGIN NOSUPERUSER NOBYPASSRLS), run `analyst facts setup --app-role analyst_app` "
            "with ANALYST_FACTS pointing at the owner, then point ANALYST_FACTS at analyst_app."
        )
    return str(user)
