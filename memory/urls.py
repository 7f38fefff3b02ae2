"""Storage URLs: one scheme table, one password redaction, one SQLite path rule.

Each tier is chosen by a URL (``ANALYST_CHECKPOINTER``, ``ANALYST_STORE``, ``ANALYST_FACTS``).
:func:`backend_for` recognises the backend of a tier's URL from :data:`SCHEMES` and raises
:class:`UnsupportedBackendError` listing that tier's schemes otherwise; :func:`redact` masks a
password before a URL reaches a message or a log; :func:`sqlite_path` reads the file of a
``sqlite:///`` URL. The factories of every tier use these three and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from memory.errors import ConfigurationError, UnsupportedBackendError

Tier = Literal["checkpointer", "store", "fact ledger"]


@dataclass(frozen=True)
class Scheme:
    """One way to spell a backend's URL: the prefixes that select it and an example."""

    backend: str
    prefixes: tuple[str, ...]
    example: str
    exact: bool = False  # the URL must equal a prefix (``qdrant://local``), not start with it

    def matches(self, url: str) -> bool:
        text = url.strip()
        lowered = text.lower()
        if self.exact:
            return lowered in self.prefixes
        return any(lowered.startswith(p) for p in self.prefixes)


_SQLITE = Scheme("sqlite", ("sqlite:///",), "sqlite:///PATH")
_MEMORY = Scheme("memory", ("memory://", "memory:"), "memory://", exact=True)
_POSTGRES = Scheme(
    "postgres", ("postgres://", "postgresql://"), "postgres://USER:PASSWORD@HOST:PORT/DB"
)

#: Every tier's backends, in the order they are tried (a more specific prefix first).
SCHEMES: dict[Tier, tuple[Scheme, ...]] = {
    "checkpointer": (
        _SQLITE,
        _MEMORY,
        _POSTGRES,
        Scheme(
            "redis+shallow",
            ("redis+shallow://", "rediss+shallow://"),
            "redis+shallow://HOST:PORT/DB",
        ),
        Scheme("redis", ("redis://", "rediss://"), "redis://HOST:PORT/DB"),
    ),
    "store": (
        Scheme(
            "qdrant-edge", ("qdrant://local", "qdrant+edge://local"), "qdrant://local", exact=True
        ),
        Scheme("qdrant-local", ("qdrant+local://local",), "qdrant+local://local", exact=True),
        Scheme("qdrant-server", ("qdrant+http://", "qdrant+https://"), "qdrant+http://HOST:PORT"),
        _MEMORY,
        _POSTGRES,
    ),
    "fact ledger": (_SQLITE, _POSTGRES),
}


def examples(tier: Tier) -> list[str]:
    """The URL forms a tier accepts, for messages and ``--help``."""
    return [s.example for s in SCHEMES[tier]]


def backend_for(tier: Tier, url: str) -> str:
    """The backend ``url`` selects for ``tier``; :class:`UnsupportedBackendError` otherwise."""
    for scheme in SCHEMES[tier]:
        if scheme.matches(url):
            return scheme.backend
    raise UnsupportedBackendError(tier, redact(url), examples(tier))


def redact(url: str) -> str:
    """``postgres://u:secret@h/db`` → ``postgres://u:***@h/db``; other URLs unchanged."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def sqlite_path(url: str, *, tier: Tier, default_name: str) -> Path:
    """``sqlite:///a/b.db`` → ``a/b.db``; ``sqlite:////tmp/b.db`` → ``/tmp/b.db``.

    A URL with no path is a :class:`ConfigurationError` naming the tier and an example.
    """
    rest = url.strip()[len("sqlite:///") :]
    if not rest:
        raise ConfigurationError(
            f"The {tier} URL '{url}' has no file path; use e.g. sqlite:///{default_name} (in the data folder)"
        )
    return Path(rest)


def resolve_sqlite_url(url: str, base: Path) -> str:
    """A ``sqlite:///`` URL with a relative path made relative to ``base`` (the data folder).

    ``sqlite:///ledger.sqlite`` with base ``.data`` → ``sqlite:///.data/ledger.sqlite``;
    an absolute path (``sqlite:////srv/a.sqlite``) and any other URL are returned unchanged.
    So a relative path means the same file whichever folder a command is started from.
    """
    text = url.strip()
    if not text.lower().startswith("sqlite:///"):
        return url
    rest = text[len("sqlite:///") :]
    if not rest or Path(rest).is_absolute():
        return url
    return f"sqlite:///{Path(base) / rest}"
