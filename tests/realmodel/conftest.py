"""The real-model tier: the analyst on the model path against llama.cpp's ``llama-server``.

The server (SmolLM2-135M-Instruct, a weak model) is started by ``scripts/services.sh start``
(``make test`` does it); when it is not up, the session starts it with
``scripts/model_server.sh start``, which builds the server once per machine. A server that
cannot be had fails the tier: nothing here is skipped.

Each test talks to the server through a recording :class:`~tests.support.model_proxy.ModelProxy`
and asserts invariants that must hold whatever the model says, never its wording.
"""

from __future__ import annotations

import os
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import analyst, open_app  # noqa: F401  (the same fixtures)
from tests.support.model_proxy import ModelProxy

ROOT = Path(__file__).resolve().parents[2]
SERVICES = Path(os.environ.get("SERVICES_DIR") or ROOT / ".services")

pytestmark = pytest.mark.integration


def _healthy(port: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session")
def real_model_url() -> str:
    """The OpenAI base URL of the running ``llama-server`` (started here if it is not up)."""
    port_file = SERVICES / "llama.port"
    if not (port_file.exists() and _healthy(port_file.read_text().strip())):
        started = subprocess.run(
            ["bash", str(ROOT / "scripts" / "model_server.sh"), "start"],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        assert started.returncode == 0, f"could not start llama-server:\n{started.stderr}"
    port = port_file.read_text().strip()
    assert _healthy(port), f"llama-server does not answer on 127.0.0.1:{port}"
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def proxy(real_model_url: str) -> Iterator[ModelProxy]:
    with ModelProxy(real_model_url).running() as running:
        yield running


def model_environ(base_url: str, **extra: str) -> dict[str, str]:
    """Settings for the model path against the real server: patient timeouts (a weak CPU),
    structured output through the server's JSON-schema constrained decoding."""
    return {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "not-needed",
        "ANALYST_MODEL": "openai:smollm2-135m-instruct",
        "ANALYST_STRUCTURED_OUTPUT": "json_schema",
        "ANALYST_MODEL_TIMEOUT": "600",
        # SmolLM2 under constrained decoding can run on to the end of its context window
        # (4,096 tokens, minutes on a loaded CPU) in one answer; a cut-off answer is repaired
        # once, then reported, which the tests accept.
        "ANALYST_MODEL_MAX_TOKENS": "1024",
        "ANALYST_MODEL_RETRIES": "2",
        "ANALYST_MODEL_BACKOFF": "0.1",
        **extra,
    }


@pytest.fixture
def real(proxy: ModelProxy, monkeypatch: pytest.MonkeyPatch) -> ModelProxy:
    """This process's environment pointed at the real server (through the proxy)."""
    for name, value in model_environ(proxy.base_url).items():
        monkeypatch.setenv(name, value)
    return proxy


@pytest.fixture
def cli(real: ModelProxy, request: pytest.FixtureRequest) -> Any:
    """The integration ``analyst`` CLI fixture on the model path against the real server."""
    base = request.getfixturevalue("analyst")
    return replace(base, env={**base.env, **model_environ(real.base_url)})
