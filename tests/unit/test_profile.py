"""The profile registry: every attribute's canonical values, its refusals, and its evidence check.

These values are what reaches the fact ledger, so each normaliser is pinned down on many
phrasings, and each refusal must say which attribute, which value, and what is accepted.
"""

from __future__ import annotations

import pytest

from agent.errors import AnalystError, InvalidProfileValueError, UnknownProfileAttributeError
from agent.learning import profile


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("conservative", "conservative"),
        ("Conservative", "conservative"),
        ("cautious", "conservative"),
        ("risk-averse", "conservative"),
        ("Risk Averse", "conservative"),
        ("very cautious", "conservative"),
        ("low", "conservative"),
        ("moderate", "moderate"),
        ("balanced", "moderate"),
        ("  Balanced ", "moderate"),
        ("aggressive", "aggressive"),
        ("high-risk", "aggressive"),
        ("an aggressive investor", "aggressive"),
    ],
)
def test_risk_tolerance_maps_synonyms(raw: str, canonical: str) -> None:
    assert profile.validate("risk_tolerance", raw) == canonical


@pytest.mark.parametrize(
    ("raw", "years"),
    [
        (10, 10),
        (2.5, 2.5),
        ("10", 10),
        ("2 years", 2),
        ("1 year", 1),
        ("18 months", 1.5),
        ("6 months", 0.5),
        ("3 mo", 0.25),
        ("a decade", 10),
        ("two years", 2),
        ("10-year", 10),
        ("60 years", 60),
        (4.0, 4),
    ],
)
def test_horizon_years_reads_durations(raw: object, years: float) -> None:
    value = profile.validate("horizon_years", raw)
    assert value == years
    assert type(value) is (int if years == int(years) else float)


@pytest.mark.parametrize("raw", [0, -1, 61, "0 years", "61 years", "800 months", True, "soon", [2]])
def test_horizon_years_refuses_out_of_range_and_non_durations(raw: object) -> None:
    with pytest.raises(InvalidProfileValueError) as caught:
        profile.validate("horizon_years", raw)
    message = str(caught.value)
    assert "horizon_years" in message
    assert repr(raw) in message
    assert "at most 60" in message  # the accepted values are named


@pytest.mark.parametrize(
    ("raw", "tickers"),
    [
        (["nvda", "MSFT"], ["NVDA", "MSFT"]),
        (["$NVDA", "NVDA"], ["NVDA"]),
        ("NVDA, msft and aapl", ["NVDA", "MSFT", "AAPL"]),
        (["Nvidia", "tesla"], ["NVDA", "TSLA"]),
        (["brk.b"], ["BRK.B"]),
        ([], []),
    ],
)
@pytest.mark.parametrize("name", ["watchlist", "excluded_tickers"])
def test_ticker_lists_are_upper_case_symbols_without_repeats(
    name: str, raw: object, tickers: list[str]
) -> None:
    assert profile.validate(name, raw) == tickers


@pytest.mark.parametrize("raw", [["not a ticker"], [5], "NVDA!", {"NVDA": 1}, ["TOOLONGSYM"]])
def test_ticker_lists_refuse_what_is_not_a_symbol(raw: object) -> None:
    with pytest.raises(InvalidProfileValueError, match=r"'watchlist'.*Accepted: a list of ticker"):
        profile.validate("watchlist", raw)


@pytest.mark.parametrize(
    ("raw", "style"),
    [
        ("brief", "brief"),
        ("Short", "brief"),
        ("concise", "brief"),
        ("detailed", "detailed"),
        ("in-depth", "detailed"),
        ("thorough", "detailed"),
        ("detailed reports", "detailed"),
    ],
)
def test_report_style(raw: str, style: str) -> None:
    assert profile.validate("report_style", raw) == style


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("EUR", "EUR"),
        ("eur", "EUR"),
        (" usd ", "USD"),
        ("euros", "EUR"),
        ("£", "GBP"),
        ("chf", "CHF"),
    ],
)
def test_base_currency_is_an_upper_case_iso_code(raw: str, code: str) -> None:
    assert profile.validate("base_currency", raw) == code


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("EURO2", "three-letter"),
        ("XYZ", "not an ISO 4217"),
        ("E", "three-letter"),
        (978, "expected a currency code"),
    ],
)
def test_base_currency_refuses_non_codes(raw: object, problem: str) -> None:
    with pytest.raises(InvalidProfileValueError, match=problem) as caught:
        profile.validate("base_currency", raw)
    assert "base_currency" in str(caught.value) and "ISO 4217" in str(caught.value)


