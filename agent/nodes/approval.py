"""The approval node: pause for a human decision bound to this exact draft; route on it.

The interrupt shows the draft, its hash and the critic's findings. A refused decision (see
:func:`agent.nodes.decisions.validate_decision`) never publishes: the node asks again with the
reason on record. A valid one is stored as an episode and its extraction queued (a durable job)
before the graph moves on, so a crash after this point loses nothing. Approve and edit publish;
reject drafts again, at most ``MAX_REVISIONS`` times, after which the thread closes unpublished.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from agent.errors import InvalidDecisionError, StaleDraftError
from agent.nodes.base import Node, check_owner, principal, server_authenticated
from agent.nodes.decisions import validate_decision
from agent.research.progress import update_progress
from agent.research.report import content_hash
from agent.state import MAX_REVISIONS, AnalystState, Context, Decision, Draft


class Approval(Node):
    async def __call__(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["publish", "reporter", "approval", "remember"]]:
        """Ask for a decision on the current draft and go where it says.

        Only the thread's owner decides (:func:`check_owner`, checked before the decision is
        taken, so a refused caller consumes nothing and the draft stays pending). Under the
        API server's auth the approver recorded is the authenticated user, whatever name the
        decision gives."""
        who = principal(runtime)
        check_owner(state, who, "decide its draft")
        draft, review = state["draft"], state["critique"]
        revisions = state.get("revisions", 0)
        raw = interrupt(
            {
                "kind": "approval",
                "ticker": draft["ticker"],
                "title": draft["title"],
                "draft_hash": draft["hash"],
                "revision": draft["revision"],
                "revisions_left": MAX_REVISIONS - revisions,
                "verdict": review["verdict"],
                "findings": review["findings"],
                "markdown": draft["markdown"],
                "chart_path": draft["chart_path"],
                "error": state.get("decision_error"),
                "actions": ["approve", "reject", "edit"],
            }
        )
        config = get_config()
        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        approver = who.user_id if server_authenticated(config) else None
        try:
            decision = validate_decision(
                raw, draft, thread_id=thread_id, now=self.services.clock(), approver=approver
            )
        except (InvalidDecisionError, StaleDraftError) as error:
            # Refused decisions never publish: ask again, with the reason on record.
            return Command(goto="approval", update={"decision_error": str(error)})
        decisions = [*state.get("decisions", []), decision]
        await self._remember_decision(state, runtime, thread_id, decision, len(decisions))
        base: dict[str, Any] = {"decisions": decisions, "decision_error": None}
        if decision["action"] == "approve":
            return Command(goto="publish", update={**base, "status": "running"})
        if decision["action"] == "edit":
            text = decision["text"]
            edited = Draft(**{**draft, "markdown": text, "hash": content_hash(text)})
            return Command(goto="publish", update={**base, "draft": edited, "status": "running"})
        feedback = [*state.get("feedback", []), decision["feedback"]]
        if revisions >= MAX_REVISIONS:
            reason = (
                f"Rejected {revisions + 1} times; the limit is {MAX_REVISIONS} revisions. "
                "The thread is closed without publishing; start a new run to try again."
            )
            update_progress(
                self.services.documents,
                f"{draft['ticker']}: thread {thread_id} closed unpublished after "
                f"{revisions + 1} rejections (last feedback: {decision['feedback'][:120]!r}).",
                key=f"{thread_id}:{draft['hash']}:rejected",
            )
            return Command(
                goto="remember",
                update={
                    **base,
                    "feedback": feedback,
                    "status": "rejected",
                    "stop_reason": reason,
                    "messages": [AIMessage(reason)],
                },
            )
        return Command(
            goto="reporter",
            update={**base, "feedback": feedback, "revisions": revisions + 1, "status": "running"},
        )

    async def _remember_decision(
        self,
        state: AnalystState,
        runtime: Runtime[Context],
        thread_id: str,
        decision: Decision,
        number: int,
    ) -> None:
        learner = self.learner(runtime)
        if learner is None:
            return
        draft = state["draft"]
        episode = await learner.record(
            thread_id,
            decision["action"],
            decision_text(decision, draft),
            turn=f"decision:{draft['hash']}:{number}",
            meta={
                "ticker": draft["ticker"],
                "title": draft["title"],
                "rating": draft["recommendation"].get("rating"),
                "draft_hash": draft["hash"],
                "feedback": decision.get("feedback"),
                "request_episode_id": state.get("episode_id"),
            },
        )
        covered = [e for e in (state.get("episode_id"), episode.episode_id) if e]
        await learner.after_decision(thread_id, covered)


def decision_text(decision: Decision, draft: Draft) -> str:
    """A decision as the episode records it: what the user did, with their own words."""
    rating = draft["recommendation"].get("rating")
    if decision["action"] == "approve":
        return f'approve: {draft["ticker"]} report "{draft["title"]}" (rating {rating})'
    if decision["action"] == "reject":
        return f"reject: {draft['ticker']} report (rating {rating}). {decision['feedback']}"
    return f"edit: {draft['ticker']} report published as edited:\n{decision['text']}"
