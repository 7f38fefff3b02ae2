"""Extraction: what a conversation says that is worth remembering.

At a durable point (after a human decision, at the end of a session) an :class:`Extractor`
reads the episodes of a conversation and proposes an :class:`Extraction`: new profile facts
(semantic memory), preference signals (procedural), notable events (episodic), open items, and
a topic and summary (session memory). Every item carries :class:`Evidence`: a verbatim quote
and the ids of the episodes it comes from. No extractor is trusted: the write path stores only
what :func:`agent.learning.grounding.ground` accepts.

:class:`OfflineExtractor` (deterministic rules over the user's own words; every quote it emits
is a span of the episode it cites) is here; :class:`agent.learning.model_extraction.ModelExtractor`
is the chat-model one. :func:`hot_path_facts` applies the fact rules to one message, for the
router to act on at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field, JsonValue, field_validator

from agent.learning import discourse, profile, revisions, understanding
from agent.learning.quotes import locate, normalise_text, plain
from agent.reasoning.chat_model import no_usage
from agent.research.constraints import (
    clauses,
    excluded_tickers,
    forced_mode,
    included_sections,
    is_constraint,
)
from agent.research.routing import extract_tickers
from agent.research.tickers import COMPANY_NAMES

if TYPE_CHECKING:
    from agent.records import Usage
    from memory.journal.records import Episode

# -- the extraction schema (also the model's structured output) ---------------------------------


class Evidence(BaseModel):
    """Where an item comes from: the user's own words and the episodes that hold them."""

    quote: str = Field(
        description="Words copied verbatim from the episode that states this item: an exact "
        "span of its text, never a paraphrase or a summary."
    )
    episode_ids: list[str] = Field(
        min_length=1, description="Ids of the episodes the quote is taken from (at least one)."
    )


class ExtractedFact(Evidence):
    """A stable fact about the user: one attribute of their profile."""

    attribute: str = Field(
        description="The profile attribute, exactly one of: "
        + ", ".join(a.name for a in profile.ATTRIBUTES)
        + "."
    )
    value: JsonValue = Field(
        description="The value as the user stated it (a word, a number of years, a list of "
        "ticker symbols, a currency code); it is normalised after extraction."
    )
    correction: bool = Field(
        default=False,
        description="True when the user corrects an earlier value ('actually X, not Y').",
    )
    quoted_source: bool = Field(
        default=False,
        description="True when the user reports someone else's view ('my advisor says my "
        "horizon is 5 years'): the authority of the value is unclear.",
    )
    source: str = Field(
        default="",
        description="Who the reported view comes from, in a few words ('wife', 'risk quiz'); "
        "empty when the user states it.",
    )
    removed: list[str] = Field(
        default_factory=list,
        description="For a ticker list: the symbols the user took out ('I sold my TSLA', "
        "'drop META from my watchlist'); the quote must name each with its removal.",
    )
    whole: bool = Field(
        default=False,
        description="For a ticker list: True when the user names the whole list as it is now "
        "('just NVDA now'); value is then the entire list.",
    )
    withdrawn: bool = Field(
        default=False,
        description="True when the user withdraws the attribute's value and gives no new one "
        "('scratch that, I don't know my horizon yet'); value is then null.",
    )


class PreferenceSignal(Evidence):
    """How the user wants the analyst to behave."""

    text: str = Field(description="The preference in the user's words.")
    standing: bool = Field(
        description="True only when stated as a standing instruction: always, never, from now on."
    )
    rule: dict[str, JsonValue] | None = Field(
        default=None,
        description='What code can enforce: {"exclude_ticker": "TSLA"} for never analysing, '
        'including or recommending a ticker; {"mode": "flash"} for always quick snapshots; '
        '{"mode": "deep"} for always deep research. null for anything else.',
    )


class NotableEvent(Evidence):
    """Something that happened and is worth recalling later (episodic memory)."""

    type: Literal["decision", "rejection", "milestone"] = Field(
        description="decision: a report approved or an edited one published; rejection: a "
        "draft sent back with feedback; milestone: another notable step."
    )
    text: str = Field(description="One factual sentence saying what happened.")
    importance: int = Field(ge=1, le=10, description="1 (trivial) to 10 (critical).")
    tickers: list[str] = Field(
        default_factory=list, description="Ticker symbols the event is about."
    )

    @field_validator("tickers")
    @classmethod
    def _upper(cls, tickers: list[str]) -> list[str]:
        return list(dict.fromkeys(t.strip().lstrip("$").upper() for t in tickers if t.strip()))


