"""A research note's chart is shown on its document page in the memory dashboard: the page
holds an ``<img>`` of the dashboard's own chart route (the policy allows images from the page's
own origin and still no script), the route serves the PNG published beside the note under the
note's read checks, and a document without a chart, or one the user may not read, serves none.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent.app import AnalystApp
from agent.settings import Settings
from agent.web.app import create_app
from memory.identity import Principal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ALICE, BOB = Principal("acme", "alice"), Principal("acme", "bob")
NOTE = "research/NVDA-2026-12-01.md"
#: A PNG's signature and a few bytes: the route serves the file as it is, never decoded.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def _publish(principal: Principal) -> None:
    """A note with its chart beside it, as publishing writes them, and a note without."""

    async def go() -> Any:
        settings = Settings.from_env(user_id=principal.user_id, tenant_id=principal.tenant_id)
        async with AnalystApp.open(settings, principal) as app:
            owned = await app.tiers.owned_documents()
            await owned.write_bytes("research/NVDA-2026-12-01.png", PNG, reason="test chart")
            meta = {"title": "NVDA", "ticker": "NVDA", "chart": "NVDA-2026-12-01.png"}
            await owned.write(NOTE, "# NVDA\n", meta, reason="test note")
            await owned.write("research/AMD-2026-12-01.md", "# AMD\n", {}, reason="test note")
            await owned.write(
                "user-profiles/acme/alice.md", "# Alice\n", {"chart": "x.png"}, reason="profile"
            )

    asyncio.run(go())


def _client(principal: Principal) -> TestClient:
    return TestClient(create_app(lambda request: principal), base_url="http://127.0.0.1:8765")


def test_a_note_page_shows_its_chart_and_the_route_serves_the_png() -> None:
    _publish(ALICE)
    with _client(ALICE) as client:
        page = client.get("/dashboard/document", params={"path": NOTE})
        assert page.status_code == 200
        src = f'src="/dashboard/chart?path={NOTE}"'
        assert src in page.text
        policy = page.headers["content-security-policy"]
        assert "img-src 'self'" in policy and "script-src" not in policy
        chart = client.get("/dashboard/chart", params={"path": NOTE})
        assert chart.status_code == 200
        assert chart.headers["content-type"] == "image/png"
        assert chart.content == PNG
        without = client.get("/dashboard/chart", params={"path": "research/AMD-2026-12-01.md"})
        assert without.status_code == 404 and "has no chart" in without.text
        page = client.get("/dashboard/document", params={"path": "research/AMD-2026-12-01.md"})
        assert page.status_code == 200 and "<img" not in page.text


def test_no_chart_is_served_from_a_document_the_user_may_not_read() -> None:
    _publish(ALICE)
    with _client(BOB) as client:
        shared = client.get("/dashboard/chart", params={"path": NOTE})  # notes are the tenant's
        assert shared.status_code == 200 and shared.content == PNG
        private = client.get("/dashboard/chart", params={"path": "user-profiles/acme/alice.md"})
    assert private.status_code in (400, 403, 404)
    assert PNG not in private.content and "alice" in private.text
