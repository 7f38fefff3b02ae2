"""What a Postgres layout of the ledger is, as rows: every relation, column, constraint,
policy, trigger, function and index in the ``analyst_facts`` schema, with privileges."""

from __future__ import annotations

from typing import Any

import psycopg

CATALOG = (
    "SELECT c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity,"
    " coalesce(c.relacl::text, '') FROM pg_class c JOIN pg_namespace n"
    " ON n.oid = c.relnamespace WHERE n.nspname = 'analyst_facts' ORDER BY 1",
    "SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, '')"
    " FROM information_schema.columns WHERE table_schema = 'analyst_facts' ORDER BY 1, 2",
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE connamespace = 'analyst_facts'::regnamespace ORDER BY 1, 2",
    "SELECT tablename, policyname, permissive, roles::text, cmd, coalesce(qual, ''),"
    " coalesce(with_check, '') FROM pg_policies WHERE schemaname = 'analyst_facts'"
    " ORDER BY 1, 2",
    "SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger"
    " WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'analyst_facts.%' ORDER BY 1, 2",
    "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
    " WHERE p.pronamespace = 'analyst_facts'::regnamespace ORDER BY 1",
    "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index"
    " WHERE indrelid::regclass::text LIKE 'analyst_facts.%' ORDER BY 1",
)


def catalog(conn: psycopg.Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Each query of :data:`CATALOG` with its rows, read on ``conn``."""
    return {query: [tuple(r) for r in conn.execute(query).fetchall()] for query in CATALOG}