class OpenItem(Evidence):
    """Something the user wants to come back to."""

    text: str = Field(description="What is open, in the user's words.")


class Extraction(BaseModel):
    """What one conversation says that is worth remembering. Omit anything uncertain."""

    topic: str = Field(description="A few words: what the conversation was about.")
    summary: str = Field(
        description="Two or three factual sentences: what was asked and what was decided."
    )
    notable_events: list[NotableEvent] = Field(
        default_factory=list, description="Decisions, rejections and milestones."
    )
    new_facts: list[ExtractedFact] = Field(
        default_factory=list, description="Profile facts the user stated plainly."
    )
    preference_signals: list[PreferenceSignal] = Field(
        default_factory=list, description="How the user wants the analyst to work."
    )
    open_items: list[OpenItem] = Field(
        default_factory=list, description="Things the user wants revisited or followed up."
    )


# -- extractors -------------------------------------------------------------------------------


class Extractor(Protocol):
    """What turns episodes into a proposed :class:`Extraction` (with the model usage it cost).

    ``label`` names it in output (``offline``, or the model's label).
    """

    label: str

    async def extract(self, episodes: Sequence[Episode]) -> tuple[Extraction, Usage]: ...


Item = TypeVar("Item", bound=Evidence)

# Clauses that state nothing for sure. Whole words; a hedge anywhere in a clause drops it.
_HEDGE = re.compile(
    r"\b(maybe|might|perhaps|possibly|probably|someday|some day|one day|sometime|"
    r"thinking (?:about|of)(?!\s+(?:it|that|this)\b)|(?:i'm|i am|im|still|been) thinking (?:about|of)|considering|not sure|unsure|i guess|i suppose|i think|"
    r"i wonder|wondering|if|unless|could be|may)\b",
    re.IGNORECASE,
)
_STANDING = re.compile(
    r"\b(always|never|from now on|going forward|from here on|in (?:the )?future|every time)\b",
    re.IGNORECASE,
)
_PLAIN_PREFERENCE = re.compile(
    r"\bi(?:\s+(?:really|generally|usually))?(?:\s+prefer|'d\s+rather|\s+would\s+rather)\b",
    re.IGNORECASE,
)
_OPEN_ITEM = re.compile(
    r"\b(remind me|next time|follow[\s-]?up (?:on|with)|let'?s revisit|let us revisit|"
    r"come back to|revisit)\b",
    re.IGNORECASE,
)


def _facts(
    readings: Iterable[understanding.Reading], episode_ids: list[str]
) -> list[ExtractedFact]:
    return [
        ExtractedFact(
            quote=r.quote,
            episode_ids=episode_ids,
            attribute=r.attribute,
            value=r.value,
            correction=r.correction,
            quoted_source=r.reported,
            source=r.source,
            removed=list(r.removed),
            whole=r.whole,
            withdrawn=r.withdrawn,
        )
        for r in readings
    ]


def _quote(text: str, clause: str) -> str:
    """``clause`` as it stands in ``text`` (clause splitting may re-space it)."""
    return locate(clause, text) or _excerpt(text)


def _excerpt(text: str, limit: int = 240) -> str:
    """The start of ``text``, verbatim, cut at a word boundary within ``limit`` characters."""
    stripped = text.strip()
    if len(stripped) <= limit:
        return stripped
    cut = stripped[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 2 else cut).rstrip()


def hot_path_facts(
    text: str,
    episode_id: str,
    *,
    tickers: Iterable[str] = (),
    recent: Sequence[str] = (),
    recent_ids: Sequence[str] = (),
    held: Mapping[str, Any] | None = None,
) -> list[ExtractedFact]:
    """The profile facts and corrections one message states, for the router to apply now.

    Only the fact rules of :class:`OfflineExtractor` run: no standing instructions, events or
    open items. ``tickers`` are symbols to recognise in any case (the provider's list);
    ``recent`` are the messages before this one in the conversation (oldest first), which a
    bare correction ("no sorry, 14") refers back to, and ``recent_ids`` their episode ids
    (an adoption, "she's right", cites the message it adopts); ``held`` is the stored
    profile (attribute -> value): a revision of a stored value ("scratch that, EUR") refers
    to it, and a list edit naming no list ("drop META") edits the list holding the ticker.
    """
    known = _known(tickers)
    context = [*(held or {}), *stated_attributes(recent, known)]
    readings = understanding.read(text, known=known, recent=context, held=held)
    earlier = list(zip(recent_ids, recent, strict=False))
    facts = _revisions(readings, episode_id, earlier, known)
    if not readings:
        facts += adopted_facts(text, episode_id, earlier, known) or answered_facts(
            text, episode_id, earlier, known
        )
    return facts


