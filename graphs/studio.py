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
- After a run, what was said is learned from as after a CLI run (:func:`learn_after_run`):
  a finished request ends its session (its extraction is queued), and the due extraction
  jobs of the run's principal run now unless ``ANALYST_EXTRACT_INLINE=0`` leaves them to
  ``analyst memory worker``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from langgraph.constants import CONFIG_KEY_CHECKPOINTER

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel
    from langgraph.store.base import BaseStore
    from langgraph_sdk.runtime import ServerRuntime

    from agent.nodes.services import Services
    from agent.settings import Settings

log = logging.getLogger(__name__)


@asynccontextmanager
async def graph(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    from agent.nodes.services import Services, open_ledger
    from agent.settings import Settings
    from graphs.builder import GRAPH_NAME, build_graph

    def configure() -> tuple[Settings, Services]:
        # As the CLI does (agent.cli.common.keep_files_private): whatever the server's
        # libraries create for the analyst (Qdrant's shard files, SQLite side files, charts)
        # is private to the user. The tiers also set their own modes (memory.config).
        os.umask(0o077)
        settings = Settings.from_env()
        return settings, Services.from_settings(settings)

    # Off the event loop: building services touches files, which the server refuses there.
    settings, services = await asyncio.to_thread(configure)
    if runtime.execution_runtime is None:
        yield build_graph(services).compile(name=GRAPH_NAME)
        return
    execution = runtime.execution_runtime
    async with open_ledger(services, settings, server=True) as wired:
        compiled = build_graph(wired).compile(name=GRAPH_NAME)
        yield compiled
        # Reached only when the run ended without an error (a refused caller learns nothing).
        await learn_after_run(compiled, config, execution.context, wired, settings, runtime.store)


async def learn_after_run(
    compiled: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    context: Any,
    services: Services,
    settings: Settings,
    store: BaseStore | None,
) -> None:
    """Do what the CLI does after a run (``AnalystApp._after_run``): end the session of a
    finished request (queue its session-end extraction), then run the due extraction jobs of
    the run's principal (the decision a run took queued one too) unless extraction is left to
    a worker. A failing job stays queued, retried by ``analyst memory worker``; the run's
    outcome stands."""
    from agent.errors import AnalystError
    from agent.learning.learner import build_learner
    from agent.nodes.base import run_principal, thread_id
    from agent.records import FINISHED, Context

    if isinstance(context, Mapping):  # the request's context as sent, on some servers
        fields = {f.name for f in dataclasses.fields(Context)}
        context = Context(**{k: v for k, v in context.items() if k in fields})
    who = run_principal(config, context)
    learner = build_learner(services, who, store)
    thread = thread_id(config)
    checkpointer = config.get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER)
    if learner is None or checkpointer is None:
        return
    reader = compiled.copy(update={"checkpointer": checkpointer})
    snapshot = await reader.aget_state({"configurable": {"thread_id": thread}})
    try:
        if (snapshot.values or {}).get("status") in FINISHED:
            await learner.end_session(thread)
        if settings.extract_inline:
            await learner.drain()
    except AnalystError as error:
        log.warning(
            "Memory extraction after the run on thread %s did not complete: %s The job stays "
            "queued; analyst memory worker retries it.",
            thread,
            error,
        )
