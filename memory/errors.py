"""Errors of the storage tiers, raised on purpose.

Every class names one failure a user can act on: messages say what was wrong (the bad value)
and what to do about it. ``exit_code`` is what the CLI exits with when one reaches it (the one
mapping lives in ``agent.cli.common``); nothing here is ever turned into text a model sees.
This is the lowest layer: ``memory/`` raises these, and ``agent.errors`` re-exports them next
to the analyst's own failures.
"""

from __future__ import annotations

from collections.abc import Iterable


class AnalystError(Exception):
    """Base class: a failure with a message meant for the person running the analyst."""

    exit_code = 1


class ConfigurationError(AnalystError):
    """A setting (environment variable, flag, URL) has a value the analyst cannot use."""

    exit_code = 2


class MissingDependencyError(ConfigurationError):
    """An optional feature was selected but its package is not installed."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.feature, self.package, self.extra = feature, package, extra
        super().__init__(
            f"{feature} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'analyst[{extra}]'"
        )


class ThreadBusyError(AnalystError):
    """Another process is running this thread right now."""

    exit_code = 3

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"Thread '{thread_id}' is being run by another process right now; wait for it to "
            f"finish (analyst show {thread_id}) and try again."
        )


class UnsupportedBackendError(ConfigurationError):
    """A storage URL whose scheme the analyst does not know."""

    def __init__(self, kind: str, url: str, schemes: Iterable[str]) -> None:
        self.kind, self.url, self.schemes = kind, url, list(schemes)
        super().__init__(f"Unsupported {kind} URL '{url}'. Use one of: {', '.join(self.schemes)}.")


class DocumentPathError(AnalystError):
    """A document path that would leave the document root or is otherwise unsafe."""

    exit_code = 2


class FactLedgerError(AnalystError):
    """A failure of the typed fact ledger (``memory.facts``)."""


class InvalidFactError(FactLedgerError):
    """A fact, time or query the ledger cannot accept (naive datetime, non-JSON value, ...)."""

    exit_code = 2


class FactConflictError(FactLedgerError):
    """A new fact starts exactly when a stored fact with a different value starts.

    Which one holds is a policy decision (reject, source precedence, confirmed revision); the
    ledger never overwrites silently.
    """

    exit_code = 3

    def __init__(
        self,
        subject: str,
        attribute: str,
        valid_from: str,
        existing_memory_id: str,
        existing_value: object,
        reason: str,
    ) -> None:
        self.subject, self.attribute, self.valid_from = subject, attribute, valid_from
        self.existing_memory_id, self.existing_value = existing_memory_id, existing_value
        self.reason = reason
        super().__init__(
            f"{subject}.{attribute} already has value {existing_value!r} from {valid_from} "
            f"(fact {existing_memory_id}); {reason}"
        )


class FactNotFoundError(FactLedgerError):
    """No fact holds for this subject and attribute at the given time."""

    exit_code = 3

    def __init__(self, subject: str, attribute: str, at: str) -> None:
        self.subject, self.attribute, self.at = subject, attribute, at
        super().__init__(
            f"No fact {subject}.{attribute} holds at {at}, so there is nothing to retract. "
            f"See what is stored with: analyst facts history {subject} {attribute}"
        )


class FactTenantError(FactLedgerError):
    """A fact names a tenant other than the principal's: tenants come from the principal."""

    exit_code = 2


class FactAuthorityError(FactLedgerError):
    """A principal wrote (or granted) facts about a subject it holds no authority over.

    A principal writes its own subject (``user:<its id>``) freely; any other subject needs a
    grant (``analyst facts grant``), and facts about another user are kept only as candidates
    that user must confirm. Nothing was written.
    """

    exit_code = 3

    def __init__(self, message: str, *, subject: str = "", tenant_id: str = "", user_id: str = ""):
        self.subject, self.tenant_id, self.user_id = subject, tenant_id, user_id
        super().__init__(message)


class FactWriteContentionError(FactLedgerError):
    """A write kept colliding with concurrent writers on the same key and gave up."""


class FactLedgerUnavailableError(FactLedgerError):
    """The ledger's database cannot be reached or opened."""


