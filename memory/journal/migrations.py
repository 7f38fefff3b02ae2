"""The memory journal's own schema migrations, for SQLite and Postgres.

The journal lives in the fact ledger's database and shares its numbering and bookkeeping:
:data:`MIGRATIONS` are versions 5, 6 and 8 of the ledger's list
(:data:`memory.facts.migrations.MIGRATIONS`), which runs them at those positions, and
:func:`grant_app_role` gives an application role its privileges on the journal's tables.
Released migrations are never edited; what each one does is described in
``docs/memory-lifecycle.md`` (Schema migrations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from memory.sql.migrations import PG_SCHEMA, PG_USER, Migration

if TYPE_CHECKING:
    import psycopg

#: The memory journal's tables (migration 5), in both backends' spelling.
JOURNAL_TABLES = (
    "episodes",
    "extraction_jobs",
    "memory_candidates",
    "session_summaries",
    "procedures",
)
#: The journal's table that the application may insert into and delete from, never update.
JOURNAL_IMMUTABLE = "episodes"
#: The append-only memory audit (migration 6): the application may read and insert, only.
AUDIT_TABLE = "memory_audit"
#: The database's secrets (migration 6): the audit key; the application may only read it.
SECRETS_TABLE = "memory_secrets"
#: Keyed hashes of forgotten text (migration 8): read, inserted and deleted, never updated.
TOMBSTONES_TABLE = "memory_tombstones"


def _sqlite_time(column: str, *, null: bool = False) -> str:
    """A fixed-width UTC time column (``2026-06-03T10:00:00.000000+00:00``), as in ``facts``."""
    shape = f"length({column}) = 32 AND {column} LIKE '%+00:00'"
    if null:
        return f"{column} TEXT CHECK ({column} IS NULL OR ({shape}))"
    return f"{column} TEXT NOT NULL CHECK ({shape})"


def _sqlite_json(column: str, kind: Literal["array", "object"]) -> str:
    empty = "[]" if kind == "array" else "{}"
    return (
        f"{column} TEXT NOT NULL DEFAULT '{empty}'"
        f" CHECK (json_valid({column}) AND json_type({column}) = '{kind}')"
    )


def _pg_json(column: str, kind: Literal["array", "object"]) -> str:
    empty = "[]" if kind == "array" else "{}"
    return f"{column} jsonb NOT NULL DEFAULT '{empty}' CHECK (jsonb_typeof({column}) = '{kind}')"


def _pg_principal_rls(table: str) -> tuple[str, ...]:
    """Forced row security on a journal table: rows of the transaction's tenant *and* user."""
    principal = f"tenant_id = current_setting('app.tenant_id', true) AND user_id = {PG_USER}"
    return (
        f"ALTER TABLE {PG_SCHEMA}.{table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {PG_SCHEMA}.{table} FORCE ROW LEVEL SECURITY",
        f"""
        CREATE POLICY {table}_principal_isolation ON {PG_SCHEMA}.{table}
        USING ({principal})
        WITH CHECK ({principal})
        """,
    )


_JOURNAL_ENUMS = {
    "role": "('user', 'analyst')",
    "episode_kind": "('message', 'approve', 'reject', 'edit')",
    "job_kind": "('decision', 'session_end')",
    "job_status": "('pending', 'running', 'done', 'failed')",
    "candidate_kind": "('fact', 'preference', 'procedure', 'event', 'open_item', 'behaviour')",
    "candidate_status": "('pending', 'confirmed', 'rejected', 'ungrounded')",
    "procedure_status": "('active', 'retired')",
}


