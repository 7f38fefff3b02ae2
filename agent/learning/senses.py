"""What each profile attribute sounds like: descriptions :mod:`agent.learning.meaning` embeds.

Data only. Each sense is a handful of plain first-person sentences saying, in different
ways, the kind of thing a user says when speaking of that attribute; they were written from
the registry's descriptions (:mod:`agent.learning.profile`), not taken from any corpus case,
and name no particular value where the value is read from the words: a company is "Acme"
(and a clause's companies and tickers are read as "Acme" too, :func:`agent.learning.meaning.masked`),
so the similarity measures what is said of a company, not which company. Risk has one sense per
level: its value is the level whose sentences a clause is nearest.
"""

from __future__ import annotations

RISK_LEVELS = ("conservative", "moderate", "aggressive")

SENSES: dict[str, tuple[str, ...]] = {
    "risk:conservative": (
        "a falling market ruins my mood for days",
        "when stocks drop I feel sick to my stomach",
        "the idea of losing part of my savings frightens me",
        "I moved my money to cash after prices fell",
        "I check my account nervously every time it goes down",
        "I'd rather earn less than risk losing my money",
        "I get very nervous when my investments lose money",
        "seeing my portfolio go down makes me anxious and I want to sell",
        "I panicked and sold when the market fell",
        "losing money keeps me awake at night",
        "I can't handle big swings in the value of my savings",
        "protecting what I have matters more to me than making more",
        "I want safe investments, I hate losing money",
        "a big drop in my account would make me sick",
        "I'm not comfortable with volatility at all",
    ),
    "risk:moderate": (
        "I don't mind some bumps along the way as long as it's not extreme",
        "I accept moderate swings but nothing reckless",
        "a reasonable amount of risk is fine for me",
        "I can live with some ups and downs, but not too much",
        "a little volatility is acceptable to me if the returns are better",
        "I'm somewhere in the middle when it comes to risk",
        "I take some risk but I stay careful",
        "small losses are fine for me but large ones are not",
        "I want a mix of safety and growth in my investments",
    ),
    "risk:aggressive": (
        "a crash is a buying opportunity for me",
        "I love risky bets with huge upside",
        "the bigger the swings the more excited I get",
        "I've sat through huge losses without worrying and kept going",
        "market dips are a sale, I buy as much as I can",
        "when the market crashes I buy more",
        "big drops in my portfolio don't bother me at all",
        "I'm happy to take big risks for big returns",
        "volatility doesn't scare me, I hold through any crash",
        "I like to swing for the fences with my investments",
        "I can stomach losing a lot of money in a bad year",
        "I held on and kept buying while my stocks were down by half",
    ),
    "exclusion": (
        "Acme disgusts me, don't suggest it",
        "I find Acme's behaviour unethical, leave it out",
        "owning Acme would be a conflict of interest for me",
        "my family works at Acme so I shouldn't own it",
        "I have moral objections to that industry",
        "I don't want Acme stock in my portfolio",
        "keep that industry out of my investments",
        "I refuse to invest in that business, it goes against my values",
        "I can't stand Acme and will never own its shares",
        "I'm not allowed to hold shares of my employer because of compliance rules",
        "insider trading rules stop me from trading Acme",
        "I'm restricted from owning Acme because of my job",
        "I won't put my money into that kind of company",
        "Acme is off limits for me",
        "please leave that sector out of any ideas you give me",
    ),
    "employer": (
        "I've been on Acme's payroll for years",
        "my day job is at Acme",
        "I write software for Acme",
        "I'm a manager over at Acme",
        "I work for Acme",
        "I'm employed by Acme",
        "my job is at Acme",
        "Acme pays my salary",
        "I'm an engineer at Acme",
        "I got hired there last year and still work there",
        "my employer is Acme",
    ),
    "horizon": (
        "this money won't be touched for decades",
        "I'll cash out in a few years",
        "the money stays invested for many years and then I'll use it",
        "I won't need this money for a long time",
        "I plan to keep this invested for many years",
        "I'll need to withdraw the money in a few years",
        "my investment time frame is several years",
        "I'm investing for the long run, years from now",
        "I'll start drawing on these savings after that many years",
    ),
    "holdings": (
        "my biggest position is Acme",
        "a big part of my portfolio sits in Acme shares",
        "my positions are in Acme and Acme",
        "I own shares of Acme",
        "I have a position in Acme",
        "Acme is in my portfolio",
        "I bought Acme and I'm still holding it",
        "most of my money is in Acme shares",
    ),
    "watchlist": (
        "I'm keeping an eye on Acme",
        "I follow Acme closely",
        "I want to track Acme for now",
    ),
    "currency": (
        "my money is held in that currency",
        "I think in my home currency",
        "show me values in the currency I get paid in",
        "my savings are in my local currency",
    ),
    "interest": (
        "I'm interested in that industry",
        "I want more exposure to that sector",
        "that part of the economy excites me as an investor",
    ),
    # Senses the rules read well, here so that a clause about them is not taken for another.
    "goal": (
        "I'm saving for my retirement",
        "this money is for buying a house",
        "I want the money to grow over time",
        "I want my investments to pay me an income",
    ),
    "income": (
        "I prefer dividend paying stocks",
        "I'd rather have growth than dividends",
        "I want a mix of dividends and growth",
    ),
    "limit": (
        "the most I'm willing to lose is a certain percentage",
        "I would sell if my portfolio fell more than that percent",
        "a drop beyond that percentage is my limit",
    ),
    "style": (
        "keep your answers short",
        "give me detailed reports with tables",
    ),
    "age": ("I'm that many years old", "I was born in that year"),
}

