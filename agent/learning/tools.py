"""The model path's memory tools, for the run's principal only.

:class:`MemoryTools` gives the planner and executor three reads (``get_user_profile``,
``search_episodes(query)``, ``list_open_items``) and the user's controls
(``list_what_you_remember``, ``remember(text, as)``, ``forget(ids | topic)``). They are built
per run from the principal in ``runtime.context`` through a :class:`~agent.learning.learner.Learner`
whose reads and writes are scoped in storage; no tool takes a user or tenant argument. Every
result is one quoted, untrusted reference block that cites the ids it comes from.
``forget`` never deletes: it records a *proposal* the user confirms (``forget_confirmation``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from agent.learning.learner import Learner


# -- memory tools (model path) -------------------------------------------------------------------

#: The memory tools' names, as the model sees them: the reads, then the user's controls.
MEMORY_TOOLS = (
    "get_user_profile",
    "search_episodes",
    "list_open_items",
    "list_what_you_remember",
    "remember",
    "forget",
)


class _SearchEpisodes(BaseModel):
    query: str = Field(
        min_length=1,
        max_length=200,
        description="Words to look for in the user's earlier messages and decisions: a ticker, "
        "a topic, a phrase.",
    )


class _Remember(BaseModel):
    """``remember``'s arguments (``as`` is a Python keyword, hence the alias)."""

    model_config = ConfigDict(populate_by_name=True, title="remember")

    text: str = Field(
        min_length=1,
        max_length=2000,
        description="What the user asked you to remember, in their own words.",
    )
    as_: Literal["fact", "preference", "procedure"] = Field(
        default="preference",
        alias="as",
        description="fact: a profile attribute (risk tolerance, horizon, watchlist, excluded "
        "tickers, report style, base currency); procedure: a standing rule (never analyse a "
        "ticker, always quick snapshots); preference: anything else, kept as said.",
    )


class _Forget(BaseModel):
    ids: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="Ids of the user's memory items to forget, as the memory tools gave them.",
    )
    topic: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Forget what mentions this topic (a word or phrase) instead of ids.",
    )

    @model_validator(mode="after")
    def _one(self) -> _Forget:
        if bool(self.ids) == (self.topic is not None):
            raise ValueError("give either ids or a topic (one of them)")
        return self


#: What each memory tool does, as the model reads it (the tool is :class:`MemoryTools`'s
#: method of the same name).
_DESCRIPTIONS = {
    "get_user_profile": "The user's profile facts (stated or confirmed, each with its fact id "
    "and source episodes) and the procedures they confirmed.",
    "search_episodes": "The user's earlier messages and decisions about a query: episodes "
    "matched by keywords, and notable events (decisions, rejections, milestones) "
    "recalled by meaning, each with its id.",
    "list_open_items": "What the user asked to revisit or follow up on in recent sessions, "
    "each with its session id.",
    "list_what_you_remember": "Everything remembered about the user, one row per item (fact, "
    "procedure, preference, event, memory, session) with its id: what to show when "
    "the user asks what you remember, and the ids forget takes.",
    "remember": "Remember something because the user asked you to, in every later "
    "conversation: a fact about them, a standing procedure, or a preference. Only "
    "when the user asks; it is stored at once, for this user.",
    "forget": "Propose forgetting memory items, by ids or by a topic, because the "
    "user asked you to. Nothing is deleted by this call: the user is asked to confirm "
    "when the answer is complete.",
}

#: What a memory tool returns: the quoted block the model reads, and the ids it cites.
Cited = tuple[str, dict[str, list[str]]]


