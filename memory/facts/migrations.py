"""Append-only, numbered schema migrations of the fact ledger, for SQLite and Postgres.

(Over 600 lines on purpose: the migrations are append-only history; each one's SQLite and
Postgres statements stay side by side, and released ones are never edited or moved.)

Rules: a migration, once released, is never edited or removed -- a change is a new entry at
the end of :data:`MIGRATIONS`. Each database records the versions it applied with a checksum
of the statements; opening a database whose record disagrees with this list (a migration
edited after it ran, or a version this code does not know) is a :class:`FactLedgerSchemaError`.

Every record also carries ``schema_version``: the record shape it was written in. A migration
that changes the shape rewrites existing rows and bumps their ``schema_version``, in the same
transaction as the DDL.

History:

1. The ledger as first specified: string values, validity intervals, supersession, source
   episode, and the database guards (closed intervals are non-empty, one open fact per key,
   one fact per key and start, no overlapping intervals; Postgres adds row-level security).
2. Typed records: values become JSON (old strings become JSON strings), plus memory type,
   source, confidence, retention policy, retraction provenance and withdrawal (a fact replaced
   at the same ``valid_from`` under a conflict policy is kept, withdrawn). The guards are
   rebuilt to ignore withdrawn rows. Rows are upgraded to ``schema_version`` 2.

3. Reads and guards at the speed of the index: each record keeps the episodes that restated
   it (same value, same ``valid_from``) in ``restated_in``; the overlap guard (SQLite triggers)
   checks the two neighbours of a row by seeks instead of scanning the key; the
   ``(tenant, subject, valid_from)`` index, which misled the Postgres planner and nothing
   reads any more, is dropped (reads seek ``facts_one_start``, ordered (tenant, subject,
   attribute, valid_from), and ``facts_one_open``). Rows are upgraded to ``schema_version`` 3.

4. Write authority: each record names the user whose principal wrote it (``recorded_by``),
   and ``grants`` (SQLite ``fact_grants``) lets a user write subjects other than its own
   (``writer`` of a subject or ``prefix*`` pattern, or ``admin`` of the tenant). On Postgres a
   restrictive row-security policy checks every inserted and updated fact against the grants
   for ``app.user_id`` (``analyst_facts.may_write``, the rule of
   :func:`memory.facts.rules.authority_of`); only a tenant's admin (or the owner) changes
   grants. Rows are upgraded to ``schema_version`` 4.

5. The memory journal (:mod:`memory.journal`): ``episodes`` (immutable user turns: an update
   trigger refuses every change, and on Postgres the application role has no UPDATE on
   them), ``extraction_jobs``, ``memory_candidates``, ``session_summaries`` and
   ``procedures``. Each row belongs to one tenant *and* one user; on Postgres every journal
   table has forced row-level security on both (``app.tenant_id`` and ``app.user_id``).
   Facts are unchanged (their records stay at ``schema_version`` 4).

6. The memory audit (:mod:`memory.journal.audit`): ``memory_audit``, an append-only log of
   memory writes, confirmations, rejections, reads into a prompt, retirements and deletions
   (acting user, whose memory, time, action, tier, item ids, a keyed content hash, a fixed
   reason), and ``memory_secrets``, which holds the database's random audit key (created here;
   ``ANALYST_AUDIT_KEY`` replaces it). Triggers refuse every UPDATE and DELETE of audit rows
   (and any change of the key), for everyone; on Postgres the application role gets only
   SELECT and INSERT on the audit (SELECT on the key), and forced row security shows a user
   the entries about its memory or written by it (a tenant admin: the tenant's), and lets it
   insert only entries it acted in.

7. Account deletion: facts are otherwise never deleted, but a user's account deletion removes
   every fact about it. On Postgres a restrictive DELETE policy lets the application role
   delete only facts of subject ``user:<app.user_id>`` (a tenant admin: any of the tenant's),
   and a second DELETE policy on ``grants`` lets a user drop the grants it holds itself
   (only an admin could before). The guard triggers (SQLite) and the exclusion constraint
   fire on INSERT and UPDATE only, so a DELETE passes them; SQLite needs no change (its
   single file has no roles), and records a no-op statement.

8. Tombstones (:mod:`agent.app.forgetting`): ``memory_tombstones`` holds, per tenant and
   user, the keyed hash (the audit key of migration 6) of every text unit a user forgot --
   never the text -- so extraction does not learn it again. Forced row security on Postgres
   as on the journal tables; the application role may read, insert and (account deletion)
   delete them.

SQLite keeps everything in one file; Postgres keeps the ledger in the ``analyst_facts`` schema.
The Postgres runner must connect as the tables' owner (or a superuser); the application role
only reads the migrations table to check the version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memory.errors import FactLedgerSchemaError, UnsafeDatabaseRoleError

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite
    import psycopg

Backend = Literal["sqlite", "postgres"]

#: The Postgres schema that holds the ledger's tables.
PG_SCHEMA = "analyst_facts"
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


def _sqlite_neighbour_trigger(name: str, event: str) -> str:
    """The overlap guard as two seeks: the row's predecessor and successor on its key.

    Active intervals of a key never overlap (this trigger keeps it so), so a row overlaps
    one iff it overlaps the active row starting last at or before it, or the one starting
    first after it; each is one ``ORDER BY valid_from LIMIT 1`` on ``facts_one_start``.
    """
    key = (
        "f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute"
        " AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id"
    )
    return f"""
    CREATE TRIGGER {name} BEFORE {event} ON facts
    WHEN NEW.withdrawn_at IS NULL AND (
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


_PG_FACTS = f"{PG_SCHEMA}.facts"
_PG_GRANTS = f"{PG_SCHEMA}.grants"
_PG_USER = "current_setting('app.user_id', true)"

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
    principal = f"tenant_id = current_setting('app.tenant_id', true) AND user_id = {_PG_USER}"
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


def _journal_sqlite() -> tuple[str, ...]:
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


def _journal_postgres() -> tuple[str, ...]:
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
            subject_user = {_PG_USER} OR user_id = {_PG_USER} OR {s}.is_admin(tenant_id)
        ))
        """,
        f"""
        CREATE POLICY memory_audit_insert ON {s}.memory_audit FOR INSERT
        WITH CHECK ({tenant} AND user_id = {_PG_USER}
            AND (subject_user = {_PG_USER} OR {s}.is_admin(tenant_id)))
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
                      AND g.user_id = {_PG_USER}
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
                FROM (SELECT {_PG_USER} AS u) AS acting
            $$
            """,
            f"""
            CREATE POLICY facts_write_authority ON {_PG_FACTS} AS RESTRICTIVE FOR INSERT
            WITH CHECK (
                {PG_SCHEMA}.may_write(tenant_id, subject, source, withdrawn_at)
                AND recorded_by = {_PG_USER}
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
    Migration(
        version=5,
        description="memory journal: episodes, extraction jobs, candidates, session "
        "summaries, procedures",
        sqlite=_journal_sqlite(),
        postgres=_journal_postgres(),
    ),
    Migration(
        version=6,
        description="memory audit: an append-only log of memory operations, and its key",
        sqlite=_audit_sqlite(),
        postgres=_audit_postgres(),
    ),
    Migration(
        version=7,
        description="account deletion: a user deletes the facts about itself and its grants",
        sqlite=("SELECT 1",),
        postgres=(
            f"""
            CREATE POLICY facts_delete_authority ON {_PG_FACTS} AS RESTRICTIVE FOR DELETE
            USING (subject = 'user:' || {_PG_USER} OR {PG_SCHEMA}.is_admin(tenant_id))
            """,
            f"""
            CREATE POLICY grants_delete_own ON {_PG_GRANTS} FOR DELETE
            USING (
                tenant_id = current_setting('app.tenant_id', true)
                AND user_id = {_PG_USER}
            )
            """,
        ),
    ),
    Migration(
        version=8,
        description="tombstones: keyed hashes of forgotten text, so it is not learned again",
        sqlite=_tombstones_sqlite(),
        postgres=_tombstones_postgres(),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def check_applied(applied: Iterable[Sequence[Any]], backend: Backend, where: str) -> int:
    """Validate (version, checksum) rows a database recorded; return its version."""
    known = {m.version: m for m in MIGRATIONS}
    version = 0
    for row in applied:
        number, checksum = int(row[0]), str(row[1])
        migration = known.get(number)
        if migration is None:
            raise FactLedgerSchemaError(
                f"The fact ledger at {where} has schema version {number}, newer than this "
                f"analyst knows ({LATEST_VERSION}). Upgrade analyst before using this database."
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


def _target(target: int | None) -> int:
    if target is None:
        return LATEST_VERSION
    if not 0 <= target <= LATEST_VERSION:
        raise ValueError(f"migration target {target} is outside 0..{LATEST_VERSION}")
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
    conn: sqlite3.Connection, *, where: str, target: int | None = None
) -> list[int]:
    """Apply pending migrations (up to ``target``) in one IMMEDIATE transaction.

    The connection must be in autocommit mode (``isolation_level=None``). Concurrent openers
    serialize on the write lock; the second finds nothing left to do. Returns the versions
    applied now.
    """
    goal = _target(target)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_SQLITE_MIGRATIONS_TABLE)
        rows = conn.execute(
            "SELECT version, checksum FROM fact_migrations ORDER BY version"
        ).fetchall()
        current = check_applied(rows, "sqlite", where)
        applied: list[int] = []
        for migration in MIGRATIONS:
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
    conn: aiosqlite.Connection, *, where: str, target: int | None = None
) -> list[int]:
    """:func:`migrate_sqlite_sync` on an aiosqlite connection's own thread."""
    result: list[int] = await conn._execute(
        migrate_sqlite_sync, conn._conn, where=where, target=target
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
    goal = _target(target)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_MIGRATION_LOCK,))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
        await conn.execute(_PG_MIGRATIONS_TABLE)
        cursor = await conn.execute(
            f"SELECT version, checksum FROM {PG_SCHEMA}.migrations ORDER BY version"
        )
        current = check_applied(await cursor.fetchall(), "postgres", where)
        applied: list[int] = []
        for migration in MIGRATIONS:
            if current < migration.version <= goal:
                for statement in migration.postgres:
                    await conn.execute(statement)
                await conn.execute(
                    f"INSERT INTO {PG_SCHEMA}.migrations (version, description, checksum)"
                    " VALUES (%s, %s, %s)",
                    (migration.version, migration.description, migration.checksum("postgres")),
                )
                applied.append(migration.version)
        for role in app_roles:
            await grant_app_role(conn, role)
    return applied


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
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.episodes",))
    found = await cursor.fetchone()
    if found is not None and found[0] is not None:  # from migration 5 on: the journal
        for table in JOURNAL_TABLES:
            # Episodes are immutable: inserted and (by retention) deleted, never updated.
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
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.{AUDIT_TABLE}",))
    found = await cursor.fetchone()
    if found is not None and found[0] is not None:  # from migration 6 on: the audit
        audit, secrets = sql.Identifier(AUDIT_TABLE), sql.Identifier(SECRETS_TABLE)
        await conn.execute(
            sql.SQL("GRANT SELECT, INSERT ON {}.{} TO {}").format(schema, audit, ident)
        )
        await conn.execute(
            sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE ON {}.{} FROM {}").format(schema, audit, ident)
        )
        await conn.execute(sql.SQL("GRANT SELECT ON {}.{} TO {}").format(schema, secrets, ident))
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.{TOMBSTONES_TABLE}",))
    found = await cursor.fetchone()
    if found is not None and found[0] is not None:  # from migration 8 on: tombstones
        await conn.execute(
            sql.SQL("GRANT SELECT, INSERT, DELETE ON {}.{} TO {}").format(
                schema, sql.Identifier(TOMBSTONES_TABLE), ident
            )
        )


async def postgres_version(conn: psycopg.AsyncConnection[Any], *, where: str) -> int:
    """The ledger's applied version as the connected role sees it; checksums verified."""
    cursor = await conn.execute("SELECT to_regclass(%s)", (f"{PG_SCHEMA}.migrations",))
    row = await cursor.fetchone()
    if row is None or row[0] is None:
        return 0
    cursor = await conn.execute(
        f"SELECT version, checksum FROM {PG_SCHEMA}.migrations ORDER BY version"
    )
    return check_applied(await cursor.fetchall(), "postgres", where)


async def refuse_unsafe_role(conn: psycopg.AsyncConnection[Any], *, what: str, where: str) -> str:
    """The connected role's name; :class:`UnsafeDatabaseRoleError` if it is a superuser or
    bypasses row-level security (then nothing would separate tenants and users)."""
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
