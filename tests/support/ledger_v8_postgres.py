"""The fact ledger's Postgres schema as migrations 1-8 made it, frozen before the journal's
tables (5, 6 and 8) moved to :mod:`memory.journal.migrations`; the Postgres twin of
:mod:`tests.support.ledger_v8`.

:func:`build_old_postgres_ledger` sets a database up exactly as the old ``setup_fact_store``
did for one application role: the ``analyst_facts`` schema, every migration's statements and
one ``analyst_facts.migrations`` row each, then the role's grants, in one transaction. Never
edit this module: it is a record of what existing databases hold.
"""

from __future__ import annotations

#: (version, description, Postgres statements, Postgres checksum)
RELEASED_POSTGRES: tuple[tuple[int, str, tuple[str, ...], str], ...] = (
    (
        1,
        "ledger: string values, validity intervals, supersession, guards",
        (
            """CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA analyst_facts""",
            """
            CREATE TABLE analyst_facts.facts (
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
            """
            CREATE UNIQUE INDEX facts_one_open ON analyst_facts.facts (tenant_id, subject, attribute)
            WHERE valid_to IS NULL
            """,
            """
            CREATE UNIQUE INDEX facts_one_start
            ON analyst_facts.facts (tenant_id, subject, attribute, valid_from)
            """,
            """
            ALTER TABLE analyst_facts.facts ADD CONSTRAINT facts_no_overlap EXCLUDE USING gist (
                tenant_id WITH =, subject WITH =, attribute WITH =,
                tstzrange(valid_from, valid_to) WITH &&
            )
            """,
            """ALTER TABLE analyst_facts.facts ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.facts FORCE ROW LEVEL SECURITY""",
            """
            CREATE POLICY facts_tenant_isolation ON analyst_facts.facts
            USING (tenant_id = current_setting('app.tenant_id', true))
            WITH CHECK (tenant_id = current_setting('app.tenant_id', true))
            """,
        ),
        "37cc4ebaedf5045ccb9219d082670f0802ee660cbaf6bbf2110bec688fb873af",
    ),
    (
        2,
        "typed records: JSON values, memory type, source, confidence, retention, retraction and withdrawal",
        (
            """ALTER TABLE analyst_facts.facts NO FORCE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.facts ALTER COLUMN value TYPE jsonb USING to_jsonb(value)""",
            """
            ALTER TABLE analyst_facts.facts
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
            """UPDATE analyst_facts.facts SET schema_version = 2 WHERE schema_version < 2""",
            """DROP INDEX analyst_facts.facts_one_open""",
            """
            CREATE UNIQUE INDEX facts_one_open ON analyst_facts.facts (tenant_id, subject, attribute)
            WHERE valid_to IS NULL AND withdrawn_at IS NULL
            """,
            """DROP INDEX analyst_facts.facts_one_start""",
            """
            CREATE UNIQUE INDEX facts_one_start
            ON analyst_facts.facts (tenant_id, subject, attribute, valid_from)
            WHERE withdrawn_at IS NULL
            """,
            """CREATE INDEX facts_subject ON analyst_facts.facts (tenant_id, subject, valid_from)""",
            """ALTER TABLE analyst_facts.facts DROP CONSTRAINT facts_no_overlap""",
            """
            ALTER TABLE analyst_facts.facts ADD CONSTRAINT facts_no_overlap EXCLUDE USING gist (
                tenant_id WITH =, subject WITH =, attribute WITH =,
                tstzrange(valid_from, valid_to) WITH &&
            ) WHERE (withdrawn_at IS NULL)
            """,
            """ALTER TABLE analyst_facts.facts FORCE ROW LEVEL SECURITY""",
        ),
        "f2d627edf7aac3fbda0e04ebb7eafc6eb3b3e044a83fb55dcea05cd69608b935",
    ),
    (
        3,
        "seek-speed reads and guards; restatements kept as provenance",
        (
            """ALTER TABLE analyst_facts.facts NO FORCE ROW LEVEL SECURITY""",
            """
            ALTER TABLE analyst_facts.facts ADD COLUMN restated_in jsonb NOT NULL DEFAULT '[]'
                CHECK (jsonb_typeof(restated_in) = 'array')
            """,
            """UPDATE analyst_facts.facts SET schema_version = 3 WHERE schema_version < 3""",
            """DROP INDEX analyst_facts.facts_subject""",
            """ALTER TABLE analyst_facts.facts FORCE ROW LEVEL SECURITY""",
        ),
        "7afbab600c82732e7fd32658ab96ceaa6c62d67a40859c67367b2965437b6ed4",
    ),
    (
        4,
        "write authority: recorded_by, grants, the write policy",
        (
            """ALTER TABLE analyst_facts.facts NO FORCE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.facts ADD COLUMN recorded_by text""",
            """UPDATE analyst_facts.facts SET schema_version = 4 WHERE schema_version < 4""",
            """
            CREATE TABLE analyst_facts.grants (
                tenant_id  text NOT NULL CHECK (tenant_id <> ''),
                user_id    text NOT NULL CHECK (user_id <> ''),
                role       text NOT NULL CHECK (role IN ('writer', 'admin')),
                subject    text NOT NULL CHECK (subject <> ''),
                granted_by text,
                granted_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (tenant_id, user_id, role, subject)
            )
            """,
            """
            CREATE FUNCTION analyst_facts.is_admin(p_tenant text) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
                SELECT EXISTS (
                    SELECT 1 FROM analyst_facts.grants g
                    WHERE g.tenant_id = p_tenant AND g.role = 'admin'
                      AND g.user_id = current_setting('app.user_id', true)
                )
            $$
            """,
            """
            CREATE FUNCTION analyst_facts.may_write(
                p_tenant text, p_subject text, p_source text, p_withdrawn timestamptz
            ) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
                SELECT CASE
                    WHEN u IS NULL OR u = '' THEN false
                    WHEN p_subject = 'user:' || u THEN true
                    WHEN NOT EXISTS (
                        SELECT 1 FROM analyst_facts.grants g
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
                FROM (SELECT current_setting('app.user_id', true) AS u) AS acting
            $$
            """,
            """
            CREATE POLICY facts_write_authority ON analyst_facts.facts AS RESTRICTIVE FOR INSERT
            WITH CHECK (
                analyst_facts.may_write(tenant_id, subject, source, withdrawn_at)
                AND recorded_by = current_setting('app.user_id', true)
            )
            """,
            """
            CREATE POLICY facts_update_authority ON analyst_facts.facts AS RESTRICTIVE FOR UPDATE
            USING (true)
            WITH CHECK (analyst_facts.may_write(tenant_id, subject, source, withdrawn_at))
            """,
            """ALTER TABLE analyst_facts.grants ENABLE ROW LEVEL SECURITY""",
            """
            CREATE POLICY grants_read ON analyst_facts.grants FOR SELECT
            USING (tenant_id = current_setting('app.tenant_id', true))
            """,
            """
            CREATE POLICY grants_insert ON analyst_facts.grants FOR INSERT
            WITH CHECK (
                tenant_id = current_setting('app.tenant_id', true)
                AND analyst_facts.is_admin(tenant_id)
            )
            """,
            """
            CREATE POLICY grants_delete ON analyst_facts.grants FOR DELETE
            USING (
                tenant_id = current_setting('app.tenant_id', true)
                AND analyst_facts.is_admin(tenant_id)
            )
            """,
            """ALTER TABLE analyst_facts.facts FORCE ROW LEVEL SECURITY""",
        ),
        "0b45e70f25d9de9d14d03750f2f2aa384867d322976dcd4be2afc4a59fbb3171",
    ),
    (
        5,
        "memory journal: episodes, extraction jobs, candidates, session summaries, procedures",
        (
            """
        CREATE TABLE analyst_facts.episodes (
            tenant_id  text NOT NULL CHECK (tenant_id <> ''),
            episode_id text NOT NULL CHECK (episode_id <> ''),
            user_id    text NOT NULL CHECK (user_id <> ''),
            thread_id  text NOT NULL CHECK (thread_id <> ''),
            at         timestamptz NOT NULL,
            role       text NOT NULL CHECK (role IN ('user', 'analyst')),
            kind       text NOT NULL CHECK (kind IN ('message', 'approve', 'reject', 'edit')),
            text       text NOT NULL,
            meta jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(meta) = 'object'),
            PRIMARY KEY (tenant_id, episode_id)
        )
        """,
            """CREATE INDEX episodes_thread ON analyst_facts.episodes (tenant_id, user_id, thread_id, at)""",
            """CREATE INDEX episodes_time ON analyst_facts.episodes (tenant_id, user_id, at)""",
            """
        CREATE FUNCTION analyst_facts.episodes_immutable() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'memory journal: episodes are immutable; store a new episode'
                USING ERRCODE = 'integrity_constraint_violation';
        END
        $$
        """,
            """
        CREATE TRIGGER episodes_immutable BEFORE UPDATE ON analyst_facts.episodes
        FOR EACH ROW EXECUTE FUNCTION analyst_facts.episodes_immutable()
        """,
            """
        CREATE TABLE analyst_facts.extraction_jobs (
            tenant_id       text NOT NULL CHECK (tenant_id <> ''),
            job_id          text NOT NULL CHECK (job_id <> ''),
            user_id         text NOT NULL CHECK (user_id <> ''),
            thread_id       text NOT NULL,
            kind            text NOT NULL CHECK (kind IN ('decision', 'session_end')),
            episode_ids jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(episode_ids) = 'array'),
            status          text NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
            attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            created_at      timestamptz NOT NULL,
            next_attempt_at timestamptz NOT NULL,
            leased_until    timestamptz,
            finished_at     timestamptz,
            last_error      text,
            result jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(result) = 'object'),
            PRIMARY KEY (tenant_id, job_id),
            CONSTRAINT extraction_jobs_running_leased
                CHECK (status <> 'running' OR leased_until IS NOT NULL)
        )
        """,
            """
        CREATE INDEX extraction_jobs_due
        ON analyst_facts.extraction_jobs (tenant_id, user_id, status, next_attempt_at)
        """,
            """
        CREATE TABLE analyst_facts.memory_candidates (
            tenant_id    text NOT NULL CHECK (tenant_id <> ''),
            candidate_id text NOT NULL CHECK (candidate_id <> ''),
            user_id      text NOT NULL CHECK (user_id <> ''),
            kind         text NOT NULL CHECK (kind IN ('fact', 'preference', 'procedure', 'event', 'open_item', 'behaviour')),
            payload jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
            quote        text NOT NULL,
            episode_ids jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(episode_ids) = 'array'),
            status       text NOT NULL CHECK (status IN ('pending', 'confirmed', 'rejected', 'ungrounded')),
            reason       text NOT NULL,
            created_at   timestamptz NOT NULL,
            decided_at   timestamptz,
            job_id       text,
            PRIMARY KEY (tenant_id, candidate_id)
        )
        """,
            """
        CREATE INDEX memory_candidates_status
        ON analyst_facts.memory_candidates (tenant_id, user_id, status, created_at)
        """,
            """
        CREATE TABLE analyst_facts.session_summaries (
            tenant_id  text NOT NULL CHECK (tenant_id <> ''),
            session_id text NOT NULL CHECK (session_id <> ''),
            user_id    text NOT NULL CHECK (user_id <> ''),
            thread_id  text NOT NULL,
            started    timestamptz NOT NULL,
            ended      timestamptz NOT NULL,
            topic      text NOT NULL,
            summary    text NOT NULL,
            facts_learned jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(facts_learned) = 'array'),
            open_items jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(open_items) = 'array'),
            episode_ids jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(episode_ids) = 'array'),
            PRIMARY KEY (tenant_id, session_id),
            CONSTRAINT session_summaries_interval CHECK (started <= ended)
        )
        """,
            """
        CREATE INDEX session_summaries_ended
        ON analyst_facts.session_summaries (tenant_id, user_id, ended)
        """,
            """
        CREATE TABLE analyst_facts.procedures (
            tenant_id    text NOT NULL CHECK (tenant_id <> ''),
            procedure_id text NOT NULL CHECK (procedure_id <> ''),
            user_id      text NOT NULL CHECK (user_id <> ''),
            text         text NOT NULL,
            rule jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(rule) = 'object'),
            status       text NOT NULL CHECK (status IN ('active', 'retired')),
            confirmed_at timestamptz NOT NULL,
            review_at    timestamptz NOT NULL,
            episode_ids jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(episode_ids) = 'array'),
            candidate_id text,
            retired_at   timestamptz,
            PRIMARY KEY (tenant_id, procedure_id)
        )
        """,
            """
        CREATE INDEX procedures_status
        ON analyst_facts.procedures (tenant_id, user_id, status, confirmed_at)
        """,
            """ALTER TABLE analyst_facts.episodes ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.episodes FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY episodes_principal_isolation ON analyst_facts.episodes
        USING (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        """,
            """ALTER TABLE analyst_facts.extraction_jobs ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.extraction_jobs FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY extraction_jobs_principal_isolation ON analyst_facts.extraction_jobs
        USING (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        """,
            """ALTER TABLE analyst_facts.memory_candidates ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.memory_candidates FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY memory_candidates_principal_isolation ON analyst_facts.memory_candidates
        USING (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        """,
            """ALTER TABLE analyst_facts.session_summaries ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.session_summaries FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY session_summaries_principal_isolation ON analyst_facts.session_summaries
        USING (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        """,
            """ALTER TABLE analyst_facts.procedures ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.procedures FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY procedures_principal_isolation ON analyst_facts.procedures
        USING (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        """,
        ),
        "c42e30949719034a64d7e80ab67f159496292a66a2536b6703f384f1ed3536d5",
    ),
    (
        6,
        "memory audit: an append-only log of memory operations, and its key",
        (
            """
        CREATE TABLE analyst_facts.memory_secrets (
            name       text PRIMARY KEY CHECK (name <> ''),
            secret     text NOT NULL CHECK (length(secret) >= 64),
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
            """
        INSERT INTO analyst_facts.memory_secrets (name, secret) VALUES ('audit', encode(sha256(
            convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex'))
        """,
            """
        CREATE TABLE analyst_facts.memory_audit (
            tenant_id    text NOT NULL CHECK (tenant_id <> ''),
            audit_id     text NOT NULL CHECK (audit_id <> ''),
            user_id      text NOT NULL CHECK (user_id <> ''),
            subject_user text NOT NULL CHECK (subject_user <> ''),
            at           timestamptz NOT NULL,
            action       text NOT NULL CHECK (action <> ''),
            tier         text NOT NULL CHECK (tier <> ''),
            item_ids jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(item_ids) = 'array'),
            content_hash text CHECK (content_hash IS NULL OR length(content_hash) = 64),
            reason       text NOT NULL DEFAULT '',
            PRIMARY KEY (tenant_id, audit_id)
        )
        """,
            """CREATE INDEX memory_audit_subject ON analyst_facts.memory_audit (tenant_id, subject_user, at)""",
            """CREATE INDEX memory_audit_actor ON analyst_facts.memory_audit (tenant_id, user_id, at)""",
            """
        CREATE FUNCTION analyst_facts.append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'memory audit: % is append-only; add an entry instead',
                TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
        END
        $$
        """,
            """
        CREATE TRIGGER memory_audit_append_only BEFORE UPDATE OR DELETE ON analyst_facts.memory_audit
        FOR EACH ROW EXECUTE FUNCTION analyst_facts.append_only()
        """,
            """
        CREATE TRIGGER memory_audit_no_truncate BEFORE TRUNCATE ON analyst_facts.memory_audit
        FOR EACH STATEMENT EXECUTE FUNCTION analyst_facts.append_only()
        """,
            """
        CREATE TRIGGER memory_secrets_fixed BEFORE UPDATE OR DELETE ON analyst_facts.memory_secrets
        FOR EACH ROW EXECUTE FUNCTION analyst_facts.append_only()
        """,
            """ALTER TABLE analyst_facts.memory_audit ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.memory_audit FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY memory_audit_read ON analyst_facts.memory_audit FOR SELECT
        USING (tenant_id = current_setting('app.tenant_id', true) AND (
            subject_user = current_setting('app.user_id', true) OR user_id = current_setting('app.user_id', true) OR analyst_facts.is_admin(tenant_id)
        ))
        """,
            """
        CREATE POLICY memory_audit_insert ON analyst_facts.memory_audit FOR INSERT
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true)
            AND (subject_user = current_setting('app.user_id', true) OR analyst_facts.is_admin(tenant_id)))
        """,
        ),
        "8db490490fe05a0d374ce267473ee4f58c1f3accbba08fec427a6c704d22ead2",
    ),
    (
        7,
        "account deletion: a user deletes the facts about itself and its grants",
        (
            """
            CREATE POLICY facts_delete_authority ON analyst_facts.facts AS RESTRICTIVE FOR DELETE
            USING (subject = 'user:' || current_setting('app.user_id', true) OR analyst_facts.is_admin(tenant_id))
            """,
            """
            CREATE POLICY grants_delete_own ON analyst_facts.grants FOR DELETE
            USING (
                tenant_id = current_setting('app.tenant_id', true)
                AND user_id = current_setting('app.user_id', true)
            )
            """,
        ),
        "6a8fff37c2b7f338c993c35ddb76e28e75bbc4c16b04b586c5dc0a24b88e855a",
    ),
    (
        8,
        "tombstones: keyed hashes of forgotten text, so it is not learned again",
        (
            """
        CREATE TABLE analyst_facts.memory_tombstones (
            tenant_id  text NOT NULL CHECK (tenant_id <> ''),
            user_id    text NOT NULL CHECK (user_id <> ''),
            hash       text NOT NULL CHECK (length(hash) = 64),
            created_at timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, user_id, hash)
        )
        """,
            """ALTER TABLE analyst_facts.memory_tombstones ENABLE ROW LEVEL SECURITY""",
            """ALTER TABLE analyst_facts.memory_tombstones FORCE ROW LEVEL SECURITY""",
            """
        CREATE POLICY memory_tombstones_principal_isolation ON analyst_facts.memory_tombstones
        USING (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true) AND user_id = current_setting('app.user_id', true))
        """,
        ),
        "4b7de175a6818488b859e2d8fb324b05759f3c997c07d1b5dd7f111d1ec077d1",
    ),
)

#: The old runner's bookkeeping table.
MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS analyst_facts.migrations (
    version     integer PRIMARY KEY,
    description text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""

#: What the old ``grant_app_role`` gave an application role on a version-8 database.
APP_ROLE_GRANTS = (
    "GRANT USAGE ON SCHEMA analyst_facts TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON analyst_facts.facts TO {role}",
    "GRANT SELECT ON analyst_facts.migrations TO {role}",
    "GRANT SELECT, INSERT, DELETE ON analyst_facts.grants TO {role}",
    "GRANT SELECT, INSERT, DELETE ON analyst_facts.episodes TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON analyst_facts.extraction_jobs TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON analyst_facts.memory_candidates TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON analyst_facts.session_summaries TO {role}",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON analyst_facts.procedures TO {role}",
    "GRANT SELECT, INSERT ON analyst_facts.memory_audit TO {role}",
    "REVOKE UPDATE, DELETE, TRUNCATE ON analyst_facts.memory_audit FROM {role}",
    "GRANT SELECT ON analyst_facts.memory_secrets TO {role}",
    "GRANT SELECT, INSERT, DELETE ON analyst_facts.memory_tombstones TO {role}",
)


def build_old_postgres_ledger(owner_url: str, app_role: str) -> None:
    """Set the database at ``owner_url`` up as the old code's ``setup_fact_store(owner_url,
    app_roles=[app_role])`` did (connected as the tables' owner)."""
    import psycopg
    from psycopg import sql

    role = sql.Identifier(app_role)
    with psycopg.connect(owner_url) as conn, conn.transaction():
        conn.execute("CREATE SCHEMA IF NOT EXISTS analyst_facts")
        conn.execute(MIGRATIONS_TABLE)
        for version, description, statements, checksum in RELEASED_POSTGRES:
            for statement in statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO analyst_facts.migrations (version, description, checksum)"
                " VALUES (%s, %s, %s)",
                (version, description, checksum),
            )
        for grant in APP_ROLE_GRANTS:
            conn.execute(sql.SQL(grant).format(role=role))
