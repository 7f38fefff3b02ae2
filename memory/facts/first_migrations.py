"""The fact ledger's first schema versions (1 to 4: the ledger, typed records, seek-speed
reads and guards, write authority) and the pieces of SQL later versions reuse.

Released migrations: never edited (a change is a new version in
:data:`memory.facts.migrations.MIGRATIONS`, which runs these first).
"""

from __future__ import annotations

from memory.sql.migrations import PG_SCHEMA, PG_USER, Migration

__all__ = ["FIRST_VERSIONS", "PG_FACTS", "PG_GRANTS", "sqlite_neighbour_trigger"]


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


def sqlite_neighbour_trigger(name: str, event: str, skip: str = "") -> str:
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


PG_FACTS = f"{PG_SCHEMA}.facts"
PG_GRANTS = f"{PG_SCHEMA}.grants"

#: Versions 1 to 4, in order.
FIRST_VERSIONS: tuple[Migration, ...] = (
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
            CREATE TABLE {PG_FACTS} (
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
            CREATE UNIQUE INDEX facts_one_open ON {PG_FACTS} (tenant_id, subject, attribute)
            WHERE valid_to IS NULL
            """,
            f"""
            CREATE UNIQUE INDEX facts_one_start
            ON {PG_FACTS} (tenant_id, subject, attribute, valid_from)
            """,
            f"""
            ALTER TABLE {PG_FACTS} ADD CONSTRAINT facts_no_overlap EXCLUDE USING gist (
                tenant_id WITH =, subject WITH =, attribute WITH =,
                tstzrange(valid_from, valid_to) WITH &&
            )
            """,
            f"ALTER TABLE {PG_FACTS} ENABLE ROW LEVEL SECURITY",
            # The owner is subject to the policy too; only superusers and BYPASSRLS roles are
            # not, and the application refuses to connect as one of those.
            f"ALTER TABLE {PG_FACTS} FORCE ROW LEVEL SECURITY",
            f"""
            CREATE POLICY facts_tenant_isolation ON {PG_FACTS}
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
            f"ALTER TABLE {PG_FACTS} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {PG_FACTS} ALTER COLUMN value TYPE jsonb USING to_jsonb(value)",
            f"""
            ALTER TABLE {PG_FACTS}
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
            f"UPDATE {PG_FACTS} SET schema_version = 2 WHERE schema_version < 2",
            f"DROP INDEX {PG_SCHEMA}.facts_one_open",
            f"""
            CREATE UNIQUE INDEX facts_one_open ON {PG_FACTS} (tenant_id, subject, attribute)
            WHERE valid_to IS NULL AND withdrawn_at IS NULL
            """,
            f"DROP INDEX {PG_SCHEMA}.facts_one_start",
            f"""
            CREATE UNIQUE INDEX facts_one_start
            ON {PG_FACTS} (tenant_id, subject, attribute, valid_from)
            WHERE withdrawn_at IS NULL
            """,
            f"CREATE INDEX facts_subject ON {PG_FACTS} (tenant_id, subject, valid_from)",
            f"ALTER TABLE {PG_FACTS} DROP CONSTRAINT facts_no_overlap",
            f"""
            ALTER TABLE {PG_FACTS} ADD CONSTRAINT facts_no_overlap EXCLUDE USING gist (
                tenant_id WITH =, subject WITH =, attribute WITH =,
                tstzrange(valid_from, valid_to) WITH &&
            ) WHERE (withdrawn_at IS NULL)
            """,
            f"ALTER TABLE {PG_FACTS} FORCE ROW LEVEL SECURITY",
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
            sqlite_neighbour_trigger("facts_no_overlap_insert", "INSERT"),
            sqlite_neighbour_trigger(
                "facts_no_overlap_update", "UPDATE OF valid_from, valid_to, withdrawn_at"
            ),
        ),
        postgres=(
            f"ALTER TABLE {PG_FACTS} NO FORCE ROW LEVEL SECURITY",
            f"""
            ALTER TABLE {PG_FACTS} ADD COLUMN restated_in jsonb NOT NULL DEFAULT '[]'
                CHECK (jsonb_typeof(restated_in) = 'array')
            """,
            f"UPDATE {PG_FACTS} SET schema_version = 3 WHERE schema_version < 3",
            f"DROP INDEX {PG_SCHEMA}.facts_subject",
            f"ALTER TABLE {PG_FACTS} FORCE ROW LEVEL SECURITY",
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
            f"ALTER TABLE {PG_FACTS} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {PG_FACTS} ADD COLUMN recorded_by text",
            f"UPDATE {PG_FACTS} SET schema_version = 4 WHERE schema_version < 4",
            f"""
            CREATE TABLE {PG_GRANTS} (
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
                    SELECT 1 FROM {PG_GRANTS} g
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
                        SELECT 1 FROM {PG_GRANTS} g
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
            CREATE POLICY facts_write_authority ON {PG_FACTS} AS RESTRICTIVE FOR INSERT
            WITH CHECK (
                {PG_SCHEMA}.may_write(tenant_id, subject, source, withdrawn_at)
                AND recorded_by = {PG_USER}
            )
            """,
            f"""
            CREATE POLICY facts_update_authority ON {PG_FACTS} AS RESTRICTIVE FOR UPDATE
            USING (true)
            WITH CHECK ({PG_SCHEMA}.may_write(tenant_id, subject, source, withdrawn_at))
            """,
            # Row security on the grants, not forced: the owner (who bootstraps a tenant's
            # first admin) is exempt; the application role sees its tenant's grants and
            # changes them only as that tenant's admin.
            f"ALTER TABLE {PG_GRANTS} ENABLE ROW LEVEL SECURITY",
            f"""
            CREATE POLICY grants_read ON {PG_GRANTS} FOR SELECT
            USING (tenant_id = current_setting('app.tenant_id', true))
            """,
            f"""
            CREATE POLICY grants_insert ON {PG_GRANTS} FOR INSERT
            WITH CHECK (
                tenant_id = current_setting('app.tenant_id', true)
                AND {PG_SCHEMA}.is_admin(tenant_id)
            )
            """,
            f"""
            CREATE POLICY grants_delete ON {PG_GRANTS} FOR DELETE
            USING (
                tenant_id = current_setting('app.tenant_id', true)
                AND {PG_SCHEMA}.is_admin(tenant_id)
            )
            """,
            f"ALTER TABLE {PG_FACTS} FORCE ROW LEVEL SECURITY",
        ),
    ),
)
