"""Ideas from the profile: the covered universe ranked by fit with what the user told us.

Pure rules over data the caller passes in (research reads no memory itself): a
:class:`~agent.research.suitability.Profile` of fact records, each ticker's measured figures
(``volatility_1y``, ``max_drawdown_1y``, ``return_1y``, ``last_close``, ``as_of``) and the
tickers the user's exclusions rule out. Every reason cites the fact it rests on (its episodes,
else its fact id, as answers from memory cite) and carries the price figure it compares.

An excluded ticker is never named, nor its company, nor an excluded sector: not in the
shortlist, not as "left out"; the answer only counts them. :func:`named_exclusions` is the
check every answer passes (offline and the model's), so a model cannot slip one back in.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.market.income import dividend_of
from agent.market.sectors import SECTORS, sector_of
from agent.research.suitability import (
    INCOME_VALUES,
    LONG_HORIZON_YEARS,
    SHORT_HORIZON_VOLATILITY,
    SHORT_HORIZON_YEARS,
    VOLATILITY_LIMITS,
    Profile,
    pct,
)
from agent.research.tickers import COMPANY_NAMES

#: How many ideas a shortlist holds at most.
SHORTLIST = 3
#: How much one breach of the profile (a hard limit exceeded) weighs against a stock.
BREACH = -2.0
#: A 1-year return counts up to this much (a tripled price is as good as more, for ranking).
RETURN_CAP = 3.0
#: How to tell the analyst your profile, said when it has none.
PROFILE_HINT = (
    'Tell me about yourself and I will rank for you: "my horizon is 10 years", "I am a '
    'conservative investor", "my drawdown limit is 15%", "I want dividends", "I am interested '
    'in semiconductors", "I own AAPL", "no crypto for me" or "never include TSLA".'
)


@dataclass(frozen=True)
class Reason:
    """One cited reason for or against a stock: ``weight`` adds to its score, a ``breach``
    exceeds a limit the profile sets."""

    text: str
    cites: tuple[str, ...]
    weight: float
    breach: bool = False

    def said(self) -> str:
        return f"{self.text} [{', '.join(self.cites)}]" if self.cites else self.text


@dataclass(frozen=True)
class Candidate:
    """A stock ranked for the user: its figures, score and reasons."""

    ticker: str
    figures: Mapping[str, Any]
    score: float
    reasons: tuple[Reason, ...]

    @property
    def breaches(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.breach)

    @property
    def fits(self) -> bool:
        return not self.breaches

    def headline(self) -> str:
        """The stock's measured figures, as of the data's last day."""
        f = self.figures
        parts = []
        if f.get("last_close") is not None:
            parts.append(f"last close {f['last_close']:.2f}")
        if f.get("return_1y") is not None:
            parts.append(f"1-year return {_signed(f['return_1y'])}")
        if f.get("volatility_1y") is not None:
            parts.append(f"volatility {pct(f['volatility_1y'])}")
        if f.get("max_drawdown_1y") is not None:
            parts.append(f"max drawdown -{pct(f['max_drawdown_1y'])}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Ideas:
    """A ranking: the shortlist, the other stocks considered, how many were excluded (never
    which), the words an answer must not contain, and the data's last price date(s)."""

    shortlist: tuple[Candidate, ...]
    others: tuple[Candidate, ...]
    excluded: int
    excluded_cites: tuple[str, ...]
    forbidden: frozenset[str]
    as_of: tuple[datetime.date, ...]
    profiled: bool

    @property
    def ranked(self) -> tuple[Candidate, ...]:
        return (*self.shortlist, *self.others)

    @property
    def cited(self) -> list[str]:
        ids = [i for c in self.ranked for r in c.reasons for i in r.cites]
        return list(dict.fromkeys([*ids, *self.excluded_cites]))


def fact_cites(profile: Profile, name: str) -> tuple[str, ...]:
    """What a reason resting on the fact ``name`` cites: its episodes, else its fact id."""
    record = profile.facts.get(name) or {}
    episodes = [str(e) for e in record.get("episode_ids") or [] if e]
    memory_id = record.get("memory_id")
    return tuple(episodes or ([str(memory_id)] if memory_id else [name]))


_INCOME_ASKED = re.compile(r"\b(?:dividends?|income|yield)\b", re.IGNORECASE)
_GROWTH_ASKED = re.compile(r"\bgrowth\b", re.IGNORECASE)


