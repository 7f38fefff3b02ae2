"""What a forget can name: the principal's memory read once, and the items ids or a topic find.

:func:`read_all` reads every item of one principal (scoped in storage), :func:`by_ids`
resolves ids to their tier and refuses an id the principal does not have, :func:`by_keyword`
lists the items that mention a topic. The graph's ``forget`` tool (which only proposes) and the
application's cascade (which deletes after the user confirms) both resolve names here, so they
resolve them the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory.facts import subject_for

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, Item

    from agent.recollection.reader import Recollection
    from memory.facts import FactRecord
    from memory.identity import Principal
    from memory.journal.records import Candidate, Episode, Procedure, SessionSummary

#: As many journal rows as one read takes (everything of one principal).
_ALL = 1_000_000
#: Cold-store items are read in pages of this size.
_PAGE = 1000
#: ... doubling up to this size.
_MAX_PAGE = 64_000


@dataclass
class Remembered:
    """Everything of the principal a forget chooses from, read once."""

    episodes: list[Episode]
    summaries: list[SessionSummary]
    candidates: list[Candidate]
    procedures: list[Procedure]
    facts: list[FactRecord]
    items: list[Item]
    #: The user's profile document (:func:`profile_path`) as ``(path, text)``, if there is one.
    profile: tuple[str, str] | None = None

    def profile_lines(self) -> list[tuple[str, str]]:
        """``(path#L<n>, line)`` for each line of the profile document that says something
        (not blank, not a heading)."""
        if self.profile is None:
            return []
        path, text = self.profile
        return [
            (f"{path}#L{n}", line)
            for n, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")
        ]


def profile_path(principal: Principal) -> str:
    """The principal's profile document in document memory: ``user-profiles/<user>.md``
    (``user-profiles/<tenant>/<user>.md`` for tenants other than ``default``)."""
    if principal.tenant_id == "default":
        return f"user-profiles/{principal.user_id}.md"
    return f"user-profiles/{principal.tenant_id}/{principal.user_id}.md"


async def read_all(memory: Recollection, items: list[Item] | None = None) -> Remembered:
    """Everything of ``memory``'s principal; ``items`` when the caller read the store already
    (or knows it holds nothing), else every item of :func:`all_items`."""
    journal, facts = memory.journal, memory.facts
    subject = subject_for(memory.principal)
    rows = [r for a in await facts.profile(subject) for r in await facts.history(subject, a)]
    if items is None:
        items = [] if memory.store is None else await all_items(memory.store, memory.principal)
    return Remembered(
        episodes=await journal.list_episodes(limit=_ALL),
        summaries=await journal.summaries(limit=_ALL),
        candidates=await journal.candidates(limit=_ALL),
        procedures=await journal.procedures(status=None),
        facts=rows,
        items=items,
    )


async def read_related(memory: Recollection, ids: Sequence[str]) -> Remembered:
    """What a forget of ``ids`` can touch of ``memory``'s principal, read by id rather than
    read whole: the journal rows ``ids`` name or that cite an episode they name
    (:meth:`~memory.journal.base.Journal.related`) and the fact rows they name or that cite
    such an episode (:meth:`~memory.facts.base.FactStore.related`); no store item (the caller
    reads those it can touch)."""
    related = await memory.journal.related(ids)
    episodes = [e.episode_id for e in related.episodes]
    rows = await memory.facts.related(subject_for(memory.principal), ids, episodes)
    return Remembered(
        episodes=list(related.episodes),
        summaries=list(related.summaries),
        candidates=list(related.candidates),
        procedures=list(related.procedures),
        facts=rows,
        items=[],
    )


async def all_items(store: BaseStore, principal: Principal) -> list[Item]:
    """Every item under the principal's namespace root (relative namespaces), newest first:
    in one read where the store can (:meth:`~memory.store.scoped.ScopedStore.aitems`), else
    page by page."""
    from memory.store.scoped import scoped

    view = scoped(store, principal)
    listed = await view.aitems()
    if listed is not None:
        return list(listed)
    found: list[Item] = []
    size = _PAGE
    while True:
        # A store pages by offset, and a listing by offset reads every item before it; pages
        # twice as large each time keep the whole read linear in the number of items.
        page = await view.asearch((), limit=size, offset=len(found), refresh_ttl=False)
        found.extend(page)
        if len(page) < size:
            return found
        size = min(2 * size, _MAX_PAGE)


def item_key(item: Item) -> str:
    """A cold-store item's id as a forget names it: its relative namespace and key."""
    return "/".join((*item.namespace, item.key))


def by_ids(mem: Remembered, ids: Sequence[str]) -> list[tuple[str, str]]:
    """``(tier, id)`` of each id; :class:`InvalidMemoryError` naming the ids the principal
    does not have (nothing is chosen then)."""
    from memory.errors import InvalidMemoryError

    known = known_ids(mem)
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise InvalidMemoryError(
            f"Nothing of yours has the id {', '.join(unknown)}; see `analyst memory list` "
            "(facts, memories, sessions) or `analyst memory episodes` for ids."
        )
    return [(known[i], i) for i in ids]


def known_ids(mem: Remembered) -> dict[str, str]:
    """Every id of ``mem`` (a profile document line as ``path#L<n>``), with its tier."""
    known: dict[str, str] = {}
    known.update({e.episode_id: "episodes" for e in mem.episodes})
    known.update({r.memory_id: "facts" for r in mem.facts})
    known.update({c.candidate_id: "candidates" for c in mem.candidates})
    known.update({p.procedure_id: "procedures" for p in mem.procedures})
    known.update({s.session_id: "summaries" for s in mem.summaries})
    known.update({i.key: "store" for i in mem.items})
    known.update({item_key(i): "store" for i in mem.items})
    known.update({line_id: "documents" for line_id, _ in mem.profile_lines()})
    return known


def row(tier: str, item_id: str, text: str) -> dict[str, Any]:
    """One listed item: ``{tier, id, text}`` (the text cut to 200 characters)."""
    return {"tier": tier, "id": item_id, "text": text[:200]}


Accept = Callable[[Any], bool]


def listing(
    mem: Remembered,
    episode: Accept,
    summary: Accept,
    fact: Accept,
    candidate: Accept,
    item: Accept,
) -> list[dict[str, Any]]:
    """The items each predicate accepts, one :func:`row` each."""
    rows = [row("episodes", e.episode_id, e.text) for e in mem.episodes if episode(e)]
    rows += [
        row("summaries", s.session_id, f"{s.topic}: {s.summary}")
        for s in mem.summaries
        if summary(s)
    ]
    rows += [
        row("facts", r.memory_id, f"{r.attribute} = {r.value!r}") for r in mem.facts if fact(r)
    ]
    rows += [row("candidates", c.candidate_id, c.quote) for c in mem.candidates if candidate(c)]
    rows += [row("store", item_key(i), str(i.value.get("text", ""))) for i in mem.items if item(i)]
    return rows


def by_keyword(mem: Remembered, topic: str) -> list[dict[str, Any]]:
    """The items that mention ``topic`` (any case): episodes, summaries (topic, summary, open
    items), fact values, candidates (quote and payload) and cold-store items (any field)."""
    needle = topic.strip().lower()

    def has(*texts: Any) -> bool:
        return any(needle in str(t).lower() for t in texts if t)

    rows = listing(
        mem,
        lambda e: has(e.text),
        lambda s: has(s.topic, s.summary, *s.open_items),
        lambda r: has(r.value),
        lambda c: has(c.quote, *c.payload.values()),
        lambda i: has(*i.value.values()),
    )
    rows += [row("documents", line_id, line) for line_id, line in mem.profile_lines() if has(line)]
    return rows
