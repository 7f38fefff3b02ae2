"""``analyst dashboard``: the memory dashboard in the browser, for the command line's
principal (``--user``, ``--tenant``), on 127.0.0.1 only.

It serves :mod:`agent.web` with uvicorn. The address is printed once the port is listening
(``--port 0`` picks a free one), so a script can wait for that line. Requests whose ``Host``
is not the loopback address are refused, so another site cannot reach the dashboard through
a DNS name it controls.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

import agent.cli.common as common
import agent.cli.heap as heap
from agent.cli.common import TenantOpt, UserOpt

#: The only address served: the dashboard acts for the CLI's principal without a sign-in.
HOST = "127.0.0.1"


def dashboard(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")
    ] = 8765,
    user: UserOpt = None,
    tenant: TenantOpt = None,
) -> None:
    """What the analyst remembers about you, in the browser: profile with each fact's
    history, preferences, procedures, candidates, sessions, events, audit; edit, forget
    (plan, then receipt) and forget everything."""
    import socket

    import uvicorn
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from agent.web.app import create_app

    principal = common.settings(user, tenant).principal
    app: Any = TrustedHostMiddleware(
        create_app(lambda request: principal), allowed_hosts=[HOST, "localhost"]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        sock.close()
        raise common.CommandError(
            f"Cannot listen on {HOST}:{port}: {e.strerror or e}. Choose another --port "
            "(0 picks a free one)."
        ) from None
    url = f"http://{HOST}:{sock.getsockname()[1]}/dashboard/"

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            print(f"Dashboard of {principal.user_id}: {url} (Ctrl+C stops it)", flush=True)

    config = uvicorn.Config(app, log_level="warning", access_log=False)
    heap.settle()  # a server from here on: collect as usual
    Server(config).run(sockets=[sock])
