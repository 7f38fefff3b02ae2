"""Scan raw bytes: is a forgotten text anywhere in a data folder's files (SQLite files with
their WAL, the Qdrant Edge folder, caches)? Used by the forget and account-deletion tests."""

from __future__ import annotations

from pathlib import Path

from tests.support.waiting import wait_until

#: Seconds a scan waits for a Qdrant Edge shard's background erasure (a condition, not a
#: pause: it returns as soon as the eraser is done).
ERASURE_DEADLINE = 180.0


def raw_hits(folder: Path, needle: str) -> list[str]:
    """Files under ``folder`` whose bytes contain ``needle`` (any case; UTF-8 or UTF-16),
    once every erasure a forget handed to a shard's background eraser is done and no eraser
    is swapping folders (an erasure still pending after :data:`ERASURE_DEADLINE` fails the
    test)."""
    import time

    deadline = time.monotonic() + ERASURE_DEADLINE
    while True:
        try:
            _wait_for_erasers(folder, deadline)
            return _scan(folder, needle)
        except FileNotFoundError:  # an eraser swapped a folder while it was walked
            if time.monotonic() > deadline:
                raise


def _wait_for_erasers(folder: Path, deadline: float) -> None:
    import time

    from memory.store.erasing import PENDING_FILE, eraser_running, wait_erased

    for marker in folder.rglob(PENDING_FILE):
        if not wait_erased(marker.parent, max(0.0, deadline - time.monotonic())):
            raise AssertionError(f"the erasure of {marker.parent} is still pending")
    for lock in folder.rglob("*.erasing.lock"):
        shard = lock.with_name(lock.name.removesuffix(".erasing.lock"))
        wait_until(
            lambda shard=shard: not eraser_running(shard),
            f"the end of the eraser of {shard}",
            max(0.0, deadline - time.monotonic()),
        )


def _scan(folder: Path, needle: str) -> list[str]:
    forms = {needle.encode(), needle.lower().encode(), needle.encode("utf-16-le")}
    hits = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if any(form in data or form in data.lower() for form in forms):
                hits.append(str(path.relative_to(folder)))
    return hits


def table_rows(url: str, schema: str) -> dict[str, list[str]]:
    """Every row of every table of ``schema`` as text, by table, read through ``url`` (a
    superuser's: row security does not apply). Dead tuples are not rows: VACUUM reclaims them."""
    import psycopg

    found: dict[str, list[str]] = {}
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            rows = conn.execute(f'SELECT t::text FROM "{schema}"."{table}" t').fetchall()
            found[table] = [row[0] for row in rows]
    return found
