"""The Postgres ledger's read statements as prepared: psycopg placeholders turned into ``$n``,
named ones numbered by first appearance, and one name per statement text."""

from __future__ import annotations

import pytest

from memory.facts.postgres_ops import PROFILE, WITH_GRANTS
from memory.facts.postgres_reads import statement


def test_positional_placeholders_are_numbered_in_order() -> None:
    found = statement("SELECT a FROM t WHERE b = %s AND c = %s")
    assert found.sql == b"SELECT a FROM t WHERE b = $1 AND c = $2"
    assert found.values(("x", "y")) == ["x", "y"]


def test_a_named_placeholder_used_twice_is_one_parameter() -> None:
    found = statement("SELECT %(at)s, %(who)s WHERE x < %(at)s")
    assert found.sql == b"SELECT $1, $2 WHERE x < $1"
    assert found.values({"who": "w", "at": "t", "unused": 0}) == ["t", "w"]


def test_the_profile_read_asks_for_its_three_values_once_each() -> None:
    found = statement(PROFILE)
    assert found.names == ("tenant", "subject", "at")
    assert b"%" not in found.sql
    beside_grants = statement(WITH_GRANTS["profile"][0])
    assert beside_grants.names == ("grants_tenant", "grants_user", "tenant", "subject", "at")


def test_mixed_placeholders_are_refused() -> None:
    with pytest.raises(ValueError, match="mixes"):
        statement("SELECT %s, %(a)s")


def test_each_statement_has_its_own_stable_name() -> None:
    one, other = statement("SELECT 1 WHERE %s"), statement("SELECT 2 WHERE %s")
    assert one.name != other.name
    assert statement("SELECT 1 WHERE %s").name == one.name
    assert one.name.startswith(b"analyst_facts_")
