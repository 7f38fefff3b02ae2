"""Settings read the environment without failing; the checkpointer factory takes a URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent.errors import ConfigurationError, UnsupportedBackendError
from agent.settings import Settings
from memory.checkpoint import open_checkpointer


def test_defaults_and_overrides() -> None:
    s = Settings.from_env({})
    assert s.data_dir == Path(".data") and s.checkpointer == "sqlite:///.data/checkpoints.sqlite"
    s = Settings.from_env({"ANALYST_DATA_DIR": "/x", "ANALYST_USER": "env-user"}, user_id="flag")
    assert s.checkpointer == "sqlite:////x/checkpoints.sqlite" and s.user_id == "flag"


def test_bad_step_delay_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="ANALYST_STEP_DELAY='soon' is not a number"):
        Settings.from_env({"ANALYST_STEP_DELAY": "soon"})


async def test_sqlite_url_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cp.sqlite"
    async with open_checkpointer(f"sqlite:///{path}") as saver:
        assert isinstance(saver, AsyncSqliteSaver)
    assert path.is_file()


async def test_memory_url() -> None:
    async with open_checkpointer("memory://") as saver:
        assert isinstance(saver, InMemorySaver)


@pytest.mark.parametrize("url", ["mysql://x", "sqlite://relative-without-third-slash", "nope"])
async def test_unknown_scheme_lists_the_supported_ones(url: str) -> None:
    with pytest.raises(UnsupportedBackendError, match="sqlite:///PATH, memory://"):
        async with open_checkpointer(url):
            pass