def _episodes_sqlite() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    return (
        f"""
        CREATE TABLE episodes (
            tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
            episode_id TEXT NOT NULL CHECK (episode_id <> ''),
            user_id    TEXT NOT NULL CHECK (user_id <> ''),
            thread_id  TEXT NOT NULL CHECK (thread_id <> ''),
            {_sqlite_time("at")},
            role       TEXT NOT NULL CHECK (role IN {e["role"]}),
            kind       TEXT NOT NULL CHECK (kind IN {e["episode_kind"]}),
            text       TEXT NOT NULL,
            {_sqlite_json("meta", "object")},
            PRIMARY KEY (tenant_id, episode_id)
        )
        """,
        "CREATE INDEX episodes_thread ON episodes (tenant_id, user_id, thread_id, at)",
        "CREATE INDEX episodes_time ON episodes (tenant_id, user_id, at)",
        """
        CREATE TRIGGER episodes_immutable BEFORE UPDATE ON episodes
        BEGIN
            SELECT RAISE(ABORT, 'memory journal: episodes are immutable; store a new episode');
        END
        """,
    )


def _extraction_jobs_sqlite() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    return (
        f"""
        CREATE TABLE extraction_jobs (
            tenant_id   TEXT NOT NULL CHECK (tenant_id <> ''),
            job_id      TEXT NOT NULL CHECK (job_id <> ''),
            user_id     TEXT NOT NULL CHECK (user_id <> ''),
            thread_id   TEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN {e["job_kind"]}),
            {_sqlite_json("episode_ids", "array")},
            status      TEXT NOT NULL CHECK (status IN {e["job_status"]}),
            attempts    INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            {_sqlite_time("created_at")},
            {_sqlite_time("next_attempt_at")},
            {_sqlite_time("leased_until", null=True)},
            {_sqlite_time("finished_at", null=True)},
            last_error  TEXT,
            {_sqlite_json("result", "object")},
            PRIMARY KEY (tenant_id, job_id),
            CONSTRAINT extraction_jobs_running_leased
                CHECK (status <> 'running' OR leased_until IS NOT NULL)
        )
        """,
        """
        CREATE INDEX extraction_jobs_due
        ON extraction_jobs (tenant_id, user_id, status, next_attempt_at)
        """,
    )


def _memory_candidates_sqlite() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    return (
        f"""
        CREATE TABLE memory_candidates (
            tenant_id    TEXT NOT NULL CHECK (tenant_id <> ''),
            candidate_id TEXT NOT NULL CHECK (candidate_id <> ''),
            user_id      TEXT NOT NULL CHECK (user_id <> ''),
            kind         TEXT NOT NULL CHECK (kind IN {e["candidate_kind"]}),
            {_sqlite_json("payload", "object")},
            quote        TEXT NOT NULL,
            {_sqlite_json("episode_ids", "array")},
            status       TEXT NOT NULL CHECK (status IN {e["candidate_status"]}),
            reason       TEXT NOT NULL,
            {_sqlite_time("created_at")},
            {_sqlite_time("decided_at", null=True)},
            job_id       TEXT,
            PRIMARY KEY (tenant_id, candidate_id)
        )
        """,
        """
        CREATE INDEX memory_candidates_status
        ON memory_candidates (tenant_id, user_id, status, created_at)
        """,
    )


def _session_summaries_sqlite() -> tuple[str, ...]:
    return (
        f"""
        CREATE TABLE session_summaries (
            tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
            session_id TEXT NOT NULL CHECK (session_id <> ''),
            user_id    TEXT NOT NULL CHECK (user_id <> ''),
            thread_id  TEXT NOT NULL,
            {_sqlite_time("started")},
            {_sqlite_time("ended")},
            topic      TEXT NOT NULL,
            summary    TEXT NOT NULL,
            {_sqlite_json("facts_learned", "array")},
            {_sqlite_json("open_items", "array")},
            {_sqlite_json("episode_ids", "array")},
            PRIMARY KEY (tenant_id, session_id),
            CONSTRAINT session_summaries_interval CHECK (started <= ended)
        )
        """,
        "CREATE INDEX session_summaries_ended ON session_summaries (tenant_id, user_id, ended)",
    )


