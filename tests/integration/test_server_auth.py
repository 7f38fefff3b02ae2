"""The API server's auth (``graphs/auth.py``), proved through ``langgraph_sdk`` against a real
``langgraph dev`` serving the repository's ``langgraph.json``.

Three principals hold tokens: alice and bob of one tenant, carol of another. A request
without a valid token is refused with 401; bob and carol cannot read, search, run on, resume,
decide, update or delete alice's threads or runs, nor get, search, put or delete in her store
namespaces; a ``context`` naming someone else changes nothing. Alice's own decision publishes
her report under her name; a new message on her paused thread leaves the draft pending; what
is said through the server is learned from as in the CLI (the extraction jobs are queued and
run after the run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph_sdk.client import LangGraphClient

from agent.errors import ConfigurationError
from agent.nodes.services import Services, open_ledger
from agent.settings import Settings
from graphs.builder import build_graph
from graphs.server_tokens import load_tokens, parse_tokens
from graphs.studio import learn_after_run
from memory.checkpoint import open_checkpointer
from memory.identity import Principal
from tests.support.langgraph_server import Server, langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

GRAPH_ID = "analyst"
ALICE, BOB, CAROL = "acme/alice", "acme/bob", "globex/carol"
ALICE_NS = ["tenants", "acme", "users", "alice", "memories"]
#: What a caller can put in ``context`` to pose as alice: it must grant nothing.
AS_ALICE = {"tenant_id": "acme", "user_id": "alice"}
AS_BOB = {"tenant_id": "acme", "user_id": "bob"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with langgraph_dev(tmp_path_factory.mktemp("server-auth"), [ALICE, BOB, CAROL]) as served:
        yield served


async def _assistant_id(client: LangGraphClient) -> str:
    assistants = await client.assistants.search(graph_id=GRAPH_ID)
    assert assistants, f"no assistant for graph '{GRAPH_ID}'"
    return str(assistants[0]["assistant_id"])


async def _paused_thread(client: LangGraphClient, query: str = "Analyze NVDA") -> str:
    """A new thread of the client's principal, run to the approval pause."""
    assistant_id = await _assistant_id(client)
    thread_id = str((await client.threads.create())["thread_id"])
    await client.runs.wait(thread_id, assistant_id, input={"query": query}, context=AS_BOB)
    state = await _state(client, thread_id)
    assert list(state["next"]) == ["approval"], state
    return thread_id


async def _state(client: LangGraphClient, thread_id: str) -> Any:
    """The thread's state as the server answers it (values, next, tasks)."""
    return await client.threads.get_state(thread_id)


