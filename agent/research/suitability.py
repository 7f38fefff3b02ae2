"""How what the user told us shapes the research: plan order, report length, the
recommendation's fit, exclusions, concentration and conflicts of interest.

Pure rules over data the caller passes in (research reads no memory itself): ``facts`` maps a
profile attribute to its record as the planner reads it (``{"value", "memory_id", "source",
...}``; a bare value is accepted too) and ``procedures`` are the confirmed procedures in force.
Every effect a rule has comes with the sentence that cites the fact or procedure causing it,
so a plan or a report can say why it differs from another user's.

Attributes read (absent ones change nothing): ``risk_tolerance``, ``horizon_years``,
``max_drawdown_pct``, ``goal`` (preservation is cautious, growth bold, income asks for income),
``income_preference``, ``report_style``, ``excluded_tickers``, ``excluded_sectors``,
``holdings``, ``employer``, ``sectors_of_interest``, and any free-text fact saying the user is
cautious ("conservative", "risk-averse", ...). ``age`` is personal data and is not used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.market.sectors import screened, sector_of
from agent.records import PlanStep, StepKind
from agent.research.constraints import included_sections, required_sections
from agent.research.planning import step
from agent.research.tickers import COMPANY_NAMES

ReportStyle = Literal["brief", "standard", "detailed"]

#: Plan order for a cautious or short-horizon user: downside first.
RISK_FIRST: tuple[StepKind, ...] = ("risk", "beta", "returns", "trend", "peers")
#: Plan order for an aggressive or long-horizon user: growth and relative strength first.
GROWTH_FIRST: tuple[StepKind, ...] = ("returns", "trend", "peers", "beta", "risk")
#: A horizon this short (years) or shorter counts as short; this long or longer as long.
SHORT_HORIZON_YEARS = 3.0
LONG_HORIZON_YEARS = 10.0
#: A drawdown limit this tight (percent) or tighter makes the user cautious.
TIGHT_DRAWDOWN_PCT = 20.0
#: Annualised volatility above which a stock does not fit a risk tolerance (None: no limit).
VOLATILITY_LIMITS: Mapping[str, float | None] = {
    "conservative": 0.30,
    "moderate": 0.50,
    "aggressive": None,
}
#: Annualised volatility above which a short horizon leaves too little time to recover.
SHORT_HORIZON_VOLATILITY = 0.35
#: ``income_preference`` and ``goal`` values that ask for income.
INCOME_VALUES = ("dividends", "income")
#: Attributes whose value a report never repeats (financial or identifying details).
UNSHOWN = frozenset({"holdings", "employer", "full_name", "address", "age"})

_CAUTIOUS = re.compile(
    r"\b(conservative|cautious|risk[- ]averse|low[- ]risk|capital preservation|defensive)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Profile:
    """The facts and procedures that shape one request, with how to cite each of them."""

    facts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    procedures: Sequence[Mapping[str, Any]] = ()
    #: The thread's standing constraints (the user's own words in this conversation).
    constraints: Sequence[str] = ()
    #: The user's confirmed preferences (long-term memories of kind ``preference``).
    preferences: Sequence[Mapping[str, Any]] = ()

    @classmethod
    def of(
        cls,
        facts: Mapping[str, Any] | None,
        procedures: Sequence[Mapping[str, Any]] = (),
        constraints: Sequence[str] = (),
        memories: Sequence[Mapping[str, Any]] = (),
    ) -> Profile:
        """From fact records (``{"value", "memory_id", ...}``) or bare values by name; of
        ``memories`` only the preferences count."""
        records = {
            name: dict(f) if isinstance(f, Mapping) and "value" in f else {"value": f}
            for name, f in (facts or {}).items()
        }
        preferences = tuple(m for m in memories if m.get("kind") == "preference")
        return cls(records, tuple(procedures), tuple(constraints), preferences)

    @property
    def empty(self) -> bool:
        return not (self.facts or self.procedures or self.constraints or self.preferences)

    # -- values -----------------------------------------------------------------------------

    def value(self, name: str) -> Any:
        return (self.facts.get(name) or {}).get("value")

    def cite(self, name: str) -> str:
        """``horizon_years=2 (fact F1)``: the attribute, its value unless it is a financial or
        identifying detail, and the fact's id."""
        record = self.facts.get(name) or {}
        shown = name if name in UNSHOWN else f"{name}={record.get('value')!r}"
        memory_id = record.get("memory_id")
        return f"{shown} (fact {memory_id})" if memory_id else shown

    def number(self, name: str) -> float | None:
        value = self.value(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    @property
    def horizon_years(self) -> float | None:
        return self.number("horizon_years")

    @property
    def max_drawdown(self) -> float | None:
        """The drawdown limit as a fraction (``max_drawdown_pct`` 15 is 0.15)."""
        pct = self.number("max_drawdown_pct")
        return None if pct is None or pct <= 0 else pct / 100

    @property
    def risk_tolerance(self) -> str | None:
        value = self.value("risk_tolerance")
        return value.lower() if isinstance(value, str) else None

    @property
    def style(self) -> ReportStyle:
        value = self.value("report_style")
        return value if value in ("brief", "detailed") else "standard"

    def words(self, name: str) -> list[str]:
        """A list-valued fact as text items (a single text value is a list of one)."""
        value = self.value(name)
        if isinstance(value, str):
            return [value]
        if isinstance(value, Mapping):
            return [str(k) for k in value]
        if isinstance(value, list):
            out = []
            for item in value:
                if isinstance(item, Mapping):
                    item = item.get("ticker") or item.get("symbol") or item.get("name")
                if isinstance(item, str) and item.strip():
                    out.append(item.strip())
            return out
        return []

    @property
    def holdings(self) -> list[str]:
        """Ticker symbols the user holds (company names mapped to their symbol)."""
        return [s for s in (symbol(w) for w in self.words("holdings")) if s]

    @property
    def employer_ticker(self) -> str | None:
        value = self.value("employer")
        return symbol(value) if isinstance(value, str) else None

    def required(self) -> dict[str, str]:
        """Report sections a confirmed procedure (or a constraint of this conversation)
        requires in full, each with the citation of what requires it."""
        out = required_sections(self.procedures)
        for m in self.preferences:
            for name in included_sections(str(m.get("text") or ""), standing=True):
                out.setdefault(
                    name, f'your confirmed preference, memory {m["key"]} ("{m["text"]}")'
                )
        for constraint in self.constraints:
            for name in included_sections(constraint):
                out.setdefault(name, f'your constraint "{constraint}"')
        return out

    # -- the user's stance ------------------------------------------------------------------

    def cautious_reasons(self, memories: Sequence[Mapping[str, Any]] = ()) -> list[str]:
        """Why the user is cautious or short on time: facts first, then recalled memories."""
        reasons: list[str] = []
        if self.risk_tolerance == "conservative":
            reasons.append(f"the fact {self.cite('risk_tolerance')}")
        horizon = self.horizon_years
        if horizon is not None and horizon <= SHORT_HORIZON_YEARS:
            reasons.append(f"a short horizon, the fact {self.cite('horizon_years')}")
        if self.value("goal") == "preservation":
            reasons.append(f"a capital-first goal, the fact {self.cite('goal')}")
        limit = self.number("max_drawdown_pct")
        if limit is not None and limit <= TIGHT_DRAWDOWN_PCT:
            reasons.append(f"a tight drawdown limit, the fact {self.cite('max_drawdown_pct')}")
        reasons += [
            f"the fact {self.cite(name)}"
            for name, record in sorted(self.facts.items())
            if name not in ("risk_tolerance", "goal")
            and isinstance(record.get("value"), str)
            and _CAUTIOUS.search(record["value"])
        ]
        reasons += [
            f"memory [{m['key']}] says {str(m.get('text'))[:80]!r}"
            for m in memories
            if _CAUTIOUS.search(str(m.get("text", "")))
        ]
        return reasons

    def bold_reasons(self) -> list[str]:
        """Why the user can take risk: an aggressive tolerance or a long horizon."""
        reasons: list[str] = []
        if self.risk_tolerance == "aggressive":
            reasons.append(f"the fact {self.cite('risk_tolerance')}")
        horizon = self.horizon_years
        if horizon is not None and horizon >= LONG_HORIZON_YEARS:
            reasons.append(f"a long horizon, the fact {self.cite('horizon_years')}")
        if self.value("goal") == "growth":
            reasons.append(f"the fact {self.cite('goal')}")
        return reasons

    # -- exclusions --------------------------------------------------------------------------

    def exclusions(self, tickers: Iterable[str]) -> dict[str, str]:
        """Which of ``tickers`` the profile excludes (``excluded_tickers``, or a sector or
        screened activity in ``excluded_sectors``), each with the sentence saying why."""
        out: dict[str, str] = {}
        named = {s for s in (symbol(w) for w in self.words("excluded_tickers")) if s}
        sectors = self.words("excluded_sectors")
        for ticker in tickers:
            upper = ticker.upper()
            if upper in named:
                out[upper] = f"your {self.cite('excluded_tickers')} names it"
                continue
            hits = screened(upper, sectors)
            if hits:
                why = "; ".join(f"{name}: {reason}" for name, reason in hits.items())
                out[upper] = f"your {self.cite('excluded_sectors')} screens it out ({why})"
        return out


def refusal(tickers: Sequence[str], excluded: Mapping[str, str]) -> str:
    """The answer to a request whose every ticker the profile excludes."""
    why = "; ".join(f"{t}: {reason}" for t, reason in excluded.items())
    return (
        f"I won't analyse {', '.join(tickers)}: {why}. Your profile holds in every "
        "conversation; change it with: analyst facts retract me ATTRIBUTE (or record a new value)."
    )


def symbol(word: str) -> str | None:
    """The ticker a word names: a known company name ("Nvidia") or a symbol ("NVDA")."""
    text = word.strip().lstrip("$")
    if text.lower() in COMPANY_NAMES:
        return COMPANY_NAMES[text.lower()]
    first = text.split()[0].lower() if text.split() else ""
    if first in COMPANY_NAMES:  # "Nvidia Corporation"
        return COMPANY_NAMES[first]
    if re.fullmatch(r"[A-Za-z]{1,5}(\.[A-Za-z])?", text):
        return text.upper()
    return None


# -- the plan ------------------------------------------------------------------------------


def shape_plan(
    steps: Sequence[PlanStep],
    profile: Profile,
    *,
    memories: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[PlanStep], list[str]]:
    """The deep plan ordered and trimmed for this user, with one note per change citing its
    cause. Cautious or short-horizon: risk and beta first. Aggressive or long-horizon: returns,
    trend and peers first. Brief: no peer step unless a procedure requires the peer table.
    A plan without a peer step gets one when a procedure requires the peer table. Tickers the
    profile excludes lose their snapshot steps (never the primary's)."""
    primary = steps[0]["ticker"] if steps else ""
    notes: list[str] = []
    main = [s for s in steps if s["ticker"] == primary and s["kind"] != "snapshot"]
    others = [s for s in steps if s not in main]
    cautious = profile.cautious_reasons(memories)
    bold = profile.bold_reasons()
    if cautious:
        main.sort(key=lambda s: RISK_FIRST.index(s["kind"]))
        notes.append(
            f"Risk first because {'; '.join(cautious)}: risk, then beta, before returns and trend."
        )
    elif bold:
        main.sort(key=lambda s: GROWTH_FIRST.index(s["kind"]))
        notes.append(
            "Growth signals first (returns, trend, peers; risk last but still run) because "
            f"{'; '.join(bold)}."
        )
    required = profile.required()
    if "Peer comparison" in required and main and all(s["kind"] != "peers" for s in main):
        main.append(step("peers", primary))
    if profile.style == "brief":
        if "Peer comparison" in required:
            notes.append(
                f"Peer step kept in a brief plan because {required['Peer comparison']} "
                "requires the peer table."
            )
        else:
            main = [s for s in main if s["kind"] != "peers"]
            notes.append(
                f"No peer step: the fact {profile.cite('report_style')} asks for a short report "
                "(its peer section gives the rank only)."
            )
    elif profile.style == "detailed":
        notes.append(f"Every step kept for a long report: the fact {profile.cite('report_style')}.")
    excluded = profile.exclusions(s["ticker"] for s in others)
    if excluded:
        others = [s for s in others if s["ticker"] not in excluded]
        notes += [f"{t} left out: {why}." for t, why in excluded.items()]
    return [*main, *others], notes


# -- the recommendation's fit --------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """How a stock's measured risk fits the user: ``breaches`` say what exceeds the profile
    (each citing the fact), ``statement`` is the sentence the recommendation prints."""

    fits: bool
    breaches: tuple[str, ...]
    statement: str
    rating: str
    signal_rating: str

    def to_json(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "breaches": list(self.breaches),
            "statement": self.statement,
            "rating": self.rating,
            "signal_rating": self.signal_rating,
        }


def pct(value: float) -> str:
    return f"{abs(value) * 100:.2f}%"


def fit(ticker: str, metrics: Mapping[str, Any], rating: str, profile: Profile) -> Fit | None:
    """The recommendation's fit to the profile, or ``None`` when the profile states no
    horizon, risk tolerance or drawdown limit. A Buy that breaches the profile becomes a Hold
    for this user (the price signals' rating is kept beside it)."""
    horizon, limit, tolerance = profile.horizon_years, profile.max_drawdown, profile.risk_tolerance
    if horizon is None and limit is None and tolerance is None:
        return None
    vol = metrics.get("volatility_1y")
    drawdown = metrics.get("max_drawdown_1y")
    breaches: list[str] = []
    if limit is not None and drawdown is not None and abs(drawdown) > limit:
        breaches.append(
            f"its maximum drawdown over the last year, -{pct(drawdown)}, is deeper than your "
            f"{limit * 100:g}% limit, the fact {profile.cite('max_drawdown_pct')}"
        )
    if limit is not None and vol is not None and vol > limit:
        breaches.append(
            f"its {pct(vol)} annualised volatility means a one-standard-deviation year moves "
            f"the price by more than your {limit * 100:g}% drawdown limit, "
            f"the fact {profile.cite('max_drawdown_pct')}"
        )
    if (
        horizon is not None
        and horizon <= SHORT_HORIZON_YEARS
        and (vol or 0) > (SHORT_HORIZON_VOLATILITY)
    ):
        breaches.append(
            f"a {horizon:g}-year horizon leaves little time to recover from the falls a "
            f"{pct(vol or 0)} volatility brings, the fact {profile.cite('horizon_years')}"
        )
    cap = VOLATILITY_LIMITS.get(tolerance or "")
    if cap is not None and vol is not None and vol > cap:
        breaches.append(
            f"its {pct(vol)} volatility is above the {cap * 100:g}% a {tolerance} investor "
            f"usually accepts, the fact {profile.cite('risk_tolerance')}"
        )
    said = []
    if horizon is not None:
        said.append(f"a {horizon:g}-year horizon")
    if tolerance is not None:
        said.append(f"{'an' if tolerance[0] in 'aeiou' else 'a'} {tolerance} risk tolerance")
    if limit is not None:
        said.append(f"a {limit * 100:g}% drawdown limit")
    lead = f"For {_joined(said)}, {ticker}'s {pct(vol or 0)} volatility"
    if drawdown is not None:
        lead += f" and -{pct(drawdown)} maximum drawdown over the last year"
    new = "Hold" if breaches and rating == "Buy" else rating
    if breaches:
        verdict = f"{lead} do not fit: {'; '.join(breaches)}. The price signals say {rating}; " + (
            f"for this profile it is a {new}." if new != rating else f"{rating} stands."
        )
    else:
        why = profile.bold_reasons() or [
            "the facts " + ", ".join(profile.cite(n) for n in _stated(profile))
        ]
        verdict = f"{lead} fit within the profile given {'; '.join(why)}: {rating} stands."
    return Fit(not breaches, tuple(breaches), verdict, new, rating)


def _stated(profile: Profile) -> list[str]:
    return [
        n
        for n in ("horizon_years", "risk_tolerance", "max_drawdown_pct")
        if profile.value(n) is not None
    ]


def _joined(parts: Sequence[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


# -- notes the report adds -----------------------------------------------------------------


def profile_notes(ticker: str, profile: Profile) -> list[str]:
    """Risk-factor bullets this user needs: a concentration note for a ticker (or sector)
    already held, a conflict of interest when the ticker is the employer's, a sector of
    interest; each cites its fact."""
    notes: list[str] = []
    held = profile.holdings
    sector = sector_of(ticker)
    if ticker in held:
        notes.append(
            f"Concentration: your {profile.cite('holdings')} include {ticker}; buying "
            "more raises the share of one stock in your portfolio and its risk with it."
        )
    elif sector is not None:
        same = [t for t in held if (sector_of(t) or sector).sector == sector.sector and t != ticker]
        same = [t for t in same if sector_of(t) is not None]
        if same:
            notes.append(
                f"Concentration: your {profile.cite('holdings')} include {', '.join(same)} "
                f"in {sector.sector}; {ticker} adds to the same sector."
            )
    employer = profile.employer_ticker
    if employer is not None and employer == ticker:
        notes.append(
            f"Conflict of interest: you work for the company that issues {ticker}, as your "
            f"{profile.cite('employer')} says. Your income already depends on it, and insider-"
            "trading rules and your employer's trading windows may restrict what you can do."
        )
    income = [n for n in ("income_preference", "goal") if profile.value(n) in INCOME_VALUES]
    if income:
        notes.append(
            f"Income: you look for income, the fact {' and '.join(profile.cite(n) for n in income)}; this "
            "analysis uses prices only, so dividends and yield are not measured here."
        )
    interests = profile.words("sectors_of_interest")
    if sector is not None and interests:
        hits = [w for w in interests if w.lower().replace("_", " ") in sector.words()]
        if hits:
            notes.append(
                f"Sector of interest: {ticker} is in {sector.sector} ({sector.industry}), "
                f"a sector you follow, the fact {profile.cite('sectors_of_interest')}."
            )
    return notes