def _procedures_sqlite() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    return (
        f"""
        CREATE TABLE procedures (
            tenant_id    TEXT NOT NULL CHECK (tenant_id <> ''),
            procedure_id TEXT NOT NULL CHECK (procedure_id <> ''),
            user_id      TEXT NOT NULL CHECK (user_id <> ''),
            text         TEXT NOT NULL,
            {_sqlite_json("rule", "object")},
            status       TEXT NOT NULL CHECK (status IN {e["procedure_status"]}),
            {_sqlite_time("confirmed_at")},
            {_sqlite_time("review_at")},
            {_sqlite_json("episode_ids", "array")},
            candidate_id TEXT,
            {_sqlite_time("retired_at", null=True)},
            PRIMARY KEY (tenant_id, procedure_id)
        )
        """,
        """
        CREATE INDEX procedures_status
        ON procedures (tenant_id, user_id, status, confirmed_at)
        """,
    )


def _journal_sqlite() -> tuple[str, ...]:
    """Migration 5 on SQLite: the journal's tables, each with its indexes (and guard)."""
    return (
        *_episodes_sqlite(),
        *_extraction_jobs_sqlite(),
        *_memory_candidates_sqlite(),
        *_session_summaries_sqlite(),
        *_procedures_sqlite(),
    )


def _episodes_postgres() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    s = PG_SCHEMA
    return (
        f"""
        CREATE TABLE {s}.episodes (
            tenant_id  text NOT NULL CHECK (tenant_id <> ''),
            episode_id text NOT NULL CHECK (episode_id <> ''),
            user_id    text NOT NULL CHECK (user_id <> ''),
            thread_id  text NOT NULL CHECK (thread_id <> ''),
            at         timestamptz NOT NULL,
            role       text NOT NULL CHECK (role IN {e["role"]}),
            kind       text NOT NULL CHECK (kind IN {e["episode_kind"]}),
            text       text NOT NULL,
            {_pg_json("meta", "object")},
            PRIMARY KEY (tenant_id, episode_id)
        )
        """,
        f"CREATE INDEX episodes_thread ON {s}.episodes (tenant_id, user_id, thread_id, at)",
        f"CREATE INDEX episodes_time ON {s}.episodes (tenant_id, user_id, at)",
        # The application role gets no UPDATE on episodes (see grant_app_role); the trigger
        # holds for everyone else, the owner included.
        f"""
        CREATE FUNCTION {s}.episodes_immutable() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'memory journal: episodes are immutable; store a new episode'
                USING ERRCODE = 'integrity_constraint_violation';
        END
        $$
        """,
        f"""
        CREATE TRIGGER episodes_immutable BEFORE UPDATE ON {s}.episodes
        FOR EACH ROW EXECUTE FUNCTION {s}.episodes_immutable()
        """,
    )


def _extraction_jobs_postgres() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    s = PG_SCHEMA
    return (
        f"""
        CREATE TABLE {s}.extraction_jobs (
            tenant_id       text NOT NULL CHECK (tenant_id <> ''),
            job_id          text NOT NULL CHECK (job_id <> ''),
            user_id         text NOT NULL CHECK (user_id <> ''),
            thread_id       text NOT NULL,
            kind            text NOT NULL CHECK (kind IN {e["job_kind"]}),
            {_pg_json("episode_ids", "array")},
            status          text NOT NULL CHECK (status IN {e["job_status"]}),
            attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            created_at      timestamptz NOT NULL,
            next_attempt_at timestamptz NOT NULL,
            leased_until    timestamptz,
            finished_at     timestamptz,
            last_error      text,
            {_pg_json("result", "object")},
            PRIMARY KEY (tenant_id, job_id),
            CONSTRAINT extraction_jobs_running_leased
                CHECK (status <> 'running' OR leased_until IS NOT NULL)
        )
        """,
        f"""
        CREATE INDEX extraction_jobs_due
        ON {s}.extraction_jobs (tenant_id, user_id, status, next_attempt_at)
        """,
    )


