"""A group of appends on SQLite, its rules applied in SQL (``memory.facts.sqlite_appends``):
the writers' authority computed by its statement as :func:`memory.facts.rules.authority_of`
computes it. The cases both backends share are in ``test_facts_set_appends``.
"""

from __future__ import annotations

import itertools
import sqlite3
from datetime import UTC, datetime

import pytest

import memory.facts.sqlite_appends as appends
from memory.facts import MemoryDelta
from memory.facts.group import PendingWrite
from memory.facts.migrations import migrate_sqlite_sync
from memory.facts.rules import authority_of
from memory.sealing import PLAIN
from tests.support.authority_cases import GRANTS, SUBJECTS, WRITERS

pytestmark = pytest.mark.integration

BASE = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_the_authority_statement_answers_as_the_rule_does() -> None:
    """``authority_of`` for every writer, subject and set of grants, against the SQL."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate_sqlite_sync(conn, where=":memory:")
    sql = appends.SqliteAppends(conn, PLAIN)
    for grants in GRANTS:
        conn.execute("DELETE FROM fact_grants")
        conn.executemany(
            "INSERT INTO fact_grants VALUES ('acme', ?, ?, ?, 'x', '2026')",
            [(user, role, subject) for user in WRITERS if user for role, subject in grants],
        )
        group = [
            PendingWrite(
                ("acme", subject, "risk"),
                lambda: iter(()),
                user,
                starts=BASE,
                delta=MemoryDelta(subject=subject, attribute="risk", value="x", valid_from=BASE),
                now=lambda: NOW,
            )
            for user, subject in itertools.product(WRITERS, SUBJECTS)
        ]
        conn.execute("BEGIN")
        sql.appendable(group)
        found = {(r[1], r[2]): r[3] for r in conn.execute(appends._AUTHORITIES)}
        conn.execute("ROLLBACK")
        expected = {
            (user, subject): authority_of(user, subject, list(grants))
            for user, subject in itertools.product(WRITERS, SUBJECTS)
        }
        assert found == expected, grants
