"""Errors the analyst raises on purpose.

Every class names one failure a user can act on. Messages say what was wrong (the bad value)
and what to do about it. The CLI prints ``str(error)`` and exits non-zero; nothing here is
ever turned into text a model sees.
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


class InvalidQueryError(AnalystError):
    """The request cannot be routed (empty, or names no ticker)."""

    exit_code = 2


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
        }.get(status, f"its status is {status}")
        super().__init__(f"Thread '{thread_id}' is not awaiting approval: {hint}.")


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


class UnsupportedBackendError(ConfigurationError):
    """A storage URL whose scheme the analyst does not know."""

    def __init__(self, kind: str, url: str, schemes: Iterable[str]) -> None:
        self.kind, self.url, self.schemes = kind, url, list(schemes)
        super().__init__(f"Unsupported {kind} URL '{url}'. Use one of: {', '.join(self.schemes)}.")


class DocumentPathError(AnalystError):
    """A document path that would leave the document root or is otherwise unsafe."""

    exit_code = 2
