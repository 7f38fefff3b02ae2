"""Issue 23, identity, through the real ``analyst`` CLI: a bad tenant or user id is refused
with exit 2 naming the id and the rule, before any storage is touched, and an id every tier
would not read the same way (``'alice '``) never reaches anyone's memory; ``ALICE`` is alice in
every tier."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

pytestmark = pytest.mark.integration

#: The ids the issue found accepted; each is refused now.
BAD_USERS = ("*", "%", "alice:bob", "user:alice", " alice", "alice ", "../alice")
RULE = "ids are 1 to 64 characters: letters a-z, digits and . _ - @"


def test_each_bad_id_exits_2_naming_the_id_and_the_rule(analyst: Any) -> None:
    by_flag = analyst.many(*[("threads", "--user", bad) for bad in BAD_USERS])
    for bad, run in zip(BAD_USERS, by_flag, strict=True):
        assert run.refused and run.code == 2, str(run)
        assert f"--user {bad!r} is not a valid user id" in run.err, str(run)
        assert RULE in run.err and "retention" not in run.err, str(run)
    spaced = dataclasses.replace(analyst, env={**analyst.env, "ANALYST_USER": "alice "})
    by_env = spaced("memory", "show")
    assert by_env.refused and by_env.code == 2, str(by_env)
    assert "ANALYST_USER 'alice ' is not a valid user id: it contains whitespace" in by_env.err
    tenant = analyst("run", "Analyze NVDA", "--tenant", "acme:eu")
    assert tenant.refused and tenant.code == 2, str(tenant)
    assert "--tenant 'acme:eu' is not a valid tenant id: it contains ':'" in tenant.err
    assert not analyst.data_dir.exists() and not analyst.memory_dir.exists()


def test_alice_with_a_trailing_space_sees_nothing_of_alice_and_upper_case_is_alice(
    analyst: Any,
) -> None:
    told = analyst.json("run", "My base currency is EUR", "--user", "alice", "--thread", "A1")
    assert told["status"] == "noted", told
    mine = analyst.json("memory", "show", "--user", "alice")
    assert [f["value"] for f in mine["profile"] if f["attribute"] == "base_currency"] == ["EUR"]

    for spelled in ("alice ", " alice", "alice\t"):
        shown = analyst("memory", "show", "--user", spelled)
        assert shown.refused and shown.code == 2, str(shown)
        assert "EUR" not in shown.out + shown.err

    # One normal id in every tier: the ledger, the journal, the store, the thread index.
    assert analyst.json("memory", "show", "--user", "ALICE") == mine
    [listed] = analyst.json("threads", "--user", "Alice")
    assert listed["thread_id"] == "A1"
    assert analyst.json("threads", "--user", "bob") == []
    episodes = analyst.json("memory", "episodes", "--user", "aLiCe")
    assert any("base currency" in e["text"] for e in episodes["episodes"]), episodes
