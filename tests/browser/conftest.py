"""Browser fixtures: Debian's Chromium driven by Playwright (no browser download), and the
dashboard served the two ways users get it.

Chromium must be installed (``scripts/services.sh start``, which ``make test`` runs, installs
it with apt-get); a missing browser fails the tests, it never skips them. Every page is opened
with JavaScript disabled: the dashboard must work without it.
"""

from __future__ import annotations

import asyncio
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from agent.web.demo import seed
from memory.identity import Principal

ANALYST = Path(sys.executable).with_name("analyst")
#: Generous: the first page of a fresh process imports the application (seconds on a busy box).
READY_TIMEOUT_S = 180.0
NAVIGATION_TIMEOUT_MS = 240_000
#: An element of a page that has loaded is there at once.
ELEMENT_TIMEOUT_MS = 20_000


def chromium_path() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(
            "Chromium is not installed: run `bash scripts/services.sh start` (make test does) "
            "or `apt-get install -y chromium`."
        )
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            # Root in a container: Chromium's sandbox needs user namespaces it may not have.
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        yield launched
        launched.close()


@contextmanager
def page_of(browser: Any, headers: dict[str, str] | None = None) -> Iterator[Any]:
    """A page in a fresh browser context (its own cookies) with JavaScript off."""
    context = browser.new_context(java_script_enabled=False, extra_http_headers=headers or {})
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    context.set_default_timeout(ELEMENT_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def in_thread(call: Callable[[], Any]) -> Any:
    """Run ``call`` on another thread (Playwright's sync API owns this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def seed_demo(principal: Principal, env: dict[str, str]) -> dict[str, Any]:
    """The demo memories (``agent.web.demo``) of ``principal`` in the data folder of ``env``."""
    settings = Settings.from_env(env, user_id=principal.user_id, tenant_id=principal.tenant_id)
    return in_thread(lambda: asyncio.run(seed(settings, principal)))


@contextmanager
def analyst_dashboard(principal: Principal, env: dict[str, str]) -> Iterator[str]:
    """``analyst dashboard --port 0`` for ``principal``: its URL once it says it listens."""
    proc = subprocess.Popen(
        [
            str(ANALYST),
            "dashboard",
            "--port",
            "0",
            "--user",
            principal.user_id,
            "--tenant",
            principal.tenant_id,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    said: list[str] = []
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or (proc.poll() is not None and lines.empty()):
                pytest.fail(f"analyst dashboard did not start:\n{''.join(said)}")
            try:
                line = lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            said.append(line)
            if "Dashboard of" in line:
                yield line.split(": ", 1)[1].split(" ")[0]
                return
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
