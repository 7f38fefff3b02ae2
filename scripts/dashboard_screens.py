"""Screenshots of every page of the memory dashboard, for a reviewer to look at.

Seeds a fresh demo data folder with a few memories (:mod:`agent.web.demo`: facts with a
correction, a procedure, a preference, a session and a candidate), serves the dashboard for
that user on a free loopback port, and has Debian's Chromium (Playwright, JavaScript off)
write one PNG per page into ``--out`` (default ``docs/screens/``)::

    .venv/bin/python scripts/dashboard_screens.py [--out DIR] [--chromium PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screens"))
    parser.add_argument("--chromium", default=shutil.which("chromium"))
    args = parser.parse_args()
    if not args.chromium:
        sys.exit("dashboard_screens: no chromium; install it (apt-get install -y chromium).")
    folder = Path(tempfile.mkdtemp(prefix="analyst-screens-"))
    os.environ.update(
        ANALYST_DATA_DIR=str(folder / "data"),
        ANALYST_MEMORY_DIR=str(folder / "memory"),
        ANALYST_MARKET_PROVIDER="sample",
    )
    import uvicorn
    from playwright.sync_api import sync_playwright

    from agent.settings import Settings
    from agent.web.app import create_app
    from agent.web.demo import seed
    from agent.web.pages import NAV
    from memory.identity import Principal

    who = Principal("demo", "mira")
    settings = Settings.from_env(user_id=who.user_id, tenant_id=who.tenant_id)
    print(f"Seeding the demo memories of {who.user_id} in {folder} ...", flush=True)
    asyncio.run(seed(settings, who))

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}/dashboard/"
    server = uvicorn.Server(
        uvicorn.Config(create_app(lambda request: who), log_level="warning", access_log=False)
    )
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            sys.exit("dashboard_screens: the dashboard did not start within 60 s.")
        time.sleep(0.05)

    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=args.chromium, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        context = browser.new_context(
            java_script_enabled=False, viewport={"width": 1000, "height": 760}
        )
        context.set_default_timeout(180_000)
        page = context.new_page()
        for name, _ in NAV:
            page.goto(base + name)
            target = args.out / f"{name}.png"
            page.screenshot(path=str(target))
            print(f"{target} ({target.stat().st_size // 1024} KiB)", flush=True)
        browser.close()
    server.should_exit = True
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
