"""Append-only, numbered schema migrations of the ledger's database, for SQLite and Postgres.

A released migration is never edited or removed -- a change is a new entry at the end of
:data:`MIGRATIONS`. Versions 5, 6 and 8 are the journal's own (:mod:`memory.journal.migrations`),
run here at their positions. The functions below bind the one runner
(:mod:`memory.sql.migrations`) to this list; what each version does is in
``docs/memory-lifecycle.md`` (Schema migrations). The Postgres runner connects as the tables'
owner (or a superuser); the application role only reads the migrations table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import memory.journal.migrations as journal_migrations
import memory.sql.migrations as runner
from memory.errors import FactLedgerSchemaError, UnsafeDatabaseRoleError
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


def _sqlite_overlap_trigger(name: str, event: str, active: str) -> str:
    return f"""
    CREATE TRIGGER {name} BEFORE {event} ON facts
    WHEN {active.format(row="NEW")} AND EXISTS (
        SELECT 1 FROM facts f
        WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject
          AND f.attribute = NEW.attribute AND f.memory_id <> NEW.memory_id
          AND {active.format(row="f")}
          AND (NEW.valid_to IS NULL OR f.valid_from < NEW.valid_to)
          AND (f.valid_to IS NULL OR NEW.valid_from < f.valid_to)
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """


def _sqlite_neighbour_trigger(name: str, event: str, skip: str = "") -> str:
    """The overlap guard as two seeks: the row's predecessor and successor on its key.

    Active intervals of a key never overlap (this trigger keeps it so), so a row overlaps
    one iff it overlaps the active row starting last at or before it, or the one starting
    first after it; each is one ``ORDER BY valid_from LIMIT 1`` on ``facts_one_start``.
    ``skip``: a further ``AND NOT (...)`` condition naming rows that need no check.
    """
    key = (
        "f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute"
        " AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id"
    )
    return f"""
    CREATE TRIGGER {name} BEFORE {event} ON facts
    WHEN NEW.withdrawn_at IS NULL{skip} AND (
        EXISTS (
            SELECT 1 FROM (
                SELECT f.valid_to FROM facts f
                WHERE {key} AND f.valid_from <= NEW.valid_from
                ORDER BY f.valid_from DESC LIMIT 1
            ) p WHERE p.valid_to IS NULL OR p.valid_to > NEW.valid_from
        )
        OR EXISTS (
            SELECT 1 FROM (
                SELECT f.valid_from FROM facts f
                WHERE {key} AND f.valid_from > NEW.valid_from
                ORDER BY f.valid_from LIMIT 1
            ) n WHERE NEW.valid_to IS NULL OR n.valid_from < NEW.valid_to
        )
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """


#: An update that only shrinks an active fact's interval at its end (same key and start, not
#: withdrawn before, an end no later than before): it cannot create an overlap.
_SHRINKS = """ AND NOT (
        OLD.withdrawn_at IS NULL AND NEW.tenant_id = OLD.tenant_id
        AND NEW.subject = OLD.subject AND NEW.attribute = OLD.attribute
        AND NEW.valid_from = OLD.valid_from AND NEW.valid_to IS NOT NULL
        AND (OLD.valid_to IS NULL OR NEW.valid_to <= OLD.valid_to)
    )"""

_PG_FACTS = f"{PG_SCHEMA}.facts"
_PG_GRANTS = f"{PG_SCHEMA}.grants"

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        version=1,
        description="ledger: string values, validity intervals, supersession, guards",
        sqlite=(
            """
            CREATE TABLE facts (
                tenant_id            TEXT NOT NULL CHECK (tenant_id <> ''),
                memory_id            TEXT NOT NULL,
                subject              TEXT NOT NULL,
                attribute            TEXT NOT NULL,
                value                TEXT NOT NULL,
                valid_from           TEXT NOT NULL
                    CHECK (length(valid_from) = 32 AND valid_from LIKE '%+00:00'),
                valid_to             TEXT
                    CHECK (valid_to IS NULL OR (length(valid_to) = 32 AND valid_to LIKE '%+00:00')),
                recorded_at          TEXT NOT NULL,
                supersedes_memory_id TEXT,
                source_episode_id    TEXT,
                schema_version       INTEGER NOT NULL DEFAULT 1,
                PRIMARY KEY (tenant_id, memory_id),
                CONSTRAINT facts_valid_interval CHECK (valid_to IS NULL OR valid_from < valid_to)
            )
            """,
            """
            CREATE UNIQUE INDEX facts_one_open ON facts (tenant_id, subject, attribute)
            WHERE valid_to IS NULL
            """,
            """
            CREATE UNIQUE INDEX facts_one_start ON facts (tenant_id, subject, attribute, valid_from)
            """,
            _sqlite_overlap_trigger("facts_no_overlap_insert", "INSERT", "1"),
            _sqlite_overlap_trigger(
                "facts_no_overlap_update", "UPDATE OF valid_from, valid_to", "1"
            ),
        ),
        postgres=(
            f"CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA {PG_SCHEMA}",
            f"""
            CREATE TABLE {_PG_FACTS} (
                tenant_id            text NOT NULL CHECK (tenant_id <> ''),
                memory_id            text NOT NULL,
                subject              text NOT NULL,
                attribute            text NOT NULL,
                value                text NOT NULL,
                valid_from           timestamptz NOT NULL,
                valid_to             timestamptz,
                recorded_at          timestamptz NOT NULL,
                supersedes_memory_id text,
                source_episode_id    text,
                schema_version       integer NOT NULL DEFAULT 1,
                PRIMARY KEY (tenant_id, memory_id),
                CONSTRAINT facts_valid_interval CHECK (valid_to IS NULL OR valid_from < valid_to)
            )
            """,
            f"""
            CREATE UNIQUE INDEX facts_one_open ON {_PG_FACTS} (tenant_id, subject, attribute)
            WHERE valid_to IS NULL
            """,
            f"""
            CREATE UNIQUE INDEX facts_one_start
            ON {_PG_FACTS} (tenant_id, subject, attribute, valid_from)
            """,
            f"""
            ALTER TABLE {_PG_FACTS} ADD CONSTRAINT facts_no_overlap EXCLUDE USING gist (
                tenant_id WITH =, subject WITH =, attribute WITH =,
                tstzrange(valid_from, valid_to) WITH &&
            )
            """,
            f"ALTER TABLE {_PG_FACTS} ENABLE ROW LEVEL SECURITY",
            # The owner is subject to the policy too; only superusers and BYPASSRLS roles are
            # not, and the application refuses to connect as one of those.
            f"ALTER TABLE {_PG_FACTS} FORCE ROW LEVEL SECURITY",
            f"""
            CREATE POLICY facts_tenant_isolation ON {_PG_FACTS}
            USING (tenant_id = current_setting('app.tenant_id', true))
            WITH CHECK (tenant_id = current_setting('app.tenant_id', true))
            """,
        ),
    ),
    Migration(
        version=2,
        description="typed records: JSON values, memory type, source, confidence, retention, "
        "retraction and withdrawal",
        sqlite=(
            "ALTER TABLE facts ADD COLUMN memory_type TEXT NOT NULL DEFAULT 'semantic' "
            "CHECK (memory_type IN ('semantic', 'episodic', 'procedural', 'profile'))",
            "ALTER TABLE facts ADD COLUMN source TEXT NOT NULL DEFAULT 'stated' "
            "CHECK (source IN ('inferred', 'observed', 'stated', 'confirmed'))",
            "ALTER TABLE facts ADD COLUMN confidence REAL NOT NULL DEFAULT 1.0 "
            "CHECK (confidence BETWEEN 0 AND 1)",
            "ALTER TABLE facts ADD COLUMN retention_policy TEXT NOT NULL DEFAULT 'default'",
            "ALTER TABLE facts ADD COLUMN retracted_at TEXT",
            "ALTER TABLE facts ADD COLUMN retraction_episode_id TEXT",
            "ALTER TABLE facts ADD COLUMN withdrawn_at TEXT",
            "UPDATE facts SET value = json_quote(value), schema_version = 2 "
            "WHERE schema_version < 2",
            "DROP INDEX facts_one_open",
            """
            CREATE UNIQUE INDEX facts_one_open ON facts (tenant_id, subject, attribute)
            WHERE valid_to IS NULL AND withdrawn_at IS NULL
            """,
            "DROP INDEX facts_one_start",
            """
            CREATE UNIQUE INDEX facts_one_start ON facts (tenant_id, subject, attribute, valid_from)
            WHERE withdrawn_at IS NULL
            """,
            "CREATE INDEX facts_subject ON facts (tenant_id, subject, valid_from)",
            "DROP TRIGGER facts_no_overlap_insert",
            "DROP TRIGGER facts_no_overlap_update",
            _sqlite_overlap_trigger(
                "facts_no_overlap_insert", "INSERT", "{row}.withdrawn_at IS NULL"
            ),
            _sqlite_overlap_trigger(
                "facts_no_overlap_update",
                "UPDATE OF valid_from, valid_to, withdrawn_at",
                "{row}.withdrawn_at IS NULL",
            ),
        ),
        postgres=(
            # The data rewrite below must see every tenant's rows: lift FORCE for the owner
            # inside this transaction (ALTER TABLE locks the table, nobody sees the gap).
            f"ALTER TABLE {_PG_FACTS} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {_PG_FACTS} ALTER COLUMN value TYPE jsonb USING to_jsonb(value)",
            f"""
            ALTER TABLE {_PG_FACTS}
                ADD COLUMN memory_type text NOT NULL DEFAULT 'semantic'
                    CHECK (memory_type IN ('semantic', 'episodic', 'procedural', 'profile')),
                ADD COLUMN source text NOT NULL DEFAULT 'stated'
                    CHECK (source IN ('inferred', 'observed', 'stated', 'confirmed')),
                ADD COLUMN confidence double precision NOT NULL DEFAULT 1.0
                    CHECK (confidence BETWEEN 0 AND 1),
                ADD COLUMN retention_policy text NOT NULL DEFAULT 'default',
                ADD COLUMN retracted_at timestamptz,
                ADD COLUMN retraction_episode_id text,
                ADD COLUMN withdrawn_at timestamptz
            """,
            f"UPDATE {_PG_FACTS} SET schema_version = 2 WHERE schema_version < 2",
            f"DROP INDEX {PG_SCHEMA}.facts_one_open",
            f"""
            CREATE UNIQUE INDEX facts_one_open ON {_PG_FACTS} (tenant_id, subject, attribute)
            WHERE valid_to IS NULL AND withdrawn_at IS NULL
            """,
            f"DROP INDEX {PG_SCHEMA}.facts_one_start",
            f"""
            CREATE UNIQUE INDEX facts_one_start
            ON {_PG_FACTS} (tenant_id, subject, attribute, valid_from)
            WHERE withdrawn_at IS NULL
            """,
            f"CREATE INDEX facts_subject ON {_PG_FACTS} (tenant_id, subject, valid_from)",
            f"ALTER TABLE {_PG_FACTS} DROP CONSTRAINT facts_no_overlap",
            f"""
            ALTER TABLE {_PG_FACTS} ADD CONSTRAINT facts_no_overlap EXCLUDE USING gist (
                tenant_id WITH =, subject WITH =, attribute WITH =,
                tstzrange(valid_from, valid_to) WITH &&
            ) WHERE (withdrawn_at IS NULL)
            """,
            f"ALTER TABLE {_PG_FACTS} FORCE ROW LEVEL SECURITY",
        ),
    ),
    Migration(
        version=3,
        description="seek-speed reads and guards; restatements kept as provenance",
        sqlite=(
            "ALTER TABLE facts ADD COLUMN restated_in TEXT NOT NULL DEFAULT '[]'"
            " CHECK (json_valid(restated_in) AND json_type(restated_in) = 'array')",
            "UPDATE facts SET schema_version = 3 WHERE schema_version < 3",
            "DROP INDEX facts_subject",
            "DROP TRIGGER facts_no_overlap_insert",
            "DROP TRIGGER facts_no_overlap_update",
            _sqlite_neighbour_trigger("facts_no_overlap_insert", "INSERT"),
            _sqlite_neighbour_trigger(
                "facts_no_overlap_update", "UPDATE OF valid_from, valid_to, withdrawn_at"
            ),
        ),
        postgres=(
            f"ALTER TABLE {_PG_FACTS} NO FORCE ROW LEVEL SECURITY",
            f"""
            ALTER TABLE {_PG_FACTS} ADD COLUMN restated_in jsonb NOT NULL DEFAULT '[]'
                CHECK (jsonb_typeof(restated_in) = 'array')
            """,
            f"UPDATE {_PG_FACTS} SET schema_version = 3 WHERE schema_version < 3",
            f"DROP INDEX {PG_SCHEMA}.facts_subject",
            f"ALTER TABLE {_PG_FACTS} FORCE ROW LEVEL SECURITY",
        ),
    ),
    Migration(
        version=4,
        description="write authority: recorded_by, grants, the write policy",
        sqlite=(
            "ALTER TABLE facts ADD COLUMN recorded_by TEXT",
            "UPDATE facts SET schema_version = 4 WHERE schema_version < 4",
            """
            CREATE TABLE fact_grants (
                tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
                user_id    TEXT NOT NULL CHECK (user_id <> ''),
                role       TEXT NOT NULL CHECK (role IN ('writer', 'admin')),
                subject    TEXT NOT NULL CHECK (subject <> ''),
                granted_by TEXT,
                granted_at TEXT NOT NULL,
                PRIMARY KEY (tenant_id, user_id, role, subject)
            )
            """,
        ),
        postgres=(
            f"ALTER TABLE {_PG_FACTS} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {_PG_FACTS} ADD COLUMN recorded_by text",
            f"UPDATE {_PG_FACTS} SET schema_version = 4 WHERE schema_version < 4",
            f"""
            CREATE TABLE {_PG_GRANTS} (
                tenant_id  text NOT NULL CHECK (tenant_id <> ''),
                user_id    text NOT NULL CHECK (user_id <> ''),
                role       text NOT NULL CHECK (role IN ('writer', 'admin')),
                subject    text NOT NULL CHECK (subject <> ''),
                granted_by text,
                granted_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tenant_id, user_id, role, subject)
            )
            """,
            # Read by the policies below with the owner's rights (the app role may not read
            # other users' grants through them, and a policy may not query its own table).
            f"""
            CREATE FUNCTION {PG_SCHEMA}.is_admin(p_tenant text) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
                SELECT EXISTS (
                    SELECT 1 FROM {_PG_GRANTS} g
                    WHERE g.tenant_id = p_tenant AND g.role = 'admin'
                      AND g.user_id = {PG_USER}
                )
            $$
            """,
            f"""
            CREATE FUNCTION {PG_SCHEMA}.may_write(
                p_tenant text, p_subject text, p_source text, p_withdrawn timestamptz
            ) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
                SELECT CASE
                    WHEN u IS NULL OR u = '' THEN false
                    WHEN p_subject = 'user:' || u THEN true
                    WHEN NOT EXISTS (
                        SELECT 1 FROM {_PG_GRANTS} g
                        WHERE g.tenant_id = p_tenant AND g.user_id = u AND (
                            g.role = 'admin' OR g.subject = p_subject
                            OR (right(g.subject, 1) = '*' AND starts_with(
                                p_subject, left(g.subject, length(g.subject) - 1)))
                        )
                    ) THEN false
                    WHEN starts_with(p_subject, 'user:')
                        THEN p_source = 'inferred' AND p_withdrawn IS NOT NULL
                    ELSE true
                END
                FROM (SELECT {PG_USER} AS u) AS acting
            $$
            """,
            f"""
            CREATE POLICY facts_write_authority ON {_PG_FACTS} AS RESTRICTIVE FOR INSERT
            WITH CHECK (
                {PG_SCHEMA}.may_write(tenant_id, subject, source, withdrawn_at)
                AND recorded_by = {PG_USER}
            )
            """,
            f"""
            CREATE POLICY facts_update_authority ON {_PG_FACTS} AS RESTRICTIVE FOR UPDATE
            USING (true)
            WITH CHECK ({PG_SCHEMA}.may_write(tenant_id, subject, source, withdrawn_at))
            """,
            # Row security on the grants, not forced: the owner (who bootstraps a tenant's
            # first admin) is exempt; the application role sees its tenant's grants and
            # changes them only as that tenant's admin.
            f"ALTER TABLE {_PG_GRANTS} ENABLE ROW LEVEL SECURITY",
            f"""
            CREATE POLICY grants_read ON {_PG_GRANTS} FOR SELECT
            USING (tenant_id = current_setting('app.tenant_id', true))
            """,
            f"""
            CREATE POLICY grants_insert ON {_PG_GRANTS} FOR INSERT
            WITH CHECK (
                tenant_id = current_setting('app.tenant_id', true)
                AND {PG_SCHEMA}.is_admin(tenant_id)
            )
            """,
            f"""
            CREATE POLICY grants_delete ON {_PG_GRANTS} FOR DELETE
            USING (
                tenant_id = current_setting('app.tenant_id', true)
                AND {PG_SCHEMA}.is_admin(tenant_id)
            )
            """,
            f"ALTER TABLE {_PG_FACTS} FORCE ROW LEVEL SECURITY",
        ),
    ),
    EPISODES,  # the journal's
    AUDIT,  # the journal's
    Migration(
        version=7,
        description="account deletion: a user deletes the facts about itself and its grants",
        sqlite=("SELECT 1",),
        postgres=(
            f"""
            CREATE POLICY facts_delete_authority ON {_PG_FACTS} AS RESTRICTIVE FOR DELETE
            USING (subject = 'user:' || {PG_USER} OR {PG_SCHEMA}.is_admin(tenant_id))
            """,
            f"""
            CREATE POLICY grants_delete_own ON {_PG_GRANTS} FOR DELETE
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
                        SELECT 1 FROM {_PG_GRANTS} g
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
            CREATE POLICY facts_read_authority ON {_PG_FACTS} AS RESTRICTIVE FOR SELECT
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
            f"ALTER TABLE {_PG_GRANTS} DROP CONSTRAINT grants_role_check",
            f"""
            ALTER TABLE {_PG_GRANTS} ADD CONSTRAINT grants_role_check
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
                        SELECT 1 FROM {_PG_GRANTS} g
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
            _sqlite_neighbour_trigger(
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
                    SELECT 1 FROM {_PG_GRANTS} g
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
                    SELECT 1 FROM {_PG_GRANTS} g
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
                    SELECT 1 FROM {_PG_GRANTS} g
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