#: The attributes a sense's words may give a value for, in the order they are tried. A sense
#: with none is there to be nearer than the others for what it means (a ticker to watch is
#: no holding), and the rules read it.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "exclusion": ("excluded_tickers", "excluded_sectors"),
    "employer": ("employer",),
    "horizon": ("horizon_years",),
    "holdings": ("holdings",),
    "watchlist": (),
    "currency": ("base_currency",),
    "interest": ("sectors_of_interest",),
    "goal": (),
    "income": (),
    "limit": (),
    "style": (),
    "age": (),
}

#: Words that say how a user feels about losses, once a clause is known to speak of risk:
#: fear of losses is a conservative investor's, appetite an aggressive one's; a negation
#: just before a word turns it ("doesn't bother me", "can't handle"). A measure word beside
#: either ("a bit", "within reason") makes it moderate.
FEAR = (
    r"nervous\w*|anxious|anxiety|panic\w*|scared?|scary|afraid|fear\w*|terrif\w*|frighten\w*|"
    r"worr(?:y|ied|ies|ying)|sick|ill|stress\w*|throw up|puke|vomit\w*|nause\w*|palpitations|pit in my stomach|"
    r"cold sweats?|twitchy|jumpy|jittery|on edge|edgy|sell (?:too )?(?:early|soon)|sleep\w*|slept|knots?|ruins?|ruined|hate|"
    r"upset\w*|shaken|shook|bother\w*|sold|sell(?:ing)? (?:it all|everything)|(?:to|into) cash|safe|safety|"
    r"boring|careful|cautious|protect\w*|preserv\w*|bail\w*|pull(?:ed)? out|want out|get out|"
    r"can'?t (?:take|bear|stand|handle|stomach)|lose sleep|dread\w*|queasy|gut[- ]wrench\w*|"
    r"heartburn|ulcers?|can'?t (?:focus|concentrate|think straight|eat)"
)
APPETITE = (
    r"love|thrill\w*|excit\w*|happy|happily|enjoy\w*|bring it on|buy(?:s|ing)? more|bought more|"
    r"add(?:ed|ing)? more|kept buying|back up the truck|cheap|cheaper|bargains?|sales?|"
    r"discounts?|opportunit\w*|gambl\w*|bets?|moonshots?|wild|wilder|all in|high[- ]octane|"
    r"reckless|flinch\w*|blink\w*|swing for|(?:can|could) (?:take|stomach|handle)|aggressive\w*|"
    r"risky|big risks?|huge risks?|don'?t care|(?:strong|iron|cast[- ]iron) stomach|thick skin"
)
MEASURED = (
    r"some|a bit|a little|a few|reasonable|within reason|middle|balanced|(?:a|some) balance|moderate\w*|"
    r"not too|nothing too|fair|bumpy|now and then|up to a point|to a point|somewhat"
)
