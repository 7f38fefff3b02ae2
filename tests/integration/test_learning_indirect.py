"""What the write path keeps from values said without their names: a reaction to losses is a
risk tolerance or a loss limit, a conflict or a dislike excludes a ticker (enforced like any
exclusion), a currency said by symbol or by a local currency is the base currency, a name and
an address given in passing are the user's; the same words about someone else, or about the
market, leave the profile empty.

Real graph and stores (embedded defaults), one application per session at an injected time.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.app import AnalystApp
from memory.facts import subject_for
from tests.support.sessions import app_at, chat

pytestmark = pytest.mark.integration


def session(user: str) -> AbstractAsyncContextManager[AnalystApp]:
    return app_at(datetime(2026, 11, 25, 9, tzinfo=UTC), user)


async def profile_of(app: AnalystApp) -> dict[str, Any]:
    learner = await app.memory.learner()
    subject = subject_for(app.principal)
    out: dict[str, Any] = {}
    for attribute in (
        "risk_tolerance",
        "max_drawdown_pct",
        "excluded_tickers",
        "base_currency",
        "full_name",
        "address",
    ):
        record = await learner.facts.current(subject, attribute)
        if record is not None:
            out[attribute] = record.value
    return out


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (("Back in 2020 I panicked and sold everything.",), {"risk_tolerance": "conservative"}),
        (("If my portfolio fell 30% I'd buy more, honestly.",), {"risk_tolerance": "aggressive"}),
        (("A 25% fall and I'd bail, that's my line.",), {"max_drawdown_pct": 25}),
        (("I work at the FTC so I can't own Meta.",), {"excluded_tickers": ["META"]}),
        (("can't stand Musk, keep Tesla out",), {"excluded_tickers": ["TSLA"]}),
        (("My money is all in yen.",), {"base_currency": "JPY"}),
        (("I'm € based, fyi",), {"base_currency": "EUR"}),
        (
            ("I'm Dana Whitfield by the way", "we're at 14 Elm Street, Leeds LS6 2AB"),
            {"full_name": "Dana Whitfield", "address": "14 Elm Street, Leeds LS6 2AB"},
        ),
        (
            (
                "my friend lives in Japan and can't stomach big swings",
                "the market could drop 30% this year",
                "would you sell if it dropped 30%?",
            ),
            {},
        ),
    ],
)
async def test_a_value_said_without_its_name_is_learned_through_the_chat(
    turns: tuple[str, ...], expected: dict[str, Any]
) -> None:
    key = hashlib.sha256("|".join(turns).encode()).hexdigest()[:12]
    async with session(f"indirect-{key}") as app:
        await chat(app, f"indirect-{key}", *turns)
        assert await profile_of(app) == expected
