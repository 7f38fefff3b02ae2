"""A recording pass-through in front of the real local model server (``llama-server``).

The analyst talks to the proxy over loopback HTTP exactly as it would to the server; the proxy
forwards each request unchanged and returns the server's answer unchanged, keeping both, so a
test can count the model calls a run made and read what the model really said. It can also
stand in for the failures a real deployment sees: :meth:`ModelProxy.cut` makes the endpoint go
away (connections refused or dropped, as when the server is stopped mid-run), and
:attr:`ModelProxy.delay` holds every answer back (a generation slower than the client's
timeout). When the server itself goes away (a test stops it mid-generation), the proxy drops the
client's connection without an answer, as the server's own socket would have.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.support.fake_openai import send_json, serving


@dataclass
class Exchange:
    """One chat completion: what the analyst sent and what the server answered."""

    request: dict[str, Any]
    status: int
    response: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def message(self) -> dict[str, Any]:
        choices = self.response.get("choices") or [{}]
        return dict(choices[0].get("message") or {})

    @property
    def forced_tool(self) -> str | None:
        """The function a request forces (structured output by function calling), if any."""
        choice = self.request.get("tool_choice")
        if isinstance(choice, dict):
            return str((choice.get("function") or {}).get("name"))
        return None

    @property
    def schema_name(self) -> str | None:
        """The JSON schema a request asks for (structured output by ``response_format``)."""
        fmt = self.request.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return str((fmt.get("json_schema") or {}).get("name"))
        return None


class ModelProxy:
    def __init__(self, upstream: str) -> None:
        """``upstream``: the server's OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.upstream_path = parts.path.rstrip("/")
        self.exchanges: list[Exchange] = []
        #: Chat requests passed on to the server so far (answered or still generating).
        self.forwarded = 0
        #: Seconds each answer is held back before it is sent.
        self.delay = 0.0
        self._cut = threading.Event()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def cut(self) -> None:
        """From now on every request is dropped without an answer (the server went away)."""
        self._cut.set()

    def chat(self) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges)

    def _forward(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=900)
        try:
            target = self.upstream_path + path.removeprefix("/v1")
            conn.request("POST", target, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    @contextmanager
    def running(self) -> Iterator[ModelProxy]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                if proxy._cut.is_set():
                    self.close_connection = True
                    self.connection.close()  # no answer at all: the server is gone
                    return
                started = time.monotonic()
                if self.path.endswith("/chat/completions"):
                    with proxy._lock:
                        proxy.forwarded += 1
                try:
                    status, payload = proxy._forward(
                        self.path, data, {"content-type": "application/json"}
                    )
                except (OSError, http.client.HTTPException):  # the server went away
                    self.close_connection = True
                    self.connection.close()
                    return
                if proxy.delay:
                    time.sleep(proxy.delay)
                if self.path.endswith("/chat/completions"):
                    try:
                        response = json.loads(payload or b"{}")
                    except ValueError:
                        response = {"_raw": payload[:2000].decode("utf-8", "replace")}
                    with proxy._lock:
                        proxy.exchanges.append(
                            Exchange(
                                json.loads(data or b"{}"),
                                status,
                                response,
                                time.monotonic() - started,
                            )
                        )
                send_json(self, status, payload)

        with serving(Handler) as self._server:
            yield self
