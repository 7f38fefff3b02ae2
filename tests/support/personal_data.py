"""Valid personal values (the card passes Luhn, the IBAN its mod-97 check) for the tests that
type them into the analyst, and the raw-byte scan that proves no file holds one."""

from __future__ import annotations

from pathlib import Path

from tests.support.raw_bytes import raw_hits

CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
EMAIL = "jane.doe@example.com"
PHONE = "+33 6 12 34 56 78"
#: Each value as typed and in the forms a store might keep it in (digits run together).
NEEDLES = (
    CARD,
    CARD.replace(" ", ""),
    IBAN,
    IBAN.replace(" ", ""),
    EMAIL,
    PHONE,
    PHONE.replace(" ", ""),
    "12 34 56 78",
)
PLACEHOLDERS = ("[card number]", "[bank account]", "[e-mail]", "[phone]")
#: A message holding all four.
SAID = f"Reach me at {EMAIL} or {PHONE}; card {CARD}; account {IBAN}."


def hits(*folders: Path) -> dict[str, list[str]]:
    """Each needle found in a file under ``folders``, with the files holding it."""
    found = {
        needle: [f"{folder.name}/{path}" for folder in folders for path in raw_hits(folder, needle)]
        for needle in NEEDLES
    }
    return {needle: files for needle, files in found.items() if files}


def named(text: str) -> list[str]:
    """The needles ``text`` holds."""
    return [needle for needle in NEEDLES if needle in text]
