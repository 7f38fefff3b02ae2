"""The graph LangGraph Studio and ``langgraph dev`` load (see ``langgraph.json``).

``graph`` is a graph factory: the server calls it for every run and for every read of the
graph's structure, and supplies its own checkpointer and store. Importing this module reads
no setting and opens nothing, so a bad setting can never stop the server from loading it.

- A run (``threads.create_run``) gets the same tiers as a CLI run: the server's store as
  ``runtime.store`` (cold memory), the fact ledger at ``ANALYST_FACTS`` (opened for the run,
  through :func:`agent.nodes.services.open_ledger`, the CLI's own path), and the Markdown document
  memory at ``ANALYST_MEMORY_DIR`` (conventions, research notes). A setting that cannot be
  used fails the run with its own clear error.
- Reading the structure (schemas, drawing, state) builds the same graph without opening the
  ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime


@asynccontextmanager
async def graph(runtime: ServerRuntime) -> AsyncIterator[Any]:
    from agent.nodes.services import Services, open_ledger
    from agent.settings import Settings
    from graphs.builder import GRAPH_NAME, build_graph

    def configure() -> tuple[Settings, Services]:
        settings = Settings.from_env()
        return settings, Services.from_settings(settings)

    # Off the event loop: building services touches files, which the server refuses there.
    settings, services = await asyncio.to_thread(configure)
    if runtime.execution_runtime is None:
        yield build_graph(services).compile(name=GRAPH_NAME)
        return
    async with open_ledger(services, settings, server=True) as wired:
        yield build_graph(wired).compile(name=GRAPH_NAME)
