"""Which profile attribute a clause speaks of, by meaning rather than by phrasing.

The detectors of :mod:`agent.learning.phrasing` need the words a rule was written for; a user
who says the same thing another way ("red days ruin my week", "I write code for Google these
days") states nothing to them. Here each clause of the user's own words that no rule read is
embedded with the bundled MiniLM (:class:`memory.embeddings.MiniLMEmbedder`: numpy, no torch),
its companies and durations said generically first (:func:`masked`), and compared with a few
descriptions of each attribute written for the purpose (:mod:`agent.learning.senses`: generic
sentences, none taken from a corpus case). A clause whose nearest sense is an attribute, by at
least :data:`THRESHOLD` and :data:`SENSE_MARGIN` ahead of the next (both chosen on the develop
split with ``scripts/curve_meaning.py``), is read for that attribute's value **from its
words** with the readers the rules use: tickers, durations, sector words, company names. A
clause that names no such value states nothing, however close its meaning.

Risk tolerance names no value word when it is said as a reaction to losses: a clause whose
nearest sense is a risk level (at least :data:`RISK_THRESHOLD`) has the level its words of fear,
appetite and measure say (:data:`agent.learning.senses.FEAR` ...), which the embedding alone
barely tells apart. :func:`states_risk` is that same judgment, which the registry's grounding
check (:mod:`agent.learning.profile`) accepts as a quote stating the level.

Questions, suppositions, hedges and other people's parts never get here (the understanding
leaves them out before); a clause whose subject is someone else, or that supposes, is not read.
The model loads on the first message read, never at import (chat start stays fast); the
descriptions' vectors are cached in the user's cache folder, clauses in memory by text (a
message is read several times: as itself, and as context of the next), and a message's
clauses are embedded in one batch (:func:`prepare`).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.learning import (
    employment,
    exclusions,
    indirect,
    quantities,
    senses,
    symbols,
    vocabulary,
)
from agent.learning.phrasing import Found
from agent.learning.repairs import bare_value
from agent.research.tickers import COMPANY_NAMES

if TYPE_CHECKING:
    import numpy as np

#: Cosine similarity a clause needs to an attribute's nearest description (develop split:
#: the precision/recall curve of ``scripts/curve_meaning.py``).
THRESHOLD = 0.45
#: How much nearer a clause must be to its sense than to the next one.
SENSE_MARGIN = 0.05
#: The similarity a clause needs to its nearest risk level's descriptions to speak of risk.
RISK_THRESHOLD = 0.45
#: Words a clause needs to be read by meaning ("not Apple" says too little to place).
_WORDS = 4
#: The width of MiniLM's vectors.
_DIMS = 384
#: Clauses kept embedded (a message is read again as context of later messages).
_CACHE_SIZE = 512

_I = re.IGNORECASE
#: The user speaks of themselves, or of their money ("the pot stays put for 12 years").
_SELF = re.compile(
    r"\b(?:i|i'm|im|i've|ive|i'd|i'll|me|my|mine|myself|we|our|us|(?:the|this|that)\s+"
    r"(?:money|pot|cash|portfolio|account|savings|nest egg))\b",
    _I,
)
#: Someone else as the clause's subject ("a friend of mine works at ...", "my brother
#: hates ..."): what it says is theirs, so it is not read by meaning.
_OTHER = re.compile(
    rf"^\W*(?:\w+\W+){{0,2}}?(?:(?:my|our|his|her|their|a|an|the)\s+(?:[\w-]+\s+)?"
    rf"{indirect.PEOPLE}|he|she|they|he's|she's|they're)\b",
    _I,
)
_NEGATION = re.compile(r"\b(?:not|never|no|nothing|none|without)\b|n't\b|\bcannot\b", _I)
_EXPERIENCE = re.compile(r"\b(?:been|past|last|ago|since|experience|already|for the)\b", _I)
_WORD = re.compile(r"\$?[\w.&-]+(?:'s)?")
_SOLD = re.compile(r"\b(?:sold|selling|sell|dumped|got rid of|exited|closed|used to)\b", _I)
_FEELING = re.compile(
    rf"(?<![\w'])(?:(?P<fear>{senses.FEAR})|(?P<appetite>{senses.APPETITE}))(?![\w'])", _I
)
#: A measure word, not one that counts money ("a few hundred dollars" measures no risk).
#: Risk and losses named: a clause about them may say a level by its measure words ("I'm
#: comfortable taking a fair amount of risk").
_RISKY = re.compile(
    r"\b(?:risk\w*|volatil\w*|swings?|ups and downs|crash\w*|drops?|dips?|falls?|fell|losses|"
    r"losing|slides?|slump\w*|sell-?offs?|downturns?|bear markets?)\b",
    _I,
)
_MEASURED = re.compile(
    rf"(?<![\w'])(?:{senses.MEASURED})(?![\w'])(?!\s+(?:hundred|thousand|million|grand|dollars?|"
    r"bucks|quid|pounds?|euros?|\d))",
    _I,
)
#: A place between two ends ("somewhere in the middle", "middle of the road"), not the middle
#: of something ("in the middle of a move").
_BETWEEN = re.compile(
    r"\b(?:middle of the road|middle(?!\s+of\b)|in[\s-]between|somewhere between)\b", _I
)
#: A negation in the few words before a feeling turns it ("doesn't bother me").
_TURNED = re.compile(r"(?:\b(?:not|never|no|without|hardly|barely)|n't)\s+(?:[\w']+\s+){0,3}$", _I)
#: A supposition states no trait ("if the euro keeps falling I'd hate ...").
_SUPPOSING = re.compile(
    r"\b(?:if|unless|suppos\w*|imagin\w*|hypothetical\w*|in case|whether|wonder\w*)\b", _I
)
#: A name in the middle of a clause (an employer), not "I" or its first word.
_CAPITALISED = re.compile(r"(?<=\w\s)(?!I\b|I')[A-Z][\w&.-]+")
_SECTOR_WORDS = {
    w
    for table in (vocabulary.SECTORS, vocabulary.EXCLUDED_SECTORS)
    for k, v in table.items()
    for w in (k, *v)
}
_SECTORS = re.compile(
    rf"(?<![\w-])(?:{'|'.join(re.escape(w) for w in sorted(_SECTOR_WORDS, key=len, reverse=True))})"
    r"(?![\w-])",
    _I,
)
#: Negations that keep money invested rather than deny ("won't need it for 20 years").
_KEEPING = re.compile(
    r"\b(?:won't|will not|don't|do not|not|never)\s+(?:[\w']+\s+){0,2}?"
    r"(?:need(?:ing)?|touch(?:ing)?|be touched|withdraw\w*|sell(?:ing)?|us(?:e|ing))\b",
    _I,
)
#: What no longer holds ("I used to work at ...").
_FORMER = re.compile(
    r"\b(?:used to|formerly|former|previously|ex-|old job|left|quit|retired from)\b", _I
)
#: Not held yet ("I'm buying Tesla today", "I'd like to own Apple").
#: A plan is the verb ("I plan to buy", "planning on"), not the noun ("the stock plan at work").
_NOT_YET = re.compile(
    r"\b(?:buy|buying|will|going to|gonna|plan(?:s|ned)?\s+(?:to|on)|planning|want\w*|would|'d|"
    r"like to|hope\w*)\b",
    _I,
)
#: Words of owning securities: a company named without them may be its product.
_INVESTED = re.compile(
    r"\b(?:shares?|stocks?|stake|positions?|portfolio|holdings?|holding|invested|equity|"
    r"savings|money|[A-Z]{2,5})\b|\$[A-Za-z]"
)
#: A company an employer may be: one the ticker table knows by name.
_COMPANY = re.compile(
    rf"(?<![\w'])(?:{'|'.join(sorted(COMPANY_NAMES, key=len, reverse=True))})(?![\w])", _I
)
#: Where one clause ends and the next begins: punctuation, a dash, a conjunction of reason,
#: an "and" before a new subject ("I'm 44 and I'd like to give this ...").
_BREAK = re.compile(
    r"\s*(?:[,;:.!?]+|\s-+\s|\b(?:but|so|because|since|which means|although|though)\b|"
    r"\band\b(?=\s+(?:i|i'm|im|i'd|i've|i'll|we|we're|we'd)\s))\s*",
    _I,
)


def clauses(text: str) -> list[tuple[str, int]]:
    """The clauses of ``text`` with where each starts (verbatim spans)."""
    out, start = [], 0
    for cut in [*_BREAK.finditer(text), None]:
        end = len(text) if cut is None else cut.start()
        if text[start:end].strip():
            out.append((text[start:end], start))
        if cut is not None:
            start = cut.end()
    return out


class _Model:
    """The embedder and the descriptions' vectors, loaded once on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encode: Any = None
        self._failed = False
        self.senses: dict[str, np.ndarray] = {}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def ready(self) -> bool:
        with self._lock:
            if self._encode is None and not self._failed:
                self._load()
            return self._encode is not None

    def _load(self) -> None:
        import numpy as np

        from memory.embeddings import MiniLMEmbedder
        from memory.errors import EmbeddingError

        embedder = MiniLMEmbedder()
        try:
            embedder.load()
        except EmbeddingError:
            self._failed = True  # no model installed: the rules alone read the message
            return

        def encode(texts: list[str]) -> np.ndarray:
            return np.asarray(embedder.embed_documents(texts), dtype=np.float32)

        self._encode = encode
        texts = [t for group in senses.SENSES.values() for t in group]
        rows = _stored(embedder.model_id, texts, encode)
        at = 0
        for name, group in senses.SENSES.items():
            self.senses[name], at = rows[at : at + len(group)], at + len(group)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``, embedding only those not cached."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                for text, row in zip(missing, self._encode(missing), strict=True):
                    self._cache[text] = row
            for text in texts:
                self._cache.move_to_end(text)
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
            import numpy as np  # with the model, never at import

            return np.stack([self._cache[t] for t in texts])

    def forget(self) -> None:
        with self._lock:
            self._cache.clear()