def asked_for(query: str, episode_id: str | None = None) -> dict[str, dict[str, Any]]:
    """What the request itself asks for ("anything for a dividend investor?", "any growth
    ideas?", "semiconductor picks?") as fact records citing the request's episode: an income
    preference, a growth goal, sectors of interest (the sector table's words). For this
    answer they stand beside, and over, the stored profile."""
    cite = {"source": "request", "episode_ids": [episode_id or "this request"]}
    out: dict[str, dict[str, Any]] = {}
    if _INCOME_ASKED.search(query):
        out["income_preference"] = {"value": "dividends", **cite}
    if _GROWTH_ASKED.search(query):
        out["goal"] = {"value": "growth", **cite}
    words = {w.rstrip("s") for w in re.findall(r"[a-z]{4,}", query.lower())}
    tags = sorted({t for entry in SECTORS.values() for t in entry.tags if t.rstrip("s") in words})
    if tags:
        out["sectors_of_interest"] = {"value": tags, **cite}
    return out


def forbidden_words(profile: Profile, excluded: Iterable[str]) -> frozenset[str]:
    """The words an answer must never contain: each excluded ticker, its company's names and
    the excluded sectors the profile states."""
    tickers = {t.upper() for t in excluded}
    names = {name for name, symbol in COMPANY_NAMES.items() if symbol in tickers}
    sectors = {w.strip().lower().replace("_", " ") for w in profile.words("excluded_sectors")}
    return frozenset({*tickers, *names, *(s for s in sectors if s)})


def named_exclusions(text: str, forbidden: Iterable[str]) -> list[str]:
    """The forbidden words ``text`` contains (whole words, any case; ``$TSLA`` counts)."""
    found = []
    for word in sorted(forbidden):
        pattern = (
            r"(?<![A-Za-z0-9])" + r"[\s_-]+".join(map(re.escape, word.split())) + r"(?![A-Za-z0-9])"
        )
        if re.search(pattern, text, re.IGNORECASE):
            found.append(word)
    return found


def rank(
    profile: Profile,
    figures: Mapping[str, Mapping[str, Any]],
    excluded: Mapping[str, Sequence[str]],
    *,
    size: int = SHORTLIST,
) -> Ideas:
    """Rank the stocks of ``figures`` that ``excluded`` (ticker -> the ids of what excludes
    it) leaves: first those within every limit the profile sets, then by score; the best
    ``size`` that fit are the shortlist (the closest ones when none fits)."""
    by_ticker = {t.upper(): tuple(ids) for t, ids in excluded.items()}
    out = set(by_ticker)
    forbidden = forbidden_words(profile, out)
    candidates = [
        Candidate(t, f, sum(r.weight for r in reasons) + _tiebreak(f), tuple(reasons))
        for t, f in sorted(figures.items())
        if t.upper() not in out
        for reasons in [
            # A reason that would name an exclusion ("you already hold TSLA in ...") is
            # dropped, and so weighs nothing.
            [r for r in reasons_for(t, f, profile) if not named_exclusions(r.text, forbidden)]
        ]
    ]
    candidates.sort(key=lambda c: (len(c.breaches), -c.score, c.ticker))
    fitting = [c for c in candidates if c.fits][:size] or candidates[:size]
    others = [c for c in candidates if c not in fitting]
    dates = sorted(
        {f["as_of"] for t, f in figures.items() if t.upper() not in out and f.get("as_of")}
    )
    cites = [i for t in sorted(out) if t in figures for i in by_ticker[t]]
    return Ideas(
        shortlist=tuple(fitting),
        others=tuple(others),
        excluded=len([t for t in figures if t.upper() in out]),
        excluded_cites=tuple(dict.fromkeys(cites)),
        forbidden=forbidden,
        as_of=tuple(dates),
        profiled=any(r.cites for c in candidates for r in c.reasons),
    )


def _tiebreak(f: Mapping[str, Any]) -> float:
    """Return per unit of risk, a little: what ranks stocks the profile cannot tell apart."""
    ret, vol = f.get("return_1y"), f.get("volatility_1y")
    return 0.01 * min(ret, RETURN_CAP) / vol if ret is not None and vol else 0.0


