"""LangMem on the project's stores: its memory tools and its store manager in real graphs.

LangMem (``langmem``) keeps memories in whatever LangGraph ``BaseStore`` the graph is compiled
with. Here that store is the principal's scoped view (:func:`memory.store.scoped.scoped`) of
the default Qdrant Edge store and of the Postgres+pgvector store, each opened as the
application opens it (``tests/support/store_backends``); the model is the real ``ChatOpenAI``
client talking HTTP to the scripted fake server (``tests/support/fake_openai``). Checked: what
the manage tool and the store manager store, LangMem's search tool finds, in another thread of
the same principal and never for another principal; the scoped view puts it under the
principal's root, whatever namespace LangMem is given. docs/langmem.md is the user's guide.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.base import BaseStore
from langmem import (
    create_manage_memory_tool,
    create_memory_store_manager,
    create_search_memory_tool,
)
from pydantic import SecretStr

from memory.identity import Principal
from memory.recall import arecall
from memory.store.scoped import principal_namespace, scoped
from tests.support.fake_openai import FakeOpenAI, Reply, text, tool_calls
from tests.support.model_script import tool_results
from tests.support.pgvector_server import pgvector_server
from tests.support.store_backends import Storage, opener, storage_for

pytestmark = [pytest.mark.integration]

ANN = Principal("default", "ann")
BOB = Principal("default", "bob")
#: Where LangMem keeps its memories, relative to the principal's root (the scoped view).
LANGMEM = ("langmem",)
FACT = "Ann prefers conservative dividend stocks and hates drawdowns"


@pytest.fixture(scope="module")
def pgvector_admin() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture(params=["edge", "postgres"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """The backend's storage (Qdrant Edge, the default; Postgres+pgvector)."""
    with storage_for(
        request.param, tmp_path, lambda: request.getfixturevalue("pgvector_admin")
    ) as where:
        yield where


@asynccontextmanager
async def opened(storage: Storage) -> AsyncIterator[BaseStore]:
    async with opener(storage)() as store:
        yield store


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI().running() as fake:
        yield fake
    assert fake.errors == []


def chat_model(server: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-model", base_url=server.base_url, api_key=SecretStr("test"), max_retries=0
    )


def agent(model: ChatOpenAI, tools: Sequence[BaseTool], store: BaseStore) -> CompiledStateGraph:
    """A tool-calling agent (model node, ToolNode, loop until the model answers) whose runtime
    store is ``store``: LangMem's tools find it through ``get_store()``."""
    bound = model.bind_tools(list(tools))

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", call_model)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(store=store)


def memory_tools(namespace: tuple[str, ...]) -> list[BaseTool]:
    return [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]


async def ask(graph: CompiledStateGraph, question: str) -> None:
    await graph.ainvoke({"messages": [("user", question)]})


def found_by_search(server: FakeOpenAI) -> list[dict[str, Any]]:
    """What LangMem's search tool answered, as the model was sent it in the latest request."""
    results = [r for r in tool_results(server.chat_requests()[-1]) if r[0] == "search_memory"]
    assert results, "the search tool was not called"
    return list(json.loads(results[-1][2]))


async def search_turn(graph: CompiledStateGraph, server: FakeOpenAI, query: str) -> list[Any]:
    server.script(tool_calls(("search_memory", {"query": query})), text("Here is what I know."))
    await ask(graph, "What do I like to invest in?")
    return found_by_search(server)


async def test_memory_tools_store_and_find_for_the_same_principal_only(
    storage: Storage, server: FakeOpenAI
) -> None:
    async with opened(storage) as store:
        tools = memory_tools(LANGMEM)
        ann = agent(chat_model(server), tools, scoped(store, ANN))
        server.script(
            tool_calls(("manage_memory", {"content": FACT, "action": "create"})), text("Noted.")
        )
        await ask(ann, "Remember: I prefer conservative dividend stocks and hate drawdowns.")
        [(_, _, created)] = tool_results(server.chat_requests()[-1])
        key = created.removeprefix("created memory ")

        # The scoped view put it under Ann's root, whatever namespace LangMem was given.
        raw = await store.aget((*principal_namespace(ANN), *LANGMEM), key)
        assert raw is not None and raw.value == {"content": FACT}

        # A later conversation of Ann finds it through LangMem's search tool.
        hits = await search_turn(ann, server, "dividend stocks drawdowns")
        assert [(h["key"], h["value"]) for h in hits] == [(key, {"content": FACT})]
        assert hits[0]["namespace"] == list(LANGMEM)

        # Bob's agent, same tools and namespace, finds nothing of Ann's.
        bob = agent(chat_model(server), tools, scoped(store, BOB))
        assert await search_turn(bob, server, "dividend stocks drawdowns") == []

        # The update and delete actions act on the same item.
        update = {"content": FACT + " (since 2020)", "action": "update", "id": key}
        server.script(tool_calls(("manage_memory", update)), text("Updated."))
        await ask(ann, "Actually, since 2020.")
        item = await scoped(store, ANN).aget(LANGMEM, key)
        assert item is not None and item.value == {"content": FACT + " (since 2020)"}
        delete = {"action": "delete", "id": key}
        server.script(tool_calls(("manage_memory", delete)), text("Forgotten."))
        await ask(ann, "Forget that.")
        assert await scoped(store, ANN).aget(LANGMEM, key) is None


def extract_memory(request: dict[str, Any]) -> Reply:
    """The model behind LangMem's store manager: one ``Memory`` extracted from the talk."""
    assert [t["function"]["name"] for t in request.get("tools") or []] == ["Memory"]
    return tool_calls(("Memory", {"content": FACT}))


async def test_store_manager_extracts_into_the_store_and_search_finds_it(
    storage: Storage, server: FakeOpenAI
) -> None:
    async with opened(storage) as store:
        manager = create_memory_store_manager(chat_model(server), namespace=LANGMEM)

        async def remember(state: MessagesState) -> dict[str, Any]:
            await manager.ainvoke({"messages": state["messages"]})
            return {}

        builder = StateGraph(MessagesState)
        builder.add_node("remember", remember)
        builder.add_edge(START, "remember")
        background = builder.compile(store=scoped(store, ANN))
        server.respond_with(extract_memory)
        await ask(background, "I prefer conservative dividend stocks and I hate drawdowns.")
        server.respond_with(None)

        [item] = await scoped(store, ANN).asearch(LANGMEM)
        assert item.value == {"kind": "Memory", "content": {"content": FACT}}
        ann = agent(chat_model(server), memory_tools(LANGMEM), scoped(store, ANN))
        hits = await search_turn(ann, server, "dividend stocks drawdowns")
        assert [h["key"] for h in hits] == [item.key]
        assert await scoped(store, BOB).asearch(LANGMEM) == []


async def test_langmem_memories_in_the_memories_namespace_reach_the_project_recall(
    storage: Storage, server: FakeOpenAI
) -> None:
    namespace = ("memories", "langmem")
    async with opened(storage) as store:
        ann = agent(chat_model(server), memory_tools(namespace), scoped(store, ANN))
        server.script(
            tool_calls(("manage_memory", {"content": FACT, "action": "create"})), text("Noted.")
        )
        await ask(ann, "Remember: I prefer conservative dividend stocks and hate drawdowns.")
        hits = await search_turn(ann, server, "dividend stocks drawdowns")
        assert [h["value"] for h in hits] == [{"content": FACT}]
        recalled = await arecall(store, ANN, "dividend stocks drawdowns")
        assert [r.text for r in recalled] == [FACT]
        assert await arecall(store, BOB, "dividend stocks drawdowns") == []
