"""An application opened for one user at an injected time: what the memory tests share.

``ticking(start)`` is a clock that starts at ``start`` and moves a second on every reading, so
every write of a test has its own time and the order of writes is the order of the test;
``app_at(start, user)`` opens :class:`~agent.app.AnalystApp` from the environment's settings
with that clock in its services.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.app import AnalystApp
from agent.nodes.services import Services
from agent.settings import Settings
from memory.facts import subject_for
from memory.identity import Principal


def ticking(start: datetime) -> Callable[[], datetime]:
    """A clock that starts at ``start`` and moves a second on every reading."""
    seconds = itertools.count()
    return lambda: start + timedelta(seconds=next(seconds))


@asynccontextmanager
async def app_at(start: datetime, user: str, tenant: str = "default") -> AsyncIterator[AnalystApp]:
    """The application for ``tenant/user`` whose clock starts at ``start``."""
    settings = Settings.from_env()
    services = replace(Services.from_settings(settings), clock=ticking(start))
    async with AnalystApp.open(settings, Principal(tenant, user), services) as app:
        yield app


async def chat(app: AnalystApp, thread: str, *turns: str) -> None:
    """Say ``turns`` in one chat session of ``thread``, then end the session (which runs the
    session's extraction)."""
    for turn in turns:
        await app.start(turn, thread_id=thread, keep_session=True)
    await app.memory.end_session(thread)


async def current(app: AnalystApp, attribute: str) -> Any:
    """The current value of the user's profile ``attribute`` in the ledger, or None."""
    learner = await app.memory.learner()
    record = await learner.facts.current(subject_for(app.principal), attribute)
    return None if record is None else record.value


async def learned_after(
    prefix: str,
    attribute: str,
    *sessions: Sequence[str],
    start: datetime = datetime(2026, 11, 20, 9, tzinfo=UTC),
) -> Any:
    """``attribute`` after each of ``sessions`` (its turns) is said in a chat session of its
    own, by a new user named ``prefix`` and a digest of what is said (a case of its own)."""
    said = "|".join("/".join(turns) for turns in sessions)
    user = f"{prefix}-" + hashlib.sha256(said.encode()).hexdigest()[:10]
    async with app_at(start, user) as app:
        for number, turns in enumerate(sessions):
            await chat(app, f"t{number}", *turns)
        return await current(app, attribute)