_MODEL = _Model()


def forget_clauses() -> None:
    """Drop the clause vectors kept in this process (their keys are the user's words): every
    message after it is embedded afresh, as the first one is."""
    _MODEL.forget()


def _stored(model_id: str, texts: list[str], encode: Any) -> np.ndarray:
    """The descriptions' vectors, kept in the user's cache folder under a digest of the model
    and the texts: embedding them costs a process about 0.7 s of CPU, reading them nothing.
    A cache that cannot be read or written is embedded again."""
    import numpy as np

    digest = hashlib.sha256("\n".join([model_id, *texts]).encode()).hexdigest()[:16]
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(home) / "analyst" / f"senses-{digest}.npy"
    try:
        rows = np.load(path)
        if rows.shape == (len(texts), _DIMS):
            return rows
    except (OSError, ValueError):
        pass
    rows = encode(texts)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with partial.open("wb") as f:
            np.save(f, rows)
        os.replace(partial, path)
    except OSError:
        pass
    return rows


def masked(clause: str, known: set[str]) -> str:
    """``clause`` with the values it names said generically ("I write code for Acme"), as
    the descriptions say them: the similarity then measures what the clause
    speaks of, not which company or how long."""
    spans = [(m.start(), m.end(), "many years") for m, _ in quantities.durations(clause)]
    for _, at in symbols.tickers_in(clause, known):
        word = _WORD.match(clause, at)
        if word is not None:
            spans.append((at, word.end(), "Acme"))
    out, end = [], 0
    for start, stop, words in sorted(spans):
        if start >= end:
            out += [clause[end:start], words]
            end = stop
    return "".join([*out, clause[end:]])


