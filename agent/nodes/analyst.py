"""The analyst's graph nodes: router, planner, executor, reporter, critic, approval, publish.

Each node reads state and returns an update (never mutates state in place). Jumps are typed
``Command[Literal[...]]`` so the routing is visible in the graph. Decisions are delegated to the
:class:`~agent.reasoning.base.Reasoner` in :class:`~agent.nodes.services.Services` (offline rules or a chat
model); dependencies come from the services the builder binds, identity from
``runtime.context``. Model usage is accounted per request in ``state["usage"]``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command, interrupt

from agent.errors import InvalidDecisionError, NoTickerError, StaleDraftError
from agent.learning.learner import Learner, build_learner, describe_learned, remove_statements
from agent.learning.tools import MemoryTools
from agent.market import MarketDataProvider
from agent.nodes.decisions import validate_decision
from agent.nodes.services import Services
from agent.reasoning.base import Context as ReasoningContext
from agent.reasoning.models import add_usage, no_usage
from agent.recollection.reader import procedure_exclusions, procedure_mode
from agent.research import constraints as rules
from agent.research.conventions import Conventions, load_conventions
from agent.research.progress import update_progress
from agent.research.report import content_hash
from agent.research.routing import Route, forget_topic, request_universe
from agent.state import MAX_REVISIONS, AnalystState, Context, Decision, Draft, Usage
from agent.thread_ids import thread_folder
from memory.identity import Principal


class AnalystNodes:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.reasoner = services.reasoner

    # -- research -----------------------------------------------------------------------

    async def router(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["planner", "executor", "remember"]]:
        """Classify the request from its text alone; start a fresh request on the thread.

        The message is stored as an episode first; the profile facts and corrections it states
        go to the ledger at once (hot path), and the user's confirmed procedures are loaded
        and enforced. The user's explicit constraints are split off the message and merged into
        the authoritative list; older conversation turns are summarised when the history grows
        past its budget. None of this influences how the request text is routed.
        """
        query = state["query"]
        forget = forget_topic(query)
        new_rules, request = rules.split_constraints("" if forget else query)
        kept = rules.merge(state.get("constraints", []), new_rules)
        usage = no_usage()
        # A request to forget is stored as the user's turn, but nothing is learned from it.
        memory = await self._remember_turn(state, runtime, learn=forget is None)
        update: dict[str, Any] = {
            "mode": None,
            "draft": None,
            "critique": None,
            "publication": None,
            "tickers": [],
            "plan": [],
            "plan_rationale": "",
            "route_reason": "",
            "memories_used": [],
            "recalled": [],
            "facts_used": {},
            "step_index": 0,
            "results": {},
            "feedback": [],
            "revisions": 0,
            "decisions": [],
            "decision_error": None,
            "stop_reason": "",
            "reply": "",
            "learned": [],
            "procedures": [],
            "forget_proposed": [],
            "forget_confirmed": [],
            "constraints": kept,
            "status": "running",
        }
        update.update(memory)
        summary, trimmed, usage = await self._trim_history(state, usage)
        update["summary"] = summary
        update["messages"] = [*trimmed, HumanMessage(query)]

        if forget is not None:
            return await self._propose_forget(update, usage, runtime, forget)
        learned = memory.get("learned", [])
        if learned:
            request = remove_statements(request, learned)
        if not request.strip():
            said = [
                *(["I will follow this from now on: " + " ".join(new_rules)] if new_rules else []),
                *([describe_learned(learned)] if learned else []),
            ]
            return self._finish(update, usage, "noted", "Noted. " + " ".join(said))

        market = self.services.market
        procedures = memory.get("procedures", [])
        mode = runtime.context.mode if runtime.context else "auto"
        if mode == "auto":
            mode = rules.forced_mode(kept) or procedure_mode(procedures) or "auto"
        listed = await asyncio.to_thread(market.available_tickers)
        available = request_universe(
            request, listed, open_universe=getattr(market, "open_universe", False)
        )
        try:
            route, used = await self.reasoner.route(request, available, mode)
        except NoTickerError as error:
            # A conversational turn that asks for no research: kept (episode above), answered.
            return self._finish(update, usage, "noted", f"Noted. {error}")
        usage = add_usage(usage, used)
        by_constraint = rules.excluded_tickers(kept, available)
        excluded = {**procedure_exclusions(procedures), **by_constraint}
        allowed = tuple(t for t in route.tickers if t not in excluded)
        if not allowed:
            blocked, first = ", ".join(route.tickers), route.tickers[0]
            if first in by_constraint:
                reply = (
                    f"I won't analyse {blocked}: it is excluded by your constraint "
                    f'"{excluded[first]}". Constraints hold for this conversation; '
                    "start a new one (/new in chat, or a new thread) to drop them."
                )
            else:
                reply = (
                    f"I won't analyse {blocked}: your {excluded[first]}. Procedures hold in "
                    "every conversation; retire it with: analyst memory procedures --retire ID"
                )
            return self._finish(update, usage, "declined", reply)
        left_out = [t for t in route.tickers if t in excluded]
        reason = route.reason
        if left_out:
            why = "; ".join(f'{t}: "{excluded[t]}"' for t in left_out)
            reason += f" Left out by your constraints — {why}."
            update["reply"] = f"Leaving out {', '.join(left_out)} as your constraints ask ({why})."
        route = Route(mode=route.mode, tickers=allowed, reason=reason)
        update.update(
            mode=route.mode, tickers=list(route.tickers), usage=usage, route_reason=reason
        )
        if route.mode == "flash":
            from agent.research.planning import snapshot_plan

            update["plan"] = snapshot_plan(route)
            update["plan_rationale"] = "Quick snapshot: one step computes every figure."
            return Command(goto="executor", update=update)
        return Command(goto="planner", update=update)

    async def _propose_forget(
        self, update: dict[str, Any], usage: Usage, runtime: Runtime[Context], topic: str
    ) -> Command[Literal["planner", "executor", "remember"]]:
        """ "Forget ...": propose what mentions ``topic`` (by keyword, the principal's own, as
        the model's ``forget`` tool does); the ``remember`` node asks the user to confirm and
        nothing is deleted without a yes."""
        from agent.recollection.forgettable import by_keyword, read_all

        learner = self._learner(runtime)
        if learner is None:
            reply = (
                "Memory is not open in this run, so there is nothing to forget here; use "
                f'analyst memory forget --topic "{topic}".'
            )
            return self._finish(update, usage, "noted", reply)
        found = by_keyword(await read_all(learner), topic)
        # This very request names the topic; it goes too, but alone it is not "found".
        if all(row["id"] == update.get("episode_id") for row in found):
            found = []
        if not found:
            reply = f'I found nothing of yours about "{topic}": nothing to forget.'
            return self._finish(update, usage, "noted", reply)
        update["forget_proposed"] = found
        reply = (
            f'I found {len(found)} item(s) about "{topic}". Nothing is forgotten until you confirm.'
        )
        return self._finish(update, usage, "noted", reply)

    def _finish(
        self, update: dict[str, Any], usage: Usage, status: str, reply: str
    ) -> Command[Literal["planner", "executor", "remember"]]:
        update.update(status=status, reply=reply, usage=usage, stop_reason=reply)
        update["messages"] = [*update["messages"], AIMessage(reply)]
        return Command(goto="remember", update=update)

    async def _trim_history(
        self, state: AnalystState, usage: Usage
    ) -> tuple[str, list[Any], Usage]:
        """Summarise older turns once the history exceeds its budget; keep the recent ones."""
        history = list(state.get("messages", []))
        summary = state.get("summary", "")
        limit, keep = self.services.history_max_messages, self.services.history_keep
        if len(history) + 1 <= limit:
            return summary, [], usage
        old = history[: max(0, len(history) - keep)]
        summary, used = await self.reasoner.summarise(summary, old)
        return summary, [RemoveMessage(id=m.id) for m in old if m.id], add_usage(usage, used)

    async def planner(self, state: AnalystState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Plan the research after reading what memory knows about this user.

        Deterministic first: the user's current facts from the ledger (stated or confirmed
        ones only; an inference alone changes nothing), then semantic neighbours from the
        long-term store, ranked. Both are scoped by the run's principal, never by anything a
        model produced, and reach prompts only as quoted data. The plan cites what it used.
        """
        principal = _principal(runtime)
        facts = await self._current_facts(principal, runtime)
        recalled = await self._recall(runtime.store, principal, state["query"])
        learner = self._learner(runtime)
        if learner is not None:
            await learner.audit_read(
                "facts",
                [f["memory_id"] for f in facts.values()],
                reason="profile read by the planner",
                content={name: f["value"] for name, f in facts.items()},
            )
            await learner.audit_read(
                "store",
                [m["key"] for m in recalled],
                reason="memories recalled by the planner",
                content=[m["text"] for m in recalled],
            )
        route = Route(
            mode=state["mode"],
            tickers=tuple(state["tickers"]),
            reason=state.get("route_reason", ""),
        )
        conventions = await self._conventions()
        tools = self._memory_tools(runtime)
        ctx = replace(
            self._context(state, conventions),
            facts={name: fact["value"] for name, fact in facts.items()},
            memories=recalled,
            memory=tools,
        )
        planned, used = await self.reasoner.plan(route, ctx)
        return {
            "plan": planned.steps,
            "plan_rationale": planned.rationale,
            "recalled": recalled,
            "facts_used": facts,
            "memories_used": planned.memories_used,
            "step_index": 0,
            "usage": add_usage(state.get("usage"), used),
            **_proposed(state, tools),
        }

    async def _current_facts(
        self, principal: Principal, runtime: Runtime[Context]
    ) -> dict[str, dict[str, Any]]:
        """The profile facts the planner may use (``agent.recollection.reader.usable_fact``)."""
        learner = self._learner(runtime)
        if learner is not None:
            return await learner.profile()
        if self.services.facts is None:
            return {}
        from agent.recollection.reader import usable_fact
        from memory.facts import subject_for

        ledger = self.services.facts.with_principal(principal)
        profile = await ledger.profile(subject_for(principal))
        return {
            name: {
                "value": fact.value,
                "source": fact.source,
                "since": fact.valid_from.isoformat(),
                "memory_id": fact.memory_id,
                "episode_ids": [fact.source_episode_id] if fact.source_episode_id else [],
            }
            for name, fact in sorted(profile.items())
            if usable_fact(fact)
        }

    def _memory_tools(self, runtime: Runtime[Context]) -> MemoryTools | None:
        """The run's memory tools (bound on the model path), for the run's principal and
        thread; what its ``forget`` proposes the node puts in state (:func:`_proposed`)."""
        learner = self._learner(runtime)
        if learner is None:
            return None
        return MemoryTools(
            learner,
            thread_id=_thread_id(get_config()),
            max_memory_chars=self.services.max_memory_chars,
        )

    def _learner(self, runtime: Runtime[Context]) -> Learner | None:
        """The write and read paths of memory for the run's principal (None without a journal)."""
        return build_learner(self.services, _principal(runtime), runtime.store)

    async def _remember_turn(
        self, state: AnalystState, runtime: Runtime[Context], *, learn: bool = True
    ) -> dict[str, Any]:
        """Store the message as an episode, apply what it states now (unless not ``learn``),
        load the procedures in force and, on a thread's first request, what the session
        starts with."""
        learner = self._learner(runtime)
        if learner is None:
            return {}
        turn = state.get("turns", 0) + 1
        episode = await learner.record(
            _thread_id(get_config()),
            "message",
            state["query"],
            turn=f"turn:{turn}",
            meta=None if learn else {"request": "forget"},
        )
        update: dict[str, Any] = {
            "turns": turn,
            "episode_id": episode.episode_id,
            "learned": await learner.learn_now(episode) if learn else [],
            "procedures": await learner.active_procedures(),
        }
        if not state.get("context_loaded"):
            loaded = await learner.load_context(self.services.context_tokens)
            update["context_loaded"] = loaded.to_json()
            await learner.audit_read(
                "context",
                [
                    *(f["memory_id"] for f in loaded.profile.values()),
                    *(p["procedure_id"] for p in loaded.procedures),
                    *(s["session_id"] for s in loaded.sessions),
                ],
                reason="session context loaded",
                content=loaded.to_json(),
            )
        return update

    async def _recall(
        self, store: BaseStore | None, principal: Principal, query: str
    ) -> list[dict[str, Any]]:
        if store is None:
            return []
        from memory.recall import arecall

        found = await arecall(store, principal, query, limit=self.services.recall_limit)
        return [
            {
                "key": item.key,
                "text": item.text,
                "kind": item.kind,
                "about": item.about,
                "at": item.at.isoformat() if item.at else None,
                "episode_ids": list(item.metadata.get("episode_ids") or []),
                "score": item.parts.to_json(),
            }
            for item in found
        ]

    async def executor(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["executor", "reporter"]]:
        """Run exactly one plan step; each step therefore ends in its own checkpoint."""
        index = state.get("step_index", 0)
        plan = state["plan"]
        if self.services.step_delay:
            await asyncio.sleep(self.services.step_delay)
        market = await asyncio.to_thread(self._market, state)
        tools = self._memory_tools(runtime)
        ctx = replace(self._context(state), memory=tools)
        result, used = await self.reasoner.execute(plan[index], market, ctx)
        update = {
            "results": {**state.get("results", {}), result["step_id"]: dict(result)},
            "step_index": index + 1,
            "usage": add_usage(state.get("usage"), used),
            **_proposed(state, tools),
        }
        return Command(goto="executor" if index + 1 < len(plan) else "reporter", update=update)

    async def reporter(self, state: AnalystState, config: RunnableConfig) -> dict[str, Any]:
        """Draft the report in the sections the project conventions require, in their order."""
        conventions = await self._conventions()
        draft, used = await self.reasoner.report(
            ticker=state["tickers"][0],
            mode=state["mode"],
            results=state["results"],
            feedback=state.get("feedback", []),
            revision=state.get("revisions", 0),
            requested=state["tickers"],
            sections=conventions.required_sections,
            ctx=replace(self._context(state, conventions), personal=personal_lines(state)),
        )
        draft["chart_path"] = str(await asyncio.to_thread(self._chart, draft, config))
        note = (
            f"Draft {draft['hash'][:12]} for {draft['ticker']} (revision {draft['revision']}): "
            f"{draft['recommendation']['rating']}. Awaiting your decision."
        )
        return {
            "draft": draft,
            "status": "running",
            "usage": add_usage(state.get("usage"), used),
            "messages": [AIMessage(note)],
        }

    def _chart(self, draft: Draft, config: RunnableConfig) -> Path:
        from agent.research.chart import render_price_chart

        thread_id = str(config.get("configurable", {}).get("thread_id") or "no-thread")
        folder = thread_folder(thread_id)
        path = self.services.artifacts_dir / folder / f"{draft['hash'][:16]}.png"
        if not path.exists():
            render_price_chart(self.services.market.history(draft["ticker"]), path)
        return path

    async def critic(self, state: AnalystState) -> dict[str, Any]:
        """Judge the draft alone: the critic is given nothing from the run but the draft."""
        verdict, used = await self.reasoner.critique(
            state["draft"],
            today=self.services.clock().date(),
            conventions=await self._conventions(),
        )
        return {
            "critique": verdict,
            "status": "awaiting_approval",
            "usage": add_usage(state.get("usage"), used),
        }

    async def _conventions(self) -> Conventions:
        """Read on every use: a hand edit to the Markdown takes effect on the next node.

        File reads (like every blocking call in these async nodes) run in a worker thread, so
        the event loop of an API server is never blocked.
        """
        return await asyncio.to_thread(load_conventions, self.services.documents)

    def _context(
        self, state: AnalystState, conventions: Conventions | None = None
    ) -> ReasoningContext:
        recent = [m for m in state.get("messages", [])][-self.services.history_keep :]
        conversation = "\n".join(
            filter(
                None,
                [
                    state.get("summary", ""),
                    *(f"{'user' if m.type == 'human' else 'analyst'}: {m.content}" for m in recent),
                ],
            )
        )
        loaded = state.get("context_loaded") or {}
        return ReasoningContext(
            constraints=tuple(state.get("constraints", [])),
            conversation=conversation,
            conventions=conventions.quoted() if conventions is not None else "",
            procedures=tuple(state.get("procedures") or []),
            sessions=tuple(loaded.get("sessions") or []),
            open_items=tuple(loaded.get("open_items") or []),
        )

    def _market(self, state: AnalystState) -> MarketDataProvider:
        excluded = {
            **procedure_exclusions(state.get("procedures") or []),
            **rules.excluded_tickers(
                state.get("constraints", []), self.services.market.available_tickers()
            ),
        }
        if not excluded:
            return self.services.market
        from agent.market.filtered import FilteredProvider

        return FilteredProvider(self.services.market, excluded)

    # -- human in the loop ----------------------------------------------------------------

    async def approval(
        self, state: AnalystState, runtime: Runtime[Context]
    ) -> Command[Literal["publish", "reporter", "approval", "remember"]]:
        """Pause for a human decision bound to this exact draft; route on the answer.

        A valid decision is stored as an episode and its extraction queued (a durable job)
        before the graph moves on: a crash after this point loses nothing."""
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
        thread_id = str(get_config().get("configurable", {}).get("thread_id", ""))
        try:
            decision = validate_decision(raw, draft, thread_id=thread_id, now=self.services.clock())
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
        learner = self._learner(runtime)
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

    async def remember(self, state: AnalystState, runtime: Runtime[Context]) -> dict[str, Any]:
        """A natural pause: the request's answer is complete.

        First, when the model's ``forget`` tool proposed something this request, pause to ask
        the user (``forget_confirmation``, whoever the caller: nothing is ever forgotten
        without the user's word). The node deletes nothing: it records the ids the user
        confirmed (``forget_confirmed``; any answer but yes confirms none) and the
        application runs the cascade once the run is over -- the forget may delete this very
        thread (it holds the episodes), so the run finishes first. This question comes first
        because a node re-runs from its start on each resume: nothing before the second
        question may have side effects.

        Then, when the caller asked for it (``Context.confirm_memories``: the chat), pause to
        ask the user to confirm what the agent proposes to remember; otherwise, or when
        nothing new awaits, finish at once. Each candidate is asked once per thread; an
        answer of "later" (or none) leaves it pending for ``analyst memory review``. Nothing
        is confirmed without the user's answer.
        """
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
        learner = self._learner(runtime)
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

    def publish(self, state: AnalystState, config: RunnableConfig) -> dict[str, Any]:
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


def _proposed(state: AnalystState, tools: MemoryTools | None) -> dict[str, Any]:
    """The state update adding what the run's ``forget`` tool proposed (once per id)."""
    if tools is None or not tools.proposals:
        return {}
    kept = list(state.get("forget_proposed") or [])
    known = {item["id"] for item in kept}
    kept += [item for item in tools.proposals if item["id"] not in known]
    return {"forget_proposed": kept}


def _thread_id(config: RunnableConfig) -> str:
    return str(config.get("configurable", {}).get("thread_id") or "no-thread")


def decision_text(decision: Decision, draft: Draft) -> str:
    """A decision as the episode records it: what the user did, with their own words."""
    rating = draft["recommendation"].get("rating")
    if decision["action"] == "approve":
        return f'approve: {draft["ticker"]} report "{draft["title"]}" (rating {rating})'
    if decision["action"] == "reject":
        return f"reject: {draft['ticker']} report (rating {rating}). {decision['feedback']}"
    return f"edit: {draft['ticker']} report published as edited:\n{decision['text']}"


def personal_lines(state: AnalystState) -> list[str]:
    """What memory says about this user that the report relies on, each with its source
    (a personal attribute's value is not written: reports are published business records)."""
    from agent.learning.profile import shown

    lines = []
    for name, fact in sorted((state.get("facts_used") or {}).items()):
        episodes = ", ".join(fact.get("episode_ids") or []) or "no episode"
        lines.append(
            f"Your {name.replace('_', ' ')}: {shown(name, fact['value'])} ({fact['source']} since "
            f"{str(fact['since'])[:10]}; fact {fact['memory_id']}; episodes {episodes})."
        )
    for p in state.get("procedures") or []:
        lines.append(
            f'Procedure in force: "{p["text"]}" ({p["procedure_id"]}, confirmed '
            f"{str(p['confirmed_at'])[:10]}; episodes {', '.join(p['episode_ids']) or '-'})."
        )
    for m in state.get("recalled") or []:
        if m.get("kind") in ("decision", "rejection", "milestone"):
            episodes = ", ".join(m.get("episode_ids") or []) or "no episode"
            when = str(m.get("at") or "")[:10]
            lines.append(
                f'Earlier {m["kind"]} ({when}): "{m["text"]}" (memory {m["key"]}; '
                f"episodes {episodes})."
            )
    return lines


def _principal(runtime: Runtime[Context]) -> Principal:
    """The principal the caller established (CLI flags, server auth) for this run."""
    ctx = runtime.context or Context()
    return Principal(ctx.tenant_id, ctx.user_id)