def _memory_candidates_postgres() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    s = PG_SCHEMA
    return (
        f"""
        CREATE TABLE {s}.memory_candidates (
            tenant_id    text NOT NULL CHECK (tenant_id <> ''),
            candidate_id text NOT NULL CHECK (candidate_id <> ''),
            user_id      text NOT NULL CHECK (user_id <> ''),
            kind         text NOT NULL CHECK (kind IN {e["candidate_kind"]}),
            {_pg_json("payload", "object")},
            quote        text NOT NULL,
            {_pg_json("episode_ids", "array")},
            status       text NOT NULL CHECK (status IN {e["candidate_status"]}),
            reason       text NOT NULL,
            created_at   timestamptz NOT NULL,
            decided_at   timestamptz,
            job_id       text,
            PRIMARY KEY (tenant_id, candidate_id)
        )
        """,
        f"""
        CREATE INDEX memory_candidates_status
        ON {s}.memory_candidates (tenant_id, user_id, status, created_at)
        """,
    )


def _session_summaries_postgres() -> tuple[str, ...]:
    s = PG_SCHEMA
    return (
        f"""
        CREATE TABLE {s}.session_summaries (
            tenant_id  text NOT NULL CHECK (tenant_id <> ''),
            session_id text NOT NULL CHECK (session_id <> ''),
            user_id    text NOT NULL CHECK (user_id <> ''),
            thread_id  text NOT NULL,
            started    timestamptz NOT NULL,
            ended      timestamptz NOT NULL,
            topic      text NOT NULL,
            summary    text NOT NULL,
            {_pg_json("facts_learned", "array")},
            {_pg_json("open_items", "array")},
            {_pg_json("episode_ids", "array")},
            PRIMARY KEY (tenant_id, session_id),
            CONSTRAINT session_summaries_interval CHECK (started <= ended)
        )
        """,
        f"""
        CREATE INDEX session_summaries_ended
        ON {s}.session_summaries (tenant_id, user_id, ended)
        """,
    )


def _procedures_postgres() -> tuple[str, ...]:
    e = _JOURNAL_ENUMS
    s = PG_SCHEMA
    return (
        f"""
        CREATE TABLE {s}.procedures (
            tenant_id    text NOT NULL CHECK (tenant_id <> ''),
            procedure_id text NOT NULL CHECK (procedure_id <> ''),
            user_id      text NOT NULL CHECK (user_id <> ''),
            text         text NOT NULL,
            {_pg_json("rule", "object")},
            status       text NOT NULL CHECK (status IN {e["procedure_status"]}),
            confirmed_at timestamptz NOT NULL,
            review_at    timestamptz NOT NULL,
            {_pg_json("episode_ids", "array")},
            candidate_id text,
            retired_at   timestamptz,
            PRIMARY KEY (tenant_id, procedure_id)
        )
        """,
        f"""
        CREATE INDEX procedures_status
        ON {s}.procedures (tenant_id, user_id, status, confirmed_at)
        """,
    )


def _journal_postgres() -> tuple[str, ...]:
    """Migration 5 on Postgres: the journal's tables, then row security on each."""
    return (
        *_episodes_postgres(),
        *_extraction_jobs_postgres(),
        *_memory_candidates_postgres(),
        *_session_summaries_postgres(),
        *_procedures_postgres(),
        *(statement for table in JOURNAL_TABLES for statement in _pg_principal_rls(table)),
    )