def _revisions(
    readings: Iterable[understanding.Reading],
    episode_id: str,
    earlier: Sequence[tuple[str, str]],
    known: Iterable[str],
) -> list[ExtractedFact]:
    """The facts of ``readings``; a revision that names only its new values ("replace it
    with GOOGL") takes out what the earlier message it refers to named, and cites it too
    (:func:`agent.learning.revisions.replacing`)."""
    facts = []
    for reading in readings:
        revised, before = revisions.replacing(reading, earlier, known)
        if revised.refers:
            continue  # "sold them both" with no earlier message that says which
        facts += _facts([revised], [episode_id, *([before] if before else [])])
    return facts


def adopted_facts(
    text: str, episode_id: str, earlier: Sequence[tuple[str, str]], known: Iterable[str]
) -> list[ExtractedFact]:
    """The claims of someone else the message ``text`` adopts ("she's right"), as the user's
    facts: the last earlier message (``(episode id, text)``, oldest first) that reports a
    view of the user; each cites this message first, then the one quoted."""
    if not discourse.adopts(plain(text)):
        return []
    for earlier_id, said in reversed(earlier):
        reported = [r for r in understanding.read(said, known=known) if r.reported]
        if reported:
            own = [replace(r, reported=False, source="") for r in reported]
            return _facts(own, [episode_id, earlier_id])
    return []


def answered_facts(
    text: str, episode_id: str, earlier: Sequence[tuple[str, str]], known: Iterable[str]
) -> list[ExtractedFact]:
    """The user's own values, in ``text``, of what someone else claimed in the message just
    before (``earlier``'s last, ``(episode id, text)``): "My dad thinks I should keep my
    drawdown under 10%." / "He's old-fashioned, I'm fine with 25." (see
    :func:`agent.learning.understanding.answered`). They cite ``text`` alone."""
    if not earlier:
        return []
    claimed = [r.attribute for r in understanding.read(earlier[-1][1], known=known) if r.reported]
    if not claimed:
        return []
    return _facts(understanding.answered(text, claimed, known=known), [episode_id])


def stated_attributes(texts: Iterable[str], known: Iterable[str] = ()) -> list[str]:
    """The attributes ``texts`` state, in order (what a later correction may refer to)."""
    attributes: list[str] = []
    for text in texts:
        attributes += [
            r.attribute for r in understanding.read(text, known=known, recent=attributes)
        ]
    return attributes


def _known(tickers: Iterable[str]) -> set[str]:
    return {t.upper() for t in tickers} | set(COMPANY_NAMES.values())


def _meta_tickers(meta: Mapping[str, Any]) -> list[str]:
    found = [meta.get("ticker"), *(meta.get("tickers") or [])]
    return [t.upper() for t in found if isinstance(t, str) and t.strip()]