def test_an_enumeration_error_names_attribute_value_and_accepted_values() -> None:
    with pytest.raises(InvalidProfileValueError) as caught:
        profile.validate("risk_tolerance", "yolo")
    error = caught.value
    assert (error.attribute, error.value) == ("risk_tolerance", "yolo")
    assert str(error).startswith("Invalid value 'yolo' for profile attribute 'risk_tolerance'")
    assert "conservative, moderate or aggressive" in str(error)
    assert error.exit_code == 2 and isinstance(error, AnalystError)


def test_an_unknown_attribute_is_refused_with_the_known_names() -> None:
    with pytest.raises(UnknownProfileAttributeError) as caught:
        profile.validate("favourite_colour", "blue")
    message = str(caught.value)
    assert "Unknown profile attribute 'favourite_colour'" in message
    for name in profile.REGISTRY:
        assert name in message
    assert isinstance(caught.value, InvalidProfileValueError)  # one except clause catches both


def test_every_attribute_validates_its_own_examples_to_themselves() -> None:
    for attribute in profile.ATTRIBUTES:
        assert attribute.description and attribute.accepted and attribute.examples
        for example in attribute.examples:
            assert profile.validate(attribute.name, example) == example, attribute.name


def test_scalars_replace_and_ticker_lists_merge() -> None:
    merges = {a.name: a.merge for a in profile.ATTRIBUTES}
    assert merges == {
        "risk_tolerance": "replace",
        "horizon_years": "replace",
        "watchlist": "union",
        "excluded_tickers": "union",
        "report_style": "replace",
        "base_currency": "replace",
        "full_name": "replace",
        "address": "replace",
        "holdings": "union",
        "goal": "replace",
        "income_preference": "replace",
        "max_drawdown_pct": "replace",
        "excluded_sectors": "union",
        "sectors_of_interest": "union",
        "employer": "replace",
        "age": "replace",
    }


def test_personal_attributes_are_tagged_and_never_shown() -> None:
    assert {a.name for a in profile.ATTRIBUTES if a.personal} == {"full_name", "address", "age"}
    assert profile.validate("full_name", "  Alice   Tamm. ") == "Alice Tamm"
    assert profile.validate("address", "12 Rue de la Paix,  Paris") == "12 Rue de la Paix, Paris"
    with pytest.raises(InvalidProfileValueError) as caught:
        profile.validate("full_name", "R2-D2 Secret99")
    assert "Secret99" not in str(caught.value) and "personal data" in str(caught.value)
    assert caught.value.value == profile.REDACTED
    assert profile.shown("address", "12 Rue de la Paix") == profile.REDACTED
    assert profile.shown("horizon_years", 10) == "10"


@pytest.mark.parametrize(
    ("name", "value", "text", "supported"),
    [
        ("horizon_years", 10, "my horizon is 10 years", True),
        ("horizon_years", 1.5, "I'm investing for 18 months", True),
        ("horizon_years", 2, "actually my horizon is 2 years, not 10", True),
        ("horizon_years", 10, "my horizon: 10", True),
        ("horizon_years", 30, "my horizon is 10 years", False),
        ("horizon_years", 18, "my horizon is 18 months", False),
        ("risk_tolerance", "conservative", "I'm a cautious investor", True),
        ("risk_tolerance", "conservative", "I'm an aggressive investor", False),
        ("report_style", "brief", "I prefer short reports", True),
        ("report_style", "detailed", "I prefer short reports", False),
        ("base_currency", "EUR", "My base currency is euros", True),
        ("base_currency", "EUR", "My base currency is EUR", True),
        ("base_currency", "GBP", "base currency: £", True),
        ("base_currency", "USD", "My base currency is EUR", False),
        ("watchlist", ["NVDA", "MSFT"], "add nvda and Microsoft to my watchlist", True),
        ("watchlist", ["NVDA", "AMD"], "add NVDA to my watchlist", False),
        ("watchlist", [], "add NVDA to my watchlist", False),
    ],
)
def test_supports_says_whether_a_text_states_the_value(
    name: str, value: object, text: str, supported: bool
) -> None:
    assert profile.attribute(name).supports(value, text) is supported  # type: ignore[arg-type]


def test_describe_lists_every_attribute_for_a_prompt() -> None:
    text = profile.describe()
    assert text.count("\n") == len(profile.ATTRIBUTES) - 1
    for attribute in profile.ATTRIBUTES:
        assert f"- {attribute.name}: " in text


def test_a_conflict_over_a_personal_attribute_is_reported_without_its_value() -> None:
    from agent.learning.profile import REDACTED, error_text
    from memory.errors import FactConflictError

    def conflict(attribute: str, value: str) -> FactConflictError:
        return FactConflictError("user:mira", attribute, "2026-11-02", "m-1", value, "policy")

    name = error_text(conflict("full_name", "Zorvendix Qualtrobe"))
    assert "Zorvendix" not in name and REDACTED in name and "m-1" in name
    assert "'moderate'" in error_text(conflict("risk_tolerance", "moderate"))
    assert error_text(ValueError("bad")) == "ValueError: bad"


