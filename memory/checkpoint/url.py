"""Checkpointer URLs: which backend a URL selects, what its driver gets, and analyst options.

The scheme table, password masking and the SQLite path rule are :mod:`memory.urls`' (shared
by every tier); this module only splits the analyst's own query options off a URL and checks
their values. A parsed URL is a :class:`CheckpointerURL`; its ``display`` form is the only one
that may reach a message or a log.

Options, kept out of the URL the driver sees:

- Postgres: ``pool_max`` (connections, default 4), ``pool_timeout`` (seconds to wait for a
  connection, default 10); libpq's own parameters pass through.
- Redis: ``prefix`` (key prefix, default LangGraph's), ``ttl`` (e.g. ``90d``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory.errors import ConfigurationError
from memory.urls import backend_for, examples, redact, sqlite_path

#: The URL forms a checkpointer accepts, for messages and ``--help``.
SCHEMES = examples("checkpointer")

Backend = Literal["sqlite", "postgres", "redis", "redis+shallow", "memory"]

_PG_OPTIONS = ("pool_max", "pool_timeout")
_REDIS_OPTIONS = ("prefix", "ttl")


@dataclass(frozen=True)
class CheckpointerURL:
    """A parsed checkpointer URL: the backend, what its driver gets, and analyst options."""

    backend: Backend
    url: str
    target: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The URL with any password masked, for messages and logs."""
        return redact(self.url)

    def number(self, name: str, default: float) -> float:
        """The positive number option ``name``; a :class:`ConfigurationError` naming it if not."""
        text = self.options.get(name)
        if text is None:
            return default
        try:
            value = float(text)
        except ValueError:
            value = -1
        if value <= 0:
            raise ConfigurationError(
                f"Checkpointer URL option {name}='{text}' in {self.display} must be a positive "
                "number."
            )
        return value


def parse_sqlite_path(url: str) -> Path:
    """``sqlite:///a/b.db`` → ``a/b.db``; ``sqlite:////tmp/b.db`` → ``/tmp/b.db``."""
    return sqlite_path(url, tier="checkpointer", default_name="checkpoints.sqlite")


def parse_checkpointer_url(url: str) -> CheckpointerURL:
    """Recognise the backend of ``url``; raise :class:`UnsupportedBackendError` otherwise."""
    text = url.strip()
    backend = cast(Backend, backend_for("checkpointer", text))
    if backend == "sqlite":
        parse_sqlite_path(text)
        return CheckpointerURL("sqlite", text, text)
    if backend == "memory":
        return CheckpointerURL("memory", text, text)
    if backend == "postgres":
        target, options = _split_options(text, _PG_OPTIONS)
        return CheckpointerURL("postgres", text, target, options)
    target, options = _split_options(text, _REDIS_OPTIONS)
    target = target.replace("+shallow://", "://", 1)
    return CheckpointerURL(backend, text, target, options)


def parse_duration_minutes(text: str, *, what: str) -> float:
    """``90d`` / ``12h`` / ``30m`` / ``45s`` → minutes."""
    from memory.retention import parse_age

    return parse_age(text, what=what).total_seconds() / 60


def _split_options(url: str, names: Sequence[str]) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in names:
            ours[key] = value
        else:
            theirs.append((key, value))
    return urlunsplit(parts._replace(query=urlencode(theirs))), ours
