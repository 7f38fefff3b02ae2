"""The warm chart process: it draws the very chart the caller would, and the caller draws
it itself whenever the child cannot (never started, killed, refusing), with the caller's own
error; the child never outlives the command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agent.research.chart_process as chart_process
from agent.market import SampleDataProvider
from agent.research.chart import chart_series, draw_chart


def series(ticker: str = "NVDA"):  # type: ignore[no-untyped-def]
    return chart_series(SampleDataProvider().history(ticker))


def test_the_child_draws_the_chart_the_caller_would(tmp_path: Path) -> None:
    here = draw_chart(series(), tmp_path / "here.png")
    with chart_process.warmed():
        warm = chart_process._warm
        assert warm is not None
        there = chart_process.render(SampleDataProvider().history("NVDA"), tmp_path / "there.png")
        again = chart_process.render(SampleDataProvider().history("NVDA"), tmp_path / "again.png")
        assert warm.drawn == 2  # both by the child, not here
        child = warm._process
    assert there.read_bytes() == here.read_bytes() == again.read_bytes()
    assert child.returncode is not None  # it ended with the block
    assert chart_process._warm is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.png", "here.png", "there.png"]


def test_a_child_that_drew_nothing_is_stopped_with_the_command() -> None:
    with chart_process.warmed():
        warm = chart_process._warm
        assert warm is not None
        child = warm._process
    assert child.returncode is not None
    assert warm.drawn == 0


def test_a_dead_child_means_the_caller_draws(tmp_path: Path) -> None:
    with chart_process.warmed():
        warm = chart_process._warm
        assert warm is not None
        warm._process.kill()
        warm._process.wait()
        path = chart_process.render(SampleDataProvider().history("AAPL"), tmp_path / "a.png")
        assert warm.drawn == 0
    assert path.read_bytes() == draw_chart(series("AAPL"), tmp_path / "b.png").read_bytes()


def test_a_chart_the_child_cannot_write_is_the_callers_own_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with chart_process.warmed(), pytest.raises(OSError) as raised:
        chart_process.render(SampleDataProvider().history("NVDA"), blocked / "chart.png")
    assert raised.value.filename is not None and "file" in str(raised.value.filename)
    assert blocked.read_text() == "not a folder"


def test_nested_blocks_share_one_child() -> None:
    with chart_process.warmed():
        outer = chart_process._warm
        with chart_process.warmed():
            assert chart_process._warm is outer
        assert chart_process._warm is outer
    assert chart_process._warm is None


def test_no_child_can_be_started_means_the_caller_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chart_process.sys, "executable", os.fspath(tmp_path / "no-python"))
    with chart_process.warmed():
        assert chart_process._warm is None
        path = chart_process.render(SampleDataProvider().history("NVDA"), tmp_path / "c.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_a_prepared_chart_is_the_one_drawn_and_preparing_never_waits(tmp_path: Path) -> None:
    chart_process.prepare(series())  # no warm process: nothing happens
    with chart_process.warmed():
        warm = chart_process._warm
        assert warm is not None
        chart_process.prepare(series("AAPL"))  # returns at once; the answer is owed
        chart_process.prepare(series("NVDA"))
        assert warm._owed == 2 and warm.drawn == 0
        drawn = chart_process.render(SampleDataProvider().history("NVDA"), tmp_path / "n.png")
        assert warm._owed == 0 and warm.drawn == 1
    assert drawn.read_bytes() == draw_chart(series("NVDA"), tmp_path / "here.png").read_bytes()


def test_prices_are_prepared_for_a_warm_process_only_and_unreadable_ones_never_raise() -> None:
    market = SampleDataProvider()
    chart_process.prepare_prices(market, "NVDA")  # no warm process: nothing happens
    with chart_process.warmed():
        warm = chart_process._warm
        assert warm is not None
        chart_process.prepare_prices(market, "ZZZZ")  # no such prices: the steps say so
        assert warm._owed == 0
        chart_process.prepare_prices(market, "NVDA")
        assert warm._owed == 1


def test_answers_that_come_together_are_each_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two answers in one write (a prepared chart's and the next): the second is not left
    behind while the reply deadline runs out."""
    monkeypatch.setattr(chart_process, "REPLY_DEADLINE", 30.0)
    said = '{"ok": true}\n{"ok": false}\n'
    both = f"import sys; sys.stdout.write({said!r}); sys.stdout.flush(); sys.stdin.read()"
    child = subprocess.Popen(
        [sys.executable, "-c", both], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    process = chart_process.ChartProcess(child)
    try:
        assert process._answer() == {"ok": True}
        assert process._answer() == {"ok": False}
    finally:
        process.close()
