"""Numbered schema migrations for the small SQLite files (``PRAGMA user_version``): the
thread index, the document index, the embedding cache.

Each migration is a tuple of statements; a file's ``user_version`` says how many have been
applied. Several processes may open the same new file at once (two CLIs started together),
so pending migrations run in one ``BEGIN IMMEDIATE`` transaction: the second process waits
for the first one's schema and then finds nothing left to do, and a failed migration leaves
the file as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

Migrations = Sequence[Sequence[str]]


def migrate(conn: sqlite3.Connection, migrations: Migrations) -> None:
    """Apply the migrations past the file's ``user_version``.

    ``conn`` must not be inside a transaction (autocommit, or nothing written yet).
    """
    if conn.execute("PRAGMA user_version").fetchone()[0] >= len(migrations):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for number, statements in enumerate(migrations[version:], start=version + 1):
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
