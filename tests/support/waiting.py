"""Waiting in tests on a condition with a generous deadline, never for a fixed time.

A fixed pause is too short on a loaded machine, and a "still waiting after 0.3 s" check proves
nothing when the waiter was not even scheduled yet. :func:`wait_until` polls a condition;
:func:`blocked_at` is the condition "this thread is waiting inside that call".
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def wait_until(
    condition: Callable[[], bool], what: str, timeout: float = 60.0, interval: float = 0.01
) -> None:
    """Return once ``condition()`` holds, asking it every ``interval`` seconds (longer for a
    condition that costs work of its own); fail after ``timeout`` seconds, naming ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:.0f} s"
        time.sleep(interval)


async def until(
    condition: Callable[[], bool], what: str, timeout: float = 60.0, interval: float = 0.01
) -> None:
    """:func:`wait_until` inside an event loop: the loop runs between the polls, so what the
    condition waits for (a task on the same loop) can happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:.0f} s"
        await asyncio.sleep(interval)


def blocked_at(thread: threading.Thread, function: Callable[..., Any], line: str) -> bool:
    """Whether ``thread`` is running ``function`` at a source line containing ``line`` (the
    call made on that line has not returned: the thread waits inside it)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        here = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        if frame.f_code is function.__code__ and line in here:
            return True
        frame = frame.f_back
    return False