def _audit_sqlite() -> tuple[str, ...]:
    refuse = "SELECT RAISE(ABORT, 'memory audit: the log is append-only; add an entry instead')"
    return (
        """
        CREATE TABLE memory_secrets (
            name       TEXT PRIMARY KEY CHECK (name <> ''),
            secret     TEXT NOT NULL CHECK (length(secret) >= 64),
            created_at TEXT NOT NULL
        )
        """,
        """
        INSERT INTO memory_secrets (name, secret, created_at)
        VALUES ('audit', lower(hex(randomblob(32))), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        """,
        *(
            f"""
            CREATE TRIGGER memory_secrets_no_{event.lower()} BEFORE {event} ON memory_secrets
            BEGIN
                SELECT RAISE(ABORT, 'memory secrets: a key never changes (audit hashes use it)');
            END
            """
            for event in ("UPDATE", "DELETE")
        ),
        f"""
        CREATE TABLE memory_audit (
            tenant_id    TEXT NOT NULL CHECK (tenant_id <> ''),
            audit_id     TEXT NOT NULL CHECK (audit_id <> ''),
            user_id      TEXT NOT NULL CHECK (user_id <> ''),
            subject_user TEXT NOT NULL CHECK (subject_user <> ''),
            {_sqlite_time("at")},
            action       TEXT NOT NULL CHECK (action <> ''),
            tier         TEXT NOT NULL CHECK (tier <> ''),
            {_sqlite_json("item_ids", "array")},
            content_hash TEXT CHECK (content_hash IS NULL OR length(content_hash) = 64),
            reason       TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (tenant_id, audit_id)
        )
        """,
        "CREATE INDEX memory_audit_subject ON memory_audit (tenant_id, subject_user, at)",
        "CREATE INDEX memory_audit_actor ON memory_audit (tenant_id, user_id, at)",
        f"CREATE TRIGGER memory_audit_no_update BEFORE UPDATE ON memory_audit BEGIN {refuse}; END",
        f"CREATE TRIGGER memory_audit_no_delete BEFORE DELETE ON memory_audit BEGIN {refuse}; END",
    )