class FactLedgerSchemaError(ConfigurationError):
    """The ledger's database schema is missing, behind, ahead of this code, or was edited."""


class UnsafeDatabaseRoleError(ConfigurationError):
    """The ledger would connect as a role that bypasses row-level security."""


# -- hot memory (checkpointers) ---------------------------------------------------------------


class CheckpointerUnavailableError(AnalystError):
    """The checkpointer's server cannot be reached (down, refused, timed out)."""

    def __init__(self, url: str, reason: str) -> None:
        self.url, self.reason = url, reason
        super().__init__(
            f"Cannot use the checkpointer at {url}: {reason.rstrip('.')}. Checkpoints written "
            "so far are kept; once the server is reachable, continue an interrupted thread "
            "with: analyst resume THREAD"
        )


class CheckpointerModulesMissingError(ConfigurationError):
    """A Redis server without the RedisJSON / RediSearch modules the Redis saver needs."""

    def __init__(self, url: str, missing: list[str]) -> None:
        self.url, self.missing = url, missing
        super().__init__(
            f"The Redis server at {url} lacks {' and '.join(missing)}, which the Redis "
            "checkpointer needs. Use Redis Stack (bash scripts/services.sh start serves it on "
            "redis://127.0.0.1:6380) or load those modules."
        )


class CheckpointHistoryUnavailableError(AnalystError):
    """Time travel asked of a backend that keeps only each thread's latest checkpoint."""

    exit_code = 2

    def __init__(self, url: str, checkpoint_id: str) -> None:
        self.url, self.checkpoint_id = url, checkpoint_id
        super().__init__(
            f"Checkpoint {checkpoint_id} is not available: {url} is a shallow checkpointer that "
            "keeps only the latest checkpoint of each thread, so it has no history to list, "
            "replay or fork. Use redis:// or postgres:// for time travel."
        )


class CheckpointDecryptionError(ConfigurationError):
    """A sealed checkpoint value that the configured key cannot open."""

    def __init__(self) -> None:
        super().__init__(
            "A checkpoint value cannot be decrypted with ANALYST_CHECKPOINT_KEY: the key differs "
            "from the one it was written with, or the stored bytes were altered."
        )


class MemoryKeyError(ConfigurationError):
    """Sealed memory content (``ANALYST_MEMORY_KEY``) read without its key, or with another."""


# -- document memory ------------------------------------------------------------------------
# Refusals of a document operation subclass DocumentPathError, so a caller that catches every
# document refusal (publishing, the CLI) keeps working as the refusals get more specific.


class DocumentNotFoundError(DocumentPathError):
    """No document (or folder) at the given path under the document root."""

    exit_code = 3


class DocumentTooLargeError(DocumentPathError):
    """A document over the configured size limit: refused on write and on read."""


class DocumentEncodingError(DocumentPathError):
    """Document content that is not UTF-8 text: refused on write and on read."""


class DocumentFormatError(DocumentPathError):
    """A document whose YAML front matter cannot be parsed."""


class DocumentIndexError(AnalystError):
    """The document search index cannot be opened or used (it is derived data: rebuild it)."""


class InvalidSearchError(AnalystError):
    """A document search that cannot be run: no words to look for."""

    exit_code = 2


class InvalidPrincipalError(ConfigurationError):
    """A tenant or user id that cannot scope memory (empty, or not text)."""


class EmbeddingError(AnalystError):
    """An embedder could not produce usable vectors: model missing, wrong size, zero or NaN."""


class StoreLockedError(AnalystError):
    """The embedded Qdrant store is held by another process (one process at a time)."""

    def __init__(self, path: object, waited: float) -> None:
        self.path, self.waited = path, waited
        super().__init__(
            f"The long-term memory folder {path} is in use by another process (waited "
            f"{waited:g}s); embedded Qdrant lets one process open it at a time. Finish or stop "
            "the other analyst process (a running `analyst chat`, `langgraph dev`, a script), "
            "or run a Qdrant server and set QDRANT_URL=http://localhost:6333 so several "
            "processes can share memory."
        )


class StoreUnavailableError(AnalystError):
    """The long-term store's server cannot be reached or refused the connection."""


