"""Checkpointer faults end in clear errors, and a thread survives its server going away.

A private Postgres server (``throwaway_postgres``) is stopped in the middle of a real CLI
run and started again; the machine's shared servers are never touched. The machine's plain
Redis (no RedisJSON / RediSearch) stands in for a misconfigured Redis.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.errors import (
    CheckpointerModulesMissingError,
    CheckpointerUnavailableError,
    UnsupportedBackendError,
)
from memory.checkpoint import open_checkpointer
from tests.support.servers import PLAIN_REDIS_URL, _free_port, throwaway_postgres

pytestmark = [pytest.mark.integration]

EXE = Path(sys.executable).with_name("analyst")
PASSWORD = "s3cret-pw"


def cli_env(url: str, **more: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANALYST_CHECKPOINTER=url, PYTHONUNBUFFERED="1", NO_COLOR="1", COLUMNS="200", TERM="dumb"
    )
    env.update(more)
    return env


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_postgres_stopped_mid_run_is_a_clear_error_and_the_thread_resumes() -> None:
    with throwaway_postgres() as server:
        url = server.url(password=PASSWORD) + "?pool_timeout=3"
        masked = f"postgresql://postgres:***@127.0.0.1:{server.port}/postgres"
        env = cli_env(url, ANALYST_STEP_DELAY="1.0")
        proc = subprocess.Popen(
            [str(EXE), "run", "Analyze NVDA", "--thread", "t-outage"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in proc.stdout:
            if "executor" in line and "step 1" in line:
                break
            assert time.monotonic() < deadline
        else:
            raise AssertionError(f"no executor step: {proc.communicate()}")
        server.stop()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, (out, err)
        [error] = [line for line in err.splitlines() if line.startswith("error:")]
        assert masked in error and "Traceback" not in err, err
        assert "psycopg" not in err, err
        assert PASSWORD not in err + out
        assert "analyst resume" in error

        server.start()
        resumed = cli("resume", "t-outage", "--json", env=cli_env(url))
        assert resumed.returncode == 0, resumed.stderr
        view = json.loads(resumed.stdout)
        assert view["status"] == "awaiting_approval" and len(view["plan"]) == 5
        history = json.loads(cli("history", "t-outage", "--json", env=cli_env(url)).stdout)
        ran = [node for checkpoint in history for node in checkpoint["ran"]]
        # Continued, not restarted: routing and planning happened once.
        assert ran.count("router") == 1 and ran.count("planner") == 1
        assert ran.count("executor") == 5


async def test_unreachable_servers_name_the_url() -> None:
    port = _free_port()
    for url, shown in (
        (f"postgres://analyst:{PASSWORD}@127.0.0.1:{port}/db", f"analyst:***@127.0.0.1:{port}"),
        (f"redis://:{PASSWORD}@127.0.0.1:{port}/0", f"redis://:***@127.0.0.1:{port}/0"),
    ):
        with pytest.raises(CheckpointerUnavailableError) as caught:
            async with open_checkpointer(url):
                pass
        assert shown in str(caught.value) and PASSWORD not in str(caught.value)


async def test_redis_without_modules_says_what_is_missing() -> None:
    with pytest.raises(CheckpointerModulesMissingError) as caught:
        async with open_checkpointer(PLAIN_REDIS_URL):
            pass
    message = str(caught.value)
    assert PLAIN_REDIS_URL in message
    assert "RedisJSON" in message and "RediSearch" in message and "Redis Stack" in message


def test_cli_reports_missing_modules_and_unknown_schemes(tmp_path: Path) -> None:
    env = cli_env("sqlite:///unused")
    modules = cli("run", "Analyze NVDA", "--checkpointer", PLAIN_REDIS_URL, env=env)
    assert modules.returncode == 2, modules.stderr
    assert "lacks RedisJSON (ReJSON) and RediSearch (search)" in modules.stderr

    scheme = cli("run", "Analyze NVDA", env=cli_env(f"mysql://root:{PASSWORD}@127.0.0.1/analyst"))
    assert scheme.returncode == 2
    assert "Unsupported checkpointer URL 'mysql://root:***@127.0.0.1/analyst'" in scheme.stderr
    for listed in ("sqlite:///PATH", "memory://", "postgres://", "redis://", "redis+shallow://"):
        assert listed in scheme.stderr
    assert PASSWORD not in scheme.stderr and "Traceback" not in scheme.stderr


async def test_unknown_scheme_in_process() -> None:
    with pytest.raises(UnsupportedBackendError, match="redis\\+shallow://"):
        async with open_checkpointer("cassandra://h/ks"):
            pass


async def test_processes_setting_up_a_new_redis_prefix_at_once_all_succeed() -> None:
    """Several first uses of a new prefix at the same time (CLI processes started together):
    an index another one created between redisvl's check and its create is no error."""
    import asyncio

    from tests.support.servers import fresh_redis_prefix, redis_checkpointer_url

    async def first_use(url: str) -> None:
        async with open_checkpointer(url):
            pass

    with fresh_redis_prefix() as token:
        url = redis_checkpointer_url(token)
        await asyncio.gather(*(first_use(url) for _ in range(6)))
