"""Append-only, numbered schema migrations of the ledger's database, for SQLite and Postgres.

A released migration is never edited or removed -- a change is a new entry at the end of
:data:`MIGRATIONS`. Versions 1 to 4 are in :mod:`memory.facts.first_migrations`; versions 5,
6 and 8 are the journal's own (:mod:`memory.journal.migrations`), run here at their positions.
The functions below bind the one runner (:mod:`memory.sql.migrations`) to this list; what each
version does is in ``docs/memory-lifecycle.md`` (Schema migrations). The Postgres runner
connects as the tables' owner (or a superuser); the application role only reads the migrations
table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import memory.journal.migrations as journal_migrations
import memory.sql.migrations as runner
from memory.errors import FactLedgerSchemaError, UnsafeDatabaseRoleError
from memory.facts.first_migrations import (
    FIRST_VERSIONS,
    PG_FACTS,
    PG_GRANTS,
    sqlite_neighbour_trigger,
)
from memory.journal.migrations import AUDIT, EPISODES, TOMBSTONES
from memory.sql.migrations import PG_SCHEMA, PG_USER, Backend, Migration

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite
    import psycopg

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Backend",
    "Migration",
    "check_applied",
    "grant_app_role",
    "migrate_postgres",
    "migrate_sqlite",
    "migrate_sqlite_sync",
    "postgres_version",
]


#: An update that only shrinks an active fact's interval at its end (same key and start, not
#: withdrawn before, an end no later than before): it cannot create an overlap.
_SHRINKS = """ AND NOT (
        OLD.withdrawn_at IS NULL AND NEW.tenant_id = OLD.tenant_id
        AND NEW.subject = OLD.subject AND NEW.attribute = OLD.attribute
        AND NEW.valid_from = OLD.valid_from AND NEW.valid_to IS NOT NULL
        AND (OLD.valid_to IS NULL OR NEW.valid_to <= OLD.valid_to)
    )"""


def _sqlite_one_seek_trigger(name: str, event: str) -> str:
    """The overlap guard as one seek: the key's active row starting last before the row's end.

    Active intervals of a key never overlap (this guard keeps it so), so the row overlaps one
    iff it overlaps that one: it starts inside the row, or before it and ends after the row's
    start (every earlier one ends no later than that one starts). One ``ORDER BY valid_from
    DESC LIMIT 1`` on ``facts_one_start`` instead of the neighbour guard's two; the row's end
    bounds the seek only when it has one (no sentinel stands for "open").
    """
    key = (
        "f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute"
        " AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id"
    )
    overlaps = "f.valid_from >= NEW.valid_from OR f.valid_to IS NULL OR f.valid_to > NEW.valid_from"
    last = f"SELECT {overlaps} FROM facts f WHERE {key}{{end}} ORDER BY f.valid_from DESC LIMIT 1"
    return f"""
    CREATE TRIGGER {name} BEFORE {event} ON facts
    WHEN NEW.withdrawn_at IS NULL AND CASE WHEN NEW.valid_to IS NULL
        THEN ({last.format(end="")})
        ELSE ({last.format(end=" AND f.valid_from < NEW.valid_to")})
    END
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """


#: Whether the acting user is the admin of the session's tenant: a subquery on constants,
#: run once a statement (migration 13). The admin grant's user is never empty.
_ACTING_ADMIN = f"(SELECT {PG_SCHEMA}.is_admin(current_setting('app.tenant_id', true)))"
#: may_write's rule with the admin's case decided once a statement: an admin writes any
#: shared subject and its own, and another user's only as a withdrawn inference.
_MAY_WRITE = f"""CASE WHEN {_ACTING_ADMIN} THEN
                subject = 'user:' || {PG_USER}
                OR NOT starts_with(subject, 'user:')
                OR (source = 'inferred' AND withdrawn_at IS NOT NULL)
            ELSE {PG_SCHEMA}.may_write(tenant_id, subject, source, withdrawn_at) END"""

MIGRATIONS: tuple[Migration, ...] = (
    *FIRST_VERSIONS,
    EPISODES,  # the journal's
    AUDIT,  # the journal's
    Migration(
        version=7,
        description="account deletion: a user deletes the facts about itself and its grants",
        sqlite=("SELECT 1",),
        postgres=(
            f"""
            CREATE POLICY facts_delete_authority ON {PG_FACTS} AS RESTRICTIVE FOR DELETE
            USING (subject = 'user:' || {PG_USER} OR {PG_SCHEMA}.is_admin(tenant_id))
            """,
            f"""
            CREATE POLICY grants_delete_own ON {PG_GRANTS} FOR DELETE
            USING (
                tenant_id = current_setting('app.tenant_id', true)
                AND user_id = {PG_USER}
            )
            """,
        ),
    ),
    TOMBSTONES,  # the journal's
    Migration(
        version=9,
        description="read authority: who reads which facts; personal attributes",
        # SQLite has no roles: the store checks the same rule (memory.facts.rules).
        sqlite=("SELECT 1",),
        postgres=(
            # The rule of memory.facts.rules.read_authority_of and is_personal; the personal
            # attributes are memory.facts.records.PERSONAL_ATTRIBUTES (a change is a new
            # migration replacing this function).
            f"""
            CREATE FUNCTION {PG_SCHEMA}.may_read(
                p_tenant text, p_subject text, p_attribute text
            ) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
                SELECT CASE
                    WHEN u IS NULL OR u = '' THEN false
                    WHEN p_subject = 'user:' || u THEN true
                    WHEN {PG_SCHEMA}.is_admin(p_tenant) THEN
                        NOT starts_with(p_subject, 'user:')
                        OR p_attribute NOT IN ('full_name', 'address', 'age')
                        OR current_setting('app.include_personal', true) = 'on'
                    WHEN starts_with(p_subject, 'user:') THEN false
                    ELSE EXISTS (
                        SELECT 1 FROM {PG_GRANTS} g
                        WHERE g.tenant_id = p_tenant AND g.user_id = u AND (
                            g.subject = p_subject
                            OR (right(g.subject, 1) = '*' AND starts_with(
                                p_subject, left(g.subject, length(g.subject) - 1)))
                        )
                    )
                END
                FROM (SELECT {PG_USER} AS u) AS acting
            $$
            """,
            # Restrictive: on top of the tenant policy, for every role but superusers and
            # BYPASSRLS ones (which the application refuses to connect as).
            f"""
            CREATE POLICY facts_read_authority ON {PG_FACTS} AS RESTRICTIVE FOR SELECT
            USING ({PG_SCHEMA}.may_read(tenant_id, subject, attribute))
            """,
        ),
    ),
    Migration(
        version=10,
        description="read-only grants: the reader role",
        sqlite=(
            # SQLite cannot change a CHECK constraint: the table is rebuilt, rows kept.
            """
            CREATE TABLE fact_grants_new (
                tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
                user_id    TEXT NOT NULL CHECK (user_id <> ''),
                role       TEXT NOT NULL CHECK (role IN ('writer', 'reader', 'admin')),
                subject    TEXT NOT NULL CHECK (subject <> ''),
                granted_by TEXT,
                granted_at TEXT NOT NULL,
                PRIMARY KEY (tenant_id, user_id, role, subject)
            )
            """,
            "INSERT INTO fact_grants_new SELECT tenant_id, user_id, role, subject, granted_by,"
            " granted_at FROM fact_grants",
            "DROP TABLE fact_grants",
            "ALTER TABLE fact_grants_new RENAME TO fact_grants",
        ),
        postgres=(
            f"ALTER TABLE {PG_GRANTS} DROP CONSTRAINT grants_role_check",
            f"""
            ALTER TABLE {PG_GRANTS} ADD CONSTRAINT grants_role_check
                CHECK (role IN ('writer', 'reader', 'admin'))
            """,
            # A reader's grant is no writer's: may_write now counts writer grants only (the
            # write policies call it by name, so they follow).
            f"""
            CREATE OR REPLACE FUNCTION {PG_SCHEMA}.may_write(
                p_tenant text, p_subject text, p_source text, p_withdrawn timestamptz
            ) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
                SELECT CASE
                    WHEN u IS NULL OR u = '' THEN false
                    WHEN p_subject = 'user:' || u THEN true
                    WHEN NOT EXISTS (
                        SELECT 1 FROM {PG_GRANTS} g
                        WHERE g.tenant_id = p_tenant AND g.user_id = u AND (
                            g.role = 'admin'
                            OR (g.role = 'writer' AND (g.subject = p_subject
                                OR (right(g.subject, 1) = '*' AND starts_with(
                                    p_subject, left(g.subject, length(g.subject) - 1)))))
                        )
                    ) THEN false
                    WHEN starts_with(p_subject, 'user:')
                        THEN p_source = 'inferred' AND p_withdrawn IS NOT NULL
                    ELSE true
                END
                FROM (SELECT {PG_USER} AS u) AS acting
            $$
            """,
        ),
    ),
    Migration(
        version=11,
        description="the overlap guard skips an active fact whose interval only shrinks",
        sqlite=(
            # Closing a fact (valid_to set, or moved earlier) cannot make it overlap another:
            # its interval only shrinks, and active intervals never overlapped before. Every
            # supersession is such a write; the guard's two seeks now run for the others.
            "DROP TRIGGER facts_no_overlap_update",
            sqlite_neighbour_trigger(
                "facts_no_overlap_update",
                "UPDATE OF valid_from, valid_to, withdrawn_at",
                skip=_SHRINKS,
            ),
        ),
        # Postgres guards overlaps with an exclusion constraint, which has no such cost.
        postgres=("SELECT 1",),
    ),
    Migration(
        version=12,
        description="row security's rules as PL/pgSQL: their plans are kept per session",
        sqlite=("SELECT 1",),
        # The same three rules, word for word (is_admin, may_read, may_write). As SQL
        # functions that cannot be inlined (SECURITY DEFINER), their bodies were planned
        # again in every statement that called them: about 150 us of a one-row read's 220 us
        # on the server. PL/pgSQL keeps each statement's plan for the session.
        postgres=(
            f"""
            CREATE OR REPLACE FUNCTION {PG_SCHEMA}.is_admin(p_tenant text) RETURNS boolean
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
            BEGIN
                RETURN EXISTS (
                    SELECT 1 FROM {PG_GRANTS} g
                    WHERE g.tenant_id = p_tenant AND g.role = 'admin'
                      AND g.user_id = {PG_USER}
                );
            END
            $$
            """,
            f"""
            CREATE OR REPLACE FUNCTION {PG_SCHEMA}.may_read(
                p_tenant text, p_subject text, p_attribute text
            ) RETURNS boolean
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE
                u text := {PG_USER};
            BEGIN
                IF u IS NULL OR u = '' THEN
                    RETURN false;
                ELSIF p_subject = 'user:' || u THEN
                    RETURN true;
                ELSIF {PG_SCHEMA}.is_admin(p_tenant) THEN
                    RETURN NOT starts_with(p_subject, 'user:')
                        OR p_attribute NOT IN ('full_name', 'address', 'age')
                        OR current_setting('app.include_personal', true) = 'on';
                ELSIF starts_with(p_subject, 'user:') THEN
                    RETURN false;
                END IF;
                RETURN EXISTS (
                    SELECT 1 FROM {PG_GRANTS} g
                    WHERE g.tenant_id = p_tenant AND g.user_id = u AND (
                        g.subject = p_subject
                        OR (right(g.subject, 1) = '*' AND starts_with(
                            p_subject, left(g.subject, length(g.subject) - 1)))
                    )
                );
            END
            $$
            """,
            f"""
            CREATE OR REPLACE FUNCTION {PG_SCHEMA}.may_write(
                p_tenant text, p_subject text, p_source text, p_withdrawn timestamptz
            ) RETURNS boolean
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE
                u text := {PG_USER};
            BEGIN
                IF u IS NULL OR u = '' THEN
                    RETURN false;
                ELSIF p_subject = 'user:' || u THEN
                    RETURN true;
                ELSIF NOT EXISTS (
                    SELECT 1 FROM {PG_GRANTS} g
                    WHERE g.tenant_id = p_tenant AND g.user_id = u AND (
                        g.role = 'admin'
                        OR (g.role = 'writer' AND (g.subject = p_subject
                            OR (right(g.subject, 1) = '*' AND starts_with(
                                p_subject, left(g.subject, length(g.subject) - 1)))))
                    )
                ) THEN
                    RETURN false;
                ELSIF starts_with(p_subject, 'user:') THEN
                    RETURN p_source = 'inferred' AND p_withdrawn IS NOT NULL;
                END IF;
                RETURN true;
            END
            $$
            """,
        ),
    ),
    Migration(
        version=13,
        description="row security asks once a statement whether the user is the admin",
        sqlite=("SELECT 1",),
        # The same rules as may_read and may_write (migration 12), stated in the policies so
        # that the one question not about the row -- is the acting user the tenant's admin --
        # is a subquery on constants, which Postgres runs once a statement (an InitPlan)
        # instead of once a row in a nested SECURITY DEFINER call. The session's tenant
        # stands for the row's: the tenant policy already requires them equal. A reader who is
        # not the admin still has each row checked against its grants by may_read.
        postgres=(
            f"""
            ALTER POLICY facts_read_authority ON {PG_FACTS} USING (
                CASE
                    WHEN coalesce({PG_USER}, '') = '' THEN false
                    WHEN subject = 'user:' || {PG_USER} THEN true
                    WHEN {_ACTING_ADMIN} THEN
                        NOT starts_with(subject, 'user:')
                        OR attribute NOT IN ('full_name', 'address', 'age')
                        OR current_setting('app.include_personal', true) = 'on'
                    WHEN starts_with(subject, 'user:') THEN false
                    ELSE {PG_SCHEMA}.may_read(tenant_id, subject, attribute)
                END
            )
            """,
            f"""
            ALTER POLICY facts_write_authority ON {PG_FACTS}
            WITH CHECK ({_MAY_WRITE} AND recorded_by = {PG_USER})
            """,
            f"ALTER POLICY facts_update_authority ON {PG_FACTS} WITH CHECK ({_MAY_WRITE})",
        ),
    ),
    Migration(
        version=14,
        description="the overlap guard on inserts seeks once: the row before the new one's end",
        sqlite=(
            # The same refusals, from any connection, for half the seeks of every insert (an
            # import's rows: a fifth of the statement's work, the guard's share of it).
            "DROP TRIGGER facts_no_overlap_insert",
            _sqlite_one_seek_trigger("facts_no_overlap_insert", "INSERT"),
        ),
        # Postgres guards overlaps with an exclusion constraint.
        postgres=("SELECT 1",),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def check_applied(applied: Iterable[Sequence[Any]], backend: Backend, where: str) -> int:
    """Validate (version, checksum) rows a database recorded; return its version."""
    return runner.check_applied(applied, MIGRATIONS, backend, where)


def migrate_sqlite_sync(
    conn: sqlite3.Connection, *, where: str, target: int | None = None
) -> list[int]:
    """Apply pending migrations (up to ``target``) in one IMMEDIATE transaction; the
    connection must be in autocommit mode. Returns the versions applied now."""
    return runner.migrate_sqlite_sync(conn, MIGRATIONS, where=where, target=target)


async def migrate_sqlite(
    conn: aiosqlite.Connection, *, where: str, target: int | None = None
) -> list[int]:
    """:func:`migrate_sqlite_sync` on an aiosqlite connection's own thread."""
    return await runner.migrate_sqlite(conn, MIGRATIONS, where=where, target=target)


