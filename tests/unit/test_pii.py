"""The personal-data detector (memory.pii): what it replaces, what it must leave alone; and
Markdown documents written through FileMemory, stored redacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.documents import FileMemory
from memory.pii import find, iban_valid, luhn_valid, nir_valid, redact, redact_value


def _nir(body: str) -> str:
    """A French NIR with its key (97 - number mod 97, Corsica's 2A/2B as 19/18)."""
    number = int(body.replace("2A", "19").replace("2B", "18"))
    return f"{body}{97 - number % 97:02d}"


FOUND = [
    # Card numbers (Luhn-valid test numbers of the card networks), grouped or not.
    ("pay with 4111 1111 1111 1111 today", "pay with [card number] today"),
    ("4111-1111-1111-1111", "[card number]"),
    ("mastercard 5555555555554444.", "mastercard [card number]."),
    ("amex 3782 822463 10005", "amex [card number]"),
    # IBANs (the registry's examples), grouped, compact, followed by words.
    ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [bank account] please"),
    ("GB82WEST12345698765432", "[bank account]"),
    ("FR14 2004 1010 0505 0001 3M02 606", "[bank account]"),
    ("BE68 5390 0754 7034 AB12", "[bank account] AB12"),
    # E-mail addresses.
    ("write to jane.doe+news@example.co.uk now", "write to [e-mail] now"),
    # Phones: international and national formats.
    ("call +33 6 12 34 56 78", "call [phone]"),
    ("+1 (415) 555-2671", "[phone]"),
    ("office (415) 555-2671", "office [phone]"),
    ("415-555-2671", "[phone]"),
    ("06 12 34 56 78", "[phone]"),
    ("06.12.34.56.78", "[phone]"),
    ("0612345678", "[phone]"),
    ("020 7946 0958", "[phone]"),
    ("07700 900123", "[phone]"),
    ("+44 20 7946 0958", "[phone]"),
    # National ids with a rule or a checksum.
    ("ssn 123-45-6789", "ssn [national id]"),
    (f"NIR {_nir('1841276451089')}", "NIR [national id]"),
    ("NIR 1 84 12 76 451 089 " + _nir("1841276451089")[-2:], "NIR [national id]"),
    (f"NIR {_nir('28205' + '2A' + '123456')}", "NIR [national id]"),
    ("DNI 12345678Z", "DNI [national id]"),
    ("NIE X1234567L", "NIE [national id]"),
]


@pytest.mark.parametrize(("text", "expected"), FOUND)
def test_personal_values_are_replaced_by_their_placeholder(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected  # idempotent: a placeholder is never a match


NOT_FOUND = [
    "4111 1111 1111 1112",  # fails Luhn
    "1234567890123456",  # fails Luhn, and no card starts with 1
    "DE89 3704 0044 0532 0130 02",  # wrong IBAN check digits (and not a Luhn number)
    "DE89370400440532013001",  # wrong IBAN check digits
    "XX89 3704 0044 0532 0130 00",  # no such country
    "666-45-6789",  # no SSN area 666
    "123-00-6789",  # no SSN group 00
    "DNI 12345678A",  # wrong check letter
    "NIR 184127645108947",  # wrong key
    "an address like @NVDA or user@ alone",
]


@pytest.mark.parametrize("text", NOT_FOUND)
def test_invalid_checksums_and_formats_are_left_alone(text: str) -> None:
    assert redact(text) == text
    assert find(text) == []


EQUITY_RESEARCH = [
    "NVDA at 1,234.56",
    "NVDA closed at 1234.56 on 2026-12-02 (+3.5%)",
    "In 2026 revenue grew 12.5%; guidance for 2027-2028",
    "bought 10,000 shares; 1,000,000 shares outstanding",
    "Market cap $3,000,000,000,000 (3000000000000 USD)",
    "volume 123 456 789 on 02.12.2026 at 09:30, 12/02/2026",
    "EPS +3.5% q/q, -1.2% y/y; P/E 45.3x; target 1,500.00",
    "ISIN US67066G1040 and CUSIP 67066G104",
    "spread +125 bps, yield 4.25%, 10-year 2036-05-15",
    "ids ep-0612345678abcdef t-4111111111111111x at 2026-12-02T12:37:32.123456+00:00",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
]


@pytest.mark.parametrize("text", EQUITY_RESEARCH)
def test_equity_research_numbers_are_not_personal_data(text: str) -> None:
    assert find(text) == []


def test_findings_are_typed_and_do_not_overlap() -> None:
    text = "mail a@b.io, card 4111111111111111, IBAN GB82WEST12345698765432, +33 6 12 34 56 78"
    kinds = [f.kind for f in find(text)]
    assert kinds == ["e-mail", "card number", "bank account", "phone"]
    assert redact(text) == "mail [e-mail], card [card number], IBAN [bank account], [phone]"


def test_redact_value_redacts_every_string_and_keeps_the_rest() -> None:
    value = {
        "text": "my card is 4111 1111 1111 1111",
        "importance": 5,
        "tickers": ["NVDA", "call 415-555-2671"],
        "nested": {"quote": ("jane@example.com",)},
        "4111111111111111": None,
    }
    assert redact_value(value) == {
        "text": "my card is [card number]",
        "importance": 5,
        "tickers": ["NVDA", "call [phone]"],
        "nested": {"quote": ("[e-mail]",)},
        "4111111111111111": None,  # keys are names, not content
    }


def test_checksums() -> None:
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")
    assert iban_valid("NL91ABNA0417164300") and not iban_valid("NL91ABNA0417164301")
    assert not iban_valid("NL91ABNA041716430")  # one character short for NL
    assert nir_valid(_nir("1841276451089")) and nir_valid(_nir("2820519123456"))
    assert not nir_valid("184127645108900")


def test_a_markdown_document_is_stored_redacted_and_its_front_matter_kept(tmp_path: Path) -> None:
    docs = FileMemory(tmp_path / "mem")
    docs.write("notes/a.md", "Call +33 6 12 34 56 78.\n", {"approver": "jane@example.com"})
    docs.update("notes/b.md", lambda _: "card 4111 1111 1111 1111\n")
    docs.write_bytes("notes/c.md", b"mail jane@example.com\n")
    docs.write_bytes("chart.png", b"\x89PNG jane@example.com")  # not Markdown: as given
    a = docs.read("notes/a.md")
    assert a.body == "Call [phone].\n" and a.metadata == {"approver": "jane@example.com"}
    assert docs.read_text("notes/b.md") == "card [card number]\n"
    assert docs.read_text("notes/c.md") == "mail [e-mail]\n"
    assert (tmp_path / "mem" / "chart.png").read_bytes() == b"\x89PNG jane@example.com"
