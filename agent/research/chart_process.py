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
command: its input is closed (it exits at end of input), and a child that drew nothing is
stopped, since it may still be importing.

Protocol (text lines on the child's stdin and stdout): ``{"series": {...ChartSeries},
"path": "..."}`` in, ``{"ok": true}`` or ``{"ok": false, "error": "..."}`` out.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a chart is drawn: the child starts before numpy loads
    from agent.research.chart import ChartSeries

#: How long a chart may take in the child before the caller draws it itself (seconds): far
#: beyond a draw on a loaded machine (a few tenths of a second), there only so that a child
#: that hangs cannot hang the command.
REPLY_DEADLINE = 300.0


class ChartProcess:
    """One warm child that draws charts; safe to call from several threads (one at a time)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        self._lock = threading.Lock()
        self._alive = True
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
                text=True,
                bufsize=1,
            )
        except OSError:
            return None
        return cls(process)

    def draw(self, series: ChartSeries, path: Path) -> bool:
        """Whether the child drew ``series`` at ``path``."""
        with self._lock:
            if not self._alive:
                return False
            stdin, stdout = self._process.stdin, self._process.stdout
            assert stdin is not None and stdout is not None
            try:
                stdin.write(json.dumps({"series": asdict(series), "path": str(path)}) + "\n")
                stdin.flush()
                with selectors.DefaultSelector() as selector:
                    selector.register(stdout, selectors.EVENT_READ)
                    reply = stdout.readline() if selector.select(REPLY_DEADLINE) else ""
                answer = json.loads(reply) if reply else None
            except (OSError, ValueError):
                answer = None
            if not isinstance(answer, dict):
                self._alive = False  # dead, silent or confused: draw here from now on
                self._stop()
                return False
            if answer.get("ok") is True:
                self.drawn += 1
                return True
            return False

    def close(self) -> None:
        """End the child: at end of input once it drew something, else stopped now."""
        with self._lock:
            self._alive = False
            if self.drawn:
                with suppress(OSError):
                    assert self._process.stdin is not None
                    self._process.stdin.close()
                try:
                    self._process.wait(timeout=REPLY_DEADLINE)
                except subprocess.TimeoutExpired:
                    self._stop()
            else:
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
    import matplotlib.backends.backend_agg  # the warm-up: imported before any chart is asked
    import matplotlib.figure  # noqa: F401

    from agent.research.chart import ChartSeries, draw_chart

    for line in sys.stdin:
        try:
            job = json.loads(line)
            fields = {k: tuple(v) if isinstance(v, list) else v for k, v in job["series"].items()}
            draw_chart(ChartSeries(**fields), Path(job["path"]))
            answer: dict[str, object] = {"ok": True}
        except Exception as e:
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
