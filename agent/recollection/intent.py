"""What a message is: the one place that tells a research request from everything else.

:func:`classify` reads the text alone (no memory, no model) and returns an :class:`Understood`:

- ``forget``: "forget ..." (:func:`agent.research.routing.forget_topic`);
- ``question``: a question about the user, the agent's memory or the past ("what do you know
  about me?", "what was my horizon in March?", "why did you recommend Hold?");
- ``instruction``: a standing instruction or a constraint ("never include TSLA", "always ...",
  "from now on ...");
- ``statement``: something the user says about themselves, or a correction ("I hold a lot of
  AAPL", "my horizon is 2 years", "please remember that ..."): never research;
- ``research``: a request for analysis (a research verb, advice on buying or selling, or a
  ticker named in anything that is not one of the above);
- ``conversation``: greetings, thanks, help and anything else.

The capture node, the router and the application's preflight all call it, so a message is
understood the same way everywhere: only a research request is checked for tickers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from agent.learning.extraction import hot_path_facts
from agent.research.constraints import split_constraints
from agent.research.routing import extract_tickers, forget_topic

Intent = Literal["research", "statement", "question", "instruction", "forget", "conversation"]
INTENTS: tuple[Intent, ...] = (
    "research",
    "statement",
    "question",
    "instruction",
    "forget",
    "conversation",
)

#: The reply to a greeting, a request for help or a remark that asks for nothing.
HELP_REPLY = (
    "I research listed companies and remember what you tell me. Ask for research "
    '("Analyze NVDA", "quick snapshot of AAPL"), tell me about yourself ("my horizon is 5 '
    'years"), ask what I remember ("what do you know about me?", "what did we decide about '
    'NVDA?") or ask me to forget something ("forget that ...").'
)


@dataclass(frozen=True)
class Understood:
    """What a message is, and why (``reason`` names the rule that decided)."""

    intent: Intent
    reason: str
    #: What a forget request names.
    topic: str = ""


_FLAGS = re.IGNORECASE
#: Words that ask for research on their own.
_RESEARCH = re.compile(
    r"\b(analy[sz]e|analy[sz]ing|analysis|research|snapshot|deep[- ]dive|compare|comparison|"
    r"report on|look (?:at|into)|dig into|due diligence|thesis|price of|quote for|tl;?dr|"
    r"outlook (?:for|on)|how is \S+ doing|what about)\b",
    _FLAGS,
)
#: Asking for advice on what to buy or sell is a research request, even without a ticker.
_ADVICE = re.compile(
    r"\b(should (?:i|we) (?:buy|sell|hold|invest|add|trim)|what (?:should|shall) (?:i|we) "
    r"(?:buy|sell|invest)|is \S+ a (?:buy|sell)|worth buying|recommend (?:me|a|some|one)|"
    r"what do you recommend)\b",
    _FLAGS,
)
#: A question: a question mark, or a question word first.
_QUESTION_START = re.compile(
    r"^\s*(what|what's|whats|why|when|which|who|whom|how|where|do|does|did|have|has|is|are|"
    r"was|were|can|could|would|will|tell me|remind me|show me what)\b",
    _FLAGS,
)
#: Cues that a question is about the user, the agent's memory or the past.
_MEMORY = re.compile(
    r"\b(about me|know about|you know|you remember|do you have on|remember about|"
    r"(?:did|have|had) (?:we|i|you)|(?:is|was|are|were) my|what's my|whats my|my \w+ (?:is|was)|"
    r"i (?:asked|told|said|decided)|we (?:decided|agreed|discussed)|you (?:recommended|said|"
    r"decided|suggested|told)|last (?:time|session|month|week|year)|earlier|previously|"
    r"history|my (?:profile|preferences|horizon|risk|currency|watchlist|watch list|"
    r"exclusions|excluded|style|name|address|procedures|instructions|rules))\b",
    _FLAGS,
)
#: A standing instruction the constraint rules do not take (they take "never include ...").
_STANDING = re.compile(
    r"^\s*(?:please\s+)?(?:always|never|from now on|going forward|in future|in the future)\b|"
    r"\bfrom now on\b",
    _FLAGS,
)
#: The user speaking about themselves, or asking the agent to keep something in mind.
_FIRST_PERSON = re.compile(
    r"^\s*(?:(?:actually|also|btw|by the way|fyi|note that|just so you know|for the record|"
    r"for context|ok|okay|well|so)[,:]?\s+)*(?:i|i'm|im|i've|i'd|i'll|my|me|we|we're|our|"
    r"mine)\b|^\s*(?:please\s+)?(?:remember|note|keep in mind|bear in mind)\b",
    _FLAGS,
)
#: The user anywhere in a sentence ("Maybe I'll try options some day").
_SELF = re.compile(r"\b(i|i'm|im|i've|i'd|i'll|my|me|mine|we|we're|our)\b", _FLAGS)
#: First-person openers that ask for something ("I'd like an analysis of NVDA").
_REQUEST_OPENER = re.compile(
    r"^\s*(?:i(?:'d| would) like|i want|i need|i'm looking for|im looking for|can you|"
    r"could you|would you|please|pls|let's|lets)\b",
    _FLAGS,
)
_GREETING = re.compile(
    r"^\s*(hi|hello|hey|thanks|thank you|cheers|good (?:morning|afternoon|evening)|bye|"
    r"help|what can you do|who are you)\b",
    _FLAGS,
)


def classify(text: str, tickers: Iterable[str] = ()) -> Understood:
    """What ``text`` is (see the module docstring); ``tickers`` are the symbols the market
    provider carries, recognised in any case. A message of several sentences is a research
    request if any sentence is one; otherwise a question, an instruction, a statement or
    conversation, in that order of precedence."""
    message = (text or "").strip()
    if not message:
        return Understood("conversation", "empty message")
    topic = forget_topic(message)
    if topic is not None:
        return Understood("forget", "asks to forget", topic=topic)
    known = {t.upper() for t in tickers}
    rules, rest = split_constraints(message)
    found = [_sentence(s, known) for s in _SENTENCES.split(rest) if s.strip()]
    if rules:
        found.append(Understood("instruction", "states constraints"))
    for intent in _PRECEDENCE:
        for understood in found:
            if understood.intent == intent:
                return understood
    return found[0] if found else Understood("conversation", "no request")


_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
_PRECEDENCE: tuple[Intent, ...] = ("research", "question", "instruction", "statement")


def _sentence(message: str, known: set[str]) -> Understood:
    named, _ = extract_tickers(message, known)
    if is_memory_question(message):
        return Understood("question", "asks about the user, memory or the past")
    if _ADVICE.search(message):
        return Understood("research", "asks what to buy or sell")
    if _STANDING.search(message):
        return Understood("instruction", "a standing instruction")
    asks = _REQUEST_OPENER.search(message) and (_RESEARCH.search(message) or named)
    if _FIRST_PERSON.search(message) and not asks:
        return Understood("statement", "the user speaks about themselves")
    if hot_path_facts(message, "classify", tickers=known):
        return Understood("statement", "states a profile fact")
    if _RESEARCH.search(message):
        return Understood("research", "a research verb")
    if named:
        return Understood("research", "names " + ", ".join(named))
    if _GREETING.search(message):
        return Understood("conversation", "a greeting or a request for help")
    if _SELF.search(message) and not is_question(message):
        return Understood("statement", "the user speaks about themselves")
    if is_question(message):
        return Understood("conversation", "a question that is no research request")
    return Understood("conversation", "no request")


def is_question(text: str) -> bool:
    """Whether ``text`` is phrased as a question."""
    stripped = text.strip()
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


def is_memory_question(text: str) -> bool:
    """Whether ``text`` asks about the user, what the agent remembers or the past, rather
    than for research ("what did we decide about NVDA?" is one; "what is NVDA's beta?" not)."""
    return is_question(text) and bool(_MEMORY.search(text)) and not _ADVICE.search(text)
