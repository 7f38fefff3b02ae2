"""The grounding check: no extractor is trusted.

:func:`ground` checks every item of an :class:`~agent.learning.extraction.Extraction` against
the transcript: its quote must occur (compared as :mod:`agent.learning.quotes` compares) in an
episode it cites that the user said, and a fact's quote must state its value (normalised
through :mod:`agent.learning.profile`). What passed is returned apart from what did not, each
refusal with a reason a user can read; the write path stores only grounded items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import JsonValue

from agent.errors import InvalidProfileValueError
from agent.learning import discourse, profile, symbols
from agent.learning.extraction import (
    Evidence,
    ExtractedFact,
    Extraction,
    PreferenceSignal,
)
from agent.learning.quotes import locate
from agent.research.constraints import included_sections

if TYPE_CHECKING:
    from memory.journal.records import Episode

#: The kinds of item, named as the journal's candidate kinds.
ItemKind = Literal["fact", "preference", "event", "open_item"]
#: The rules a preference may carry: what code enforces.
RULE_KEYS = ("exclude_ticker", "mode", "include_section")
_MODES = ("flash", "deep")


@dataclass(frozen=True)
class Rejection:
    """An item :func:`ground` refused: its kind, the item as JSON, and why."""

    kind: ItemKind
    item: dict[str, Any]
    reason: str


@dataclass(frozen=True)
class Grounded:
    """The items that passed the grounding check, and those that did not."""

    accepted: Extraction
    rejected: list[Rejection] = field(default_factory=list)


def _ids(ids: Iterable[str]) -> str:
    return ", ".join(ids) or "none"


def _evidence_problem(item: Evidence, episodes: Mapping[str, Episode]) -> tuple[str, str]:
    """(problem, verbatim quote): the problem is empty when the quote is grounded."""
    if not any(c.isalnum() for c in item.quote):
        return "the quote is empty: every item needs the user's own words as evidence", ""
    unknown = [i for i in item.episode_ids if i not in episodes]
    if unknown:
        return (
            f"it cites episode(s) {_ids(unknown)} that are not among this extraction's "
            f"episodes ({_ids(episodes)})",
            "",
        )
    for episode_id in item.episode_ids:
        episode = episodes[episode_id]
        span = locate(item.quote, episode.text)
        if span is not None and episode.role == "user":
            return "", span
    cited = _ids(item.episode_ids)
    if any(locate(item.quote, episodes[i].text) for i in item.episode_ids):
        return (
            f"the quote occurs only in the analyst's turns ({cited}); memory is learned from "
            "what the user said",
            "",
        )
    elsewhere = [i for i, e in episodes.items() if locate(item.quote, e.text) is not None]
    hint = f"; it occurs in {_ids(elsewhere)}, which the item does not cite" if elsewhere else ""
    return f"the quote {item.quote!r} does not occur in the cited episode(s) {cited}{hint}", ""


def check_rule(rule: Mapping[str, JsonValue], quote: str) -> dict[str, JsonValue]:
    """``rule`` in canonical form, or ``ValueError`` saying why code could not enforce it.

    A rule has exactly one key: ``exclude_ticker`` (a ticker symbol ``quote`` names),
    ``mode`` (``flash`` or ``deep``) or ``include_section`` (a report section ``quote`` asks
    to always include, e.g. "Peer comparison" for "always include the peer table").
    """
    if len(rule) != 1 or next(iter(rule)) not in RULE_KEYS:
        raise ValueError(
            f"the rule {dict(rule)!r} is not one code can enforce; a rule is "
            '{"exclude_ticker": SYMBOL}, {"mode": "flash" | "deep"} or '
            '{"include_section": SECTION}'
        )
    key, value = next(iter(rule.items()))
    if key == "include_section":
        asked = included_sections(quote, standing=True)
        if value not in asked:
            raise ValueError(
                f"the quote does not ask to always include the section {value!r}"
                + (f" (it asks for {', '.join(asked)})" if asked else "")
            )
        return {"include_section": value}
    if key == "mode":
        if value not in _MODES:
            raise ValueError(f"the rule's mode {value!r} is not one of: {', '.join(_MODES)}")
        return {"mode": value}
    try:
        symbol = symbols.ticker_symbol(value) if isinstance(value, str) else None
    except ValueError:
        symbol = None
    if symbol is None:
        raise ValueError(f"the rule's exclude_ticker {value!r} is not a ticker symbol")
    if not symbols.mentions_ticker(symbol, quote):
        raise ValueError(f"the quote does not name {symbol}, the ticker the rule excludes")
    return {"exclude_ticker": symbol}


Item = TypeVar("Item", bound=Evidence)


def _list_edit(item: ExtractedFact, value: JsonValue, before: Sequence[str]) -> dict[str, Any]:
    """The canonical parts of a list edit whose quote states them: each ticker it keeps or
    adds, each it takes out with its removal cue (or, for a revision that names only its new
    values, named in an earlier message it cites, ``before``), "just"/"only" for a whole
    list."""
    if profile.attribute(item.attribute).merge != "union":
        raise ValueError(f"{item.attribute} is no list: nothing can be taken out of it")
    removed = profile.validate(item.attribute, item.removed) if item.removed else []
    added = value if isinstance(value, list) else []
    if added and not profile.attribute(item.attribute).supports(added, item.quote):
        raise ValueError(f"the quote {item.quote!r} does not state {item.attribute}={added!r}")
    spec = profile.attribute(item.attribute)
    names = symbols.mentions_ticker if item.attribute in discourse.LISTS else None
    taken = [str(r) for r in removed] if isinstance(removed, list) else []
    if not isinstance(removed, list) or not (
        discourse.removal_stated(
            taken, item.quote, names or (lambda r, quote: spec.supports([r], quote))
        )
        or (names is not None and discourse.replacement_stated(taken, item.quote, before))
        or (names is not None and discourse.referred_stated(taken, item.quote, before))
    ):
        raise ValueError(
            f"the quote {item.quote!r} does not take {removed!r} out of {item.attribute}"
        )
    if item.whole and not (added and discourse.whole_stated([str(a) for a in added], item.quote)):
        raise ValueError(f"the quote {item.quote!r} does not name {added!r} as the whole list")
    return {"value": added, "removed": removed}


def ground(extraction: Extraction, episodes: Sequence[Episode]) -> Grounded:
    """Split ``extraction`` into the items the transcript supports and the rest.

    An item is rejected when its quote is empty; when it cites an episode that is not in
    ``episodes``; when its quote (compared case-folded, whitespace collapsed, typographic
    quotes made plain) does not occur in a cited episode said by the user. A fact is also
    rejected when its attribute is not in the profile registry, when its value fails the
    registry's validation, or when the quote does not state the value; a preference when its
    rule is not one code can enforce. Accepted items carry the quote as it stands in the
    episode, and facts their canonical value. ``topic`` and ``summary`` are not items: they
    are kept as given.
    """
    by_id = {e.episode_id: e for e in episodes}
    rejected: list[Rejection] = []

    def keep(
        kind: ItemKind, items: Sequence[Item], check: Callable[[Item], dict[str, Any]]
    ) -> list[Item]:
        out: list[Item] = []
        for item in items:
            problem, span = _evidence_problem(item, by_id)
            changes: dict[str, Any] = {"quote": span}
            if not problem:
                try:
                    changes |= check(item.model_copy(update=changes))
                except (ValueError, InvalidProfileValueError) as e:
                    problem = str(e)
            if problem:
                rejected.append(Rejection(kind, item.model_dump(mode="json"), problem))
            else:
                out.append(item.model_copy(update=changes))
        return out

    def fact(item: ExtractedFact) -> dict[str, Any]:
        if item.withdrawn:
            profile.attribute(item.attribute)
            if discourse.withdrawn(item.quote) != item.attribute:
                raise ValueError(f"the quote {item.quote!r} does not withdraw {item.attribute}")
            return {"value": None}
        value = profile.validate(item.attribute, item.value)
        if item.removed or item.whole:
            before = [by_id[i].text for i in item.episode_ids[1:] if by_id[i].role == "user"]
            return _list_edit(item, value, before)
        if not profile.attribute(item.attribute).supports(value, item.quote):
            raise ValueError(f"the quote {item.quote!r} does not state {item.attribute}={value!r}")
        return {"value": value}

    def preference(item: PreferenceSignal) -> dict[str, Any]:
        return {} if item.rule is None else {"rule": check_rule(item.rule, item.quote)}

    def no_more(item: Evidence) -> dict[str, Any]:
        return {}

    accepted = Extraction(
        topic=extraction.topic,
        summary=extraction.summary,
        new_facts=keep("fact", extraction.new_facts, fact),
        preference_signals=keep("preference", extraction.preference_signals, preference),
        notable_events=keep("event", extraction.notable_events, no_more),
        open_items=keep("open_item", extraction.open_items, no_more),
    )
    return Grounded(accepted, rejected)
