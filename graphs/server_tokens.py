"""Bearer tokens of the API server (``langgraph dev``): which token acts for which principal.

The server's auth handler (:mod:`graphs.auth`) turns the token a request carries into the
:class:`~memory.identity.Principal` (tenant, user) the run acts for. Tokens come from:

- ``ANALYST_SERVER_TOKENS``: a file, one token per line as ``TOKEN TENANT USER`` (blank lines
  and ``#`` comments ignored; keep it private, ``chmod 600``). It is read again when it
  changes, so a token is added or revoked without a restart.
- ``ANALYST_SERVER_TOKEN``: one token for the principal of ``ANALYST_TENANT`` /
  ``ANALYST_USER`` (a single-user server), when no file is named.

``python -m graphs.server_tokens FILE`` (run by ``make studio``) creates ``FILE`` with one new
random token for that principal if it does not exist, and prints the token.
"""

from __future__ import annotations

import hmac
import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.errors import ConfigurationError, InvalidPrincipalError
from agent.settings import Settings
from memory.identity import Principal

FILE_VARIABLE = "ANALYST_SERVER_TOKENS"
TOKEN_VARIABLE = "ANALYST_SERVER_TOKEN"
#: Shorter tokens are refused: a bearer token is the whole of a caller's authority.
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class ServerTokens:
    """The tokens the server accepts, and where they were read from."""

    principals: Mapping[str, Principal]
    source: str

    def principal(self, token: str) -> Principal | None:
        """The principal ``token`` acts for (compared in constant time), or ``None``."""
        found = None
        for known, principal in self.principals.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = principal
        return found


def parse_tokens(text: str, source: str) -> ServerTokens:
    """The tokens of a token file's ``text``; a bad line is a :class:`ConfigurationError`
    naming the file and the line."""
    principals: dict[str, Principal] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        where = f"{source}, line {number}"
        if len(fields) != 3:
            raise ConfigurationError(
                f"{where}: expected 'TOKEN TENANT USER' (three fields), got {len(fields)}."
            )
        token, tenant_id, user_id = fields
        principals[_token(token, where)] = _principal(tenant_id, user_id, where)
    if not principals:
        raise ConfigurationError(
            f"{source} holds no token; add a line 'TOKEN TENANT USER' (make studio creates one)."
        )
    return ServerTokens(principals, source)


def load_tokens(env: Mapping[str, str] | None = None) -> ServerTokens:
    """The tokens configured in ``env`` (default: the process environment)."""
    env = os.environ if env is None else env
    path = env.get(FILE_VARIABLE)
    if path:
        return parse_tokens(_read(Path(path)), path)
    token = env.get(TOKEN_VARIABLE)
    if token:
        settings = Settings.from_env(env)
        where = TOKEN_VARIABLE
        principal = _principal(settings.tenant_id, settings.user_id, where)
        return ServerTokens({_token(token, where): principal}, where)
    raise ConfigurationError(
        f"The API server accepts no request without a token, and none is configured: set "
        f"{FILE_VARIABLE}=FILE (lines 'TOKEN TENANT USER') or {TOKEN_VARIABLE}=TOKEN (for "
        "ANALYST_TENANT/ANALYST_USER). make studio creates .data/server-tokens for you."
    )


def file_version(env: Mapping[str, str] | None = None) -> tuple[str, float | None]:
    """What identifies the configured tokens' current version: the file and its change time
    (so an edited file is read again), or the token variable."""
    env = os.environ if env is None else env
    path = env.get(FILE_VARIABLE)
    if not path:
        return (TOKEN_VARIABLE, None)
    try:
        return (path, Path(path).stat().st_mtime_ns)
    except OSError:
        return (path, None)


def ensure_token_file(path: Path, env: Mapping[str, str] | None = None) -> str | None:
    """Create ``path`` (private to the user) with one new token for the environment's
    principal, unless it exists; the new token, or ``None`` when the file was there."""
    settings = Settings.from_env(os.environ if env is None else env)
    principal = _principal(settings.tenant_id, settings.user_id, "ANALYST_TENANT/ANALYST_USER")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    line = f"{token} {principal.tenant_id} {principal.user_id}\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("# API server tokens, one per line: TOKEN TENANT USER\n" + line)
    return token


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(
            f"Cannot read {FILE_VARIABLE}={path}: {error}. Name a readable UTF-8 file of "
            "'TOKEN TENANT USER' lines (make studio creates one)."
        ) from error


def _token(token: str, where: str) -> str:
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigurationError(
            f"{where}: a token must be at least {MIN_TOKEN_CHARS} characters; make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'."
        )
    return token


def _principal(tenant_id: str, user_id: str, where: str) -> Principal:
    try:
        return Principal(tenant_id, user_id)
    except (InvalidPrincipalError, ValueError, TypeError) as error:
        raise ConfigurationError(f"{where}: {error}") from error


def main(argv: list[str]) -> int:
    """``python -m graphs.server_tokens FILE``: create ``FILE`` with a token if missing."""
    if len(argv) != 1:
        print("usage: python -m graphs.server_tokens FILE", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        token = ensure_token_file(path)
        tokens = parse_tokens(_read(path), str(path))
    except ConfigurationError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    if token is not None:
        print(f"Created {path} with a token for the API server; send it as")
        print(f"  Authorization: Bearer {token}")
    else:
        users = ", ".join(
            sorted({f"{p.tenant_id}/{p.user_id}" for p in tokens.principals.values()})
        )
        print(f"Using the tokens in {path} ({users}).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
