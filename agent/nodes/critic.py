"""The critic node: judge the draft alone; it informs the human and never approves.

The critic is given nothing from the run but the draft, today's date and the conventions.
"""

from __future__ import annotations

from typing import Any

from agent.nodes.base import Node
from agent.reasoning.chat_model import add_usage
from agent.state import AnalystState


class Critic(Node):
    async def __call__(self, state: AnalystState) -> dict[str, Any]:
        """The critique of the current draft; the thread then awaits approval."""
        verdict, used = await self.reasoner.critique(
            state["draft"],
            today=self.services.clock().date(),
            conventions=await self.conventions(),
        )
        return {
            "critique": verdict,
            "status": "awaiting_approval",
            "usage": add_usage(state.get("usage"), used),
        }
