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
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field, JsonValue, field_validator

from agent.errors import InvalidProfileValueError
from agent.learning import profile
from agent.learning.quotes import locate, normalise_text, plain
from agent.reasoning.chat_model import no_usage
from agent.research.constraints import clauses, excluded_tickers, forced_mode, is_constraint
from agent.research.routing import NOT_TICKERS, extract_tickers
from agent.research.tickers import COMPANY_NAMES

if TYPE_CHECKING:
    from agent.state import Usage
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
    r"thinking (?:about|of)|considering|not sure|unsure|i guess|i suppose|i think|"
    r"i wonder|wondering|if|unless|could be|may)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(not|never|no longer|no|nor)\b|n't\b", re.IGNORECASE)
# "..., not 10" / "... rather than 10" at the end of a clause: the value being corrected.
_CORRECTED_TAIL = re.compile(
    r"(?:,\s*|\s+)(?:and\s+)?(?:not|rather than|instead of)\s+[^,;]*$", re.IGNORECASE
)
_CORRECTION = re.compile(
    r"\b(actually|correction|i meant|to be clear|in fact|sorry)\b", re.IGNORECASE
)
_REPORTED = re.compile(
    r"\b(?:my|our)\s+(?:financial\s+)?(?:advis[eo]r|planner|broker|accountant|banker|"
    r"wife|husband|partner|spouse|boss|manager|friend|dad|father|mum|mom|mother)\s+"
    r"(?:says|said|thinks|believes|reckons|told me|tells me|recommends|suggests)\b"
    r"|\baccording to\b",
    re.IGNORECASE,
)


def _words_of(vocabulary: Iterable[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"[\s-]+") for w in vocabulary)


_RISK_WORDS = _words_of(profile.REGISTRY["risk_tolerance"].vocabulary)
_STYLE_WORDS = _words_of(profile.REGISTRY["report_style"].vocabulary)
_DEGREE = r"(?:(?:very|fairly|pretty|quite|rather|more of|a bit of|an?)\s+)*"
_HORIZON = r"(?:my|our)\s+(?:(?:investment|investing|time)\s+)*horizon"
_IS = r"\s*(?:is|'s|’s|=|:|of)\s*(?:now\s+|about\s+|around\s+|roughly\s+|approximately\s+)*"

#: (attribute, pattern): the value is the pattern's ``v`` group, validated by the registry.
FACT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("horizon_years", rf"\b{_HORIZON}{_IS}(?P<v>{profile.DURATION})"),
        ("horizon_years", rf"\b{_HORIZON}{_IS}(?P<v>\d+(?:\.\d+)?)(?![\d.%]|\s*[-\w])"),
        (
            "horizon_years",
            rf"\bi(?:'m| am)\s+investing\s+for\s+(?:the\s+next\s+)?(?P<v>{profile.DURATION})",
        ),
        (
            "horizon_years",
            rf"\b(?:i\s+have|i've\s+got|i've)\s+an?\s+(?P<v>{profile.DURATION})\s+"
            r"(?:(?:investment|time)\s+)?horizon\b",
        ),
        (
            "risk_tolerance",
            rf"\b(?:my\s+)?risk\s+(?:tolerance|appetite|profile){_IS}"
            rf"{_DEGREE}(?P<v>{_RISK_WORDS})\b",
        ),
        ("risk_tolerance", rf"\bi(?:'m| am)\s+{_DEGREE}(?P<v>{_RISK_WORDS})\s+investor\b"),
        (
            "risk_tolerance",
            r"\bi(?:'m| am)\s+(?:(?:very|quite|pretty|fairly)\s+)?"
            r"(?P<v>risk[\s-]+averse|risk[\s-]+seeking)\b",
        ),
        (
            "base_currency",
            rf"\b(?:my\s+)?(?:base|home|reporting|portfolio)\s+currency{_IS}(?:the\s+)?"
            r"(?P<v>[€$£¥]|[A-Za-z]+(?:\s+(?:dollars?|francs?|pounds?))?)(?![A-Za-z])",
        ),
        (
            "report_style",
            r"\bi(?:\s+(?:really|much|generally))?(?:\s+prefer|\s+like|\s+want|'d\s+like|"
            r"\s+would\s+like)"
            rf"\s+(?P<v>{_STYLE_WORDS})\s+(?:reports?|analys[ie]s|write[\s-]?ups|notes)\b",
        ),
        (
            "report_style",
            r"\bi\s+(?:prefer|like|want)\s+(?:my\s+)?reports?\s+(?:to\s+be\s+|kept\s+)?"
            rf"(?P<v>{_STYLE_WORDS})\b",
        ),
        (
            "report_style",
            rf"\b(?:my\s+)?(?:preferred\s+)?report\s+style{_IS}(?P<v>{_STYLE_WORDS})\b",
        ),
        (
            "watchlist",
            r"\b(?:add|put)\s+(?P<v>[$\w.,\s-]+?)\s+(?:to|on|onto|in|into)\s+(?:my\s+)?"
            r"watch[\s-]?list\b",
        ),
        # Personal data (agent.learning.profile: never shown in logs, errors or the audit): a name
        # is capitalised words, an address runs to the end of the clause.
        (
            "full_name",
            r"\bmy\s+(?:full\s+)?name\s+is\s+"
            r"(?P<v>(?-i:[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,5}))",
        ),
        (
            "address",
            r"\bmy\s+(?:home\s+|postal\s+|mailing\s+)?address\s+is\s+(?P<v>[^.;!?\n]{5,200})",
        ),
    )
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
_FILLER = frozenset({"and", "or", "also", "the", "stock", "stocks", "shares", "ticker", "both"})


