"""The publish node: write the approved (or edited) draft to document memory.

The report and its chart go under ``research/``; the project's progress log gets one line
saying what was published, on what data, and who decided.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from agent.nodes.base import Node
from agent.research.progress import update_progress
from agent.state import AnalystState


class Publish(Node):
    def __call__(self, state: AnalystState, config: RunnableConfig) -> dict[str, Any]:
        """The publication of the current draft under the last decision."""
        from agent.research.publishing import publish_report

        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        draft, decision = state["draft"], state["decisions"][-1]
        publication = publish_report(
            self.services.documents, thread_id=thread_id, draft=draft, decision=decision
        )
        note = Path(publication["path"]).name
        update_progress(
            self.services.documents,
            f"{draft['ticker']}: published research/{note} "
            f"({draft['recommendation'].get('rating')}, data as of {draft['as_of']}; "
            f"{decision['action']} by {decision['approver']}, thread {thread_id}).",
            key=f"{thread_id}:{draft['hash']}",
        )
        return {
            "publication": publication,
            "publications": [publication],
            "status": "published",
            "messages": [AIMessage(f"Published {publication['path']}.")],
        }
