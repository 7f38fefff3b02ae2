"""A full disk is one clear error naming the folder and the space needed, never a SIGBUS.

Real full disks: a 2 MB tmpfs mounted over the test's data folder (the test runs as root
here; where ``mount`` is not permitted the tests skip with mount's own message). Qdrant
Edge writes through sparse memory-mapped 32 MiB files, so on this folder the first
``analyst run`` used to die of SIGBUS (exit 135, no message).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Analyst
from tests.support.mounts import tmpfs

pytestmark = [pytest.mark.integration]


@pytest.fixture
def small_disk(analyst: Analyst, tmp_path: Path) -> Iterator[Analyst]:
    """The analyst over a data folder on a 2 MB tmpfs (and its memory folder beside it)."""
    with tmpfs(tmp_path / "disk", "2m") as disk:
        env = {
            **analyst.env,
            "ANALYST_DATA_DIR": str(disk / "data"),
            "ANALYST_MEMORY_DIR": str(disk / "memory"),
        }
        yield dataclasses.replace(
            analyst, env=env, data_dir=disk / "data", memory_dir=disk / "memory"
        )


def test_a_run_on_a_full_disk_is_one_error_naming_the_folder_and_space_needed(
    small_disk: Analyst,
) -> None:
    run = small_disk("run", "Analyze NVDA", "--thread", "t-full")
    # Exit 1 (a storage fault), not 135 (SIGBUS): one ``error:`` line, no traceback.
    assert run.code == 1 and run.refused, str(run)
    [line] = [x for x in run.err.splitlines() if x.startswith("error: ")]
    shard = small_disk.data_dir / "qdrant-edge"
    assert str(shard) in line and "no space left" in line, line
    assert " free and " in line and " need " in line and "MB" in line, line
    # Nothing half-written: the shard was never created, every file written is intact.
    assert not (shard / "segments").exists()
    checks = small_disk.json("db", "check")
    assert all(c["status"] in ("ok", "missing") for c in checks), checks


def test_db_check_says_full_not_damaged_when_the_disk_is_full(small_disk: Analyst) -> None:
    assert small_disk("facts", "record", "me", "horizon", '"long-term"').code == 0
    filler = small_disk.data_dir.parent / "filler"
    with filler.open("wb") as out:  # fill the disk to its last byte
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    check = small_disk("db", "check")
    assert check.code == 1 and "Traceback" not in check.err, str(check)
    statuses = [line.split()[0] for line in check.out.splitlines() if not line[0].isspace()]
    assert "damaged" not in statuses and "full" in statuses, str(check)
    assert "No file is damaged, but the disk is full" in check.err
    assert "restore-snapshot" not in check.err
    filler.unlink()
    assert small_disk("db", "check").code == 0
    assert "long-term" in small_disk("facts", "current", "me", "horizon").out


def test_a_memory_write_on_a_disk_filled_later_is_one_error_and_keeps_the_shard(
    analyst: Analyst, tmp_path: Path
) -> None:
    """A shard made while there was room, then the disk filled (``fallocate``) to a few MB:
    the next memory write is refused before any mapped page is touched, and what the shard
    held is still there once space is freed."""
    with tmpfs(tmp_path / "disk", "512m") as disk:
        env = {**analyst.env, "ANALYST_DATA_DIR": str(disk / "data")}
        env["ANALYST_MEMORY_DIR"] = str(disk / "memory")
        cli = dataclasses.replace(analyst, env=env, data_dir=disk / "data")
        assert cli("memory", "add", "I prefer long-term holdings").code == 0
        free = shutil.disk_usage(disk).free
        filler = disk / "filler"
        subprocess.run(["fallocate", "-l", str(free - (4 << 20)), str(filler)], check=True)

        refused = cli("memory", "add", "Another memory")
        assert refused.code == 1 and refused.refused, str(refused)
        line = refused.err.splitlines()[-1]
        assert str(disk / "data" / "qdrant-edge") in line and "no space left" in line, line
        filler.unlink()
        assert "long-term holdings" in cli("memory", "list").out
        assert cli("memory", "add", "Another memory").code == 0