async def migrate_postgres(
    conn: psycopg.AsyncConnection[Any],
    *,
    where: str,
    target: int | None = None,
    app_roles: Iterable[str] = (),
) -> list[int]:
    """Apply pending migrations and grant ``app_roles`` access, in one transaction.

    Run as the owner of the ledger (or a superuser). Each application role must exist, log
    in, and be neither superuser nor BYPASSRLS; it gets USAGE on the schema, SELECT, INSERT,
    UPDATE and DELETE on the facts and the journal's tables (no UPDATE on ``episodes``, which
    are immutable; row-level security still applies), SELECT and INSERT only on the memory
    audit, SELECT on its key and on the migrations table.
    Returns the versions applied now.
    """
    roles = list(app_roles)

    async def grant(conn: psycopg.AsyncConnection[Any]) -> None:
        for role in roles:
            await grant_app_role(conn, role)

    return await runner.migrate_postgres(conn, MIGRATIONS, where=where, target=target, then=grant)


async def grant_app_role(conn: psycopg.AsyncConnection[Any], role: str) -> None:
    """Give the application role what it needs, after checking it cannot bypass RLS."""
    from psycopg import sql

    cursor = await conn.execute(
        "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", (role,)
    )
    row = await cursor.fetchone()
    if row is None:
        raise FactLedgerSchemaError(
            f"Postgres role '{role}' does not exist. Create it first, e.g. "
            f"CREATE ROLE {role} LOGIN PASSWORD '...' NOSUPERUSER NOBYPASSRLS;"
        )
    if row[0] or row[1]:
        raise UnsafeDatabaseRoleError(
            f"Postgres role '{role}' is {'a superuser' if row[0] else 'BYPASSRLS'}; row-level "
            "security would not apply to it. Use a role created with NOSUPERUSER NOBYPASSRLS."
        )
    ident = sql.Identifier(role)
    schema = sql.Identifier(PG_SCHEMA)
    await conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, ident))
    await conn.execute(
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {}.facts TO {}").format(schema, ident)
    )
    await conn.execute(sql.SQL("GRANT SELECT ON {}.migrations TO {}").format(schema, ident))
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.grants",))
    found = await cursor.fetchone()
    if found is not None and found[0] is not None:  # from migration 4 on
        await conn.execute(
            sql.SQL("GRANT SELECT, INSERT, DELETE ON {}.grants TO {}").format(schema, ident)
        )
    await journal_migrations.grant_app_role(conn, role)


async def postgres_version(conn: psycopg.AsyncConnection[Any], *, where: str) -> int:
    """The ledger's applied version as the connected role sees it; checksums verified."""
    return await runner.postgres_version(conn, MIGRATIONS, where=where)