class OfflineExtractor:
    """Deterministic extraction rules over the user's own episodes (no model, no network).

    Message episodes are read clause by clause:

    - facts: "my (investment) horizon is 10 years", "I'm a conservative investor", "my risk
      tolerance is moderate", "my base currency is EUR", "I prefer brief reports", "add NVDA to
      my watchlist" (the value is the tickers named, ``["NVDA"]``; the learning step merges
      them into the stored list); "actually my horizon is 2 years, not 10" is a correction;
      "my advisor says ..." marks the value as reported (``quoted_source``).
    - preferences: a rule clause (see :mod:`agent.research.constraints`) is a preference signal,
      ``standing`` when it says always, never or from now on, with the rule code enforces
      (``exclude_ticker``, ``mode``) when there is one; "I prefer X" that is no profile fact is
      a signal that is not standing.
    - open items: "remind me to ...", "next time ...", "follow up on ...", "let's revisit ...".

    A clause that hedges ("maybe", "might", "perhaps", "someday", "thinking about", "not
    sure", "if"), asks a question, or negates a fact produces no fact or preference. Decision
    episodes become events: ``approve`` and ``edit`` a decision (importance 7), ``reject`` a
    rejection with the feedback (importance 6); their ticker and rating come from ``meta``. A
    decision episode with no text is skipped: there is nothing to quote.

    ``tickers`` are symbols to recognise in any case ("never include tsla"); upper-case
    symbols, ``$``-prefixed ones and company names are recognised anyway.
    """

    label = "offline"

    def __init__(self, tickers: Iterable[str] = ()) -> None:
        self.known = _known(tickers)

    async def extract(self, episodes: Sequence[Episode]) -> tuple[Extraction, Usage]:
        return self.extract_now(episodes), no_usage()

    def extract_now(self, episodes: Sequence[Episode]) -> Extraction:
        """:meth:`extract` without the coroutine (it does no I/O)."""
        ordered = sorted((e for e in episodes if e.role == "user"), key=lambda e: e.at)
        facts: list[ExtractedFact] = []
        signals: list[PreferenceSignal] = []
        events: list[NotableEvent] = []
        items: list[OpenItem] = []
        stated: list[str] = []
        earlier: list[tuple[str, str]] = []
        for episode in ordered:
            if episode.kind == "message":
                ids = [episode.episode_id]
                # The exclusions asked for earlier in the session are what a ticker let back
                # in ("I'm fine with Nvidia now") takes out.
                asked = [t for s in signals if (t := _excluded_by(s))]
                held = {"excluded_tickers": asked} if asked else None
                readings = understanding.read(
                    episode.text, known=self.known, recent=stated, held=held
                )
                signals = _not_let_back(signals, readings)
                stated += [r.attribute for r in readings]
                facts += _revisions(readings, episode.episode_id, earlier, self.known)
                if not readings:
                    facts += adopted_facts(
                        episode.text, episode.episode_id, earlier, self.known
                    ) or answered_facts(episode.text, episode.episode_id, earlier, self.known)
                earlier = [*earlier[-2:], (episode.episode_id, episode.text)]
                for clause in clauses(episode.text):
                    quote = _quote(episode.text, clause)
                    said = normalise_text(clause)
                    stated_fact = any(
                        said in normalise_text(r.quote) or normalise_text(r.quote) in said
                        for r in readings
                    )
                    signals += self._signals(clause, quote, ids, stated_fact=stated_fact)
                    if _OPEN_ITEM.search(plain(clause)) and not _HEDGE.search(plain(clause)):
                        items.append(OpenItem(quote=quote, episode_ids=ids, text=clause))
            else:
                event = _event(episode)
                if event is not None:
                    events.append(event)
                feedback = _feedback(episode)
                if feedback is not None:
                    signals.append(feedback)
        return Extraction(
            # A currency the user named ("my base currency is EUR") is no ticker discussed.
            topic=self._topic(
                ordered, skip={f.value for f in facts if f.attribute == "base_currency"}
            ),
            summary=_summary(ordered),
            notable_events=_unique(events),
            new_facts=_unique(facts),
            preference_signals=_unique(signals),
            open_items=_unique(items),
        )

    def _signals(
        self, clause: str, quote: str, ids: list[str], *, stated_fact: bool
    ) -> list[PreferenceSignal]:
        words = plain(clause)
        if _HEDGE.search(words) or words.rstrip().endswith("?"):
            return []
        if is_constraint(words):
            standing = bool(_STANDING.search(words))
            known = self.known | set(extract_tickers(words, self.known)[1])
            rules: list[dict[str, JsonValue] | None] = [
                {"exclude_ticker": symbol} for symbol in excluded_tickers([words], known)
            ]
            mode = forced_mode([words])
            if mode is not None:
                rules.append({"mode": mode})
            rules += [{"include_section": name} for name in included_sections(words)]
            # One signal per rule (a rule has one key); a rule clause code cannot enforce
            # ("always mention the data date") is still a signal, with no rule.
            return [
                PreferenceSignal(
                    quote=quote, episode_ids=ids, text=clause, standing=standing, rule=r
                )
                for r in rules or [None]
            ]
        if _PLAIN_PREFERENCE.search(words) and not stated_fact:
            return [PreferenceSignal(quote=quote, episode_ids=ids, text=clause, standing=False)]
        return []

    def _topic(self, episodes: Sequence[Episode], *, skip: set[Any]) -> str:
        """The tickers discussed (decision meta, then symbols in messages), or else the start
        of the first message."""
        tickers: list[str] = []
        for episode in episodes:
            tickers += _meta_tickers(episode.meta)
            if episode.kind == "message":
                found, named = extract_tickers(episode.text, self.known)
                tickers += [*found, *(t for t in named if t not in skip)]
        if tickers:
            return ", ".join(dict.fromkeys(tickers))
        first = next((e.text for e in episodes if e.kind == "message" and e.text.strip()), "")
        return _excerpt(" ".join(first.split()), 60)


