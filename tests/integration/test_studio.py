"""Studio support, proved through the real LangGraph API server (``langgraph dev``).

One server per module, started the way Studio users start it, from the repository's own
``langgraph.json`` (its auth included: every request carries a bearer token,
:mod:`tests.support.langgraph_server`), and driven with ``langgraph_sdk`` exactly as Studio
drives it: find the assistant, run a thread to the approval interrupt, resume it with a
decision. The run acts for the token's principal; ``context`` only tunes the run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from tests.support.langgraph_server import Server, langgraph_dev

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

GRAPH_ID = "analyst"
STUDIO_USER = "acme/studio-user"
SOMEONE_ELSE = "acme/someone-else"
#: A principal of its own for the recall test: what the other tests' runs teach lands in
#: their principal's memories (the server runs extraction after each run).
RECALLER = "acme/recaller"
CONTEXT = {"tenant_id": "acme", "user_id": "studio-user"}
#: Where the planner recalls RECALLER's memories (memory.store.scoped's layout).
MEMORIES = ["tenants", "acme", "users", "recaller", "memories"]
#: What the recall test's run asks (the planner recalls with it).
QUESTION = "Analyze NVDA: how much risk would I take on?"
HEX64 = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with langgraph_dev(
        tmp_path_factory.mktemp("studio"), [STUDIO_USER, SOMEONE_ELSE, RECALLER]
    ) as served:
        yield served


async def _assistant_id(client: LangGraphClient) -> str:
    assistants = await client.assistants.search(graph_id=GRAPH_ID)
    assert assistants, f"no assistant for graph '{GRAPH_ID}'"
    return str(assistants[0]["assistant_id"])


async def _run_new_thread(
    client: LangGraphClient, query: str, context: dict[str, Any] = CONTEXT
) -> str:
    """A new thread, run with ``query`` until it pauses or ends; its id."""
    assistant_id = await _assistant_id(client)
    thread_id = str((await client.threads.create())["thread_id"])
    await client.runs.wait(thread_id, assistant_id, input={"query": query}, context=context)
    return thread_id


async def _state(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    return dict(await client.threads.get_state(thread_id))


def _approval_interrupt(state: dict[str, Any]) -> dict[str, Any]:
    assert list(state["next"]) == ["approval"], state["next"]
    interrupts = [i["value"] for task in state["tasks"] for i in task.get("interrupts", [])]
    assert len(interrupts) == 1, interrupts
    return interrupts[0]


def _notes_for(memory_dir: Path, thread_id: str) -> list[Path]:
    """Research notes whose front matter names this thread (none while the folder is absent)."""
    return [p for p in sorted((memory_dir / "research").glob("*.md")) if thread_id in p.read_text()]


async def test_studio_runs_to_approval_and_publishes_on_resume(server: Server) -> None:
    client = server.client(STUDIO_USER)
    assistant_id = await _assistant_id(client)

    # Studio renders a form from the context schema; the Context fields must be in it.
    schemas = await client.assistants.get_schemas(assistant_id)
    context_schema = schemas["context_schema"]
    assert context_schema is not None, schemas
    context_fields = context_schema["properties"]
    assert {"tenant_id", "user_id", "mode"} <= set(context_fields), context_fields

    thread_id = await _run_new_thread(client, "Analyze NVDA")
    paused = await _state(client, thread_id)
    payload = _approval_interrupt(paused)
    assert payload["kind"] == "approval"
    assert payload["ticker"] == "NVDA"
    assert HEX64.fullmatch(payload["draft_hash"]), payload["draft_hash"]
    assert "## Key metrics" in payload["markdown"]
    assert paused["values"]["status"] == "awaiting_approval"
    assert paused["values"]["draft"]["hash"] == payload["draft_hash"]
    assert _notes_for(server.memory_dir, thread_id) == [], "published before any approval"

    # The approver recorded is the token's user, whatever name the decision gives.
    decision = {
        "action": "approve",
        "draft_hash": payload["draft_hash"],
        "approver": "studio-reviewer",
    }
    await client.runs.wait(thread_id, assistant_id, command={"resume": decision}, context=CONTEXT)
    final = await _state(client, thread_id)
    values = final["values"]
    assert list(final["next"]) == [], final["next"]
    assert values["status"] == "published", values.get("decision_error")
    assert values["publication"]["approver"] == "studio-user"
    assert values["publication"]["draft_hash"] == payload["draft_hash"]

    notes = sorted((server.memory_dir / "research").glob("NVDA-*.md"))
    assert len(notes) == 1, notes
    assert Path(values["publication"]["path"]) == notes[0]
    text = notes[0].read_text()
    assert thread_id in text and payload["draft_hash"] in text
    assert "## Key metrics" in text


async def test_studio_resume_with_stale_hash_does_not_publish(server: Server) -> None:
    client = server.client(STUDIO_USER)
    assistant_id = await _assistant_id(client)
    # mode=flash proves the context reaches runtime.context: "Analyze" alone routes deep.
    thread_id = await _run_new_thread(client, "Analyze NVDA", {**CONTEXT, "mode": "flash"})
    paused = await _state(client, thread_id)
    assert paused["values"]["mode"] == "flash"
    current = _approval_interrupt(paused)["draft_hash"]

    stale = {"action": "approve", "draft_hash": "deadbeefdeadbeef", "approver": "studio-reviewer"}
    await client.runs.wait(thread_id, assistant_id, command={"resume": stale}, context=CONTEXT)
    after = await _state(client, thread_id)
    payload = _approval_interrupt(after)  # asked again, for the same draft
    values = after["values"]
    assert payload["draft_hash"] == current
    assert values["status"] == "awaiting_approval"
    assert not values.get("publication")
    assert values.get("decisions", []) == []
    error = values["decision_error"] or ""
    assert "deadbeefdead" in error and current[:12] in error, error
    assert "Nothing was published" in error, error
    assert payload["error"] == error  # the reviewer sees why the decision was refused
    assert _notes_for(server.memory_dir, thread_id) == []


async def test_studio_store_ranks_memories_by_meaning_and_the_planner_recalls_them(
    server: Server,
) -> None:
    """langgraph.json indexes the server's store with the project's embeddings, so a memory
    put through the API is found by what it means, and a Studio run's planner recalls it
    with a relevance part, as the CLI does over Qdrant; Studio's search of the store ranks as
    the planner's recall does (the same totals)."""
    client = server.client(RECALLER)
    memories = {
        "mem-risk": {
            "text": "I prefer conservative positions",
            "about": "risk tolerance",
            "importance": 5,
            "kind": "preference",
        },
        "mem-coffee": {
            "text": "I take my coffee black",
            "about": "coffee",
            "importance": 5,
            "kind": "note",
        },
    }
    for key, value in memories.items():
        await client.store.put_item(MEMORIES, key=key, value=value)

    found = (
        await client.store.search_items(MEMORIES, query="how much risk am I comfortable with")
    )["items"]
    assert [item["key"] for item in found] == ["mem-risk", "mem-coffee"], found
    assert found[0]["score"] is not None and found[0]["score"] > found[1]["score"] + 0.2, found

    thread_id = await _run_new_thread(client, QUESTION)
    values = (await _state(client, thread_id))["values"]
    recalled = {item["key"]: item["score"] for item in values["recalled"]}
    assert set(recalled) == set(memories), values["recalled"]
    # Without the index every relevance is 0 and recall ranks by recency and importance only.
    assert recalled["mem-risk"]["relevance"] > max(0.1, recalled["mem-coffee"]["relevance"])
    assert "mem-risk" in values["memories_used"], values["memories_used"]
    # The server's store ranks as recall does (graphs/studio_store.py): Studio's scores are the
    # planner's totals, not bare similarities.
    ranked = (await client.store.search_items(MEMORIES, query=QUESTION))["items"]
    assert [item["key"] for item in ranked] == [item["key"] for item in values["recalled"]]
    for item in ranked:
        assert item["score"] == pytest.approx(recalled[item["key"]]["total"], abs=1e-3), ranked


async def test_studio_runs_read_the_fact_ledger_like_cli_runs(server: Server) -> None:
    """A fact recorded with the CLI for a principal is read by that principal's Studio run
    (the ledger reaches nodes the way it does in the CLI), and by nobody else's."""
    env = server.cli_env()
    analyst = Path(sys.executable).with_name("analyst")
    subprocess.run(
        [
            str(analyst),
            "facts",
            "record",
            "me",
            "horizon",
            '"long-term"',
            "--tenant",
            "acme",
            "--user",
            "studio-user",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    client = server.client(STUDIO_USER)
    thread_id = await _run_new_thread(client, "Analyze NVDA", CONTEXT)
    values = (await _state(client, thread_id))["values"]
    assert values["facts_used"]["horizon"]["value"] == "long-term", values["facts_used"]
    assert values["facts_used"]["horizon"]["source"] == "stated"

    other = server.client(SOMEONE_ELSE)
    thread_id = await _run_new_thread(other, "Analyze NVDA", CONTEXT)  # context grants nothing
    assert (await _state(other, thread_id))["values"]["facts_used"] == {}
