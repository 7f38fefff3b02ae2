"""The cyclic garbage collector while a command starts: held off, then the heap frozen.

Starting a command builds a heap of long-lived objects (LangGraph's, LangChain's and pydantic's
modules and models, the project's own: about 130,000 objects for a whole ``analyst run``) and
almost no garbage. At its default thresholds CPython's collector walks that growing heap all
along (some 360 collections for a run, two of them full ones) and once more as the
interpreter exits, and finds next to nothing. Reference counting, which frees nearly
everything, is untouched.

- :func:`hold` (first thing in :func:`agent.cli.main`) raises the youngest generation's
  threshold to :data:`START_UP_OBJECTS` new objects: a command's start-up stays below it, and
  a command that goes on allocating still collects (a bound, not an off switch);
- :func:`settle` (after the command's first call into the application, or when a server
  starts serving) freezes the heap built so far (:func:`gc.freeze`: later collections never
  walk it) and restores the thresholds :func:`hold` found, for whatever the process does next
  (a chat's later turns);
- :func:`freeze_for_exit` (as the command returns) freezes the rest, so the interpreter's last
  collection walks nothing: by then the command has closed what it opened.
"""

from __future__ import annotations

import gc

__all__ = ["START_UP_OBJECTS", "freeze_for_exit", "hold", "settle"]

#: The youngest generation's threshold while a command starts: net new objects tracked by the
#: collector before it runs (a whole offline run adds about 230,000, freed ones not counted).
START_UP_OBJECTS = 500_000

#: The thresholds :func:`hold` replaced, while it holds.
_held: tuple[int, ...] | None = None


def hold() -> None:
    """Hold the collector off while the command starts (until :func:`settle`)."""
    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(START_UP_OBJECTS, *_held[1:])


def settle() -> None:
    """Start-up is over: freeze what it built and collect as usual from here (once)."""
    global _held
    if _held is not None:
        gc.freeze()
        gc.set_threshold(*_held)
        _held = None


def freeze_for_exit() -> None:
    """The command is over: the interpreter's last collection need not walk its heap."""
    gc.freeze()
