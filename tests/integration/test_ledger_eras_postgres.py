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
from tests.support.ledger_eras import (
    LAYOUTS,
    build_postgres_era,
    check_answers,
    insert_era_data,
    insert_keyed_rows,
)
from tests.support.ledger_v8_postgres import build_old_postgres_ledger
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


async def test_a_database_of_the_frozen_version_8_statements_with_data_answers_as_it_meant() -> (
    None
):
    """The same from the frozen copy of the statements and grants the old setup ran
    (tests/support/ledger_v8_postgres.py) rather than from the list."""
    with postgres_ledger(migrate=False) as ledger:
        build_old_postgres_ledger(ledger.owner_url, ledger.app_role)
        with psycopg.connect(ledger.admin_url) as conn, conn.transaction():
            insert_era_data(conn.execute, 8, "postgres")
            row = conn.execute("SELECT secret FROM analyst_facts.memory_secrets").fetchone()
            assert row is not None
            key = bytes.fromhex(row[0])
            insert_keyed_rows(conn.execute, 8, "postgres", key)
        await setup_fact_store(ledger.owner_url, app_roles=[ledger.app_role])
        await check_answers(ledger.app_url, 8, key)
