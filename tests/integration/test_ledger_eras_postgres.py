"""A Postgres ledger of every earlier schema layout, holding real data, is upgraded by the
owner's setup and then answers the application role as its old rows meant (the scenario and
its answers: tests/support/ledger_eras.py; the SQLite twin: tests/unit/test_ledger_eras.py).
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memory.facts import setup_fact_store
from memory.facts.migrations import LATEST_VERSION, MIGRATIONS
from tests.support.ledger_eras import LAYOUTS, build_postgres_era, check_answers
from tests.support.servers import postgres_ledger


def _versions(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT version, checksum FROM analyst_facts.migrations ORDER BY version"
        ).fetchall()
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("version", LAYOUTS["postgres"])
async def test_a_postgres_ledger_of_an_earlier_layout_upgrades_and_answers_as_its_rows_meant(
    version: int,
) -> None:
    with postgres_ledger(migrate=False) as ledger:
        key = await build_postgres_era(ledger.owner_url, ledger.admin_url, ledger.app_role, version)
        assert [v for v, _ in _versions(ledger.admin_url)] == list(range(1, version + 1))

        applied = await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
        assert applied == list(range(version + 1, LATEST_VERSION + 1))
        assert _versions(ledger.admin_url) == [
            (m.version, m.checksum("postgres")) for m in MIGRATIONS
        ]
        await check_answers(ledger.app_url, version, key)
        with psycopg.connect(ledger.admin_url) as conn:
            shapes = conn.execute("SELECT DISTINCT schema_version FROM analyst_facts.facts")
            assert shapes.fetchall() == [(4,)]
