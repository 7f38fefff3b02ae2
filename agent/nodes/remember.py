"""The remember node: a natural pause at the end of a request, where the user has the last word.

First, when something was proposed for forgetting this request (by the model's ``forget`` tool
or a "forget ..." message), it asks the user (``forget_confirmation``, whoever the caller). It
deletes nothing: it records the ids the user confirmed (``forget_confirmed``) and the
application runs the cascade once the run is over (the forget may delete this very thread,
which holds the episodes). Then, when the caller asked for it
(``Context.confirm_memories``: the chat), it asks the user to confirm what the agent proposes
to remember (``memory_confirmation``). Nothing is forgotten or confirmed without an answer.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agent.nodes.base import Node, check_owner, principal
from agent.state import AnalystState, Context


class Remember(Node):
    async def __call__(self, state: AnalystState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Ask what needs the user's word; the update records the answers.

        The forget question comes first because a node re-runs from its start on each resume:
        nothing before the second question may have side effects. Any answer but yes confirms
        no forget. Each memory candidate is asked once per thread; "later" (or no answer)
        leaves it pending for ``analyst memory review``. Only the thread's owner answers
        (:func:`check_owner`, before any question is asked again).
        """
        check_owner(state, principal(runtime), "answer its questions")
        update: dict[str, Any] = {}
        proposed = list(state.get("forget_proposed") or [])
        if proposed:
            chosen = forget_answer(interrupt(forget_question(proposed)), proposed)
            update["forget_proposed"] = []
            update["forget_confirmed"] = chosen
            ctx = runtime.context
            if not chosen:
                note = "Nothing was forgotten: you did not confirm."
            elif ctx is not None and ctx.forgets_after_run:
                note = (
                    f"You confirmed: I will forget {len(chosen)} item(s) now that this answer "
                    "is complete."
                )
            else:  # a server without the application: say how to finish it
                note = (
                    f"You confirmed forgetting {len(chosen)} item(s). This server does not "
                    "delete memory by itself; to forget them run: analyst memory forget "
                    f"{' '.join(chosen)} --yes"
                )
            update["messages"] = [AIMessage(note)]
        ctx = runtime.context
        learner = self.learner(runtime)
        if learner is None or ctx is None or not ctx.confirm_memories:
            return update
        asked = list(state.get("memory_asked") or [])
        fresh = [c for c in await learner.to_confirm() if c.candidate_id not in asked]
        if not fresh:
            return update
        ids = [c.candidate_id for c in fresh]
        answer = interrupt(_pending_question(fresh))
        done = await learner.answer(answer if isinstance(answer, dict) else {}, ids)
        confirmed = [
            (d.get("procedure") or {}).get("text") or d["candidate"]["payload"].get("text")
            for d in done["confirmed"]
        ]
        update["memory_asked"] = [*asked, *ids]
        if confirmed:
            note = "I will remember: " + "; ".join(str(c) for c in confirmed if c) + "."
            update["messages"] = [*update.get("messages", []), AIMessage(note)]
        return update


def _pending_question(candidates: list[Any]) -> dict[str, Any]:
    return {
        "kind": "memory_confirmation",
        "question": "Shall I remember these from now on, in every conversation?",
        "candidates": [
            {
                "candidate_id": c.candidate_id,
                "kind": c.kind,
                "text": c.payload.get("text")
                or f"{c.payload.get('attribute')} = {c.payload.get('value')!r}",
                "quote": c.quote,
                "reason": c.reason,
                "episode_ids": list(c.episode_ids),
            }
            for c in candidates
        ],
        "actions": ["confirm", "reject", "later"],
    }


def forget_question(proposed: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``forget_confirmation`` interrupt: what the model proposed to forget, item by item
    (``{tier, id, text}``), and the answers it takes."""
    return {
        "kind": "forget_confirmation",
        "question": "You asked me to forget these. Forget them, with what was learned from "
        "them, in every tier?",
        "items": [dict(item) for item in proposed],
        "ids": [item["id"] for item in proposed],
        "actions": ["yes", "no"],
        "answer": '{"forget": true} (all of them), {"forget": ["ID", ...]} (only those) or '
        '{"forget": false} (none)',
    }


def forget_answer(answer: Any, proposed: list[dict[str, Any]]) -> list[str]:
    """The proposed ids an answer confirms: ``{"forget": true}`` (or ``"yes"``) all of them,
    ``{"forget": [ids]}`` those of them; anything else none (ids never proposed are never
    taken from an answer)."""
    listed = [item["id"] for item in proposed]
    said = answer.get("forget") if isinstance(answer, dict) else None
    if said is True or (isinstance(said, str) and said.strip().lower() in ("y", "yes")):
        return listed
    if isinstance(said, list):
        named = {str(i) for i in said}
        return [i for i in listed if i in named]
    return []
