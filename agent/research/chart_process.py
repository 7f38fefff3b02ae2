"""A warm chart process: matplotlib imported in a child process while the graph runs.

Importing matplotlib costs about half a second, a third of a whole offline ``analyst run``,
and drawing in a thread of the same process does not help: both hold the GIL. A command that
will draw a chart (``run``, ``resume``, ``reject``) starts one child process as it starts
(:func:`warmed`); the child imports matplotlib on the machine's other core while the parent
imports LangGraph and runs the graph, then draws each chart it is sent
(:func:`agent.research.chart.draw_chart`) and answers one line per chart.

The child is an optimisation, never a dependency: a chart it does not confirm (it failed to
start, died, answered an error, or stayed silent for :data:`REPLY_DEADLINE`) is drawn in the
calling process, whose error, if any, is the one the user sees. The child ends with the
command, stopped (it exits at the end of its input too, should its parent die first).

Whoever knows the report's ticker early (a run's request once it is validated, the executor
at the plan's first step) can :func:`prepare` its chart (:func:`prepare_prices`): the child
draws it into memory while the graph loads and the steps run, and the reporter's :func:`draw`
of the same series only writes the file. A chart prepared for nothing costs the child alone.

Protocol (text lines on the child's stdin and stdout, one answer per job, in order):
``{"series": {...ChartSeries}, "path": "..." | null}`` in (``null``: draw into memory),
``{"ok": true}`` or ``{"ok": false, "error": "..."}`` out.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a chart is drawn: the child starts before numpy loads
    from agent.market.base import MarketDataProvider, PriceHistory
    from agent.research.chart import ChartSeries

#: How long a chart may take in the child before the caller draws it itself (seconds): far
#: beyond a draw on a loaded machine (a few tenths of a second), there only so that a child
#: that hangs cannot hang the command.
REPLY_DEADLINE = 300.0


class ChartProcess:
    """One warm child that draws charts; safe to call from several threads (one at a time)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._lock = threading.Lock()
        self._alive = True
        #: Answers owed for charts prepared (sent ahead, not waited for).
        self._owed = 0
        #: What the child said that is not read as an answer yet (part of a line, or lines
        #: that came together: a prepared chart's answer and the next).
        self._unread = b""
        self.drawn = 0

    @classmethod
    def start(cls) -> ChartProcess | None:
        """A started child, or ``None`` when no process can be started here."""
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "agent.research.chart_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,  # answers are read by the line, here, under the reply deadline
            )
        except OSError:
            return None
        return cls(process)

    def prepare(self, series: ChartSeries) -> None:
        """Have the child draw ``series`` now, into its memory, without waiting: a
        :meth:`draw` of the same series later only writes the file."""
        with self._lock:
            if self._alive and self._send(series, None):
                self._owed += 1

    def draw(self, series: ChartSeries, path: Path) -> bool:
        """Whether the child drew ``series`` at ``path``."""
        with self._lock:
            if not self._alive:
                return False
            answer: Any = None
            owed = self._owed
            self._owed = 0
            if all(isinstance(self._answer(), dict) for _ in range(owed)):
                answer = self._answer() if self._send(series, path) else None
            if not isinstance(answer, dict):
                self._alive = False  # dead, silent or confused: draw here from now on
                self._stop()
                return False
            if answer.get("ok") is True:
                self.drawn += 1
                return True
            return False

    def _send(self, series: ChartSeries, path: Path | None) -> bool:
        """Send one job (``path`` ``None``: draw into memory); whether it went."""
        stdin = self._process.stdin
        assert stdin is not None
        job = {"series": asdict(series), "path": None if path is None else str(path)}
        try:
            stdin.write(json.dumps(job).encode() + b"\n")
            stdin.flush()
        except OSError:
            return False
        return True

    def _answer(self) -> Any:
        """The child's next answer (a dict), or ``None`` when it is dead, silent past
        :data:`REPLY_DEADLINE` or says something else."""
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while b"\n" not in self._unread:
                with selectors.DefaultSelector() as selector:
                    selector.register(stdout, selectors.EVENT_READ)
                    if not selector.select(REPLY_DEADLINE):
                        return None
                said = os.read(stdout.fileno(), 4096)
                if not said:
                    return None
                self._unread += said
            reply, _, self._unread = self._unread.partition(b"\n")
            return json.loads(reply)
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        """Stop the child now: every chart it drew was in place (renamed into its path)
        before it answered, and one it drew nothing for may still be importing; waiting for
        its interpreter to wind down would cost the command a sixth of a second."""
        with self._lock:
            self._alive = False
            self._stop()

    def _stop(self) -> None:
        self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            with suppress(OSError):
                if stream is not None:
                    stream.close()


