"""What a forget can name: the principal's memory read once, and the items ids or a topic find.

:func:`read_all` reads every item of one principal (scoped in storage), :func:`by_ids`
resolves ids to their tier and refuses an id the principal does not have, :func:`by_keyword`
lists the items that mention a topic. The graph's ``forget`` tool (which only proposes) and the
application's cascade (which deletes after the user confirms) both resolve names here, so they
resolve them the same way.
"""

from __future__ import annotations

import re
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


# -- forgetting by what it is -------------------------------------------------------------------

#: Words that name a profile attribute in a request to forget ("forget that I own NVDA",
#: "stop remembering where I work"), besides the attribute's own name (``horizon_years`` is
#: also "horizon years"). Checked at word boundaries, any case.
ALIASES: dict[str, tuple[str, ...]] = {
    "holdings": ("own", "owned", "hold", "holding", "position", "positions", "portfolio"),
    "watchlist": ("watch list", "watching", "follow", "following", "track", "tracking"),
    "excluded_tickers": ("exclude", "excluded", "exclusions", "avoid"),
    "excluded_sectors": ("exclude", "excluded", "exclusions", "avoid"),
    "employer": ("work", "works", "job", "workplace", "company i work"),
    "address": ("live", "home"),
    "full_name": ("name", "called"),
    "age": ("how old", "years old", "birthday"),
    "risk_tolerance": ("risk", "risk appetite", "risk profile"),
    "horizon_years": ("horizon", "time frame", "timeframe"),
    "report_style": ("report style", "report length", "reports"),
    "base_currency": ("currency",),
    "goal": ("goals", "objective", "saving for"),
    "income_preference": ("income", "dividends", "dividend"),
    "max_drawdown_pct": ("drawdown", "loss limit", "largest loss"),
    "sectors_of_interest": ("sectors", "interested in"),
}

#: The id of one element of a list attribute (``holdings:NVDA``): forgetting it erases every
#: version that held it and keeps the rest of the list as a new version.
VALUE_ID = re.compile(r"^(?P<attribute>[a-z_]+):(?P<element>[^\s:]+)$")


@dataclass(frozen=True)
class Target:
    """What a description names: one attribute, whole (``element`` None) or one element of
    its list."""

    attribute: str
    element: str | None = None

    @property
    def value_id(self) -> str:
        """``attribute:element``, the id a forget names an element by."""
        return f"{self.attribute}:{self.element}"

    def holds(self, value: Any) -> bool:
        """Whether a stored ``value`` of the attribute holds what is forgotten."""
        if self.element is None:
            return True
        return isinstance(value, list) and any(
            str(v).lower() == self.element.lower() for v in value
        )


def _said(needle: str, text: str) -> bool:
    """``needle`` in ``text`` at word boundaries, any case."""
    return bool(re.search(rf"(?<!\w){re.escape(needle.strip())}(?!\w)", text, re.IGNORECASE))


def named_attributes(text: str) -> set[str]:
    """The profile attributes ``text`` names (:data:`ALIASES` and the registry's names)."""
    from agent.learning.profile import REGISTRY

    found = set()
    for name in REGISTRY:
        words = (name.replace("_", " "), *ALIASES.get(name, ()))
        if any(_said(w, text) for w in words):
            found.add(name)
    return found


def _mentioned(attribute: str, value: Any, text: str) -> bool:
    """Whether ``text`` states the stored ``value`` (or, for a list, the element ``value``)."""
    from agent.learning.profile import REGISTRY

    if isinstance(value, str) and len(value) >= 3 and _said(value, text):
        return True
    known = REGISTRY.get(attribute)
    if known is None or known.merge == "union" or isinstance(value, (int, float)):
        return False
    try:
        return known.supports(value, text)
    except (TypeError, ValueError):
        return False


def targets(mem: Remembered, text: str) -> list[Target]:
    """What ``text`` asks to forget among the stored facts, by attribute and value: an
    element of a list attribute the text names (or, if it names no attribute, of any list
    holding it); a whole attribute whose value the text states, or that it names and says
    nothing else about ("my horizon", "where I work": not "that I own MSFT" when MSFT is
    not held)."""
    named = named_attributes(text)
    stored: dict[str, list[Any]] = {}
    for r in mem.facts:
        stored.setdefault(r.attribute, []).append(r.value)
    found: list[Target] = []
    for attribute, values in sorted(stored.items()):
        only = attribute in named and only_names(text, attribute)
        if any(isinstance(v, list) for v in values):
            elements = sorted(
                {str(e) for v in values if isinstance(v, list) for e in v if _said(str(e), text)}
            )
            if elements and (attribute in named or not named):
                found += [Target(attribute, e) for e in elements]
            elif only:
                found.append(Target(attribute))
        elif (
            only
            or any(_mentioned(attribute, v, text) for v in values)
            or (attribute in named and _states_value(mem, attribute, text))
        ):
            found.append(Target(attribute))
    return found


