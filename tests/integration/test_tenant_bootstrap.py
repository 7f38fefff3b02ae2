"""A tenant's first admin is made by the ledger's owner, never by whoever asks first.

SQLite: ``analyst db init --admin USER`` run by the OS user owning the data folder (a folder
owned by someone else refuses it); ``facts grant --admin`` by anyone not yet an admin is refused
with exit 2, in an empty tenant too. Postgres: the owner's connection makes the admin; the
application role, even acting as an existing admin, cannot bootstrap, and a non-admin's grant
is refused the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.errors import FactAuthorityError
from memory.facts import open_fact_store
from memory.identity import Principal
from tests.support.servers import PgLedger, postgres_ledger

pytestmark = pytest.mark.integration

EXE = Path(sys.executable).with_name("analyst")


def _cli(env: dict[str, str], user: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args],
        env={**env, "ANALYST_USER": user},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_sqlite_first_come_is_refused_and_the_folder_owner_makes_the_admin(
    isolated_env: Path,
) -> None:
    env = {**os.environ, "ANALYST_TENANT": "acme", "NO_COLOR": "1"}
    grab = _cli(env, "mallory", "facts", "grant", "mallory", "--admin")
    assert grab.returncode == 2, grab.stdout + grab.stderr
    assert "only the tenant's admin" in grab.stderr
    assert "analyst db init --admin" in grab.stderr and "Traceback" not in grab.stderr
    listed = _cli(env, "mallory", "facts", "grants", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == "[]"

    made = _cli(env, "anyone", "db", "init", "--admin", "alice")
    assert made.returncode == 0, made.stderr
    assert "alice: admin of tenant acme (granted)" in made.stdout
    again = _cli(env, "anyone", "db", "init", "--admin", "alice")
    assert "already an admin" in again.stdout

    granted = _cli(env, "alice", "facts", "grant", "bob", "team:*")
    assert granted.returncode == 0, granted.stderr
    reader = _cli(env, "alice", "facts", "grant", "carol", "ticker:*", "--read-only")
    assert "carol: reader of ticker:* (granted)" in reader.stdout, reader.stderr
    refused = _cli(env, "bob", "facts", "grant", "bob", "--admin")
    assert refused.returncode == 2 and "only the tenant's admin" in refused.stderr
    # Another tenant of the same file still has no admin, and nobody grabs it.
    other = _cli({**env, "ANALYST_TENANT": "globex"}, "alice", "facts", "grant", "x", "--admin")
    assert other.returncode == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a folder's owner needs root")
async def test_sqlite_a_folder_owned_by_another_os_user_refuses_the_bootstrap(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    url = f"sqlite:///{folder / 'facts.sqlite'}"
    async with open_fact_store(url, Principal("acme", "alice")) as facts:
        os.chown(folder, 4242, 4242)
        try:
            with pytest.raises(FactAuthorityError, match=r"Only the owner of .* \(OS uid 4242\)"):
                await facts.bootstrap_admin("alice")
        finally:
            os.chown(folder, os.geteuid(), os.getegid())
        assert await facts.grants() == []
        assert await facts.bootstrap_admin("alice")
        assert [(g.user_id, g.role, g.granted_by) for g in await facts.grants()] == [
            ("alice", "admin", "(ledger owner)")
        ]


@pytest.fixture
def pg() -> Iterator[PgLedger]:
    with postgres_ledger() as ledger:
        yield ledger


async def test_postgres_only_the_owner_makes_an_admin(pg: PgLedger) -> None:
    async with open_fact_store(pg.app_url, Principal("acme", "mallory")) as app:
        with pytest.raises(FactAuthorityError, match="only the tenant's admin"):
            await app.grant("mallory", admin=True)
        with pytest.raises(FactAuthorityError, match="not the owner"):
            await app.bootstrap_admin("mallory")
        assert await app.grants() == []
        async with open_fact_store(pg.owner_url, Principal("acme", "alice")) as owner:
            assert await owner.bootstrap_admin("alice")
            assert not await owner.bootstrap_admin("alice")
        alice = app.with_principal(Principal("acme", "alice"))
        assert await alice.grant("bob", "team:*")
        # An admin grants, but the owner's act stays the owner's.
        with pytest.raises(FactAuthorityError, match="not the owner"):
            await alice.bootstrap_admin("carol")
        with pytest.raises(FactAuthorityError, match="only the tenant's admin"):
            await app.with_principal(Principal("acme", "bob")).grant("bob", admin=True)
        assert [(g.user_id, g.role) for g in await app.grants()] == [
            ("alice", "admin"),
            ("bob", "writer"),
        ]


def test_postgres_cli_grant_by_a_non_admin_exits_2_and_db_init_needs_the_owner(
    isolated_env: Path,
) -> None:
    with postgres_ledger() as pg:
        env = {**os.environ, "ANALYST_TENANT": "acme", "NO_COLOR": "1"}
        as_app = {**env, "ANALYST_FACTS": pg.app_url}
        grab = _cli(as_app, "mallory", "facts", "grant", "mallory", "--admin")
        assert grab.returncode == 2 and "only the tenant's admin" in grab.stderr, grab.stderr
        not_owner = _cli(as_app, "mallory", "db", "init", "--admin", "mallory")
        assert not_owner.returncode == 2 and "not the owner" in not_owner.stderr
        made = _cli({**env, "ANALYST_FACTS": pg.owner_url}, "x", "db", "init", "--admin", "alice")
        assert made.returncode == 0, made.stderr
        assert _cli(as_app, "alice", "facts", "grant", "bob", "team:*").returncode == 0
