"""Studio support, proved through the real LangGraph API server (``langgraph dev``).

One server per module, started the way Studio users start it, from the repository's own
``langgraph.json``, and driven with ``langgraph_sdk`` exactly as Studio drives it: find the
assistant, run a thread to the approval interrupt, resume it with a decision.

Isolation: the server runs with its working directory in a temporary folder, because
``langgraph dev`` keeps its in-memory runtime's files in ``./.langgraph_api/`` relative to the
working directory. Graph paths in ``langgraph.json`` are also resolved against the working
directory (not the config file), so the fixture writes a copy of the config with its graph
paths made absolute; the graph spec itself is the repository's. ``ANALYST_*`` point into the
same temporary folder, so no research note lands in the repository's ``.agent-memory``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[2]
GRAPH_ID = "analyst"
CONTEXT = {"tenant_id": "acme", "user_id": "studio-user"}
#: Where the planner recalls the CONTEXT principal's memories (memory.store.scoped's layout).
MEMORIES = ["tenants", "acme", "users", "studio-user", "memories"]
STARTUP_TIMEOUT_S = 90.0
HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Server:
    url: str
    memory_dir: Path
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_config(target: Path) -> Path:
    """The repository's langgraph.json with file paths (graphs, store embeddings) made absolute.

    ``env`` is dropped on purpose: a developer's ``.env`` would override the variables this
    fixture sets (the server lets the env file win) and could point the run at real data.
    """
    config = json.loads((REPO / "langgraph.json").read_text())
    graphs: dict[str, Any] = {}
    for name, spec in config["graphs"].items():
        path = spec["path"] if isinstance(spec, dict) else spec
        location, variable = path.rsplit(":", 1)
        if "/" in location:  # a file path; module paths ("pkg.mod:var") need no change
            path = f"{(REPO / location).resolve()}:{variable}"
        graphs[name] = {**spec, "path": path} if isinstance(spec, dict) else path
    config["graphs"] = graphs
    index = config.get("store", {}).get("index", {})
    if ".py:" in index.get("embed", ""):  # a file path too, loaded relative to the cwd
        location, variable = index["embed"].rsplit(":", 1)
        index["embed"] = f"{(REPO / location).resolve()}:{variable}"
    config.pop("env", None)
    target.write_text(json.dumps(config, indent=2))
    return target


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"langgraph dev exited with code {proc.returncode} before it was ready.\n"
                f"--- server log ---\n{log_path.read_text(errors='replace')}"
            )
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    pytest.fail(
        f"langgraph dev did not answer GET /ok within {STARTUP_TIMEOUT_S:.0f}s.\n"
        f"--- server log ---\n{log_path.read_text(errors='replace')}"
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("studio")
    workdir, data_dir, memory_dir = root / "server", root / "data", root / "memory"
    workdir.mkdir()
    config = _server_config(workdir / "langgraph.json")
    log_path = root / "server.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "ANALYST_DATA_DIR": str(data_dir),
        "ANALYST_MEMORY_DIR": str(memory_dir),
        "ANALYST_MARKET_PROVIDER": "sample",  # bundled data: the test needs no network
        "LANGGRAPH_NO_VERSION_CHECK": "true",  # skips the PyPI "newer version" probe
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",  # skips the CLI's usage beacon
        "LANGSMITH_TRACING": "false",  # no traces even if the developer has an API key set
        "LOG_COLOR": "false",  # the log is quoted in failure messages; keep it plain text
    }
    env.pop("ANALYST_CHECKPOINTER", None)
    langgraph = Path(sys.executable).with_name("langgraph")
    command = [
        str(langgraph),
        "dev",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        # One process and no file watcher: nothing here edits code during the run.
        "--no-reload",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_ready(url, proc, log_path)
        yield Server(url=url, memory_dir=memory_dir, log_path=log_path)
    finally:
        _stop(proc)


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
    client = get_client(url=server.url)
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
    assert values["publication"]["approver"] == "studio-reviewer"
    assert values["publication"]["draft_hash"] == payload["draft_hash"]

    notes = sorted((server.memory_dir / "research").glob("NVDA-*.md"))
    assert len(notes) == 1, notes
    assert Path(values["publication"]["path"]) == notes[0]
    text = notes[0].read_text()
    assert thread_id in text and payload["draft_hash"] in text
    assert "## Key metrics" in text


async def test_studio_resume_with_stale_hash_does_not_publish(server: Server) -> None:
    client = get_client(url=server.url)
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
    with a relevance part, as the CLI does over Qdrant."""
    client = get_client(url=server.url)
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

    thread_id = await _run_new_thread(client, "Analyze NVDA: how much risk would I take on?")
    values = (await _state(client, thread_id))["values"]
    recalled = {item["key"]: item["score"] for item in values["recalled"]}
    assert set(recalled) == set(memories), values["recalled"]
    # Without the index every relevance is 0 and recall ranks by recency and importance only.
    assert recalled["mem-risk"]["relevance"] > max(0.1, recalled["mem-coffee"]["relevance"])
    assert "mem-risk" in values["memories_used"], values["memories_used"]


async def test_studio_runs_read_the_fact_ledger_like_cli_runs(server: Server) -> None:
    """A fact recorded with the CLI for a principal is read by that principal's Studio run
    (the ledger reaches nodes the way it does in the CLI), and by nobody else's."""
    env = {
        **os.environ,
        "ANALYST_DATA_DIR": str(server.memory_dir.parent / "data"),
        "ANALYST_MEMORY_DIR": str(server.memory_dir),
    }
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
    client = get_client(url=server.url)
    thread_id = await _run_new_thread(client, "Analyze NVDA", CONTEXT)
    values = (await _state(client, thread_id))["values"]
    assert values["facts_used"]["horizon"]["value"] == "long-term", values["facts_used"]
    assert values["facts_used"]["horizon"]["source"] == "stated"

    other = {"tenant_id": "acme", "user_id": "someone-else"}
    thread_id = await _run_new_thread(client, "Analyze NVDA", other)
    assert (await _state(client, thread_id))["values"]["facts_used"] == {}
