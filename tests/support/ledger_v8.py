"""The fact ledger's SQLite schema as migrations 1-8 made it, frozen before the journal's
tables (5, 6 and 8) moved to :mod:`memory.journal.migrations`.

A test builds a database file from these statements exactly as the old code did (the
``fact_migrations`` bookkeeping included), then opens it with the current code. Never edit
this module: it is a record of what existing files on disk hold.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

#: (version, description, SQLite statements, SQLite checksum, Postgres checksum)
RELEASED: tuple[tuple[int, str, tuple[str, ...], str, str], ...] = (
    (
        1,
        "ledger: string values, validity intervals, supersession, guards",
        (
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
            """
    CREATE TRIGGER facts_no_overlap_insert BEFORE INSERT ON facts
    WHEN 1 AND EXISTS (
        SELECT 1 FROM facts f
        WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject
          AND f.attribute = NEW.attribute AND f.memory_id <> NEW.memory_id
          AND 1
          AND (NEW.valid_to IS NULL OR f.valid_from < NEW.valid_to)
          AND (f.valid_to IS NULL OR NEW.valid_from < f.valid_to)
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """,
            """
    CREATE TRIGGER facts_no_overlap_update BEFORE UPDATE OF valid_from, valid_to ON facts
    WHEN 1 AND EXISTS (
        SELECT 1 FROM facts f
        WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject
          AND f.attribute = NEW.attribute AND f.memory_id <> NEW.memory_id
          AND 1
          AND (NEW.valid_to IS NULL OR f.valid_from < NEW.valid_to)
          AND (f.valid_to IS NULL OR NEW.valid_from < f.valid_to)
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """,
        ),
        "037e18e18d38eaa2ad74abf2dbb39103d764dec1e9078314012a8a70da9f1737",
        "37cc4ebaedf5045ccb9219d082670f0802ee660cbaf6bbf2110bec688fb873af",
    ),
    (
        2,
        "typed records: JSON values, memory type, source, confidence, retention, retraction and withdrawal",
        (
            """ALTER TABLE facts ADD COLUMN memory_type TEXT NOT NULL DEFAULT 'semantic' CHECK (memory_type IN ('semantic', 'episodic', 'procedural', 'profile'))""",
            """ALTER TABLE facts ADD COLUMN source TEXT NOT NULL DEFAULT 'stated' CHECK (source IN ('inferred', 'observed', 'stated', 'confirmed'))""",
            """ALTER TABLE facts ADD COLUMN confidence REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1)""",
            """ALTER TABLE facts ADD COLUMN retention_policy TEXT NOT NULL DEFAULT 'default'""",
            """ALTER TABLE facts ADD COLUMN retracted_at TEXT""",
            """ALTER TABLE facts ADD COLUMN retraction_episode_id TEXT""",
            """ALTER TABLE facts ADD COLUMN withdrawn_at TEXT""",
            """UPDATE facts SET value = json_quote(value), schema_version = 2 WHERE schema_version < 2""",
            """DROP INDEX facts_one_open""",
            """
            CREATE UNIQUE INDEX facts_one_open ON facts (tenant_id, subject, attribute)
            WHERE valid_to IS NULL AND withdrawn_at IS NULL
            """,
            """DROP INDEX facts_one_start""",
            """
            CREATE UNIQUE INDEX facts_one_start ON facts (tenant_id, subject, attribute, valid_from)
            WHERE withdrawn_at IS NULL
            """,
            """CREATE INDEX facts_subject ON facts (tenant_id, subject, valid_from)""",
            """DROP TRIGGER facts_no_overlap_insert""",
            """DROP TRIGGER facts_no_overlap_update""",
            """
    CREATE TRIGGER facts_no_overlap_insert BEFORE INSERT ON facts
    WHEN NEW.withdrawn_at IS NULL AND EXISTS (
        SELECT 1 FROM facts f
        WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject
          AND f.attribute = NEW.attribute AND f.memory_id <> NEW.memory_id
          AND f.withdrawn_at IS NULL
          AND (NEW.valid_to IS NULL OR f.valid_from < NEW.valid_to)
          AND (f.valid_to IS NULL OR NEW.valid_from < f.valid_to)
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """,
            """
    CREATE TRIGGER facts_no_overlap_update BEFORE UPDATE OF valid_from, valid_to, withdrawn_at ON facts
    WHEN NEW.withdrawn_at IS NULL AND EXISTS (
        SELECT 1 FROM facts f
        WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject
          AND f.attribute = NEW.attribute AND f.memory_id <> NEW.memory_id
          AND f.withdrawn_at IS NULL
          AND (NEW.valid_to IS NULL OR f.valid_from < NEW.valid_to)
          AND (f.valid_to IS NULL OR NEW.valid_from < f.valid_to)
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """,
        ),
        "9ed85a6c1336f01acc0bc8922aff5689a0a990db29f7df115584d46738f6b842",
        "f2d627edf7aac3fbda0e04ebb7eafc6eb3b3e044a83fb55dcea05cd69608b935",
    ),
    (
        3,
        "seek-speed reads and guards; restatements kept as provenance",
        (
            """ALTER TABLE facts ADD COLUMN restated_in TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(restated_in) AND json_type(restated_in) = 'array')""",
            """UPDATE facts SET schema_version = 3 WHERE schema_version < 3""",
            """DROP INDEX facts_subject""",
            """DROP TRIGGER facts_no_overlap_insert""",
            """DROP TRIGGER facts_no_overlap_update""",
            """
    CREATE TRIGGER facts_no_overlap_insert BEFORE INSERT ON facts
    WHEN NEW.withdrawn_at IS NULL AND (
        EXISTS (
            SELECT 1 FROM (
                SELECT f.valid_to FROM facts f
                WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id AND f.valid_from <= NEW.valid_from
                ORDER BY f.valid_from DESC LIMIT 1
            ) p WHERE p.valid_to IS NULL OR p.valid_to > NEW.valid_from
        )
        OR EXISTS (
            SELECT 1 FROM (
                SELECT f.valid_from FROM facts f
                WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id AND f.valid_from > NEW.valid_from
                ORDER BY f.valid_from LIMIT 1
            ) n WHERE NEW.valid_to IS NULL OR n.valid_from < NEW.valid_to
        )
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """,
            """
    CREATE TRIGGER facts_no_overlap_update BEFORE UPDATE OF valid_from, valid_to, withdrawn_at ON facts
    WHEN NEW.withdrawn_at IS NULL AND (
        EXISTS (
            SELECT 1 FROM (
                SELECT f.valid_to FROM facts f
                WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id AND f.valid_from <= NEW.valid_from
                ORDER BY f.valid_from DESC LIMIT 1
            ) p WHERE p.valid_to IS NULL OR p.valid_to > NEW.valid_from
        )
        OR EXISTS (
            SELECT 1 FROM (
                SELECT f.valid_from FROM facts f
                WHERE f.tenant_id = NEW.tenant_id AND f.subject = NEW.subject AND f.attribute = NEW.attribute AND f.withdrawn_at IS NULL AND f.memory_id <> NEW.memory_id AND f.valid_from > NEW.valid_from
                ORDER BY f.valid_from LIMIT 1
            ) n WHERE NEW.valid_to IS NULL OR n.valid_from < NEW.valid_to
        )
    )
    BEGIN
        SELECT RAISE(ABORT, 'fact ledger: overlapping validity intervals for one key');
    END
    """,
        ),
        "8c39c7a5a17ea6b128c13235a258b320627f096a9fa8513a9108cb8fd5493331",
        "7afbab600c82732e7fd32658ab96ceaa6c62d67a40859c67367b2965437b6ed4",
    ),
    (
        4,
        "write authority: recorded_by, grants, the write policy",
        (
            """ALTER TABLE facts ADD COLUMN recorded_by TEXT""",
            """UPDATE facts SET schema_version = 4 WHERE schema_version < 4""",
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
        "b683f48efedac13e66e6fd0fee8813f7541f940b7a9894824785433bb995872e",
        "0b45e70f25d9de9d14d03750f2f2aa384867d322976dcd4be2afc4a59fbb3171",
    ),
    (
        5,
        "memory journal: episodes, extraction jobs, candidates, session summaries, procedures",
        (
            """
        CREATE TABLE episodes (
            tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
            episode_id TEXT NOT NULL CHECK (episode_id <> ''),
            user_id    TEXT NOT NULL CHECK (user_id <> ''),
            thread_id  TEXT NOT NULL CHECK (thread_id <> ''),
            at TEXT NOT NULL CHECK (length(at) = 32 AND at LIKE '%+00:00'),
            role       TEXT NOT NULL CHECK (role IN ('user', 'analyst')),
            kind       TEXT NOT NULL CHECK (kind IN ('message', 'approve', 'reject', 'edit')),
            text       TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(meta) AND json_type(meta) = 'object'),
            PRIMARY KEY (tenant_id, episode_id)
        )
        """,
            """CREATE INDEX episodes_thread ON episodes (tenant_id, user_id, thread_id, at)""",
            """CREATE INDEX episodes_time ON episodes (tenant_id, user_id, at)""",
            """
        CREATE TRIGGER episodes_immutable BEFORE UPDATE ON episodes
        BEGIN
            SELECT RAISE(ABORT, 'memory journal: episodes are immutable; store a new episode');
        END
        """,
            """
        CREATE TABLE extraction_jobs (
            tenant_id   TEXT NOT NULL CHECK (tenant_id <> ''),
            job_id      TEXT NOT NULL CHECK (job_id <> ''),
            user_id     TEXT NOT NULL CHECK (user_id <> ''),
            thread_id   TEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('decision', 'session_end')),
            episode_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(episode_ids) AND json_type(episode_ids) = 'array'),
            status      TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
            attempts    INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            created_at TEXT NOT NULL CHECK (length(created_at) = 32 AND created_at LIKE '%+00:00'),
            next_attempt_at TEXT NOT NULL CHECK (length(next_attempt_at) = 32 AND next_attempt_at LIKE '%+00:00'),
            leased_until TEXT CHECK (leased_until IS NULL OR (length(leased_until) = 32 AND leased_until LIKE '%+00:00')),
            finished_at TEXT CHECK (finished_at IS NULL OR (length(finished_at) = 32 AND finished_at LIKE '%+00:00')),
            last_error  TEXT,
            result TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(result) AND json_type(result) = 'object'),
            PRIMARY KEY (tenant_id, job_id),
            CONSTRAINT extraction_jobs_running_leased
                CHECK (status <> 'running' OR leased_until IS NOT NULL)
        )
        """,
            """
        CREATE INDEX extraction_jobs_due
        ON extraction_jobs (tenant_id, user_id, status, next_attempt_at)
        """,
            """
        CREATE TABLE memory_candidates (
            tenant_id    TEXT NOT NULL CHECK (tenant_id <> ''),
            candidate_id TEXT NOT NULL CHECK (candidate_id <> ''),
            user_id      TEXT NOT NULL CHECK (user_id <> ''),
            kind         TEXT NOT NULL CHECK (kind IN ('fact', 'preference', 'procedure', 'event', 'open_item', 'behaviour')),
            payload TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(payload) AND json_type(payload) = 'object'),
            quote        TEXT NOT NULL,
            episode_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(episode_ids) AND json_type(episode_ids) = 'array'),
            status       TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'rejected', 'ungrounded')),
            reason       TEXT NOT NULL,
            created_at TEXT NOT NULL CHECK (length(created_at) = 32 AND created_at LIKE '%+00:00'),
            decided_at TEXT CHECK (decided_at IS NULL OR (length(decided_at) = 32 AND decided_at LIKE '%+00:00')),
            job_id       TEXT,
            PRIMARY KEY (tenant_id, candidate_id)
        )
        """,
            """
        CREATE INDEX memory_candidates_status
        ON memory_candidates (tenant_id, user_id, status, created_at)
        """,
            """
        CREATE TABLE session_summaries (
            tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
            session_id TEXT NOT NULL CHECK (session_id <> ''),
            user_id    TEXT NOT NULL CHECK (user_id <> ''),
            thread_id  TEXT NOT NULL,
            started TEXT NOT NULL CHECK (length(started) = 32 AND started LIKE '%+00:00'),
            ended TEXT NOT NULL CHECK (length(ended) = 32 AND ended LIKE '%+00:00'),
            topic      TEXT NOT NULL,
            summary    TEXT NOT NULL,
            facts_learned TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(facts_learned) AND json_type(facts_learned) = 'array'),
            open_items TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(open_items) AND json_type(open_items) = 'array'),
            episode_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(episode_ids) AND json_type(episode_ids) = 'array'),
            PRIMARY KEY (tenant_id, session_id),
            CONSTRAINT session_summaries_interval CHECK (started <= ended)
        )
        """,
            """CREATE INDEX session_summaries_ended ON session_summaries (tenant_id, user_id, ended)""",
            """
        CREATE TABLE procedures (
            tenant_id    TEXT NOT NULL CHECK (tenant_id <> ''),
            procedure_id TEXT NOT NULL CHECK (procedure_id <> ''),
            user_id      TEXT NOT NULL CHECK (user_id <> ''),
            text         TEXT NOT NULL,
            rule TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(rule) AND json_type(rule) = 'object'),
            status       TEXT NOT NULL CHECK (status IN ('active', 'retired')),
            confirmed_at TEXT NOT NULL CHECK (length(confirmed_at) = 32 AND confirmed_at LIKE '%+00:00'),
            review_at TEXT NOT NULL CHECK (length(review_at) = 32 AND review_at LIKE '%+00:00'),
            episode_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(episode_ids) AND json_type(episode_ids) = 'array'),
            candidate_id TEXT,
            retired_at TEXT CHECK (retired_at IS NULL OR (length(retired_at) = 32 AND retired_at LIKE '%+00:00')),
            PRIMARY KEY (tenant_id, procedure_id)
        )
        """,
            """
        CREATE INDEX procedures_status
        ON procedures (tenant_id, user_id, status, confirmed_at)
        """,
        ),
        "3a9fe6b38a94363c41a421e860879e269036f96c7e15e046fb85a9a5377334bc",
        "c42e30949719034a64d7e80ab67f159496292a66a2536b6703f384f1ed3536d5",
    ),
    (
        6,
        "memory audit: an append-only log of memory operations, and its key",
        (
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
            """
            CREATE TRIGGER memory_secrets_no_update BEFORE UPDATE ON memory_secrets
            BEGIN
                SELECT RAISE(ABORT, 'memory secrets: a key never changes (audit hashes use it)');
            END
            """,
            """
            CREATE TRIGGER memory_secrets_no_delete BEFORE DELETE ON memory_secrets
            BEGIN
                SELECT RAISE(ABORT, 'memory secrets: a key never changes (audit hashes use it)');
            END
            """,
            """
        CREATE TABLE memory_audit (
            tenant_id    TEXT NOT NULL CHECK (tenant_id <> ''),
            audit_id     TEXT NOT NULL CHECK (audit_id <> ''),
            user_id      TEXT NOT NULL CHECK (user_id <> ''),
            subject_user TEXT NOT NULL CHECK (subject_user <> ''),
            at TEXT NOT NULL CHECK (length(at) = 32 AND at LIKE '%+00:00'),
            action       TEXT NOT NULL CHECK (action <> ''),
            tier         TEXT NOT NULL CHECK (tier <> ''),
            item_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(item_ids) AND json_type(item_ids) = 'array'),
            content_hash TEXT CHECK (content_hash IS NULL OR length(content_hash) = 64),
            reason       TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (tenant_id, audit_id)
        )
        """,
            """CREATE INDEX memory_audit_subject ON memory_audit (tenant_id, subject_user, at)""",
            """CREATE INDEX memory_audit_actor ON memory_audit (tenant_id, user_id, at)""",
            """CREATE TRIGGER memory_audit_no_update BEFORE UPDATE ON memory_audit BEGIN SELECT RAISE(ABORT, 'memory audit: the log is append-only; add an entry instead'); END""",
            """CREATE TRIGGER memory_audit_no_delete BEFORE DELETE ON memory_audit BEGIN SELECT RAISE(ABORT, 'memory audit: the log is append-only; add an entry instead'); END""",
        ),
        "441e073d84a413f0f2194a155685e4d10c7d35d770893d57b69f9a55ba78cc64",
        "8db490490fe05a0d374ce267473ee4f58c1f3accbba08fec427a6c704d22ead2",
    ),
    (
        7,
        "account deletion: a user deletes the facts about itself and its grants",
        ("""SELECT 1""",),
        "e004ebd5b5532a4b85984a62f8ad48a81aa3460c1ca07701f386135d72cdecf5",
        "6a8fff37c2b7f338c993c35ddb76e28e75bbc4c16b04b586c5dc0a24b88e855a",
    ),
    (
        8,
        "tombstones: keyed hashes of forgotten text, so it is not learned again",
        (
            """
        CREATE TABLE memory_tombstones (
            tenant_id  TEXT NOT NULL CHECK (tenant_id <> ''),
            user_id    TEXT NOT NULL CHECK (user_id <> ''),
            hash       TEXT NOT NULL CHECK (length(hash) = 64),
            created_at TEXT NOT NULL CHECK (length(created_at) = 32 AND created_at LIKE '%+00:00'),
            PRIMARY KEY (tenant_id, user_id, hash)
        )
        """,
        ),
        "58cf95cf89e27539715f9aab41971f2e68c7d9f12da91ca513efa452de4f8710",
        "4b7de175a6818488b859e2d8fb324b05759f3c997c07d1b5dd7f111d1ec077d1",
    ),
)


def build_old_ledger(path: str) -> None:
    """Create ``path`` as the old code's ``migrate_sqlite_sync`` did: every migration's
    statements and one ``fact_migrations`` row each, in one transaction, WAL journal."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS fact_migrations (version INTEGER PRIMARY KEY,"
            " description TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for version, description, statements, checksum, _ in RELEASED:
            for statement in statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO fact_migrations (version, description, checksum, applied_at)"
                " VALUES (?, ?, ?, ?)",
                (version, description, checksum, datetime.now(UTC).isoformat()),
            )
        conn.execute("COMMIT")
    finally:
        conn.close()
