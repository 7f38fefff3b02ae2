"""A few memories of one principal to look at in the dashboard: facts with a correction,
a procedure, a preference, a finished session with its summary and candidates awaiting
review. Everything goes through the application's memory API, as a user's words would.

Used by ``scripts/dashboard_screens.py`` and the browser tests.
"""

from __future__ import annotations

from typing import Any

from agent.app import AnalystApp
from agent.settings import Settings
from memory.identity import Principal

#: What :func:`seed` says, in order (the second horizon corrects the first).
FACTS = ("My horizon is 5 years.", "I'm a conservative investor.", "My horizon is 10 years.")
PROCEDURE = "Never analyse TSLA."
PREFERENCE = "I like short reports with one chart."
#: Said in a conversation whose end leaves candidates to review.
CHAT = "I prefer tables over charts."


async def seed(
    settings: Settings, principal: Principal, thread_id: str = "t-demo-chat"
) -> dict[str, Any]:
    """Store the demo memories for ``principal``; answers the pending candidates' ids."""
    async with AnalystApp.open(settings, principal) as app:
        for sentence in FACTS:
            await app.memory.remember(sentence, as_="fact")
        await app.memory.remember(PROCEDURE, as_="procedure")
        await app.memory.remember(PREFERENCE, as_="preference")
        await app.start(CHAT, thread_id=thread_id, keep_session=True)
        await app.memory.end_session(thread_id)
        pending = await app.memory.review()
    return {"candidates": [c["candidate_id"] for c in pending]}
