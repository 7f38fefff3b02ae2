"""A real LangGraph API server (``langgraph dev``) for tests, started the way users start it.

It serves the repository's own ``langgraph.json`` (its auth included) with its working
directory in a temporary folder, because ``langgraph dev`` keeps its in-memory runtime's files
in ``./.langgraph_api/`` relative to the working directory. Graph, auth and embeddings paths
in ``langgraph.json`` are resolved against the working directory (not the config file), so a
copy of the config is written with those paths made absolute; everything else is the
repository's. ``ANALYST_*`` point into the same folder, so no research note lands in the
repository's ``.agent-memory``. The bearer tokens it accepts are written to a token file
(``ANALYST_SERVER_TOKENS``) from the ``tokens`` given.

Slow to start (tens of seconds on a busy machine): one server per test module.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Server:
    url: str
    root: Path
    data_dir: Path
    memory_dir: Path
    log_path: Path
    #: principal ("tenant/user") -> its bearer token
    tokens: Mapping[str, str]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, principal: str | None) -> LangGraphClient:
        """An SDK client sending ``principal``'s token (``None``: no Authorization header)."""
        headers = {} if principal is None else {"Authorization": f"Bearer {self.tokens[principal]}"}
        return get_client(url=self.url, headers=headers)

    def cli_env(self) -> dict[str, str]:
        """The environment an ``analyst`` command needs to use the server's data."""
        return {
            **os.environ,
            "ANALYST_DATA_DIR": str(self.data_dir),
            "ANALYST_MEMORY_DIR": str(self.memory_dir),
            "ANALYST_MARKET_PROVIDER": "sample",
        }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _absolute(path: str) -> str:
    """A ``file.py:variable`` path made absolute; module paths (``pkg.mod:var``) unchanged."""
    location, variable = path.rsplit(":", 1)
    if "/" not in location and not location.endswith(".py"):
        return path
    return f"{(REPO / location).resolve()}:{variable}"


def server_config(target: Path) -> Path:
    """The repository's langgraph.json with its file paths made absolute.

    A developer's ``env`` file, if the config named one, is dropped: it would override the
    variables the test sets (the server lets the env file win) and could point at real data.
    """
    config = json.loads((REPO / "langgraph.json").read_text())
    graphs: dict[str, Any] = {}
    for name, spec in config["graphs"].items():
        if isinstance(spec, dict):
            graphs[name] = {**spec, "path": _absolute(spec["path"])}
        else:
            graphs[name] = _absolute(spec)
    config["graphs"] = graphs
    if "auth" in config:
        config["auth"] = {**config["auth"], "path": _absolute(config["auth"]["path"])}
    if "app" in config.get("http", {}):
        config["http"] = {**config["http"], "app": _absolute(config["http"]["app"])}
    store = config.get("store", {})
    if "path" in store:
        store["path"] = _absolute(store["path"])
    index = store.get("index", {})
    if "embed" in index:
        index["embed"] = _absolute(index["embed"])
    config.pop("env", None)
    target.write_text(json.dumps(config, indent=2))
    return target


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    def ready() -> bool:
        if proc.poll() is not None:
            pytest.fail(
                f"langgraph dev exited with code {proc.returncode} before it was ready.\n"
                f"--- server log ---\n{log_path.read_text(errors='replace')}"
            )
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    try:
        wait_until(ready, "GET /ok", timeout=STARTUP_TIMEOUT_S, interval=0.25)
    except AssertionError:
        pytest.fail(
            f"langgraph dev did not answer GET /ok within {STARTUP_TIMEOUT_S:.0f}s.\n"
            f"--- server log ---\n{log_path.read_text(errors='replace')}"
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextmanager
def langgraph_dev(
    root: Path, principals: list[str], env: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """``langgraph dev`` on a free port, serving ``principals`` ("tenant/user"), each with a
    fresh token; stopped (its whole process group) on exit."""
    workdir, data_dir, memory_dir = root / "server", root / "data", root / "memory"
    workdir.mkdir()
    config = server_config(workdir / "langgraph.json")
    tokens = {p: f"token-{p.replace('/', '-')}-{os.urandom(12).hex()}" for p in principals}
    token_file = root / "server-tokens"
    token_file.write_text(
        "".join(f"{token} {p.replace('/', ' ')}\n" for p, token in tokens.items())
    )
    log_path = root / "server.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server_env = {
        **os.environ,
        "ANALYST_DATA_DIR": str(data_dir),
        "ANALYST_MEMORY_DIR": str(memory_dir),
        "ANALYST_MARKET_PROVIDER": "sample",  # bundled data: the test needs no network
        "ANALYST_SERVER_TOKENS": str(token_file),
        "LANGGRAPH_NO_VERSION_CHECK": "true",  # skips the PyPI "newer version" probe
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",  # skips the CLI's usage beacon
        "LANGSMITH_TRACING": "false",  # no traces even if the developer has an API key set
        "LOG_COLOR": "false",  # the log is quoted in failure messages; keep it plain text
        **(env or {}),
    }
    for name in ("ANALYST_CHECKPOINTER", "ANALYST_SERVER_TOKEN"):
        server_env.pop(name, None)
    langgraph = Path(sys.executable).with_name("langgraph")
    command = [
        str(langgraph),
        "dev",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        # One process and no file watcher: nothing here edits code during the run.
        "--no-reload",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env=server_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_ready(url, proc, log_path)
        yield Server(url, root, data_dir, memory_dir, log_path, tokens)
    finally:
        _stop(proc)