def _signed(value: float) -> str:
    return f"{'+' if value >= 0 else '-'}{pct(value)}"


def reasons_for(ticker: str, f: Mapping[str, Any], profile: Profile) -> list[Reason]:
    """Every cited reason the profile gives for or against ``ticker``."""
    return [
        *_risk_reasons(f, profile),
        *_horizon_reasons(f, profile),
        *_income_reasons(ticker, profile),
        *_portfolio_reasons(ticker, profile),
    ]


def _risk_reasons(f: Mapping[str, Any], profile: Profile) -> list[Reason]:
    vol, drawdown, ret = f.get("volatility_1y"), f.get("max_drawdown_1y"), f.get("return_1y")
    reasons: list[Reason] = []
    limit = profile.max_drawdown
    if limit is not None and drawdown is not None:
        cites = fact_cites(profile, "max_drawdown_pct")
        if abs(drawdown) > limit:
            text = (
                f"its deepest fall over the last year, -{pct(drawdown)}, is deeper than your "
                f"{limit * 100:g}% drawdown limit"
            )
            reasons.append(Reason(text, cites, BREACH, breach=True))
        else:
            text = (
                f"its deepest fall over the last year, -{pct(drawdown)}, stayed within your "
                f"{limit * 100:g}% drawdown limit"
            )
            reasons.append(Reason(text, cites, 0.5))
    tolerance = profile.risk_tolerance
    if tolerance is not None and tolerance in VOLATILITY_LIMITS and vol is not None:
        cites = fact_cites(profile, "risk_tolerance")
        cap = VOLATILITY_LIMITS[tolerance]
        if cap is None:
            gain = min(ret or 0.0, RETURN_CAP)
            text = (
                f"your {tolerance} risk tolerance accepts its {pct(vol)} volatility for its "
                f"{_signed(ret or 0.0)} 1-year return"
            )
            reasons.append(Reason(text, cites, 0.5 * gain))
        elif vol > cap:
            text = (
                f"its {pct(vol)} volatility is above the {cap * 100:g}% a {tolerance} investor "
                "usually accepts"
            )
            reasons.append(Reason(text, cites, BREACH, breach=True))
        else:
            text = (
                f"its {pct(vol)} volatility is within the {cap * 100:g}% a {tolerance} investor "
                "usually accepts"
            )
            reasons.append(Reason(text, cites, 0.5 + (cap - vol)))
    return reasons


def _horizon_reasons(f: Mapping[str, Any], profile: Profile) -> list[Reason]:
    vol, drawdown, ret = f.get("volatility_1y"), f.get("max_drawdown_1y"), f.get("return_1y")
    reasons: list[Reason] = []
    horizon = profile.horizon_years
    if horizon is not None and vol is not None:
        cites = fact_cites(profile, "horizon_years")
        if horizon <= SHORT_HORIZON_YEARS and vol > SHORT_HORIZON_VOLATILITY:
            text = (
                f"your {horizon:g}-year horizon leaves little time to recover from the falls "
                f"its {pct(vol)} volatility brings"
            )
            reasons.append(Reason(text, cites, BREACH, breach=True))
        elif horizon <= SHORT_HORIZON_YEARS:
            text = f"its {pct(vol)} volatility is moderate enough for your {horizon:g}-year horizon"
            reasons.append(Reason(text, cites, 0.3))
        elif horizon >= LONG_HORIZON_YEARS:
            fall = f"its -{pct(drawdown)} fall last year" if drawdown is not None else "its falls"
            text = (
                f"your {horizon:g}-year horizon gives time to ride out {fall} and keep its "
                f"{_signed(ret or 0.0)} 1-year growth compounding"
            )
            reasons.append(Reason(text, cites, 0.4 * min(ret or 0.0, RETURN_CAP)))
    goal = profile.value("goal")
    if goal == "growth" and ret is not None:
        text = f"you invest for growth, and its 1-year return was {_signed(ret)}"
        reasons.append(Reason(text, fact_cites(profile, "goal"), 0.4 * min(ret, RETURN_CAP)))
    elif goal == "preservation" and vol is not None:
        text = f"you want to keep your capital, and its volatility is {pct(vol)}"
        reasons.append(Reason(text, fact_cites(profile, "goal"), 0.4 - vol))
    return reasons