async def _status(call: Any) -> int:
    """The HTTP status a refused SDK call got (the call must be refused)."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await call
    return refused.value.response.status_code


def _analyst(server: Server, *args: str) -> Any:
    analyst = Path(sys.executable).with_name("analyst")
    done = subprocess.run(
        [str(analyst), *args, "--json"],
        env=server.cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_requests_without_a_valid_token_are_refused_with_401(server: Server) -> None:
    assert await _status(server.client(None).threads.search()) == 401
    forged = httpx.AsyncClient(
        base_url=server.url, headers={"Authorization": "Bearer not-a-token-of-this-server"}
    )
    async with forged:
        assert (await forged.post("/threads/search", json={})).status_code == 401
    # langgraph dev lets "x-auth-scheme: langsmith" skip custom auth unless langgraph.json
    # sets disable_studio_auth; it does.
    async with httpx.AsyncClient(base_url=server.url) as studio:
        answer = await studio.post(
            "/threads/search", json={}, headers={"x-auth-scheme": "langsmith"}
        )
        assert answer.status_code == 401, answer.text
        assert (await studio.get("/ok")).status_code == 200  # health stays open


async def test_other_principals_cannot_reach_alices_thread(server: Server) -> None:
    alice = server.client(ALICE)
    thread_id = await _paused_thread(alice)
    before = await _state(alice, thread_id)
    draft_hash = before["values"]["draft"]["hash"]
    assert before["values"]["owner"] == {"tenant_id": "acme", "user_id": "alice"}
    assistant_id = await _assistant_id(alice)
    approve = {"action": "approve", "draft_hash": draft_hash, "approver": "bob"}

    for who in (BOB, CAROL):
        other = server.client(who)
        found = await other.threads.search(limit=100)
        assert thread_id not in {t["thread_id"] for t in found}, who
        assert await _status(other.threads.get(thread_id)) == 404
        assert await _status(other.threads.get_state(thread_id)) == 404
        assert await _status(other.threads.get_history(thread_id)) == 404
        assert await _status(other.runs.list(thread_id)) == 404
        assert (
            await _status(
                other.runs.wait(
                    thread_id, assistant_id, command={"resume": approve}, context=AS_ALICE
                )
            )
            == 404
        )
        assert (
            await _status(
                other.runs.create(thread_id, assistant_id, input={"query": "Analyze AAPL"})
            )
            == 404
        )
        assert await _status(other.threads.update(thread_id, metadata={"owner": who})) == 404
        assert await _status(other.threads.delete(thread_id)) == 404
        # Creating a thread with alice's id does not hand it over.
        taken = await _status(other.threads.create(thread_id=thread_id, if_exists="do_nothing"))
        assert taken in (404, 409), taken

    after = await _state(alice, thread_id)
    assert after["values"]["status"] == "awaiting_approval"
    assert after["values"]["draft"]["hash"] == draft_hash
    assert not after["values"].get("decisions")
    metadata = (await alice.threads.get(thread_id))["metadata"] or {}
    assert metadata["owner"] == ALICE

    # Alice decides, posing as bob in context and naming him approver: the token decides.
    await alice.runs.wait(thread_id, assistant_id, command={"resume": approve}, context=AS_BOB)
    values = (await _state(alice, thread_id))["values"]
    assert values["status"] == "published", values.get("decision_error")
    assert values["publication"]["approver"] == "alice"
    note = Path(values["publication"]["path"]).read_text()
    assert "approver: alice" in note, note[:400]
    episodes = _analyst(server, "memory", "episodes", "--tenant", "acme", "--user", "alice")
    mine = [e for e in episodes["episodes"] if e["thread_id"] == thread_id]
    assert sorted(e["kind"] for e in mine) == ["approve", "message"], mine
    bobs = _analyst(server, "memory", "episodes", "--tenant", "acme", "--user", "bob")
    assert not [e for e in bobs["episodes"] if e["thread_id"] == thread_id]


async def test_store_namespaces_are_the_callers_own(server: Server) -> None:
    alice, bob, carol = (server.client(p) for p in (ALICE, BOB, CAROL))
    secret = {"text": "my pin is 4242", "about": "pin", "importance": 5, "kind": "note"}
    await alice.store.put_item(ALICE_NS, key="pin", value=secret)
    assert (await alice.store.get_item(ALICE_NS, key="pin"))["value"] == secret

    for other in (bob, carol):
        assert await _status(other.store.get_item(ALICE_NS, key="pin")) == 403
        assert await _status(other.store.search_items(ALICE_NS)) == 403
        assert await _status(other.store.put_item(ALICE_NS, key="pin", value={"x": 1})) == 403
        assert await _status(other.store.delete_item(ALICE_NS, key="pin")) == 403
        # A search or listing under a prefix of the caller's own is narrowed to it.
        for prefix in ([], ["tenants"]):
            found = await other.store.search_items(prefix, query="pin", limit=100)
            assert all(i["namespace"][:4] != ALICE_NS[:4] for i in found["items"]), found
        listed = await other.store.list_namespaces(limit=100)
        assert all(ns[:4] != ALICE_NS[:4] for ns in listed["namespaces"]), listed
    assert await _status(carol.store.search_items(["tenants", "acme"])) == 403
    assert await _status(carol.store.list_namespaces(prefix=["tenants", "acme"])) == 403
    narrowed = await bob.store.search_items(["tenants", "acme", "users"], limit=100)
    assert all(i["namespace"][:4] != ALICE_NS[:4] for i in narrowed["items"]), narrowed
    assert (await alice.store.get_item(ALICE_NS, key="pin"))["value"] == secret
    assert ALICE_NS in [list(ns) for ns in (await alice.store.list_namespaces())["namespaces"]]


async def test_a_new_message_on_a_paused_thread_keeps_the_draft(server: Server) -> None:
    alice = server.client(ALICE)
    thread_id = await _paused_thread(alice)
    assistant_id = await _assistant_id(alice)
    draft_hash = (await _state(alice, thread_id))["values"]["draft"]["hash"]

    await alice.runs.wait(thread_id, assistant_id, input={"query": "Analyze AAPL"})
    state = await _state(alice, thread_id)
    values = state["values"]
    assert list(state["next"]) == ["approval"]
    assert values["status"] == "awaiting_approval"
    assert values["draft"]["hash"] == draft_hash
    assert values["query"] == "Analyze NVDA"
    assert "still awaits your decision" in values["reply"], values["reply"]
    interrupts = [i["value"] for t in state["tasks"] for i in t.get("interrupts", [])]
    assert [i["draft_hash"] for i in interrupts] == [draft_hash]

    approve = {"action": "approve", "draft_hash": draft_hash}
    await alice.runs.wait(thread_id, assistant_id, command={"resume": approve})
    values = (await _state(alice, thread_id))["values"]
    assert values["status"] == "published", values.get("decision_error")
    assert values["publication"]["draft_hash"] == draft_hash
    assert "NVDA" in values["publication"]["path"]


async def test_what_is_said_through_the_server_is_learned_from(server: Server) -> None:
    """As after a CLI run: the finished request's session-end extraction and the decision's
    extraction are queued and run (ANALYST_EXTRACT_INLINE, on by default), so what the worker
    would have done is done, for the token's principal."""
    bob = server.client(BOB)
    assistant_id = await _assistant_id(bob)
    thread_id = await _paused_thread(bob)
    draft_hash = (await _state(bob, thread_id))["values"]["draft"]["hash"]
    approve = {"action": "approve", "draft_hash": draft_hash}
    await bob.runs.wait(thread_id, assistant_id, command={"resume": approve}, context=AS_ALICE)
    assert (await _state(bob, thread_id))["values"]["status"] == "published"

    jobs = _analyst(server, "memory", "jobs", "--tenant", "acme", "--user", "bob")["jobs"]
    ours = {j["kind"]: j for j in jobs if j["thread_id"] == thread_id}
    assert set(ours) == {"decision", "session_end"}, jobs
    assert all(j["status"] == "done" for j in ours.values()), ours
    episodes = _analyst(server, "memory", "episodes", "--tenant", "acme", "--user", "bob")
    said = {e["episode_id"] for e in episodes["episodes"] if e["thread_id"] == thread_id}
    assert said and said <= set(ours["session_end"]["episode_ids"]), (said, ours)
    alices = _analyst(server, "memory", "jobs", "--tenant", "acme", "--user", "alice")["jobs"]
    assert not [j for j in alices if j["thread_id"] == thread_id]
    # Nothing is left for the worker.
    assert _analyst(server, "memory", "worker", "--tenant", "acme", "--user", "bob")["jobs"] == []


