"""The memory dashboard (``agent.web``) is safe by construction: every POST needs the CSRF
token of the browser and the principal (refused otherwise, nothing changed), stored text is
escaped, every response carries a Content-Security-Policy that allows no script, and another
user's memory is unreachable, in the app ``analyst dashboard`` serves and on ``langgraph dev``.

The app runs in-process on the test's own storage (Starlette's test client); the server test
runs the repository's ``langgraph.json`` with its auth.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from agent.app import AnalystApp
from agent.settings import Settings
from agent.web.app import CSRF_COOKIE, create_app, csrf_token
from memory.identity import Principal
from tests.support.langgraph_server import Server, langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ALICE, BOB = Principal("acme", "alice"), Principal("acme", "bob")
SCRIPT = "<script>alert('stored')</script> keep it short"
PAGES = (
    "profile",
    "preferences",
    "candidates",
    "sessions",
    "events",
    "audit",
    "threads",
    "account",
)


def _memory(principal: Principal, body: Any) -> Any:
    """Run ``body(app)`` on the application of ``principal`` (the test's storage)."""

    async def go() -> Any:
        settings = Settings.from_env(user_id=principal.user_id, tenant_id=principal.tenant_id)
        async with AnalystApp.open(settings, principal) as app:
            return await body(app)

    return asyncio.run(go())


def _horizon(principal: Principal) -> Any:
    """The principal's horizon fact in force (None: none)."""

    async def read(app: AnalystApp) -> Any:
        facts = {f["attribute"]: f for f in (await app.memory.show())["profile"]}
        return facts.get("horizon_years")

    return _memory(principal, read)


def _client(principal: Principal) -> TestClient:
    return TestClient(create_app(lambda request: principal), base_url="http://127.0.0.1:8765")


def _token(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


@pytest.fixture
def alice_fact() -> str:
    """Alice said her horizon; the fact's id."""
    _memory(ALICE, lambda app: app.memory.remember("My horizon is 7 years.", as_="fact"))
    fact = _horizon(ALICE)
    assert fact is not None and fact["value"] == 7
    return str(fact["memory_id"])


def test_a_post_without_the_right_csrf_token_is_refused_and_changes_nothing(
    alice_fact: str,
) -> None:
    with _client(ALICE) as client:
        page = client.get("/dashboard/forget", params={"id": alice_fact})
        assert page.status_code == 200 and "Would delete" in page.text
        token = _token(page.text)
        cookie = client.cookies[CSRF_COOKIE]
        attempts = {
            "no token": {"id": alice_fact},
            "a wrong token": {"id": alice_fact, "csrf": "0" * 64},
            "another principal's token": {"id": alice_fact, "csrf": csrf_token(cookie, BOB)},
        }
        for why, form in attempts.items():
            refused = client.post("/dashboard/forget", data=form)
            assert refused.status_code == 403, why
            assert "Nothing was changed" in refused.text, why
        # The right token sent from another site (a form on evil.example) is refused too.
        cross = client.post(
            "/dashboard/forget",
            data={"id": alice_fact, "csrf": token},
            headers={"Origin": "http://evil.example"},
        )
        assert cross.status_code == 403
    # A browser without the cookie: the token of someone else's cookie does not fit.
    with _client(ALICE) as stranger:
        assert (
            stranger.post("/dashboard/forget", data={"id": alice_fact, "csrf": token}).status_code
            == 403
        )
    assert _horizon(ALICE) is not None, "a refused POST deleted the fact"

    with _client(ALICE) as client:
        client.cookies.set(CSRF_COOKIE, cookie, path="/dashboard")
        done = client.post("/dashboard/forget", data={"id": alice_fact, "csrf": token})
        assert done.status_code == 200 and "Deleted" in done.text
    assert _horizon(ALICE) is None, "the POST with the right token did not forget the fact"


def test_stored_markup_is_shown_as_text() -> None:
    _memory(ALICE, lambda app: app.memory.remember(SCRIPT, as_="preference"))
    with _client(ALICE) as client:
        page = client.get("/dashboard/preferences")
    assert page.status_code == 200
    assert "<script" not in page.text
    assert "&lt;script&gt;alert(&#x27;stored&#x27;)&lt;/script&gt; keep it short" in page.text


def test_every_page_forbids_scripts_and_framing(alice_fact: str) -> None:
    with _client(ALICE) as client:
        responses = [client.get(f"/dashboard/{name}") for name in PAGES]
        responses.append(client.get("/dashboard/forget", params={"id": alice_fact}))
        responses.append(client.post("/dashboard/forget", data={"id": alice_fact}))  # refused
    for response in responses:
        policy = response.headers.get("content-security-policy", "")
        assert "default-src 'none'" in policy, response.url
        assert "script-src" not in policy and "unsafe-inline" not in policy, response.url
        assert "frame-ancestors 'none'" in policy, response.url
        assert response.headers["x-frame-options"] == "DENY"
        assert "<script" not in response.text, response.url


def test_another_user_sees_and_reaches_nothing_of_alice(alice_fact: str, tmp_path: Path) -> None:
    # Alice's profile document (user-profiles/<tenant>/<user>.md), as the analyst keeps it.
    profile = tmp_path / "memory" / "user-profiles" / "acme" / "alice.md"
    profile.parent.mkdir(parents=True)
    profile.write_text("---\nowner: alice\n---\nAlice keeps 30% in cash.\n")
    with _client(ALICE) as client:
        assert (
            "Alice keeps 30% in cash."
            in client.get(
                "/dashboard/document", params={"path": "user-profiles/acme/alice.md"}
            ).text
        )
    with _client(BOB) as client:
        assert "alice.md" not in client.get("/dashboard/documents").text
        theirs = client.get("/dashboard/document", params={"path": "user-profiles/acme/alice.md"})
        assert theirs.status_code in (400, 404) and "30% in cash" not in theirs.text
        profile = client.get("/dashboard/profile")
        assert "horizon_years" not in profile.text and alice_fact not in profile.text
        plan = client.get("/dashboard/forget", params={"id": alice_fact})
        assert plan.status_code == 400 and "Nothing of yours has the id" in plan.text
        token = _token(client.get("/dashboard/profile").text)
        tried = client.post("/dashboard/forget", data={"id": alice_fact, "csrf": token})
        assert tried.status_code == 400 and "Nothing of yours has the id" in tried.text
        audit = client.get("/dashboard/audit")
        assert alice_fact not in audit.text
    assert _horizon(ALICE) is not None, "bob's forget reached alice's fact"


# -- on the LangGraph server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with langgraph_dev(tmp_path_factory.mktemp("dashboard"), ["acme/alice", "acme/bob"]) as served:
        yield served


def test_on_the_server_the_dashboard_is_behind_its_auth_and_shows_only_your_memory(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_DATA_DIR", str(server.data_dir))
    monkeypatch.setenv("ANALYST_MEMORY_DIR", str(server.memory_dir))
    _memory(ALICE, lambda app: app.memory.remember("My horizon is 12 years.", as_="fact"))
    fact = _horizon(ALICE)
    assert fact is not None
    url = f"{server.url}/dashboard/profile"

    assert httpx.get(url, timeout=120).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer nope"}, timeout=120).status_code == 401

    def as_(who: str) -> httpx.Client:
        token = server.tokens[who]
        return httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=300)

    with as_("acme/alice") as alice:
        mine = alice.get(url)
        assert mine.status_code == 200, server.log()[-3000:]
        assert "horizon_years" in mine.text and fact["memory_id"] in mine.text
        assert "default-src 'none'" in mine.headers["content-security-policy"]
    with as_("acme/bob") as bob:
        theirs = bob.get(url)
        assert theirs.status_code == 200
        assert "horizon_years" not in theirs.text and fact["memory_id"] not in theirs.text
        plan = bob.get(f"{server.url}/dashboard/forget", params={"id": fact["memory_id"]})
        assert plan.status_code == 400 and "Nothing of yours has the id" in plan.text
        tried = bob.post(
            f"{server.url}/dashboard/forget",
            data={"id": fact["memory_id"], "csrf": _token(theirs.text)},
        )
        assert tried.status_code == 400 and "Nothing of yours has the id" in tried.text
        # Without the token, even bob's own POST is refused.
        assert bob.post(f"{server.url}/dashboard/remember", data={"text": "x"}).status_code == 403
    assert _horizon(ALICE) is not None, "bob reached alice's fact through the server"


def test_forget_everything_shows_the_plan_and_deletes_only_when_confirmed(
    alice_fact: str,
) -> None:
    with _client(ALICE) as client:
        plan = client.get("/dashboard/account")
        assert "Nothing has been deleted yet" in plan.text and alice_fact in plan.text
        token = _token(plan.text)
        unticked = client.post("/dashboard/account/forget", data={"csrf": token})
        assert "nothing was deleted" in unticked.text
        assert _horizon(ALICE) is not None, "the plan or an unticked form deleted something"
        done = client.post("/dashboard/account/forget", data={"csrf": token, "sure": "yes"})
        assert done.status_code == 200 and "Deleted" in done.text and alice_fact in done.text
    assert _horizon(ALICE) is None