def scores(texts: Sequence[str]) -> list[dict[str, float]]:
    """For each text, its similarity to each sense (the nearest of the sense's descriptions)."""
    if not texts or not _MODEL.ready():
        return [{} for _ in texts]
    rows = _MODEL.vectors(texts)
    table = {name: (rows @ vectors.T).max(axis=1) for name, vectors in _MODEL.senses.items()}
    return [{name: float(column[i]) for name, column in table.items()} for i in range(len(texts))]


def risk_level(clause: str, score: dict[str, float]) -> str | None:
    """The risk level ``clause`` states, or None. Its meaning must be risk (a risk level's
    descriptions the nearest of all senses, at least :data:`RISK_THRESHOLD`); the level is
    read from its words (:func:`_leaning`): the embedding places the topic well but barely
    tells "I can handle big swings" from "I can't"."""
    if not score:
        return None
    top = max(score, key=lambda name: score[name])
    if not top.startswith("risk:") or score[top] < RISK_THRESHOLD or _SECTORS.search(clause):
        return None  # "I won't invest in gambling": an exclusion, not a fear of losses
    if indirect.OUTGROWN.search(clause):
        return None  # "I used to panic in every dip"
    level = _leaning(clause)
    if level is None and top == "risk:moderate" and not _FEELING.search(clause):
        # "I'm somewhere in the middle": a place between, said of oneself, with no feeling.
        return "moderate" if _BETWEEN.search(clause) and _SELF.search(clause) else None
    return level


