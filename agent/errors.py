"""Errors the analyst raises on purpose.

Storage failures live in :mod:`memory.errors` (the lowest layer) and are re-exported here, so
the application imports every error from one place. The classes below are the analyst's own:
a request that cannot be routed, market data, threads and decisions, models. Messages say
what was wrong and what to do; the CLI maps ``exit_code`` in one place.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory.errors import (
    AnalystError,
    CheckpointDecryptionError,
    CheckpointerModulesMissingError,
    CheckpointerUnavailableError,
    CheckpointHistoryUnavailableError,
    ConfigurationError,
    DocumentEncodingError,
    DocumentFormatError,
    DocumentIndexError,
    DocumentNotFoundError,
    DocumentPathError,
    DocumentTooLargeError,
    EmbeddingError,
    FactAuthorityError,
    FactConflictError,
    FactLedgerError,
    FactLedgerSchemaError,
    FactLedgerUnavailableError,
    FactNotFoundError,
    FactTenantError,
    FactWriteContentionError,
    InvalidFactError,
    InvalidMemoryError,
    InvalidPrincipalError,
    InvalidSearchError,
    MemoryNotFoundError,
    MissingDependencyError,
    MissingExtensionError,
    StoreIndexMismatchError,
    StoreLockedError,
    StoreUnavailableError,
    ThreadBusyError,
    UnsafeDatabaseRoleError,
    UnsupportedBackendError,
)

__all__ = [
    "AnalystError",
    "CheckpointDecryptionError",
    "CheckpointHistoryUnavailableError",
    "CheckpointerModulesMissingError",
    "CheckpointerUnavailableError",
    "ConfigurationError",
    "DocumentEncodingError",
    "DocumentFormatError",
    "DocumentIndexError",
    "DocumentNotFoundError",
    "DocumentPathError",
    "DocumentTooLargeError",
    "EmbeddingError",
    "FactAuthorityError",
    "FactConflictError",
    "FactLedgerError",
    "FactLedgerSchemaError",
    "FactLedgerUnavailableError",
    "FactNotFoundError",
    "FactTenantError",
    "FactWriteContentionError",
    "InvalidDecisionError",
    "InvalidFactError",
    "InvalidMemoryError",
    "InvalidPrincipalError",
    "InvalidProfileValueError",
    "InvalidQueryError",
    "InvalidSearchError",
    "InvalidThreadIdError",
    "MarketDataUnavailableError",
    "MemoryNotFoundError",
    "MissingDependencyError",
    "MissingExtensionError",
    "ModelAuthError",
    "ModelError",
    "ModelOutputError",
    "ModelTransientError",
    "NotAwaitingApprovalError",
    "StaleDraftError",
    "StoreIndexMismatchError",
    "StoreLockedError",
    "StoreUnavailableError",
    "ThreadBusyError",
    "ThreadNotFoundError",
    "ThreadUnavailableError",
    "UnknownProfileAttributeError",
    "UnknownTickerError",
    "UnsafeDatabaseRoleError",
    "UnsupportedBackendError",
]


class InvalidQueryError(AnalystError):
    """The request cannot be routed (empty, or names no ticker)."""

    exit_code = 2


class NoTickerError(InvalidQueryError):
    """The request names no ticker (in a conversation, such a message is kept and answered)."""


class UnknownTickerError(InvalidQueryError):
    """A ticker the market-data provider does not have."""

    def __init__(self, ticker: str | Iterable[str], available: Iterable[str]) -> None:
        tickers = [ticker] if isinstance(ticker, str) else list(ticker)
        self.tickers = tickers
        self.available = sorted(available)
        label = "ticker" if len(tickers) == 1 else "tickers"
        super().__init__(
            f"Unknown {label} {', '.join(tickers)}. Available tickers: {', '.join(self.available)}."
        )


class MarketDataUnavailableError(AnalystError):
    """The market-data provider could not deliver prices (network, empty answer)."""


class ThreadNotFoundError(AnalystError):
    """No thread with this id exists for the current principal."""

    exit_code = 3

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"No thread '{thread_id}' for this user. List your threads with: analyst threads"
        )


class ThreadUnavailableError(AnalystError):
    """A thread id a new request cannot use: another principal's, or one of the caller's
    threads that is not finished."""

    exit_code = 3


class InvalidThreadIdError(AnalystError):
    """A thread id that is empty, blank, too long, or could name a path (``..``, ``a/b``)."""

    exit_code = 2


class NotAwaitingApprovalError(AnalystError):
    """A decision was sent to a thread that is not paused at the approval point."""

    exit_code = 3

    def __init__(self, thread_id: str, status: str) -> None:
        self.thread_id, self.status = thread_id, status
        hint = {
            "published": "it is already published",
            "rejected": "it was closed after the revision limit",
            "running": "it is still running",
            "interrupted": f"it stopped mid-run; continue it with: analyst resume {thread_id}",
            "awaiting_confirmation": "its draft was decided; it asks you to confirm what to "
            "remember (analyst memory review)",
        }.get(status, f"its status is {status}")
        super().__init__(f"Thread '{thread_id}' is not awaiting approval: {hint}.")


class NotAwaitingConfirmationError(AnalystError):
    """An answer to a memory confirmation sent to a thread that asks none."""

    exit_code = 3

    def __init__(self, thread_id: str, status: str) -> None:
        self.thread_id, self.status = thread_id, status
        super().__init__(
            f"Thread '{thread_id}' asks no memory confirmation (its status is {status}). "
            "Pending candidates are listed by: analyst memory review"
        )


class StaleDraftError(AnalystError):
    """A decision names a draft hash that is not the draft currently awaiting approval."""

    exit_code = 3

    def __init__(self, thread_id: str, given: str, current: str) -> None:
        self.thread_id, self.given, self.current = thread_id, given, current
        super().__init__(
            f"Decision is for draft {given[:12]}, but thread '{thread_id}' is awaiting approval "
            f"of draft {current[:12]}. Read the current draft with: analyst show {thread_id}, "
            "then decide on that one. Nothing was published."
        )


class InvalidDecisionError(AnalystError):
    """A decision is malformed: unknown action, empty feedback or edited text."""

    exit_code = 2


class ModelError(AnalystError):
    """A model call failed; the thread stays resumable from its last checkpoint."""

    exit_code = 4


class ModelTransientError(ModelError):
    """Rate limit, server error, timeout or connection failure: worth retrying."""


class ModelAuthError(ModelError, ConfigurationError):
    """The model endpoint rejected the credentials."""

    exit_code = 2


class ModelOutputError(ModelError):
    """The model's structured output stayed invalid after one repair attempt."""


class InvalidProfileValueError(AnalystError):
    """A value a user-profile attribute cannot take (see :mod:`agent.learning.profile`)."""

    exit_code = 2

    def __init__(
        self,
        attribute: str,
        value: object,
        accepted: str,
        problem: str = "",
        *,
        message: str | None = None,
    ) -> None:
        self.attribute, self.value, self.accepted = attribute, value, accepted
        why = f" ({problem})" if problem else ""
        super().__init__(
            message
            or f"Invalid value {value!r} for profile attribute '{attribute}'{why}. "
            f"Accepted: {accepted}."
        )


class UnknownProfileAttributeError(InvalidProfileValueError):
    """A profile attribute name that is not in the registry."""

    def __init__(self, attribute: object, known: Iterable[str]) -> None:
        names = ", ".join(sorted(known))
        super().__init__(
            str(attribute),
            None,
            names,
            message=f"Unknown profile attribute {attribute!r}. Known attributes: {names}.",
        )
