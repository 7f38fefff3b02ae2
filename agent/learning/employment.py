"""Where the user works: the employer as people say it.

"I work at Google", "my salary is paid by Nvidia", "a 45 year old Microsoft engineer", "I
work in the finance department at Meta", "been with Apple's retail team for nine years", "I
build data pipelines for Amazon", "Occupation: analyst at Amazon", "team lead at Stripe, ..."
(a role opening the message, its subject left out), "my badge says Google", "I do night
shifts at the Tesla plant": a cue of employment and the company it governs. The company is any name in capitals after an explicit cue ("I work
at Acme Ltd"), and one the ticker table knows (:data:`KNOWN`) after a looser one, where a
capitalised word could be anything ("I build pipelines for Amazon", not "for Christmas").
What no longer holds ("I used to work at ...", "I left Microsoft") is no employer.
"""

from __future__ import annotations

import re

from agent.learning import symbols, vocabulary
from agent.research.tickers import COMPANY_NAMES

Found = tuple[str, object, int]

_I = re.IGNORECASE
#: A company: one the ticker table knows, or up to four capitalised words.
COMPANY = (
    rf"(?:(?i:{vocabulary.alternation(COMPANY_NAMES)})\b|"
    r"(?-i:(?!I\b|I'[a-z]+\b)[A-Z][\w&.'-]*(?:\s+(?:&\s+)?[A-Z][\w&.'-]*){0,3}))"
)
#: What follows a company's name when it is the company's products or stock, or a client the
#: user serves, not where the user works ("reviews for Apple products", "our company uses
#: Microsoft software", "I handle the Amazon account").
PRODUCT = (
    r"\s+(?:products?|devices?|phones?|stocks?|shares|customers|users|fans|stores?|apps?|cars?|"
    r"owners|investors|software|services|tools|hardware|cloud|chips|gear|laptops?|"
    # a client served, not the employer: "on the Amazon account at Accenture"
    r"accounts?|clients?|engagements?|projects?|contracts?|business)\b"
)
#: A company the ticker table knows by name.
_KNOWN = rf"(?i:{vocabulary.alternation(COMPANY_NAMES)})\b"
#: What people are at a company they work for ("a Microsoft engineer", "an Amazon employee").
_ROLE = (
    r"(?:employee|staffer|engineer|developer|programmer|designer|manager|analyst|researcher|"
    r"scientist|lawyer|accountant|recruiter|salesperson|worker|lead|director|intern|"
    r"contractor|architect|executive|veteran|lifer|nurse|cashier|clerk|teacher|consultant|"
    r"associate|specialist|technician|supervisor|officer|assistant|coordinator|administrator)"
)
_EMPLOYER = re.compile(
    r"\b(?:i\s+(?:work|am working|'m working)\s+(?:at|for|with)|"
    r"i'm\s+(?:employed|working)\s+(?:at|by|for)|i\s+am\s+employed\s+(?:at|by)|"
    r"employed\s+(?:at|by)|my\s+employer\s*(?:is|:|=|-)?\s*(?:now\s+|currently\s+)?|"
    r"my\s+(?:pay\s*check|paycheque|salary|wages?|pay)\s+(?:comes?|is)\s+from|"
    r"i'?m\s+an?\s+[\w\s-]{1,30}?\s+at|i\s+(?:switched|moved)\s+jobs\s+to|i\s+switched\s+to|"
    rf"i'?m\s+(?:now\s+|currently\s+)?at(?=\s+{_KNOWN})|"
    r"i\s+(?:just\s+)?joined|(?:i\s+)?work\s+at|on the payroll (?:at|of)|"
    r"i'?m\s+(?:on\s+staff|staff)\s+at|"
    # "I'm on the Amazon logistics team", "I'm part of the Nvidia graphics team"
    r"i'?m\s+(?:part\s+of|on)\s+the(?=\s+"
    rf"{_KNOWN}\s+(?:[\w-]+\s+){{0,2}}(?:team|staff|group|division|org|unit)\b)|"
    # "working at Nvidia means ...", "working for Tesla, I ..."
    r"^\W*working\s+(?:at|for)|"
    # "Occupation: data analyst at Amazon", "Day job - nurse at St Mary's"
    r"^\W*(?:day\s+job|job|occupation|profession|work)\s*[:=-]\s*[\w\s-]{1,40}?\s+(?:at|for|with)|"
    # "team lead at Stripe, mostly infra", "senior engineer over at Shopify": a role at a
    # company that opens the message, its subject left out as chat does
    # (not "analyst at Acme says ...": the company must end its clause)
    rf"^\W*(?:(?:a|an|the)\s+)?(?:[\w-]+\s+){{0,2}}?{_ROLE}s?\s+(?:over\s+|out\s+)?(?:at|for|with)"
    rf"(?=\s+{COMPANY}\s*(?:[,;.!(]|\s[-\u2013\u2014]|$|\s+(?:and\s+i|since|for\s+\w+\s+years?|now|"
    r"these\s+days)\b))|"
    # "my badge says Google", "my lanyard still says Nvidia"
    r"\bmy\s+(?:work\s+|staff\s+|company\s+)?(?:badge|lanyard|id\s+card|id|name\s*tag|"
    r"business\s+card|payslip|pay\s*stub|email\s+signature)\s+(?:still\s+)?(?:says|reads|shows)"
    r"|"
    # "I do night shifts at the Tesla plant", "I pick up weekend shifts at the Costco warehouse"
    r"\bi\s+(?:do|work|pull|pick\s+up|take|cover)\s+(?:[\w-]+\s+){0,2}?shifts?\s+"
    r"(?:at|for|in)\s+(?:the\s+)?|"
    # "I work in the finance department at Meta"
    r"i\s+work\s+(?:in|on)\s+(?:the\s+|a\s+)?[\w\s-]{1,30}?\s+(?:at|for)|"
    # "been with Apple's retail team for nine years", "I've been at Amazon since 2019"
    rf"(?:^\W*|i'?ve\s+|i\s+have\s+)been\s+(?:with|at)(?=\s+{_KNOWN}[^.;!?]*\b(?:for\s+"
    r"(?:\w+\s+){0,2}(?:years?|months?|decades?)|since)\b)|"
    # "I'm still at Ford after 25 years": years of service make any company the employer
    r"(?:i'?m|i\s+am|i'?ve\s+been|i\s+have\s+been)\s+(?:still\s+|now\s+|currently\s+)?"
    rf"(?:with|at)(?=\s+{COMPANY}\s+(?:for|after)\s+(?:\w+\s+){{0,2}}(?:years?|decades?)\b)|"
    # "I build data pipelines for Amazon", "I write code for Google"
    r"i\s+(?:build|write|code|develop|design|program|engineer|run|manage|lead|sell|test)\s+"
    rf"(?:[\w-]+\s+){{0,3}}?for(?=\s+{_KNOWN}(?!{PRODUCT})))\s+"
    rf"(?P<v>{COMPANY})",
    _I,
)
_EMPLOYER_AFTER = re.compile(
    # "I'm a 45 year old Microsoft engineer", "as an Amazon employee, I ..."
    r"(?:\b(?:i'?m|i\s+am|im)|^\W*as)\s+an?\s+(?:[\w-]+\s+){0,5}?"
    rf"(?P<x>{_KNOWN})\s+(?:[\w-]+\s+)?{_ROLE}s?\b|"
    rf"(?P<v>{COMPANY})\s+(?:is\s+my\s+(?:employer|company)|employs\s+me|"
    r"pays\s+my\s+(?:salary|wages?|bills))\b|"
    r"\bmy\s+(?:salary|pay\s*check|paycheque|wages?)\s+(?:is\s+|are\s+)?paid\s+by\s+"
    rf"(?P<w>{COMPANY})",
    _I,
)
_FORMER = re.compile(
    r"\b(?:used to|formerly|former|old job|previous(?:ly)?|ex-|last job|left|quit)\b", _I
)