def _income_reasons(ticker: str, profile: Profile) -> list[Reason]:
    asks = [n for n in ("income_preference", "goal") if profile.value(n) in INCOME_VALUES]
    paid = dividend_of(ticker)
    if not asks or paid is None:
        return []
    cites = tuple(i for n in asks for i in fact_cites(profile, n))
    weight = {"regular": 1.0, "recent": 0.5, "token": 0.0, "none": -1.0}[paid.kind]
    text = f"you look for dividends, and it {paid.note}; a reference fact, as prices carry no yield"
    return [Reason(text, cites, weight)]


def _portfolio_reasons(ticker: str, profile: Profile) -> list[Reason]:
    reasons: list[Reason] = []
    sector = sector_of(ticker)
    interests = profile.words("sectors_of_interest")
    if sector is not None and interests:
        hits = [w for w in interests if w.lower().replace("_", " ") in sector.words()]
        if hits:
            text = f"it is in {sector.industry} ({sector.sector}), a sector you follow"
            reasons.append(Reason(text, fact_cites(profile, "sectors_of_interest"), 1.0))
    held = profile.holdings
    if ticker in held:
        text = "you already hold it: buying more concentrates your portfolio in one stock"
        reasons.append(Reason(text, fact_cites(profile, "holdings"), -1.0))
    elif sector is not None:
        same = [t for t in held if getattr(sector_of(t), "sector", None) == sector.sector]
        if same:
            text = (
                f"you already hold {', '.join(same)} in {sector.sector}: this adds to the same "
                "sector rather than diversifying"
            )
            reasons.append(Reason(text, fact_cites(profile, "holdings"), -0.3))
    if profile.employer_ticker == ticker:
        text = "you work for the company: your income already depends on it"
        reasons.append(Reason(text, fact_cites(profile, "employer"), -1.0))
    return reasons


# -- the answer ----------------------------------------------------------------------------


def data_age(as_of: Sequence[datetime.date], today: datetime.date) -> str:
    """The sentence stating the prices' last date and how old that is on ``today``."""
    if not as_of:
        return "No price data was available to rank."
    last = max(as_of)
    days = (today - last).days
    old = f"{days:,} days before today ({today.isoformat()})" if days > 0 else "today"
    span = (
        f"between {min(as_of).isoformat()} and {last.isoformat()}"
        if len(as_of) > 1
        else last.isoformat()
    )
    return f"Data: daily prices up to {span}, the last price date of the data used: {old}."


def render(ideas: Ideas, today: datetime.date, universe: int) -> str:
    """The offline answer: the shortlist with each cited reason, the others considered, how
    many were excluded (never which), the data's age, and what to ask next."""
    if ideas.profiled:
        head = (
            f"Ideas from the {universe} stocks I cover, ranked by fit with what you told me "
            "(ideas to research, not advice):"
        )
    else:
        head = (
            f"I have no profile for you that bears on this, so I rank the {universe} stocks I "
            "cover on the price data alone: 1-year return per unit of volatility (ideas to "
            "research, not advice). " + PROFILE_HINT
        )
    lines = [head]
    if ideas.profiled and not any(c.fits for c in ideas.shortlist):
        lines.append("None fits every limit you set; these come closest:")
    for n, c in enumerate(ideas.shortlist, 1):
        verdict = " — fits your profile" if ideas.profiled and c.fits else ""
        lines.append(f"{n}. {c.ticker}{verdict} ({c.headline()})")
        lines += [f"   - {r.said()}" for r in c.reasons]
    if ideas.others:
        lines.append("Also considered:")
        for c in ideas.others:
            why = (
                c.breaches[0]
                if c.breaches
                else min(c.reasons, key=lambda r: r.weight, default=None)
            )
            lines.append(f"- {c.ticker} ({c.headline()})" + (f": {why.said()}" if why else ""))
    if ideas.excluded:
        cites = ", ".join(ideas.excluded_cites) or "your instructions in this conversation"
        lines.append(
            f"Left out: {ideas.excluded} stock{'s' if ideas.excluded != 1 else ''} your "
            f"exclusions rule out [{cites}]."
        )
    lines.append(data_age(ideas.as_of, today))
    if ideas.shortlist:
        lines.append(
            f'For the full research ask, for example: "Analyze {ideas.shortlist[0].ticker}".'
        )
    return "\n".join(lines)