@dataclass(frozen=True)
class MemoryTools:
    """The memory tools of one run, for its principal (the learner's).

    :meth:`available` returns them only when the principal has something stored beyond the
    current conversation (:meth:`~agent.recollection.reader.Recollection.has_memory`): a tool that can only
    answer "nothing" costs a model turn and its schema on every request (so a user with
    nothing stored asks with ``/remember`` or ``analyst memory remember``).

    ``thread_id`` is the run's conversation (a ``remember`` cites the words as an episode of
    it); ``proposals`` collects what ``forget`` proposed (``{tier, id, text}`` rows), for the
    node to put in the thread's state.

    Each tool is the method of its name and returns ``(content, artifact)``: the content is
    the quoted reference block the model reads, the artifact the ids it cites
    (``memory_ids``, ``episode_ids``, ``session_ids``, ``procedure_ids``; ``forget_ids`` for
    a proposal).
    """

    learner: Learner
    thread_id: str | None = None
    max_memory_chars: int = 2000
    proposals: list[dict[str, Any]] = field(default_factory=list)

    async def available(self) -> list[BaseTool]:
        if not await self.learner.has_memory():
            return []
        return self.tools()

    def tools(self) -> list[BaseTool]:
        """The memory tools as LangChain tools, in :data:`MEMORY_TOOLS` order."""
        from langchain_core.tools import StructuredTool

        schemas: dict[str, Any] = {
            "search_episodes": _SearchEpisodes,
            # A JSON schema (validated in the tool): it names the argument ``as``.
            "remember": _Remember.model_json_schema(by_alias=True),
            "forget": _Forget,
        }
        return [
            StructuredTool.from_function(
                coroutine=getattr(self, name),
                name=name,
                description=_DESCRIPTIONS[name],
                args_schema=schemas.get(name),
                response_format="content_and_artifact",
            )
            for name in MEMORY_TOOLS
        ]

    async def _result(self, label: str, payload: Any, **ids: list[str]) -> Cited:
        """The quoted block and the ids it cites, after auditing the read (one entry)."""
        from agent.reasoning.prompts import quote_data

        content = quote_data(f"memory: {label} (this user only)", payload)
        cited = {k: sorted(set(v)) for k, v in ids.items()}
        await self.learner.audit_read(
            "tools",
            [i for v in cited.values() for i in v],
            reason=f"memory tool read: {label}",
            content=payload,
        )
        return content, cited

    async def get_user_profile(self) -> Cited:
        profile = await self.learner.profile()
        procedures = [
            {
                "procedure_id": p["procedure_id"],
                "text": p["text"],
                "confirmed_at": p["confirmed_at"],
                "episode_ids": list(p["episode_ids"])[:5],
            }
            for p in (await self.learner.active_procedures())[:20]
        ]
        return await self._result(
            "user profile",
            {"profile": profile, "procedures": procedures},
            memory_ids=[f["memory_id"] for f in profile.values()],
            episode_ids=[i for f in profile.values() for i in f["episode_ids"]],
        )

    async def search_episodes(self, query: str) -> Cited:
        found = await self.learner.search_episodes(query)
        return await self._result(
            "episodes and events",
            found,
            memory_ids=[e["memory_id"] for e in found["events"]],
            episode_ids=[e["episode_id"] for e in found["episodes"]],
        )

    async def list_open_items(self) -> Cited:
        items = await self.learner.open_items()
        return await self._result(
            "open items",
            {"open_items": items},
            session_ids=[i["session_id"] for i in items],
        )

    async def list_what_you_remember(self) -> Cited:
        rows = (await self.learner.listing())[:LISTED]
        by_layer: dict[str, list[str]] = {"session": [], "procedure": []}
        for r in rows:
            by_layer.setdefault(r["layer"], []).append(r["id"])
        return await self._result(
            "what I remember",
            {"remembered": rows},
            memory_ids=[r["id"] for r in rows if r["layer"] not in ("session", "procedure")],
            session_ids=by_layer["session"],
            procedure_ids=by_layer["procedure"],
        )

    async def remember(self, **args: Any) -> Cited:
        from agent.learning.remembering import remember as store
        from memory.errors import InvalidMemoryError

        asked = _Remember.model_validate(args)  # extra arguments (a user id) are ignored
        try:
            done = await store(
                self.learner,
                asked.text,
                as_=asked.as_,
                thread_id=self.thread_id,
                max_chars=self.max_memory_chars,
            )
        except InvalidMemoryError as error:  # refused, nothing stored: the model may say so
            return f"error: {error}", {}
        return await self._result(
            "remembered",
            done,
            memory_ids=[item["id"] for item in done["stored"]],
            episode_ids=[done["episode_id"]],
        )

    async def forget(self, ids: list[str] | None = None, topic: str | None = None) -> Cited:
        from agent.recollection.forgettable import read_all
        from memory.errors import InvalidMemoryError

        mem = await read_all(self.learner)
        try:
            rows = _forget_rows(mem, ids or [], topic)
        except InvalidMemoryError as error:  # ids the user does not have
            return f"error: {error}", {}
        known = {p["id"] for p in self.proposals}
        self.proposals.extend(r for r in rows if r["id"] not in known)
        status = (
            "nothing found: nothing will be asked or deleted"
            if not rows
            else "proposed, NOT deleted: when this request's answer is complete the user is "
            "asked to confirm, and only a yes deletes these (with what was derived from them)"
        )
        return await self._result(
            "forget proposal",
            {"status": status, "proposed": rows},
            forget_ids=[r["id"] for r in rows],
        )


#: At most this many rows of ``list_what_you_remember`` reach the model.
LISTED = 200


def _forget_rows(mem: Any, ids: list[str], topic: str | None) -> list[dict[str, Any]]:
    """The ``{tier, id, text}`` rows ``forget`` proposes: the named ids (an id the user does
    not have is refused), or what mentions ``topic`` by keyword."""
    from agent.recollection.forgettable import by_ids, by_keyword, item_key, listing, row

    if topic is not None:
        return by_keyword(mem, topic)
    wanted = set(ids)
    by_ids(mem, ids)  # refuses ids the principal does not have
    rows = listing(
        mem,
        lambda e: e.episode_id in wanted,
        lambda s: s.session_id in wanted,
        lambda r: r.memory_id in wanted,
        lambda c: c.candidate_id in wanted,
        lambda i: i.key in wanted or item_key(i) in wanted,
    )
    rows += [
        row("procedures", p.procedure_id, p.text)
        for p in mem.procedures
        if p.procedure_id in wanted
    ]
    return rows
