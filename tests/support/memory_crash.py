"""A process that dies by SIGKILL at a chosen point of the memory write path (crash tests).

Run as a script with a test's environment (``ANALYST_DATA_DIR``, ``ANALYST_FACTS``, ...); it
acts for the environment's principal through :class:`~agent.app.AnalystApp`, as a CLI
process would, and kills itself with ``SIGKILL`` (no cleanup, no exit handlers, the app left
open) at the point named:

``decide THREAD``
    Approve the draft awaiting approval on ``THREAD`` with extraction left to a worker
    (``ANALYST_EXTRACT_INLINE=0`` is required), print the view's status, then die: the
    approval is recorded and its extraction job queued, not run.

``drain LEASE_SECONDS``
    Run the extraction queue as a worker that claims each job for ``LEASE_SECONDS`` and dies
    inside the first ``session_end`` job, after its candidates, facts and events are stored
    and before its session summary is: a partial application, with the job still running
    under a lease.

Exit code 3 means the process reached the end without dying (the point never came).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import timedelta
from typing import Any

from agent.app import AnalystApp
from agent.settings import Settings


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def decide(thread_id: str) -> None:
    settings = Settings.from_env()
    if settings.extract_inline:
        raise SystemExit("decide needs ANALYST_EXTRACT_INLINE=0 (extraction left to a worker)")
    async with AnalystApp.open(settings, settings.principal) as app:
        draft = await app.view(thread_id)
        decision = {
            "action": "approve",
            "approver": settings.user_id,
            "draft_hash": draft.draft_hash,
        }
        view = await app.decide(thread_id, decision)
        print(json.dumps({"status": view.status, "memory_jobs": view.memory_jobs}))
        die()


async def drain(lease_seconds: float) -> None:
    settings = Settings.from_env()
    async with AnalystApp.open(settings, settings.principal) as app:
        learner = await app.memory.learner()

        async def summary_never_written(*args: Any, **kwargs: Any) -> Any:
            print(json.dumps({"died_in": "session_end", "before": "_apply_summary"}))
            die()

        learner._apply_summary = summary_never_written  # type: ignore[method-assign]
        await learner.drain(lease=timedelta(seconds=lease_seconds))


def main(argv: list[str]) -> int:
    match argv:
        case ["decide", thread_id]:
            asyncio.run(decide(thread_id))
        case ["drain", seconds]:
            asyncio.run(drain(float(seconds)))
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