class StoreIndexMismatchError(ConfigurationError):
    """The store was built for other embeddings than the ones configured now."""


class MissingExtensionError(ConfigurationError):
    """A Postgres server without an extension the selected backend needs (e.g. pgvector)."""

    def __init__(self, where: str, extension: str, purpose: str) -> None:
        self.where, self.extension = where, extension
        super().__init__(
            f"The Postgres server at {where} does not have the '{extension}' extension, "
            f"which {purpose} needs. Install it on the server (for pgvector: the "
            "postgresql-<version>-pgvector package, or an image such as pgvector/pgvector), "
            "or use ANALYST_STORE=qdrant://local."
        )


class MemoryNotFoundError(AnalystError):
    """No memory with this key for the current principal."""

    exit_code = 3

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"No memory '{key}' for this user. List your memories with: "
            "analyst memory list --memories"
        )


class InvalidMemoryError(AnalystError):
    """A memory that cannot be stored or ranked: empty text, importance outside 1–10, bad weights."""

    exit_code = 2


# -- the memory journal (episodes, extraction jobs, candidates, procedures) --------------------


class JournalError(AnalystError):
    """A refused journal operation."""

    exit_code = 2


class EpisodeConflictError(JournalError):
    """An episode id stored already with another text: episodes are never rewritten."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
        super().__init__(
            f"Episode {episode_id} is stored already with another text; episodes are immutable. "
            "Record the new turn as a new episode (a new id)."
        )


class CandidateNotFoundError(JournalError):
    """No candidate (or procedure) with this id for the current principal."""

    exit_code = 3

    def __init__(self, what: str, item_id: str) -> None:
        self.item_id = item_id
        super().__init__(
            f"No {what} '{item_id}' for this user. List them with: analyst memory review"
        )


class AuditAccessError(JournalError):
    """A principal asked for (or wrote) audit entries about another user's memory without
    being an admin of its tenant. Nothing was read or written."""

    exit_code = 3


class JournalUnavailableError(JournalError):
    """The journal's database cannot be reached or written."""

    exit_code = 1


# -- embedded files (SQLite files and folders in the data folder) ----------------------------


class StorageError(AnalystError):
    """An embedded file or folder cannot be used: missing, damaged, read-only or disk full."""

    def __init__(self, message: str, what: str = "", path: object = None) -> None:
        self.what, self.path = what, path
        super().__init__(message)


class StorageMissingError(StorageError):
    """A read found no file where the settings point: reads never create one."""

    exit_code = 2

    def __init__(self, what: str, path: object, setting: str) -> None:
        super().__init__(
            f"The {what} {path} does not exist, and a command that only reads never creates "
            f"one. Check {setting} (a relative sqlite:/// path is resolved inside the data "
            "folder, ANALYST_DATA_DIR).",
            what,
            path,
        )


class StorageCorruptError(StorageError):
    """A file whose bytes SQLite (or the reader) cannot make sense of."""

    def __init__(self, what: str, path: object, detail: str) -> None:
        super().__init__(
            f"The {what} {path} is damaged ({detail.rstrip('.')}). See every file's state "
            "with: analyst db check. Restore it from a backup (analyst db restore-snapshot BACKUP), or "
            "move the file aside to start it empty (what it held is then lost).",
            what,
            path,
        )


class StorageReadOnlyError(StorageError):
    """A write to a file or folder the process may not write (read-only mount, permissions)."""

    def __init__(self, what: str, path: object, detail: str) -> None:
        super().__init__(
            f"Cannot write the {what} {path}: {detail.rstrip('.')} (the file or its folder is "
            "read-only). Commands that only read still work; make the data folder writable, "
            "or set ANALYST_DATA_DIR to a writable one.",
            what,
            path,
        )


class StorageFullError(StorageError):
    """A write refused for lack of space (disk full, quota, file-size limit)."""

    def __init__(self, what: str, path: object, detail: str) -> None:
        super().__init__(
            f"Cannot write the {what} {path}: {detail.rstrip('.')} (no space left). The write "
            "was not applied and everything stored before it is intact; free some space and "
            "try again (a stopped thread continues with: analyst resume THREAD).",
            what,
            path,
        )