#: Words a request to forget says around an attribute's name without naming a value.
_FILLER = frozenset(
    "a about all am an any are at current do everything for how i i'm im in is it me my "
    "of that the this to was what where you your".split()
)


def only_names(text: str, attribute: str) -> bool:
    """Whether ``text`` says nothing but the attribute's name or aliases (and filler words
    such as "my", "that", "where I"): it names the attribute, not a value of it."""
    rest = text.lower()
    words = (attribute.replace("_", " "), *ALIASES.get(attribute, ()))
    for w in sorted(words, key=len, reverse=True):
        rest = re.sub(rf"(?<!\w){re.escape(w)}(?!\w)", " ", rest)
    return all(word in _FILLER for word in re.findall(r"[\w']+", rest))


def target_words(target: Target, mem: Remembered) -> list[str]:
    """The texts that carry what ``target`` forgets: the element, or the attribute's stored
    values (strings of three characters or more, each list element)."""
    if target.element is not None:
        return [target.element]
    words: set[str] = set()
    for r in mem.facts:
        if r.attribute == target.attribute:
            values = r.value if isinstance(r.value, list) else [r.value]
            words |= {str(v) for v in values if v is not None and len(str(v)) >= 3}
    return sorted(words)


def by_description(mem: Remembered, text: str) -> list[dict[str, Any]]:
    """What forgetting the facts ``text`` describes (:func:`targets`) takes, listed: an
    element's versions as one ``values`` row (``attribute:element``), a whole attribute's
    versions as ``facts`` rows, and the episodes, candidates and memories that state it (the
    episodes its versions were stated in, and those that name it and its attribute). Empty
    when ``text`` describes no stored fact."""

    rows: list[dict[str, Any]] = []
    cited: set[str] = set()
    said: list[tuple[Target, list[str], tuple[str, ...]]] = []
    for t in targets(mem, text):
        versions = [r for r in mem.facts if r.attribute == t.attribute and t.holds(r.value)]
        cited |= {s for r in versions for s in (r.source_episode_id, *r.restated_in) if s}
        if t.element is not None:
            kept = _rest(mem, t)
            rows.append(
                row(
                    "values",
                    t.value_id,
                    f"{t.element} from {t.attribute} ({len(versions)} version(s) erased; "
                    + (f"a new version keeps {', '.join(kept)})" if kept else "nothing is left)"),
                )
            )
        else:
            rows += [row("facts", r.memory_id, f"{r.attribute} = {r.value!r}") for r in versions]
        words = target_words(t, mem)
        aliases = (t.attribute.replace("_", " "), *ALIASES.get(t.attribute, ()))
        said.append((t, words, aliases if t.element is not None else ()))

    def states(*texts: Any) -> bool:
        joined = " ".join(str(x) for x in texts if x)
        return any(
            (
                any(_said(w, joined) for w in words)
                and (not aliases or any(_said(a, joined) for a in aliases))
            )
            or (t.element is None and _states_value(mem, t.attribute, joined))
            for t, words, aliases in said
        )

    if not said:
        return []
    rows += listing(
        mem,
        lambda e: e.episode_id in cited or states(e.text),
        lambda s: False,  # a summary holding it is rewritten, not deleted
        lambda r: False,  # the fact rows are listed above
        lambda c: states(c.quote, *c.payload.values()),
        lambda i: (
            bool(cited.intersection(i.value.get("episode_ids") or ())) or states(*i.value.values())
        ),
    )
    return rows


def _states_value(mem: Remembered, attribute: str, text: str) -> bool:
    """Whether ``text`` states a stored value of the scalar ``attribute`` the way the
    registry reads it ("10 years" for a horizon of 10)."""
    from agent.learning.profile import REGISTRY

    known = REGISTRY.get(attribute)
    if known is None:
        return False
    for r in mem.facts:
        if r.attribute == attribute and not isinstance(r.value, list):
            try:
                if known.supports(r.value, text):
                    return True
            except (TypeError, ValueError):
                continue
    return False


def _rest(mem: Remembered, target: Target) -> list[str]:
    """The current list of ``target``'s attribute without its element."""
    current = [r for r in mem.facts if r.attribute == target.attribute and r.status == "open"]
    if not current or not isinstance(current[-1].value, list):
        return []
    return [str(v) for v in current[-1].value if not target.holds([v])]


def proposed(mem: Remembered, text: str) -> list[dict[str, Any]]:
    """What a request to forget ``text`` lists: the facts it describes with what states them
    (:func:`by_description`), else what mentions it (:func:`by_keyword`)."""
    return by_description(mem, text) or by_keyword(mem, text)
