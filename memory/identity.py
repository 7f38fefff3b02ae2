"""Identity: the principal every memory operation is scoped by, and the one rule for its ids.

A :class:`Principal` (tenant, user) is established once per process or request by the
application (the CLI from ``--tenant``/``--user`` and the environment, the API server from the
run context) and handed down. Storage scopes every read and write by it; a thread id, a key
or anything a model produced grants nothing.

Tenant and user ids follow one rule, applied when a principal is made (:func:`normal_id`), so
every tier (checkpoints and the thread index, the store, the fact ledger, the journal, the
documents) sees the same id: 1 to 64 ASCII letters, digits and ``. _ - @``, starting with a
letter or digit. Upper case is read as lower case (``Alice`` is ``alice``): two spellings of one
name never become two people, and no tier can disagree about who is meant. Anything else is
refused, never repaired: whitespace (``'alice '`` would otherwise be alice to a tier that trims
and someone else to one that does not), control characters, wildcards (``*`` ``%``), separators
(``:`` ``/``), non-ASCII letters (look-alikes) and ``.``/``..``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from memory.errors import InvalidPrincipalError

MAX_ID_LENGTH = 64
#: The rule in words, as error messages state it.
ID_RULE = (
    f"ids are 1 to {MAX_ID_LENGTH} characters: letters a-z, digits and . _ - @, starting with a "
    "letter or digit (upper case is read as lower case)"
)
_ID = re.compile(rf"[a-z0-9][a-z0-9._@-]{{0,{MAX_ID_LENGTH - 1}}}")

IdKind = Literal["tenant", "user"]


def normal_id(value: object, kind: IdKind, source: str | None = None) -> str:
    """``value`` as a tenant or user id under the one rule: lower-cased, or refused.

    A refusal is an :class:`~memory.errors.InvalidPrincipalError` (exit 2 in the CLI) naming
    the id, what is wrong with it and the rule; ``source`` names where it came from (``--user``,
    ``ANALYST_USER``), else it is called "the <kind> id".
    """
    shown = repr(value) if len(repr(value)) <= 80 else f"{str(value)[:60]!r}..."
    named = f"{source} {shown}" if source else f"The {kind} id {shown}"
    if not isinstance(value, str):
        raise InvalidPrincipalError(f"{named} is not text; {ID_RULE}.")
    if not value.strip():
        raise InvalidPrincipalError(
            f"{named} is empty: an empty {kind}_id cannot scope memory; {ID_RULE}."
        )
    lowered = value.lower() if value.isascii() else value
    if _ID.fullmatch(lowered):
        return lowered
    raise InvalidPrincipalError(f"{named} is not a valid {kind} id: {_fault(value)}; {ID_RULE}.")


def _fault(value: str) -> str:
    """What is wrong with an id the rule refused, in words."""
    if len(value) > MAX_ID_LENGTH:
        return f"it is {len(value)} characters long"
    for char in value:
        if char.isspace():
            return "it contains whitespace"
        if unicodedata.category(char) in ("Cc", "Cf"):
            return "it contains a control character"
        if not char.isascii():
            return f"it contains {char!r}, which is not an ASCII letter"
        if not (char.isalnum() or char in "._@-"):
            return f"it contains {char!r}"
    return "it does not start with a letter or digit"


@dataclass(frozen=True)
class Principal:
    """Who is acting: established by the CLI or the server, never by model output.

    Both ids are checked and normalised by :func:`normal_id` when the principal is made, so a
    principal that exists is valid and every tier compares the same strings.
    """

    tenant_id: str
    user_id: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "tenant_id", normal_id(self.tenant_id, "tenant"))
        object.__setattr__(self, "user_id", normal_id(self.user_id, "user"))