# -- the suitability attributes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "canonical"),
    [
        ("goal", "pension", "retirement"),
        ("goal", "Retirement", "retirement"),
        ("goal", "buying a house", "home_purchase"),
        ("goal", "down payment", "home_purchase"),
        ("goal", "college", "education"),
        ("goal", "passive income", "income"),
        ("goal", "capital growth", "growth"),
        ("goal", "capital preservation", "preservation"),
        ("income_preference", "dividend", "dividends"),
        ("income_preference", "capital gains", "growth"),
        ("income_preference", "a mix", "balanced"),
        ("max_drawdown_pct", 20, 20),
        ("max_drawdown_pct", "15%", 15),
        ("max_drawdown_pct", "forty percent", 40),
        ("max_drawdown_pct", "a quarter", 25),
        ("max_drawdown_pct", "12.5 per cent", 12.5),
        ("excluded_sectors", "cigarettes and casinos", ["tobacco", "gambling"]),
        ("excluded_sectors", ["arms makers", "Bitcoin"], ["weapons", "crypto"]),
        ("excluded_sectors", "oil, coal", ["fossil_fuels"]),
        ("sectors_of_interest", ["chipmakers", "pharma"], ["semiconductors", "healthcare"]),
        ("sectors_of_interest", "REITs and telcos", ["real_estate", "telecom"]),
        ("sectors_of_interest", "mining stocks", ["materials"]),
        ("holdings", ["Apple", "msft"], ["AAPL", "MSFT"]),
        ("employer", "  Acme Widgets Ltd. ", "Acme Widgets Ltd"),
        ("age", 61, 61),
        ("age", "forty-two", 42),
        ("age", "33 years old", 33),
    ],
)
def test_suitability_attributes_have_canonical_values(
    name: str, raw: object, canonical: object
) -> None:
    assert profile.validate(name, raw) == canonical


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("goal", "become famous"),
        ("income_preference", "lottery"),
        ("max_drawdown_pct", 0),
        ("max_drawdown_pct", "150%"),
        ("max_drawdown_pct", "a lot"),
        ("excluded_sectors", ["healthcare"]),
        ("sectors_of_interest", ["tobacco"]),
        ("age", 0),
        ("age", 42.5),
        ("age", "old"),
        ("employer", "1234"),
    ],
)
def test_suitability_attributes_refuse_what_they_cannot_read(name: str, raw: object) -> None:
    with pytest.raises(InvalidProfileValueError, match=name):
        profile.validate(name, raw)


@pytest.mark.parametrize(
    ("raw", "years"),
    [
        ("thirty months", 2.5),
        ("a couple of decades", 20),
        ("twenty-two years", 22),
        ("half a decade", 5),
        ("a year and a half", 1.5),
        ("~9 years", 9),
        ("4 yrs", 4),
    ],
)
def test_horizon_years_reads_durations_in_words(raw: str, years: float) -> None:
    assert profile.validate("horizon_years", raw) == years


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("Indian rupees", "INR"),
        ("swedish krona", "SEK"),
        ("Hong Kong dollars", "HKD"),
        ("the yuan", "CNY"),
        ("Norwegian kroner", "NOK"),
        ("pounds sterling", "GBP"),
    ],
)
def test_base_currency_reads_currency_names(raw: str, code: str) -> None:
    assert profile.validate("base_currency", raw) == code


@pytest.mark.parametrize(
    ("name", "value", "text", "supported"),
    [
        ("base_currency", "HKD", "we report in Hong Kong dollars", True),
        ("base_currency", "USD", "we report in Hong Kong dollars", False),
        ("max_drawdown_pct", 20, "a drawdown of about a fifth is fine", True),
        ("max_drawdown_pct", 35, "max loss 35 percent", True),
        ("max_drawdown_pct", 25, "max loss 35 percent", False),
        ("income_preference", "balanced", "half dividend payers, half growth names", True),
        ("income_preference", "dividends", "growth names only", False),
        ("excluded_sectors", ["tobacco", "alcohol"], "no cigarettes or booze", True),
        ("excluded_sectors", ["tobacco", "weapons"], "no cigarettes or booze", False),
        ("goal", "retirement", "it's my pension pot", True),
        ("goal", "education", "it's my pension pot", False),
        ("age", 61, "I am sixty-one", True),
        ("age", 61, "I am 16", False),
        ("employer", "Nvidia", "my paycheck comes from Nvidia", True),
        ("horizon_years", 14, "no sorry, 14. typo", True),
        ("horizon_years", 20, "a couple of decades", True),
    ],
)
def test_suitability_values_are_grounded_in_the_text(
    name: str, value: object, text: str, supported: bool
) -> None:
    assert profile.attribute(name).supports(value, text) is supported  # type: ignore[arg-type]
