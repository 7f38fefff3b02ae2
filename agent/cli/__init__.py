"""``analyst``: the command line. A thin layer: parse, call :class:`~agent.app.AnalystApp`, render.

- ``app``: the root Typer app (run, resume, approve, reject, edit, show, history, chat) and the
  registration of the command groups below
- ``threads``, ``facts``, ``memory`` (a package: learning, items, lifecycle), ``notes``,
  ``db``: one command group each; ``memories``: the hidden old spelling of part of ``memory``
- ``chat``: the REPL; ``render``: Rich output of threads, progress and tables; ``terminal``:
  stored and typed text shown escaped, never obeyed (control characters, Rich markup)
- ``heap``: the garbage collector held off while a command starts, its heap frozen after
- ``common``: options, the consoles, the app session, and the one mapping from failures to
  exit codes (:func:`agent.cli.common.run`)

Importing this package imports only typer and the standard library (``analyst --help`` stays
fast, and must not import LangGraph); heavy modules load inside the commands that use them.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """The ``analyst`` console script."""
    import agent.cli.heap as heap

    heap.hold()
    try:
        from agent.cli.common import install_signal_handlers, keep_files_private, run

        install_signal_handlers()
        keep_files_private()
        from agent.cli.app import app

        run(app)
    finally:
        heap.freeze_for_exit()