def _excluded_by(signal: PreferenceSignal) -> str:
    """The ticker ``signal``'s rule excludes, or ``""``."""
    ticker = (signal.rule or {}).get("exclude_ticker")
    return ticker if isinstance(ticker, str) else ""


def _not_let_back(
    signals: list[PreferenceSignal], readings: Sequence[understanding.Reading]
) -> list[PreferenceSignal]:
    """``signals`` without the exclusions ``readings`` take back ("Exclude Tesla and Nvidia."
    then "I'm fine with Nvidia now")."""
    back = {t for r in readings if r.attribute == "excluded_tickers" for t in r.removed}
    return [s for s in signals if _excluded_by(s) not in back] if back else signals


def _feedback(episode: Episode) -> PreferenceSignal | None:
    """A rejection's feedback as a preference signal (not standing): feedback that recurs
    across sessions becomes a behaviour to confirm, like a preference said in chat."""
    text = " ".join(episode.text.split())
    if episode.kind != "reject" or not any(c.isalpha() for c in text):
        return None
    return PreferenceSignal(
        quote=_excerpt(episode.text), episode_ids=[episode.episode_id], text=text, standing=False
    )


def _event(episode: Episode) -> NotableEvent | None:
    """The event a decision episode records, quoting its text (an edit: its first line); None
    when it has no text."""
    text = episode.text
    if episode.kind == "edit":
        text = next((line for line in text.splitlines() if line.strip()), "")
    quote = _excerpt(text)
    if not quote:
        return None
    tickers = _meta_tickers(episode.meta)
    named = " and ".join(tickers)
    the = f"the {named}" if named else "the"
    kind: Literal["decision", "rejection"] = "decision"
    if episode.kind == "approve":
        rating = episode.meta.get("rating")
        text = f"Approved {the} report" + (f" (rating {rating})" if rating else "")
        importance = 7
    elif episode.kind == "edit":
        text = f"Published an edited {named} report" if named else "Published an edited report"
        importance = 7
    else:
        text = f"Rejected {the} draft: {' '.join(quote.split())}"
        kind, importance = "rejection", 6
    return NotableEvent(
        quote=quote,
        episode_ids=[episode.episode_id],
        type=kind,
        text=text,
        importance=importance,
        tickers=tickers,
    )


def _summary(episodes: Sequence[Episode]) -> str:
    """What was asked and decided, in the episodes' own words; nothing else."""
    lines: list[str] = []
    for episode in episodes:
        if episode.kind == "message":
            asked = " ".join(_excerpt(episode.text, 120).split())
            if asked:
                lines.append(f'User: "{asked}"')
        else:
            event = _event(episode)
            if event is not None:
                lines.append(event.text.rstrip(".") + ".")
    shown, more = lines[:6], len(lines) - 6
    return " ".join(shown) + (f" ({more} more turns.)" if more > 0 else "")


def _unique(items: Iterable[Item]) -> list[Item]:
    """Items without repeats: the same item with the same quote keeps one entry, citing every
    episode that said it (in order)."""
    merged: dict[str, Item] = {}
    for item in items:
        data = item.model_dump(mode="json", exclude={"quote", "episode_ids"})
        key = json.dumps([type(item).__name__, data, normalise_text(item.quote)], sort_keys=True)
        if key in merged:
            ids = list(dict.fromkeys([*merged[key].episode_ids, *item.episode_ids]))
            merged[key] = merged[key].model_copy(update={"episode_ids": ids})
        else:
            merged[key] = item
    return list(merged.values())
