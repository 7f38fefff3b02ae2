"""Validating what a user sends before anything is stored: a request and a decision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.app.limits import within_limit
from agent.errors import InvalidDecisionError, InvalidMemoryError
from agent.settings import Settings

if TYPE_CHECKING:
    from agent.nodes.services import Services
    from agent.records import ModeChoice
    from agent.research.routing import Route


def check_query(services: Services, query: str, mode: ModeChoice = "auto") -> Route | None:
    """Validate a request without touching storage; raises on bad input. ``None``: no
    research request to check (a forget, a statement, a question, an instruction, a remark:
    :func:`agent.recollection.intent.classify`). Only a research request is checked for
    tickers, so "my nickname is ZEBRA-QUILL-7" is never refused as an unknown ticker."""
    from agent.learning.extraction import hot_path_facts
    from agent.learning.learner import remove_statements
    from agent.recollection.intent import classify
    from agent.research.routing import check_request, forget_topic, request_universe

    if forget_topic(query) is not None:
        return None  # "forget ...": the graph proposes, the user confirms
    strict = services.reasoner.label == "offline"
    market = services.market
    available = request_universe(
        query, market.available_tickers(), open_universe=getattr(market, "open_universe", False)
    )
    stated = hot_path_facts(query, "preflight")
    if stated:
        # Statements about the user ("my horizon is 2 years", "my base currency is EUR")
        # are valid on their own and are no request: the rest, if any, is checked.
        query = remove_statements(query, [{"quotes": [f.quote]} for f in stated])
        if not query:
            return None
    if query.strip() and classify(query, available).intent != "research":
        return None  # answered, never researched: nothing to check
    return check_request(query, available, mode, strict=strict)


def check_decision_sizes(settings: Settings, decision: dict[str, Any]) -> None:
    """Refuse a decision whose feedback or edited text is over its size limit."""
    limits = {
        "feedback": (settings.max_query_chars, "ANALYST_MAX_QUERY_CHARS"),
        "text": (settings.max_edit_chars, "ANALYST_MAX_EDIT_CHARS"),
    }
    for key, (limit, variable) in limits.items():
        value = decision.get(key)
        if isinstance(value, str):
            what = "feedback" if key == "feedback" else "edited text"
            within_limit(value, limit, what, variable, InvalidDecisionError)


def confirmation_reply(thread_id: str, asked: str | None, answer: dict[str, Any]) -> dict[str, Any]:
    """The resume value for the question ``asked`` (``forget_confirmation`` or what to
    remember) from the caller's ``answer``; a forget answer to a remember question is refused."""
    if asked != "forget_confirmation" and "forget" in answer:
        raise InvalidMemoryError(
            f"Thread '{thread_id}' asks what to remember, not what to forget; answer "
            "it in the chat, or leave it for: analyst memory review"
        )
    if asked == "forget_confirmation":
        return {"forget": answer.get("forget", False)}
    # Always both keys: an empty mapping would read as "no resume value".
    return {
        "confirm": list(answer.get("confirm") or []),
        "reject": list(answer.get("reject") or []),
    }
