"""Personal data sent through the API server (``langgraph dev`` with the repository's
``langgraph.json``) is redacted by its auth handlers before the server stores it: a run's
input and a decision's feedback are placeholders in the thread's state and history, a value
put through the store API is stored redacted, and after the server stops no file it wrote
(its runtime's files, its log, the data and memory folders) holds a typed value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.langgraph_server import langgraph_dev
from tests.support.personal_data import CARD, EMAIL, SAID, hits, named

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ALICE = "acme/alice"
ALICE_NS = ["tenants", "acme", "users", "alice", "memories"]


async def test_the_server_stores_placeholders_for_values_sent_in_runs_and_store_puts(
    tmp_path: Path,
) -> None:
    with langgraph_dev(tmp_path, [ALICE]) as server:
        client = server.client(ALICE)
        assistant_id = str((await client.assistants.search(graph_id="analyst"))[0]["assistant_id"])
        thread_id = str((await client.threads.create())["thread_id"])
        await client.runs.wait(thread_id, assistant_id, input={"query": f"Analyze NVDA. {SAID}"})
        state = await client.threads.get_state(thread_id)
        assert list(state["next"]) == ["approval"], state
        assert "[e-mail]" in state["values"]["query"], state["values"]["query"]
        reject = {
            "action": "reject",
            "draft_hash": state["values"]["draft"]["hash"],
            "approver": "alice",
            "feedback": f"Compare peers; my card is {CARD}",
        }
        await client.runs.wait(thread_id, assistant_id, command={"resume": reject})
        history = await client.threads.get_history(thread_id, limit=100)
        assert not named(json.dumps(history)), "a checkpoint holds a typed value"
        assert "[card number]" in json.dumps(history)

        await client.store.put_item(ALICE_NS, "contact", {"text": f"mail {EMAIL}"})
        item = await client.store.get_item(ALICE_NS, "contact")
        assert item is not None and item["value"] == {"text": "mail [e-mail]"}, item

    assert hits(tmp_path) == {}, server.log()[-2000:]