def employer(part: str, known: set[str]) -> list[Found]:
    """The company ``part`` names as its author's employer now, with where it is named."""
    match = _EMPLOYER.search(part)
    if match is not None:
        at, name = match.start("v"), match["v"]
    else:
        after = _EMPLOYER_AFTER.search(part)
        if after is None:
            return []
        group = next(g for g in ("x", "v", "w") if after[g])
        at, name = after.start(group), after[group]
    # "I left Amazon in March, I'm at Microsoft now": what ended is said in its own clause.
    clause = max((m.end() for m in re.finditer(r"[,;]|\s[-\u2013\u2014]+\s", part[:at])), default=0)
    if _FORMER.search(part[clause : at + len(name)]):
        return []
    name = re.split(r"\s+(?:and|as|since|in|for|now|but|because|where)\b", name)[0]
    return [("employer", name.strip(" .,"), at)]


def without_employer(found: list[Found], part: str, known: set[str]) -> list[Found]:
    """``found`` (what the rules read in ``part``) without the tickers of a watchlist or a
    holding that ``part`` names only as where the user works ("As a Microsoft employee I'd
    love updates on Apple, put them on my radar"). An exclusion keeps them: a conflict rules
    the employer out ("I work at Meta so I can't own it")."""
    employed = {at for attribute, _, at in found if attribute == "employer"}
    if not employed:
        return found
    mentions = symbols.tickers_in(part, known)
    only = {s for s, _ in mentions} - {s for s, at in mentions if at not in employed}
    out: list[Found] = []
    for attribute, raw, at in found:
        if attribute in ("watchlist", "holdings") and isinstance(raw, list):
            raw = [v for v in raw if v not in only]
            if not raw:
                continue
        out.append((attribute, raw, at))
    return out