def _ticker_list(text: str, known: set[str]) -> list[str] | None:
    """Tickers named in ``text`` ('NVDA and $msft', 'Nvidia'), or None if a word is not one.

    A word counts as a ticker when it is written with ``$``, in upper case, names a company,
    or is a known symbol: "add them to my watchlist" names no ticker.
    """
    symbols: list[str] = []
    for word in re.findall(r"\$?[A-Za-z][A-Za-z0-9]*(?:[.-][A-Za-z]{1,2}\b)?", text):
        bare = word.lstrip("$")
        if bare.lower() in _FILLER:
            continue
        if bare.lower() in COMPANY_NAMES:
            symbol = COMPANY_NAMES[bare.lower()]
        elif (
            word.startswith("$")
            or bare.upper() in known
            or (bare.isupper() and bare.upper() not in NOT_TICKERS)
        ):
            symbol = bare.upper()
        else:
            return None
        if symbol not in symbols:
            symbols.append(symbol)
    return symbols or None


def _facts(clause: str, quote: str, episode_ids: list[str], known: set[str]) -> list[ExtractedFact]:
    """The profile facts one clause states plainly (none when it hedges, asks or negates)."""
    clause = plain(clause)
    if _HEDGE.search(clause) or clause.rstrip().endswith("?"):
        return []
    tail = _CORRECTED_TAIL.search(clause)
    stated = clause[: tail.start()] if tail else clause
    if _NEGATION.search(stated):
        return []
    correction = bool(tail or _CORRECTION.search(stated))
    reported = bool(_REPORTED.search(stated))
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    for attribute, pattern in FACT_PATTERNS:
        if attribute in seen:
            continue
        match = pattern.search(stated)
        if match is None:
            continue
        raw: object = match["v"]
        if attribute == "watchlist":
            raw = _ticker_list(match["v"], known)
            if raw is None:
                continue
        try:
            value = profile.validate(attribute, raw)
        except InvalidProfileValueError:
            continue
        seen.add(attribute)
        facts.append(
            ExtractedFact(
                quote=quote,
                episode_ids=episode_ids,
                attribute=attribute,
                value=value,
                correction=correction,
                quoted_source=reported,
            )
        )
    return facts


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
    text: str, episode_id: str, *, tickers: Iterable[str] = ()
) -> list[ExtractedFact]:
    """The profile facts and corrections one message states, for the router to apply now.

    Only the fact rules of :class:`OfflineExtractor` run: no standing instructions, events or
    open items. ``tickers`` are symbols to recognise in any case (the provider's list).
    """
    known = _known(tickers)
    out: list[ExtractedFact] = []
    for clause in clauses(text):
        out += _facts(clause, _quote(text, clause), [episode_id], known)
    return out


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
        for episode in ordered:
            if episode.kind == "message":
                for clause in clauses(episode.text):
                    quote, ids = _quote(episode.text, clause), [episode.episode_id]
                    found = _facts(clause, quote, ids, self.known)
                    facts += found
                    signals += self._signals(clause, quote, ids, stated_fact=bool(found))
                    if _OPEN_ITEM.search(plain(clause)) and not _HEDGE.search(plain(clause)):
                        items.append(OpenItem(quote=quote, episode_ids=ids, text=clause))
            else:
                event = _event(episode)
                if event is not None:
                    events.append(event)
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
