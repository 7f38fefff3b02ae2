"""The memory dashboard in a real browser (Chromium, JavaScript off), served by ``analyst
dashboard`` and by ``langgraph dev``: alice reads her profile, corrects a fact and sees its
timeline change, forgets one item and reads the receipt, confirms a candidate; bob, signed in
as himself, sees none of it and cannot forget it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from agent.web.demo import CHAT, PREFERENCE
from memory.identity import Principal
from tests.browser.conftest import analyst_dashboard, page_of, seed_demo
from tests.support.langgraph_server import Server, langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

ALICE, BOB = Principal("acme", "alice"), Principal("acme", "bob")


def _fact(page: Any, attribute: str) -> Any:
    return page.locator(f"#fact-{attribute}")


def _submit(page: Any, button: Any) -> None:
    with page.expect_navigation():
        button.click()


def alice_uses_her_dashboard(page: Any, base: str) -> str:
    """Alice's whole visit; answers her horizon fact's id (for bob to try)."""
    # Read the profile: the horizon she corrected once, its two records on the timeline.
    page.goto(base + "profile")
    horizon = _fact(page, "horizon_years")
    assert horizon.locator(".value").inner_text() == "10"
    assert horizon.locator("svg g.bar").count() == 2
    assert horizon.locator("svg g.bar.superseded").count() == 1
    assert _fact(page, "risk_tolerance").locator(".value").inner_text() == "conservative"

    # Correct it: a new stated fact; the timeline gains a bar and the old one is superseded.
    horizon.locator("input[name=text]").fill("My horizon is 15 years.")
    _submit(page, horizon.locator("button"))
    assert "Recorded horizon_years" in page.locator("#notice").inner_text()
    horizon = _fact(page, "horizon_years")
    assert horizon.locator(".value").inner_text() == "15"
    assert horizon.locator("svg g.bar").count() == 3
    assert horizon.locator("svg g.bar.open").count() == 1
    assert horizon.locator("svg g.bar.superseded").count() == 2
    memory_id = horizon.locator("p.muted").inner_text().rsplit("fact ", 1)[1].strip()

    # Forget one item: the plan first (nothing deleted), then the receipt.
    page.goto(base + "preferences")
    row = page.locator("tr", has_text=PREFERENCE)
    with page.expect_navigation():
        row.get_by_role("link", name="Delete…").click()
    assert "Would delete" in page.locator("#plan").inner_text()
    _submit(page, page.get_by_role("button", name="Forget it"))
    receipt = page.locator("#receipt").inner_text()
    assert "Deleted 1 store" in receipt, receipt
    page.goto(base + "preferences")
    assert PREFERENCE not in page.content()

    # Confirm a candidate: it leaves the review list and is remembered.
    page.goto(base + "candidates")
    row = page.locator("tr", has_text=CHAT)
    _submit(page, row.get_by_role("button", name="Confirm"))
    assert "Nothing awaits your review." in page.content()
    page.goto(base + "preferences")
    assert CHAT in page.content()
    return memory_id


def bob_sees_none_of_it(page: Any, base: str, alice_fact: str) -> None:
    page.goto(base + "profile")
    assert "Memory of bob" in page.locator("#who").inner_text()
    assert "No profile facts yet." in page.content()
    assert "horizon" not in page.content()
    for name in ("preferences", "candidates", "sessions", "audit"):
        page.goto(base + name)
        content = page.content()
        assert CHAT not in content and "TSLA" not in content and alice_fact not in content, name
    page.goto(base + f"forget?id={alice_fact}")
    assert "Would delete 1 facts" not in page.content()


def test_the_dashboard_served_by_analyst_dashboard(browser: Any) -> None:
    env = dict(os.environ)
    seed_demo(ALICE, env)
    with analyst_dashboard(ALICE, env) as base, page_of(browser) as page:
        fact = alice_uses_her_dashboard(page, base)
    with analyst_dashboard(BOB, env) as base, page_of(browser) as page:
        bob_sees_none_of_it(page, base, fact)
    with analyst_dashboard(ALICE, env) as base, page_of(browser) as page:
        page.goto(base + "profile")
        assert _fact(page, "horizon_years").locator(".value").inner_text() == "15"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with langgraph_dev(tmp_path_factory.mktemp("browser"), ["acme/alice", "acme/bob"]) as served:
        yield served


def test_the_dashboard_on_the_langgraph_server(browser: Any, server: Server) -> None:
    seed_demo(ALICE, server.cli_env())
    base = f"{server.url}/dashboard/"

    def signed_in(who: str) -> AbstractContextManager[Any]:
        return page_of(browser, {"Authorization": f"Bearer {server.tokens[who]}"})

    with signed_in("acme/alice") as page:
        fact = alice_uses_her_dashboard(page, base)
    with signed_in("acme/bob") as page:
        bob_sees_none_of_it(page, base, fact)
    with page_of(browser) as page:  # nobody signed in
        response = page.goto(base + "profile")
        assert response is not None and response.status == 401
