"""The API server's custom auth (``langgraph.json``: ``"auth": {"path": "./graphs/auth.py:auth"}``).

``langgraph dev`` and the LangGraph Platform both run it on every request:

- :func:`authenticate` turns ``Authorization: Bearer TOKEN`` into the principal the token acts
  for (:mod:`graphs.server_tokens`); a request without a valid token is refused with 401. The
  user it returns carries ``tenant_id`` and ``user_id``; inside a run they reach the graph as
  ``config["configurable"]["langgraph_auth_user"]``, and the nodes act for that principal,
  never for the run's ``context`` (:func:`agent.nodes.base.principal`).
- Threads (with their runs), crons and assistants a principal creates are tagged with its
  owner in their metadata, and every read, search, update, delete and run is filtered by it:
  another principal's thread is "not found", never shown.
- The store is restricted to the principal's own namespaces, ``("tenants", t, "users", u,
  ...)`` (:mod:`memory.store.scoped`): a get, put or delete elsewhere is refused with 403, a
  search or listing is narrowed to them.
- Anything else is refused (the default handler denies).
- Personal data is redacted (:func:`memory.pii.redact_value`) in a run's input and command
  (:func:`create_run`) and in a value put in the store, before the server stores either: a
  run's input is checkpointed before any node runs.

``langgraph.json`` sets ``disable_studio_auth``: without it a request that says
``x-auth-scheme: langsmith`` skips these handlers under ``langgraph dev``. Studio reaches the
server with the same bearer token (a header in its connection settings).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langgraph_sdk import Auth

from agent.errors import ConfigurationError
from graphs.server_tokens import ServerTokens, file_version, load_tokens
from memory.identity import Principal
from memory.pii import redact_value

log = logging.getLogger(__name__)

#: The metadata key of a resource's owner, and the identity of a principal in it.
OWNER = "owner"

auth = Auth()

#: Loaded at import, so a missing or bad token configuration stops the server at start with
#: its message; read again when the token file changes.
_tokens: ServerTokens = load_tokens()
_version = file_version()


def identity(principal: Principal) -> str:
    """The owner value of ``principal``'s resources (ids cannot hold ``/``)."""
    return f"{principal.tenant_id}/{principal.user_id}"


def _unauthorized(detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"}
    )


async def _current_tokens() -> ServerTokens:
    global _tokens, _version
    version = file_version()
    if version != _version:
        try:
            _tokens = await asyncio.to_thread(load_tokens)
        except ConfigurationError as error:
            # Keep serving with the tokens in force; the operator sees why in the log.
            log.error("Server tokens not reloaded: %s", error)
        _version = version
    return _tokens


@auth.authenticate
async def authenticate(authorization: str | None) -> dict[str, Any]:
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized(
            "Send 'Authorization: Bearer TOKEN' (tokens: ANALYST_SERVER_TOKENS; see the README)."
        )
    principal = (await _current_tokens()).principal(token.strip())
    if principal is None:
        raise _unauthorized("Unknown or revoked token.")
    return {
        "identity": identity(principal),
        "display_name": principal.user_id,
        "tenant_id": principal.tenant_id,
        "user_id": principal.user_id,
        "permissions": [],
    }


def _owner(ctx: Auth.types.AuthContext) -> str:
    return str(ctx.user.identity)


async def owned(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Reads, searches, updates and deletes: of the caller's own resources only."""
    return {OWNER: _owner(ctx)}


async def tag_owner(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Creating (a thread, a run, a cron, an assistant) or changing metadata: the caller is
    recorded as the owner (a caller-given owner is overwritten), and a resource of that id
    that exists already must be the caller's (a run: on the caller's own thread only)."""
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata[OWNER] = _owner(ctx)
    elif metadata is None:
        value["metadata"] = {OWNER: _owner(ctx)}
    return {OWNER: _owner(ctx)}


async def shared(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Assistants are the graph and its configuration, shared by everyone the server serves
    (the graph's own assistant has no owner); they hold no user's data."""
    return True


async def deny(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anything no handler below allows is refused (403)."""
    return False


auth.on(deny)
register: Any  # each registers one handler for one resource and action
for register in (
    auth.on.threads.create,
    auth.on.crons.create,
    auth.on.assistants.create,
):
    register(tag_owner)
for register in (
    auth.on.threads.read,
    auth.on.threads.delete,
    auth.on.threads.search,
    auth.on.crons.read,
    auth.on.crons.update,
    auth.on.crons.delete,
    auth.on.crons.search,
    auth.on.assistants.update,
    auth.on.assistants.delete,
):
    register(owned)
for register in (auth.on.assistants.read, auth.on.assistants.search):
    register(shared)


@auth.on.threads.create_run
async def create_run(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A run (on the caller's own thread, :func:`tag_owner`) with its input and command
    redacted in place: the server runs and checkpoints the ``kwargs`` it handed here."""
    kwargs = value.get("kwargs")
    if isinstance(kwargs, dict):
        for key in ("input", "command"):
            if kwargs.get(key) is not None:
                kwargs[key] = redact_value(kwargs[key])
    return await tag_owner(ctx, value)


@auth.on.threads.update
async def update_thread(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A thread's own metadata may change, never its owner."""
    if value.get("metadata") is not None:
        return await tag_owner(ctx, value)
    return await owned(ctx, value)


@auth.on.store
async def own_namespaces(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The store: the caller's ``("tenants", t, "users", u, ...)`` namespaces only, and a
    value put there redacted.

    A get, put or delete must name one of them (else 403). A search or a namespace listing
    under a shorter prefix of the caller's (``()``, ``("tenants",)``, ...) is narrowed to the
    caller's own; under anyone else's it is refused.
    """
    user = ctx.user
    mine = ("tenants", str(user["tenant_id"]), "users", str(user["user_id"]))
    given = tuple(value.get("namespace") or ())
    if given[: len(mine)] == mine:
        if ctx.action == "put" and value.get("value") is not None:
            value["value"] = redact_value(value["value"])
        return
    if ctx.action in ("search", "list_namespaces") and mine[: len(given)] == given:
        value["namespace"] = mine
        return
    raise Auth.exceptions.HTTPException(
        status_code=403,
        detail=f"Store namespaces outside {'/'.join(mine)}/ are not yours.",
    )