def _audit_postgres() -> tuple[str, ...]:
    s = PG_SCHEMA
    tenant = "tenant_id = current_setting('app.tenant_id', true)"
    return (
        f"""
        CREATE TABLE {s}.memory_secrets (
            name       text PRIMARY KEY CHECK (name <> ''),
            secret     text NOT NULL CHECK (length(secret) >= 64),
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        # 2 x 122 random bits (gen_random_uuid reads the strong random source), hashed.
        f"""
        INSERT INTO {s}.memory_secrets (name, secret) VALUES ('audit', encode(sha256(
            convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex'))
        """,
        f"""
        CREATE TABLE {s}.memory_audit (
            tenant_id    text NOT NULL CHECK (tenant_id <> ''),
            audit_id     text NOT NULL CHECK (audit_id <> ''),
            user_id      text NOT NULL CHECK (user_id <> ''),
            subject_user text NOT NULL CHECK (subject_user <> ''),
            at           timestamptz NOT NULL,
            action       text NOT NULL CHECK (action <> ''),
            tier         text NOT NULL CHECK (tier <> ''),
            {_pg_json("item_ids", "array")},
            content_hash text CHECK (content_hash IS NULL OR length(content_hash) = 64),
            reason       text NOT NULL DEFAULT '',
            PRIMARY KEY (tenant_id, audit_id)
        )
        """,
        f"CREATE INDEX memory_audit_subject ON {s}.memory_audit (tenant_id, subject_user, at)",
        f"CREATE INDEX memory_audit_actor ON {s}.memory_audit (tenant_id, user_id, at)",
        # The application role has no UPDATE or DELETE on either table (grant_app_role); the
        # triggers hold for everyone else, the owner included.
        f"""
        CREATE FUNCTION {s}.append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'memory audit: % is append-only; add an entry instead',
                TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
        END
        $$
        """,
        f"""
        CREATE TRIGGER memory_audit_append_only BEFORE UPDATE OR DELETE ON {s}.memory_audit
        FOR EACH ROW EXECUTE FUNCTION {s}.append_only()
        """,
        f"""
        CREATE TRIGGER memory_audit_no_truncate BEFORE TRUNCATE ON {s}.memory_audit
        FOR EACH STATEMENT EXECUTE FUNCTION {s}.append_only()
        """,
        f"""
        CREATE TRIGGER memory_secrets_fixed BEFORE UPDATE OR DELETE ON {s}.memory_secrets
        FOR EACH ROW EXECUTE FUNCTION {s}.append_only()
        """,
        f"ALTER TABLE {s}.memory_audit ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {s}.memory_audit FORCE ROW LEVEL SECURITY",
        f"""
        CREATE POLICY memory_audit_read ON {s}.memory_audit FOR SELECT
        USING ({tenant} AND (
            subject_user = {PG_USER} OR user_id = {PG_USER} OR {s}.is_admin(tenant_id)
        ))
        """,
        f"""
        CREATE POLICY memory_audit_insert ON {s}.memory_audit FOR INSERT
        WITH CHECK ({tenant} AND user_id = {PG_USER}
            AND (subject_user = {PG_USER} OR {s}.is_admin(tenant_id)))
        """,
    )


def _tombstones_sqlite() -> tuple[str, ...]:
    return (
        f"""
        CREATE TABLE memory_tombstones (
            tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
            user_id    TEXT NOT NULL CHECK (user_id <> ''),
            hash       TEXT NOT NULL CHECK (length(hash) = 64),
            {_sqlite_time("created_at")},
            PRIMARY KEY (tenant_id, user_id, hash)
        )
        """,
    )


def _tombstones_postgres() -> tuple[str, ...]:
    s = PG_SCHEMA
    return (
        f"""
        CREATE TABLE {s}.memory_tombstones (
            tenant_id  text NOT NULL CHECK (tenant_id <> ''),
            user_id    text NOT NULL CHECK (user_id <> ''),
            hash       text NOT NULL CHECK (length(hash) = 64),
            created_at timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, user_id, hash)
        )
        """,
        *_pg_principal_rls(TOMBSTONES_TABLE),
    )


EPISODES = Migration(
    version=5,
    description="memory journal: episodes, extraction jobs, candidates, session "
    "summaries, procedures",
    sqlite=_journal_sqlite(),
    postgres=_journal_postgres(),
)
AUDIT = Migration(
    version=6,
    description="memory audit: an append-only log of memory operations, and its key",
    sqlite=_audit_sqlite(),
    postgres=_audit_postgres(),
)
TOMBSTONES = Migration(
    version=8,
    description="tombstones: keyed hashes of forgotten text, so it is not learned again",
    sqlite=_tombstones_sqlite(),
    postgres=_tombstones_postgres(),
)

#: The journal's migrations, in version order.
MIGRATIONS: tuple[Migration, ...] = (EPISODES, AUDIT, TOMBSTONES)


async def grant_app_role(conn: psycopg.AsyncConnection[Any], role: str) -> None:
    """Give an application role (checked by the caller) its privileges on the journal's
    tables that exist: the immutable episodes are inserted and deleted, never updated; the
    audit only read and inserted; the key only read; row-level security still applies."""
    from psycopg import sql

    ident, schema = sql.Identifier(role), sql.Identifier(PG_SCHEMA)

    async def exists(table: str) -> bool:
        cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.{table}",))
        found = await cursor.fetchone()
        return found is not None and found[0] is not None

    if await exists(JOURNAL_IMMUTABLE):  # from migration 5 on
        for table in JOURNAL_TABLES:
            privileges = (
                "SELECT, INSERT, DELETE"
                if table == JOURNAL_IMMUTABLE
                else "SELECT, INSERT, UPDATE, DELETE"
            )
            await conn.execute(
                sql.SQL("GRANT {} ON {}.{} TO {}").format(
                    sql.SQL(privileges), schema, sql.Identifier(table), ident
                )
            )
    if await exists(AUDIT_TABLE):  # from migration 6 on
        audit, secrets = sql.Identifier(AUDIT_TABLE), sql.Identifier(SECRETS_TABLE)
        await conn.execute(
            sql.SQL("GRANT SELECT, INSERT ON {}.{} TO {}").format(schema, audit, ident)
        )
        await conn.execute(
            sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE ON {}.{} FROM {}").format(schema, audit, ident)
        )
        await conn.execute(sql.SQL("GRANT SELECT ON {}.{} TO {}").format(schema, secrets, ident))
    if await exists(TOMBSTONES_TABLE):  # from migration 8 on
        await conn.execute(
            sql.SQL("GRANT SELECT, INSERT, DELETE ON {}.{} TO {}").format(
                schema, sql.Identifier(TOMBSTONES_TABLE), ident
            )
        )
