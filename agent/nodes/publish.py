"""The publish node: write the approved (or edited) draft to document memory.

The report and its chart go under ``research/``; the project's progress log gets one line
saying what was published, on what data, and who decided. Every write is the run's
principal's, through :class:`~memory.doc_authority.OwnedDocuments`, and audited in its memory
audit (when the graph has a journal).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agent.nodes.base import Node, principal, thread_id
from agent.research.progress import PROGRESS_PATH, update_progress
from agent.state import AnalystState, Context
from memory.doc_authority import Authority, OwnedDocuments, journal_audit


class Publish(Node):
    async def __call__(self, state: AnalystState, runtime: Runtime[Context]) -> dict[str, Any]:
        """The publication of the current draft under the last decision."""
        from agent.research.publishing import PUBLISH_REASON, publish_report

        thread = thread_id(get_config())
        draft, decision = state["draft"], state["decisions"][-1]
        documents = self._documents(runtime)
        publication = await publish_report(
            documents, thread_id=thread, draft=draft, decision=decision
        )
        note = Path(publication["path"]).name
        await asyncio.to_thread(
            update_progress,
            self.services.documents,
            f"{draft['ticker']}: published research/{note} "
            f"({draft['recommendation'].get('rating')}, data as of {draft['as_of']}; "
            f"{decision['action']} by {decision['approver']}, thread {thread}).",
            key=f"{thread}:{draft['hash']}",
        )
        await documents.record_write(PROGRESS_PATH, reason=PUBLISH_REASON)
        return {
            "publication": publication,
            "publications": [publication],
            "status": "published",
            "messages": [AIMessage(f"Published {publication['path']}.")],
        }

    def _documents(self, runtime: Runtime[Context]) -> OwnedDocuments:
        """Document memory as the run's principal, audited in its journal (none: unaudited,
        a graph built without memory)."""
        who = principal(runtime)
        journal = self.services.journal
        if journal is None:
            return OwnedDocuments(self.services.documents, Authority(who), None)
        return OwnedDocuments(
            self.services.documents, Authority(who), journal_audit(journal.with_principal(who))
        )
