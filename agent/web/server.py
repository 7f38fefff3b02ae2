"""The dashboard as custom routes of the LangGraph server (``langgraph.json``:
``"http": {"app": "./agent/web/server.py:app", "enable_custom_route_auth": true}``).

With ``enable_custom_route_auth`` the server runs its auth handler (:mod:`graphs.auth`) on
these routes as on the graph's: a request without a valid bearer token never reaches them
(401), and ``request.user`` is the user the token acts for. Each page acts for that user's
principal only; there is no parameter naming another user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.web.app import create_app
from agent.web.work import InProcesses

if TYPE_CHECKING:
    from starlette.requests import Request

    from memory.identity import Principal


def signed_in(request: Request) -> Principal:
    """The principal of the user the server's auth handler signed in (``tenant_id`` and
    ``user_id`` of :func:`graphs.auth.authenticate`)."""
    from memory.identity import Principal

    user = request.scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        raise PermissionError("Sign in: send 'Authorization: Bearer TOKEN'.")
    return Principal(str(user["tenant_id"]), str(user["user_id"]))


app = create_app(signed_in, InProcesses())
