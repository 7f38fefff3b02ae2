"""A thread belongs to the principal of its first request, in the graph itself.

The real graph compiled with a real SQLite checkpointer and the real journal, no server auth:
two principals (alice, bob) of one tenant reach one thread through ``context`` the way any
caller of a server without auth can. Whatever ``context`` says, only the thread's recorded
owner sends it a message or decides its draft; a refused caller changes nothing, is told why,
and has nothing filed under their name. A message the owner sends while the draft awaits a
decision is answered beside it and never replaces it. Under the server's auth the principal
is the authenticated user, not ``context``.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from agent.errors import ConfigurationError, ThreadUnavailableError
from agent.learning.learner import build_learner
from agent.market import SampleDataProvider
from agent.nodes.base import run_principal
from agent.nodes.services import Services, open_ledger
from agent.settings import Settings
from agent.state import Context
from graphs.builder import compile_graph
from memory.checkpoint import open_checkpointer
from memory.documents import FileMemory
from memory.identity import Principal

pytestmark = pytest.mark.integration

TODAY = datetime(2024, 1, 12, 15, 30, tzinfo=UTC)
ALICE = Context(tenant_id="acme", user_id="alice")
BOB = Context(tenant_id="acme", user_id="bob")
SEED_CONVENTIONS = Path(__file__).resolve().parents[2] / ".agent-memory" / "conventions"


@dataclass
class Rig:
    graph: Any
    services: Services
    memory_dir: Path

    async def episodes(self, who: Context, thread_id: str) -> list[Any]:
        learner = build_learner(self.services, Principal(who.tenant_id, who.user_id), None)
        assert learner is not None
        return await learner.journal.list_episodes(thread_id=thread_id)

    def notes(self) -> list[Path]:
        return sorted((self.memory_dir / "research").glob("*.md"))


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    shutil.copytree(SEED_CONVENTIONS, tmp_path / "memory" / "conventions")
    settings = Settings.from_env({"ANALYST_DATA_DIR": str(tmp_path / "data")})
    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(tmp_path / "memory"),
        artifacts_dir=tmp_path / "data" / "artifacts",
        clock=lambda: TODAY,
    )
    async with (
        open_ledger(services, settings) as wired,
        open_checkpointer(f"sqlite:///{tmp_path}/cp.sqlite") as saver,
    ):
        yield Rig(compile_graph(saver, services=wired), wired, tmp_path / "memory")


def _config(thread_id: str, **configurable: Any) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, **configurable}}


async def _paused(rig: Rig, thread_id: str, who: Context = ALICE, **configurable: Any) -> Any:
    config = _config(thread_id, **configurable)
    await rig.graph.ainvoke({"query": "Analyze NVDA"}, config, context=who, durability="sync")
    snap = await rig.graph.aget_state(config)
    assert snap.next == ("approval",), snap.next
    return snap


def _approve(snap: Any, approver: str) -> Command:
    return Command(
        resume={
            "action": "approve",
            "draft_hash": snap.values["draft"]["hash"],
            "approver": approver,
        }
    )


async def test_only_the_owner_decides_the_draft(rig: Rig) -> None:
    paused = await _paused(rig, "t-decide")
    assert paused.values["owner"] == {"tenant_id": "acme", "user_id": "alice"}
    config = _config("t-decide")

    with pytest.raises(ThreadUnavailableError, match="belongs to another user") as refused:
        await rig.graph.ainvoke(_approve(paused, "bob"), config, context=BOB, durability="sync")
    assert "decide its draft" in str(refused.value)
    after = await rig.graph.aget_state(config)
    assert after.next == ("approval",)
    [pending] = after.interrupts
    assert pending.value["draft_hash"] == paused.values["draft"]["hash"]
    assert after.values["status"] == "awaiting_approval"
    assert not after.values.get("decisions") and not after.values.get("publication")
    assert rig.notes() == []
    assert await rig.episodes(BOB, "t-decide") == []

    await rig.graph.ainvoke(_approve(paused, "alice"), config, context=ALICE, durability="sync")
    done = (await rig.graph.aget_state(config)).values
    assert done["status"] == "published", done.get("decision_error")
    assert done["publication"]["approver"] == "alice"
    assert len(rig.notes()) == 1
    assert await rig.episodes(BOB, "t-decide") == []
    kinds = sorted(e.kind for e in await rig.episodes(ALICE, "t-decide"))
    assert kinds == ["approve", "message"], kinds


async def test_another_users_message_is_refused_and_the_draft_is_kept(rig: Rig) -> None:
    paused = await _paused(rig, "t-message")
    config = _config("t-message")
    with pytest.raises(ThreadUnavailableError, match="send it a message"):
        await rig.graph.ainvoke({"query": "Analyze AAPL"}, config, context=BOB, durability="sync")
    assert await rig.episodes(BOB, "t-message") == []

    # The owner's next resume finds the refused input pending: it is dropped (not stored as
    # hers) and the same draft is asked about again; her decision then publishes it.
    await rig.graph.ainvoke(_approve(paused, "alice"), config, context=ALICE, durability="sync")
    again = await rig.graph.aget_state(config)
    assert again.next == ("approval",)
    assert again.values["draft"]["hash"] == paused.values["draft"]["hash"]
    assert again.values["query"] == "Analyze NVDA"
    assert [e.text for e in await rig.episodes(ALICE, "t-message")] == ["Analyze NVDA"]

    await rig.graph.ainvoke(_approve(paused, "alice"), config, context=ALICE, durability="sync")
    done = (await rig.graph.aget_state(config)).values
    assert done["status"] == "published"
    assert done["publication"]["draft_hash"] == paused.values["draft"]["hash"]


async def test_a_message_beside_the_pending_draft_is_answered_and_the_draft_stays(
    rig: Rig,
) -> None:
    paused = await _paused(rig, "t-aside")
    config = _config("t-aside")
    await rig.graph.ainvoke({"query": "Analyze AAPL"}, config, context=ALICE, durability="sync")
    after = await rig.graph.aget_state(config)
    values = after.values
    assert after.next == ("approval",)
    [pending] = after.interrupts
    assert pending.value["draft_hash"] == paused.values["draft"]["hash"]
    assert values["draft"] == paused.values["draft"]
    assert values["status"] == "awaiting_approval"
    assert values["query"] == "Analyze NVDA"
    assert "still awaits your decision" in values["reply"], values["reply"]
    assert "have not started" in values["reply"], values["reply"]
    assert values["messages"][-1].content == values["reply"]
    episodes = {e.text: e for e in await rig.episodes(ALICE, "t-aside")}
    assert sorted(episodes) == ["Analyze AAPL", "Analyze NVDA"]
    assert episodes["Analyze AAPL"].meta["aside"] == "awaiting_approval"

    await rig.graph.ainvoke(_approve(paused, "alice"), config, context=ALICE, durability="sync")
    done = (await rig.graph.aget_state(config)).values
    assert done["status"] == "published"
    assert done["publication"]["draft_hash"] == paused.values["draft"]["hash"]
    assert "NVDA" in done["publication"]["path"]


async def test_under_server_auth_the_token_principal_wins_over_context(rig: Rig) -> None:
    """The server puts its authenticated user in ``configurable``; a ``context`` naming bob
    changes nothing, and the approver recorded is the authenticated user."""
    alice = {"identity": "acme/alice", "tenant_id": "acme", "user_id": "alice"}
    paused = await _paused(rig, "t-auth", BOB, langgraph_auth_user=alice)
    assert paused.values["owner"] == {"tenant_id": "acme", "user_id": "alice"}
    assert await rig.episodes(BOB, "t-auth") == []
    config = _config("t-auth", langgraph_auth_user=alice)
    await rig.graph.ainvoke(_approve(paused, "bob"), config, context=BOB, durability="sync")
    done = (await rig.graph.aget_state(config)).values
    assert done["publication"]["approver"] == "alice"
    assert sorted(e.kind for e in await rig.episodes(ALICE, "t-auth")) == ["approve", "message"]


def test_an_authenticated_user_without_a_principal_is_refused() -> None:
    studio = {"identity": "langgraph-studio-user", "is_authenticated": True}
    with pytest.raises(ConfigurationError, match="without a tenant_id and a user_id"):
        run_principal(_config("t", langgraph_auth_user=studio), BOB)
    unauthenticated = {"identity": "", "is_authenticated": False}
    assert run_principal(_config("t", langgraph_auth_user=unauthenticated), BOB) == Principal(
        "acme", "bob"
    )


async def test_only_the_owner_answers_the_threads_forget_question(rig: Rig) -> None:
    config = _config("t-forget")
    await rig.graph.ainvoke(
        {"query": "My investment horizon is 5 years."}, config, context=ALICE, durability="sync"
    )
    await rig.graph.ainvoke(
        {"query": "Forget my investment horizon"}, config, context=ALICE, durability="sync"
    )
    paused = await rig.graph.aget_state(config)
    assert paused.next == ("remember",), paused.next
    [question] = paused.interrupts
    assert question.value["kind"] == "forget_confirmation" and question.value["ids"], question.value

    with pytest.raises(ThreadUnavailableError, match="answer its questions"):
        await rig.graph.ainvoke(
            Command(resume={"forget": True}), config, context=BOB, durability="sync"
        )
    after = await rig.graph.aget_state(config)
    assert after.next == ("remember",)
    assert not after.values.get("forget_confirmed")

    await rig.graph.ainvoke(
        Command(resume={"forget": True}), config, context=ALICE, durability="sync"
    )
    done = (await rig.graph.aget_state(config)).values
    assert done["forget_confirmed"] == question.value["ids"]