#: A clause inside the user's that has someone else as its subject ("... while everyone around
#: me panicked", "unlike my wife, who sold"): its feelings are that person's, not the user's.
_THEIRS = re.compile(
    r"\b(?:while|whereas|as|when|unlike|though|although|and|but)\s+(?:(?:almost|nearly|just|"
    r"pretty much)\s+)?(?:(?:(?:my|our|his|her|their|the|a|all|all the|most|most of the)\s+)?"
    rf"(?:[\w-]+\s+)?(?:{indirect.PEOPLE}|people|others|everyone|everybody|folks|investors|"
    r"traders|crowd|rest)|he|she|they)\b(?![^,;]*\b(?:i|i'd|i'm|im)\b)[^,;]*",
    _I,
)


def _leaning(clause: str) -> str | None:
    """Conservative, aggressive or moderate by the words of fear, appetite and measure (the
    user's own: a feeling said of someone else in the clause counts for nothing)."""
    fear = appetite = 0
    theirs = [m.span() for m in _THEIRS.finditer(clause)]
    feelings = [
        m
        for m in _FEELING.finditer(clause)
        if not any(start <= m.start() < end for start, end in theirs)
    ]
    if not _RISKY.search(clause) and all(m.group(0).lower() == "sold" for m in feelings):
        return None  # "I sold it last year" is a sale, not a reaction to losses
    for match in feelings:
        turned = _TURNED.search(clause[max(0, match.start() - 30) : match.start()]) is not None
        if (match.lastgroup == "fear") != turned:
            fear += 1
        else:
            appetite += 1
    if _MEASURED.search(clause) and abs(fear - appetite) <= 1:
        return "moderate"
    if fear == appetite:
        return None
    return "conservative" if fear > appetite else "aggressive"


def levels(pieces: Sequence[str], said: Sequence[dict[str, float]]) -> list[str | None]:
    """The risk level each clause of one sentence states (:func:`risk_level`), where a clause
    may also take its topic from another: one clause speaks of losses without a level ("I
    check my account every hour when it dips") and the next gives the level by its feeling,
    its own meaning nearest a risk level but too faint alone ("and it makes me sick")."""
    out = [risk_level(c, s) for c, s in zip(pieces, said, strict=True)]
    topic = any(
        level is None and _topic(s) >= RISK_THRESHOLD and _RISKY.search(c)
        for c, s, level in zip(pieces, said, out, strict=True)
    )
    if not topic:
        return out
    return [
        level if level is not None or _topic(s) <= 0 or _SECTORS.search(c) else _leaning(c)
        for c, s, level in zip(pieces, said, out, strict=True)
    ]


def _topic(score: dict[str, float]) -> float:
    """The similarity of a clause to risk, when a risk level is its nearest sense; else 0."""
    if not score:
        return 0.0
    top = max(score, key=lambda name: score[name])
    return score[top] if top.startswith("risk:") else 0.0


def states_risk(value: object, text: str) -> bool:
    """Whether a clause of ``text`` in the first person states the risk level ``value`` by
    its meaning (the grounding of a risk reading of :func:`detect`)."""
    own = [c for c, _ in clauses(text) if _SELF.search(c)]
    said = scores([masked(c, set()) for c in own])
    return value in levels(own, said)


def prepare(sentences: Sequence[str], known: set[str]) -> None:
    """Embed the clauses of a whole message's ``sentences`` (as the understanding splits it)
    that :func:`detect` may read, in one batch: one call for the message costs much less than
    one for each of its sentences."""
    texts = [masked(c, known) for s in sentences for c, _ in _readable(s, known)]
    if texts and _MODEL.ready():
        _MODEL.vectors(texts)


def _readable(part: str, known: set[str]) -> list[tuple[str, int]]:
    """The clauses of ``part`` worth embedding, with where each starts."""
    if _SUPPOSING.search(part):
        return []
    pieces = [(c, at) for c, at in clauses(part) if len(re.findall(r"\w+", c)) >= _WORDS]
    pieces = [(c, at) for c, at in pieces if _SELF.search(c) and not _OTHER.search(c)]
    named = bool(symbols.tickers_in(part, known))
    return [(c, at) for c, at in pieces if _worth_reading(c, named)]


