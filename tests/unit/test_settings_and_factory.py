"""Settings read the environment without failing; the checkpointer factory takes a URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent.errors import ConfigurationError, UnsupportedBackendError
from agent.market import SampleDataProvider
from agent.nodes.services import Services
from agent.settings import Settings
from agent.state import Context
from graphs.builder import compile_graph
from memory.checkpoint import open_checkpointer
from memory.documents import FileMemory


def test_defaults_and_overrides() -> None:
    s = Settings.from_env({})
    assert s.data_dir == Path(".data") and s.checkpointer == "sqlite:///.data/checkpoints.sqlite"
    s = Settings.from_env({"ANALYST_DATA_DIR": "/x", "ANALYST_USER": "env-user"}, user_id="flag")
    assert s.checkpointer == "sqlite:////x/checkpoints.sqlite" and s.user_id == "flag"


def test_a_relative_sqlite_path_is_resolved_inside_the_data_folder() -> None:
    env = {
        "ANALYST_DATA_DIR": "/srv/analyst",
        "ANALYST_CHECKPOINTER": "sqlite:///hot/cp.sqlite",
        "ANALYST_FACTS": "sqlite:///ledger.sqlite",
    }
    s = Settings.from_env(env)
    assert s.checkpointer == "sqlite:////srv/analyst/hot/cp.sqlite"
    assert s.facts == "sqlite:////srv/analyst/ledger.sqlite"
    s = Settings.from_env({**env, "ANALYST_CHECKPOINTER": "sqlite:////tmp/cp.sqlite"})
    assert s.checkpointer == "sqlite:////tmp/cp.sqlite"  # absolute: as given
    pg = "postgres://u:p@h:5432/db"
    assert Settings.from_env({**env, "ANALYST_FACTS": pg}).facts == pg
    assert Settings.from_env(env, checkpointer_url="sqlite:///flag.sqlite").checkpointer == (
        "sqlite:////srv/analyst/flag.sqlite"
    )


def test_bad_step_delay_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="ANALYST_STEP_DELAY='soon' is not a number"):
        Settings.from_env({"ANALYST_STEP_DELAY": "soon"})


async def test_sqlite_url_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cp.sqlite"
    async with open_checkpointer(f"sqlite:///{path}") as saver:
        assert isinstance(saver, AsyncSqliteSaver)
    assert path.is_file()


async def test_memory_url_keeps_a_real_graphs_checkpoints_for_the_life_of_the_saver(
    tmp_path: Path,
) -> None:
    services = Services(
        market=SampleDataProvider(),
        documents=FileMemory(tmp_path / "memory"),
        artifacts_dir=tmp_path / "artifacts",
    )
    config = {"configurable": {"thread_id": "t-memory"}}
    context = Context(tenant_id="default", user_id="tester")
    async with open_checkpointer("memory://") as saver:
        assert isinstance(saver, InMemorySaver)
        graph = compile_graph(saver, services=services)
        await graph.ainvoke({"query": "quick snapshot of AAPL"}, config, context=context)
        paused = await graph.aget_state(config)
        assert paused.next == ("approval",)
        assert paused.values["status"] == "awaiting_approval"
        history = [s async for s in graph.aget_state_history(config)]
        assert len(history) > 3 and history[0].config == paused.config
    # In-process only: a new memory:// saver starts empty.
    async with open_checkpointer("memory://") as fresh:
        assert await fresh.aget_tuple(config) is None


@pytest.mark.parametrize("url", ["mysql://x", "sqlite://relative-without-third-slash", "nope"])
async def test_unknown_scheme_lists_the_supported_ones(url: str) -> None:
    with pytest.raises(UnsupportedBackendError, match="sqlite:///PATH, memory://"):
        async with open_checkpointer(url):
            pass
