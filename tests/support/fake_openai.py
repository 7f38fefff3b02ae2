"""A local, scripted OpenAI-compatible HTTP server for model-path tests.

The real ``ChatOpenAI`` client (and the ``openai`` SDK under it) talks to this server over
loopback HTTP, so request building, response parsing, status handling and timeouts are all
exercised for real. Each test scripts what the server answers:

- a queue of replies consumed in order (``server.script(reply, reply, ...)``), or
- a responder function ``(request_json) -> reply`` for conversations that depend on the request.

Every request body is recorded in ``server.requests`` so tests can assert on what the model
was sent (tool schemas present, no run history in the critic's request, ...).

Answers have the shape llama.cpp's ``llama-server`` gives them (read from its recorded
answers in tests/realmodel): content ``""``, never null, beside tool calls; ``finish_reason``
``"tool_calls"``, ``"stop"``, or ``"length"`` for an answer cut off at the token limit
(:func:`cut_off`); usage with ``prompt_tokens_details``; a prompt longer than the server's
window is HTTP 400 ``exceed_context_size_error`` (:func:`context_exceeded`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 0},
}


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    raw: bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def _completion(message: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "choices": [{"finish_reason": finish, "index": 0, "message": message}],
        "created": int(time.time()),
        "model": "fake-model",
        "system_fingerprint": "fake",
        "object": "chat.completion",
        "usage": usage or USAGE,
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
    }


def text(content: str, usage: dict[str, Any] | None = None) -> Reply:
    return Reply(body=_completion({"role": "assistant", "content": content}, usage))


def cut_off(content: str, usage: dict[str, Any] | None = None) -> Reply:
    """An answer the server's token limit cut off mid-way (``finish_reason`` ``"length"``)."""
    reply = text(content, usage)
    reply.body["choices"][0]["finish_reason"] = "length"
    return reply


def tool_calls(
    *calls: tuple[str, dict[str, Any] | str], usage: dict[str, Any] | None = None
) -> Reply:
    """Assistant message calling tools; a str argument is sent verbatim (malformed JSON)."""
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"call_{uuid.uuid4().hex[:10]}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for name, args in calls
        ],
    }
    return Reply(body=_completion(message, usage))


def structured(name: str, args: dict[str, Any] | str, usage: dict[str, Any] | None = None) -> Reply:
    """What ``with_structured_output(method="function_calling")`` expects back."""
    return tool_calls((name, args), usage=usage)


def error(
    status: int, message: str = "scripted failure", *, retry_after: str | None = None
) -> Reply:
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
    headers = {"retry-after": retry_after} if retry_after else {}
    return Reply(
        status=status,
        body={"error": {"message": message, "type": kind, "code": kind, "param": None}},
        headers=headers,
    )


def context_exceeded(tokens: int, window: int) -> Reply:
    """What llama-server answers a prompt longer than its context window."""
    return Reply(
        status=400,
        body={
            "error": {
                "code": 400,
                "message": f"request ({tokens} tokens) exceeds the available context size "
                f"({window} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": window,
            }
        },
    )


def slow(reply: Reply, seconds: float) -> Reply:
    reply.delay = seconds
    return reply


Responder = Callable[[dict[str, Any]], Reply]


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """``handler`` served on a free loopback port from a daemon thread, for the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def send_json(
    handler: BaseHTTPRequestHandler,
    status: int,
    payload: bytes,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer with a JSON ``payload``; a client that already gave up (its timeout) is fine."""
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        #: Exceptions a responder raised (answered with HTTP 500); a test should expect none.
        self.errors: list[BaseException] = []
        self._queue: deque[Reply] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    @property
    def root_url(self) -> str:
        """The server without the ``/v1`` prefix (for clients that add their own paths)."""
        return self.base_url.removesuffix("/v1")

    def other_requests(self) -> list[dict[str, Any]]:
        """Requests to any path but chat completions (they get ``{}`` and use no script)."""
        return [r for r in self.requests if not r.get("_path", "").endswith("/chat/completions")]

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def respond_with(self, responder: Responder | None) -> None:
        self._responder = responder

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("_path", "").endswith("/chat/completions")]

    def _next(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self._responder is not None:
            try:
                return self._responder(request)
            except Exception as e:  # a broken script must fail loudly, not hang the client
                with self._lock:
                    self.errors.append(e)
                return error(500, f"the test's responder raised {e!r}")
        return error(500, "the fake server has no scripted reply left for this request")

    @contextmanager
    def running(self) -> Iterator[FakeOpenAI]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                self._other({})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                if not self.path.endswith("/chat/completions"):
                    # Anything else (a tracing client, say) is recorded and answered with {}.
                    self._other({"_bytes": len(data)})
                    return
                body = json.loads(data or b"{}")
                body["_path"] = self.path
                body["_auth"] = self.headers.get("authorization")
                with fake._lock:
                    fake.requests.append(body)
                self._send(fake._next(body))

            def _other(self, body: dict[str, Any]) -> None:
                body.update(_path=self.path, _method=self.command)
                with fake._lock:
                    fake.requests.append(body)
                self._send(Reply(body={}))

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                send_json(self, reply.status, payload, reply.headers)

        with serving(Handler) as self._server:
            yield self
