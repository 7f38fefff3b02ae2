"""Remembering at the user's request: a text stored as a fact, a preference or a procedure.

:func:`remember` is the one write path of an explicit "remember this" -- ``analyst memory
remember``, the chat's ``/remember`` (through :meth:`agent.app.memory.MemoryControls.remember`)
and the model path's ``remember`` tool (:mod:`agent.learning.tools`, for the run's principal) all call
it with a :class:`~agent.learning.learner.Learner` of that principal:

- ``fact``: the profile attributes the hot-path rules find, recorded ``confirmed``;
- ``procedure``: the standing rules code can enforce (a ticker excluded, a research mode), in
  force at once;
- ``preference``: a long-term memory of kind ``preference`` (importance 7).

A text with no attribute (fact) or no enforceable rule (procedure), an empty or oversized one,
or one the user asked earlier to forget (a tombstone matches) is refused and nothing is stored.
Otherwise the words are stored first as an episode that everything stored cites, and that
episode is marked as extracted (a done session-end job whose result is what was stored), so no
later extraction learns the same words a second time, differently.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from memory.errors import InvalidMemoryError

if TYPE_CHECKING:
    from agent.learning.learner import Learner
    from memory.journal.records import Episode

#: What ``remember`` may store a text as.
RememberAs = Literal["fact", "preference", "procedure"]
REMEMBER_AS: tuple[RememberAs, ...] = ("fact", "preference", "procedure")
#: The journal thread of what is remembered from the command line (not a valid thread id,
#: so it is never one of the principal's conversations).
REMEMBER_THREAD = "memory:remember"
#: What each kind of remembered item does from now on.
STATE = {
    "fact": "confirmed: used by the planner from the next request",
    "procedure": "active: enforced in every conversation from the next request",
    "preference": "stored: recalled by meaning from the next request",
}
NO_FACT = (
    "No profile attribute recognised in {text!r}, so nothing was stored. A fact states your "
    "risk tolerance, horizon, watchlist, excluded tickers, report style or base currency, "
    'e.g. "my horizon is 10 years", "I\'m a conservative investor", "my base currency '
    'is EUR". To keep the text as it is: --as preference.'
)
NO_RULE = (
    "No rule code can enforce in {text!r}, so nothing was stored. A procedure excludes a "
    'ticker ("never analyse TSLA") or fixes the research mode ("always quick snapshots"). '
    "To keep the text as it is: --as preference."
)


async def remember(
    learner: Learner,
    text: str,
    *,
    as_: RememberAs = "preference",
    thread_id: str | None = None,
    max_chars: int = 2000,
) -> dict[str, Any]:
    """Remember ``text`` for ``learner``'s principal, in every conversation (see the module
    docstring); the words are stored as an episode of ``thread_id`` (the conversation they
    were said in; :data:`REMEMBER_THREAD` when none). Returns what was stored: its scope,
    state, the episode and each item with the command that removes it."""
    from agent.learning.extraction import hot_path_facts

    if as_ not in REMEMBER_AS:
        raise InvalidMemoryError(f"--as {as_!r} is not one of: {', '.join(REMEMBER_AS)}.")
    words = text.strip()
    if not words:
        raise InvalidMemoryError("Say what to remember; nothing was stored.")
    if len(words) > max_chars:
        raise InvalidMemoryError(
            f"The memory is {len(words):,} characters long; the limit is {max_chars:,} "
            "(ANALYST_MAX_MEMORY_CHARS). Shorten it, or raise ANALYST_MAX_MEMORY_CHARS."
        )
    # Checked before anything is written: a refused instruction stores nothing.
    if as_ == "fact" and not hot_path_facts(words, "-"):
        raise InvalidMemoryError(NO_FACT.format(text=words))
    if as_ == "procedure" and not rules(words, "-"):
        raise InvalidMemoryError(NO_RULE.format(text=words))
    if await learner.journal.tombstoned([words]):
        # The text itself is not repeated: it is what the user asked to forget.
        raise InvalidMemoryError(
            "You asked earlier to forget exactly this, so it is not remembered again "
            "(a tombstone stops it being learned); nothing was stored."
        )
    now = learner.clock()
    episode = await learner.record(
        thread_id or REMEMBER_THREAD,
        "message",
        words,
        turn=f"remember:{now.isoformat()}",
        meta={"remember": as_},
        at=now,
    )
    if as_ == "fact":
        stored = await _remember_facts(learner, episode)
    elif as_ == "procedure":
        stored = await _remember_procedures(learner, episode)
    else:
        stored = [await _remember_preference(learner, episode)]
    job = await learner.journal.enqueue("session_end", episode.thread_id, [episode.episode_id])
    await learner.journal.complete(job.job_id, {"remembered": stored})
    p = learner.principal
    return {
        "as": as_,
        "scope": f"{learner.subject} (tenant {p.tenant_id}), in every conversation",
        "state": STATE[as_],
        "episode_id": episode.episode_id,
        "thread_id": episode.thread_id,
        "stored": stored,
    }


def fact_command(verb: Literal["record", "retract"], attribute: str, value: Any = None) -> str:
    """The ``analyst facts`` command that records ``value`` for, or retracts, the principal's
    ``attribute`` (``me`` is the principal's own subject)."""
    import json
    import shlex

    if verb == "retract":
        return f"analyst facts retract me {attribute}"
    return (
        f"analyst facts record me {attribute} {shlex.quote(json.dumps(value, ensure_ascii=False))}"
    )


def rules(text: str, episode_id: str) -> list[Any]:
    """The enforceable standing rules the offline extractor reads in ``text`` (grounded)."""
    from agent.learning.extraction import Extraction, OfflineExtractor
    from agent.learning.grounding import ground
    from memory.journal.records import Episode

    episode = Episode("-", episode_id, "-", "-", datetime.now(UTC), "user", "message", text)
    signals = [
        s.model_copy(update={"standing": True})
        for s in OfflineExtractor().extract_now([episode]).preference_signals
        if s.rule
    ]
    grounded = ground(Extraction(topic="", summary="", preference_signals=signals), [episode])
    return list(grounded.accepted.preference_signals)


async def _remember_facts(learner: Learner, episode: Episode) -> list[dict[str, Any]]:
    from agent.learning.extraction import hot_path_facts
    from agent.learning.profile import attribute
    from memory.facts import MemoryDelta

    stored = []
    for fact in hot_path_facts(episode.text, episode.episode_id):
        value: Any = fact.value
        current = await learner.facts.current(learner.subject, fact.attribute)
        if attribute(fact.attribute).merge == "union" and current is not None:
            value = list(current.value or []) + [
                v for v in value or [] if v not in (current.value or [])
            ]
        record = await learner.facts.record(
            MemoryDelta(
                subject=learner.subject,
                attribute=fact.attribute,
                value=value,
                valid_from=episode.at,
                memory_type="profile",
                source="confirmed",
                source_episode_id=episode.episode_id,
            )
        )
        await learner.audit_fact(record, "remembered at the user's request")
        stored.append(
            {
                "kind": "fact",
                "id": record.memory_id,
                "attribute": fact.attribute,
                "value": record.value,
                "source": record.source,
                "episode_ids": [episode.episode_id],
                "edit": fact_command("record", fact.attribute, record.value),
                "remove": fact_command("retract", fact.attribute),
            }
        )
    return stored


async def _remember_procedures(learner: Learner, episode: Episode) -> list[dict[str, Any]]:
    from memory.journal.records import Procedure, stable_id

    p, now = learner.principal, learner.clock()
    stored = []
    for signal in rules(episode.text, episode.episode_id):
        procedure = await learner.journal.put_procedure(
            Procedure(
                tenant_id=p.tenant_id,
                procedure_id=stable_id(
                    "proc", p.tenant_id, p.user_id, episode.episode_id, signal.rule
                ),
                user_id=p.user_id,
                text=signal.text,
                rule=dict(signal.rule or {}),
                status="active",
                confirmed_at=now,
                review_at=now + timedelta(days=learner.review_days),
                episode_ids=(episode.episode_id,),
            )
        )
        stored.append(
            {
                "kind": "procedure",
                "id": procedure.procedure_id,
                "text": procedure.text,
                "rule": dict(procedure.rule),
                "review_at": procedure.review_at.isoformat(),
                "episode_ids": [episode.episode_id],
                "remove": f"analyst memory procedures --retire {procedure.procedure_id}",
            }
        )
    return stored


async def _remember_preference(learner: Learner, episode: Episode) -> dict[str, Any]:
    from memory.recall import aremember

    assert learner.store is not None
    key = await aremember(
        learner.store,
        learner.principal,
        episode.text,
        kind="preference",
        importance=7,
        source="confirmed",
        episode_ids=[episode.episode_id],
    )
    await learner.journal.audit(
        "write",
        "store",
        [key],
        reason="preference remembered at the user's request",
        content=episode.text,
    )
    return {
        "kind": "preference",
        "id": key,
        "text": episode.text,
        "importance": 7,
        "episode_ids": [episode.episode_id],
        "remove": f"analyst memory forget --key {key}",
    }