def detect(part: str, known: set[str], skip: set[str], taken: Sequence[int] = ()) -> list[Found]:
    """``(attribute, raw value, position)`` for each clause of ``part`` whose meaning is an
    attribute not in ``skip`` and whose words name a value of it. A clause holding a value
    the rules read (its position in ``taken``) may state another fact by its named words ("I'm
    an engineer at Google with Apple stock"), never a risk level by its feeling: "preserving
    what I've built is my priority" states a goal, not a risk level besides."""
    pieces = _readable(part, known)
    found: list[Found] = []
    said = scores([masked(c, known) for c, _ in pieces])
    risks = levels([c for c, _ in pieces], said)
    for (clause, at), score, level in zip(pieces, said, risks, strict=True):
        ruled = any(at <= t < at + len(clause) for t in taken)
        for attribute, raw in _values(clause, part, score, known, level):
            if ruled and attribute == "risk_tolerance":
                continue
            if attribute not in skip and all(f[0] != attribute for f in found):
                found.append((attribute, raw, at))
    return found


def _worth_reading(clause: str, named: bool) -> bool:
    """Whether ``clause`` names anything a sense could take as its value (a company, a
    duration, a currency, a sector, a feeling about losses, or losses and risk themselves,
    whose level its measure words may give): only those are embedded, the
    cost of a long message is in its clauses that might state something."""
    return bool(
        named
        or _FEELING.search(clause)
        or _RISKY.search(clause)
        or _CAPITALISED.search(clause)
        or any(True for _ in quantities.durations(clause))
        or any(True for _ in quantities.currencies(clause))
        or _SECTORS.search(clause)
        or _BETWEEN.search(clause)
    )


def _values(
    clause: str, part: str, score: dict[str, float], known: set[str], level: str | None
) -> list[Any]:
    """The values ``clause`` states for the sense it is nearest, read from its words (its risk
    level ``level``, from :func:`levels`)."""
    if level is not None:
        return [("risk_tolerance", level)]
    if not score:
        return []
    (best, sense), (second, _) = sorted(((v, k) for k, v in score.items()), reverse=True)[:2]
    if sense.startswith("risk:") or best < THRESHOLD or best - second < SENSE_MARGIN:
        return []
    found = [(a, _value(a, clause, part, known)) for a in senses.ATTRIBUTES[sense]]
    return [(a, raw) for a, raw in found if raw is not None]


#: A company named as what another subject does something to ("a bank that audits Meta"):
#: the object or subject of a "that" or "which" clause ("a company that Google bought") is
#: not where the user works ("a guy who has been on Amazon's payroll" is the user).
_OBJECT_OF_ANOTHER = re.compile(r"\b(?:that|which)\s+(?:[\w'-]+\s+){0,3}$", re.I)


def _value(attribute: str, clause: str, part: str, known: set[str]) -> object | None:
    """The value of ``attribute`` the words of ``clause`` name, or None."""
    if attribute in ("excluded_tickers", "excluded_sectors"):
        if exclusions.FOR_NOW.search(part):
            return None  # "I don't want to buy it at these levels": a view of its price
        # "I'm at Nvidia so I can't hold it": the ticker may be named in the part only.
        return bare_value(attribute, clause, known) or (
            bare_value(attribute, part, known) if attribute == "excluded_tickers" else None
        )
    # "the pot won't be touched for 12 years": a negation of needing states the duration.
    negated = _NEGATION.search(_KEEPING.sub(" ", clause)) is not None
    if negated or _FORMER.search(clause):
        return None
    if attribute == "horizon_years":
        if _EXPERIENCE.search(clause):
            return None
        spans = [years for _, years in quantities.durations(clause)]
        return spans[-1] if spans else None
    if attribute == "holdings":
        # "I have a Tesla" is a car, "I'm buying Tesla today" no holding yet.
        if _SOLD.search(clause) or _NOT_YET.search(clause) or not _INVESTED.search(clause):
            return None
        named = [s for s, _ in symbols.tickers_in(clause, known)]
        return named or None
    if attribute == "employer":
        # A company's name, never a person's or the clause's first word ("My day job ...").
        named = [
            m.group(0)
            for m in _COMPANY.finditer(clause)
            if not re.match(employment.PRODUCT, clause[m.end() :], _I)
            and not _OBJECT_OF_ANOTHER.search(clause[: m.start()])
        ]
        return named[-1] if named else None
    return bare_value(attribute, clause, known)
