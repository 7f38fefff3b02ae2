"""What each profile attribute sounds like: descriptions :mod:`agent.learning.meaning` embeds.

Data only. Each sense is a handful of plain first-person sentences saying, in different
ways, the kind of thing a user says when speaking of that attribute; they were written from
the registry's descriptions (:mod:`agent.learning.profile`), not taken from any corpus case,
and name no particular value where the value is read from the words (a ticker, a currency, a
duration), so the similarity measures the topic and not the value. Risk has one sense per
level: its value is the level whose sentences a clause is nearest.
"""

from __future__ import annotations

RISK_LEVELS = ("conservative", "moderate", "aggressive")

SENSES: dict[str, tuple[str, ...]] = {
    "risk:conservative": (
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
        "I can live with some ups and downs, but not too much",
        "a little volatility is acceptable to me if the returns are better",
        "I'm somewhere in the middle when it comes to risk",
        "I take some risk but I stay careful",
        "small losses are fine for me but large ones are not",
        "I want a mix of safety and growth in my investments",
    ),
    "risk:aggressive": (
        "when the market crashes I buy more",
        "big drops in my portfolio don't bother me at all",
        "I'm happy to take big risks for big returns",
        "volatility doesn't scare me, I hold through any crash",
        "I like to swing for the fences with my investments",
        "I can stomach losing a lot of money in a bad year",
        "I held on and kept buying while my stocks were down by half",
    ),
    "exclusion": (
        "I don't want that company's stock in my portfolio",
        "keep that industry out of my investments",
        "I refuse to invest in that business, it goes against my values",
        "I can't stand that company and will never own its shares",
        "I'm not allowed to hold shares of my employer because of compliance rules",
        "insider trading rules stop me from trading that stock",
        "I won't put my money into that kind of company",
        "that stock is off limits for me",
        "please leave that sector out of any ideas you give me",
    ),
    "employer": (
        "I work for that company",
        "I'm employed by that firm",
        "my job is at that company",
        "that company pays my salary",
        "I'm an engineer at that company",
        "I got hired there last year and still work there",
        "my employer is that company",
    ),
    "horizon": (
        "I won't need this money for a long time",
        "I plan to keep this invested for many years",
        "I'll need to withdraw the money in a few years",
        "my investment time frame is several years",
        "I'm investing for the long run, years from now",
        "I'll start drawing on these savings after that many years",
    ),
    "holdings": (
        "I own shares of that company",
        "I have a position in that stock",
        "that stock is in my portfolio",
        "I bought that stock and I'm still holding it",
        "most of my money is in those shares",
    ),
    "watchlist": (
        "I'm keeping an eye on that stock",
        "I follow that company closely",
        "I want to track that stock for now",
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

#: The attributes a sense's words may give a value for, in the order they are tried.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "exclusion": ("excluded_tickers", "excluded_sectors"),
    "employer": ("employer",),
    "horizon": ("horizon_years",),
    "holdings": ("holdings",),
    "watchlist": ("watchlist",),
    "currency": ("base_currency",),
    "interest": ("sectors_of_interest",),
    "goal": (),
    "income": (),
    "limit": (),
    "style": (),
    "age": (),
}