#: This process's warm chart process, while a command that draws charts runs.
_warm: ChartProcess | None = None


@contextmanager
def warmed() -> Iterator[None]:
    """A warm chart process for the block (nested blocks share the outer one's)."""
    global _warm
    if _warm is not None:
        yield
        return
    _warm = ChartProcess.start()
    try:
        yield
    finally:
        process, _warm = _warm, None
        if process is not None:
            process.close()


def prepare(series: ChartSeries) -> None:
    """Let the warm chart process draw ``series`` ahead of the :func:`draw` that will ask for
    it (a node that knows the report's ticker before the reporter does); nothing without one."""
    process = _warm
    if process is not None:
        process.prepare(series)


def prepare_prices(market: MarketDataProvider, ticker: str) -> None:
    """:func:`prepare` the chart of ``ticker``'s prices in ``market`` (a report's chart, as
    soon as a run knows its ticker); nothing without a warm chart process, or when the prices
    cannot be read (the run's steps say what is wrong)."""
    if _warm is None:
        return
    from agent.research.chart import chart_series

    try:
        history = market.history(ticker)
    except Exception:
        return
    prepare(chart_series(history))


def render(h: PriceHistory, path: Path) -> Path:
    """Write the chart of ``h`` (:func:`agent.research.chart.chart_series`) at ``path``: by
    the warm chart process when there is one and it draws it, else here."""
    from agent.research.chart import chart_series

    return draw(chart_series(h), Path(path))


def draw(series: ChartSeries, path: Path) -> Path:
    """Draw ``series`` at ``path``: in the warm chart process when there is one and it draws
    it, else here."""
    from agent.research.chart import draw_chart

    process = _warm
    if process is None or not process.draw(series, path):
        draw_chart(series, path)
    return path


def main() -> int:
    """The child: import matplotlib at once, then draw each chart sent on stdin."""
    import gc

    # The warm-up builds the long-lived heap every chart reuses, and no garbage worth a
    # collection: collect from the first chart on, never walking that heap again.
    gc.disable()
    import matplotlib.backends.backend_agg  # the warm-up: imported before any chart is asked
    import matplotlib.figure  # noqa: F401

    from agent.research.chart import ChartSeries, chart_png, write_chart

    # A first, throwaway chart loads the fonts and the date machinery before any is asked.
    chart_png(
        ChartSeries("warm-up", ("2026-01-02", "2026-01-05"), (1.0, 2.0), (None, 1.5), (None, None))
    )
    gc.freeze()
    gc.enable()
    drawn: dict[str, bytes] = {}  # prepared charts, by their series
    for line in sys.stdin:
        try:
            job = json.loads(line)
            key = json.dumps(job["series"], sort_keys=True)
            fields: dict[str, Any] = {
                k: tuple(v) if isinstance(v, list) else v for k, v in job["series"].items()
            }
            png = drawn.get(key) or chart_png(ChartSeries(**fields))
            if job["path"] is None:
                drawn[key] = png
            else:
                write_chart(png, Path(job["path"]))
            answer: dict[str, object] = {"ok": True}
        except Exception as e:
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