# -- the token configuration (no server needed) ------------------------------------------


def test_a_token_file_maps_tokens_to_principals() -> None:
    tokens = parse_tokens(
        "# comment\n\nalice-token-0123456789 acme alice  # alice\nbob-token-0123456789 acme bob\n",
        "tokens",
    )
    assert tokens.principal("alice-token-0123456789") == Principal("acme", "alice")
    assert tokens.principal("bob-token-0123456789") == Principal("acme", "bob")
    assert tokens.principal("alice-token-012345678") is None
    assert tokens.principal("") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alice-token-0123456789 acme\n", "tokens, line 1: expected 'TOKEN TENANT USER'"),
        ("short acme alice\n", "tokens, line 1: a token must be at least 16 characters"),
        ("alice-token-0123456789 acme al*ice\n", "tokens, line 1: The user id 'al*ice'"),
        ("# nothing\n", "tokens holds no token"),
    ],
)
def test_a_bad_token_file_is_a_clear_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_tokens(text, "tokens")
    assert message in str(refused.value)


def test_without_tokens_the_server_does_not_start_and_says_how_to_make_one(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigurationError, match="make studio creates"):
        load_tokens({})
    one = load_tokens(
        {
            "ANALYST_SERVER_TOKEN": "one-token-0123456789",
            "ANALYST_TENANT": "acme",
            "ANALYST_USER": "dan",
        }
    )
    assert one.principal("one-token-0123456789") == Principal("acme", "dan")
    with pytest.raises(ConfigurationError, match="Cannot read ANALYST_SERVER_TOKENS="):
        load_tokens({"ANALYST_SERVER_TOKENS": str(tmp_path / "missing")})


async def test_with_extraction_left_to_the_worker_the_worker_finds_what_a_server_run_queued(
    tmp_path: Path,
) -> None:
    """ANALYST_EXTRACT_INLINE=0: after a server run (graphs.studio.learn_after_run, as the
    factory calls it, without a server) the session-end job of the finished request is queued
    for the token's principal, and ``analyst memory worker`` for that principal runs it."""
    env = {
        "ANALYST_DATA_DIR": str(tmp_path / "data"),
        "ANALYST_MEMORY_DIR": str(tmp_path / "memory"),
        "ANALYST_MARKET_PROVIDER": "sample",
        "ANALYST_EXTRACT_INLINE": "0",
    }
    settings = Settings.from_env(env)
    alice = {"identity": "acme/alice", "tenant_id": "acme", "user_id": "alice"}
    async with (
        open_ledger(Services.from_settings(settings), settings) as services,
        open_checkpointer(f"sqlite:///{tmp_path}/cp.sqlite") as saver,
    ):
        graph = build_graph(services).compile(checkpointer=saver)
        run: RunnableConfig = {"configurable": {"thread_id": "t-1", "langgraph_auth_user": alice}}
        await graph.ainvoke({"query": "My investment horizon is 5 years."}, run, durability="sync")
        as_served: RunnableConfig = {
            "configurable": {**run["configurable"], CONFIG_KEY_CHECKPOINTER: saver}
        }
        # The server hands the factory the request's context as a dict; it grants nothing.
        await learn_after_run(graph, as_served, {"user_id": "bob"}, services, settings, None)
    analyst = Path(sys.executable).with_name("analyst")
    done = subprocess.run(
        [str(analyst), "memory", "worker", "--tenant", "acme", "--user", "alice", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    assert [(j["kind"], j["thread_id"], j["status"]) for j in jobs] == [
        ("session_end", "t-1", "done")
    ], jobs
