"""The one identity rule (memory.identity): which tenant and user ids are accepted, how they are
normalised, and that every way a principal is made (in code, from settings, from a graph run's
context) applies it."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from agent.errors import ConfigurationError, InvalidPrincipalError
from agent.nodes.base import principal
from agent.settings import Settings
from agent.state import Context
from memory.facts.rules import grant_of
from memory.identity import ID_RULE, MAX_ID_LENGTH, Principal, normal_id

#: The ids issue 23 found accepted, and their look-alikes.
REFUSED = {
    "*": "it contains '*'",
    "%": "it contains '%'",
    "alice:bob": "it contains ':'",
    "user:alice": "it contains ':'",
    " alice": "it contains whitespace",
    "alice ": "it contains whitespace",
    "al ice": "it contains whitespace",
    "alice\t": "it contains whitespace",
    "../alice": "it contains '/'",
    "a\\b": "it contains '\\\\'",
    "..": "it does not start with a letter or digit",
    ".hidden": "it does not start with a letter or digit",
    "-rf": "it does not start with a letter or digit",
    "alice\x1b[2J": "it contains a control character",
    "alice\u202e": "it contains a control character",
    "ålice": "it contains 'å', which is not an ASCII letter",
    "\u212aelvin": "not an ASCII letter",  # the Kelvin sign lower-cases to an ASCII 'k'
    "a" * (MAX_ID_LENGTH + 1): f"it is {MAX_ID_LENGTH + 1} characters long",
    "": "is empty",
    "   ": "is empty",
}
ACCEPTED = {
    "alice": "alice",
    "Alice": "alice",
    "ALICE@Example.COM": "alice@example.com",
    "a.b-c_d": "a.b-c_d",
    "7": "7",
    "a" * MAX_ID_LENGTH: "a" * MAX_ID_LENGTH,
}


@pytest.mark.parametrize(("bad", "why"), REFUSED.items(), ids=repr)
def test_each_bad_id_is_refused_naming_the_id_the_fault_and_the_rule(bad: str, why: str) -> None:
    for kind in ("tenant", "user"):
        with pytest.raises(InvalidPrincipalError) as refused:
            Principal(bad, "alice") if kind == "tenant" else Principal("acme", bad)
        message = str(refused.value)
        assert why in message and ID_RULE in message, message
        assert repr(bad)[:40] in message, message
        assert refused.value.exit_code == 2


@pytest.mark.parametrize(("given_id", "normal"), ACCEPTED.items())
def test_good_ids_are_normalised_the_same_way_for_tenants_and_users(
    given_id: str, normal: str
) -> None:
    made = Principal(given_id, given_id)
    assert (made.tenant_id, made.user_id) == (normal, normal)
    assert made == Principal(normal, normal) and hash(made) == hash(Principal(normal, normal))


@given(st.text(max_size=80))
def test_an_accepted_id_is_already_normal_and_only_uses_the_allowed_characters(text: str) -> None:
    try:
        normal = normal_id(text, "user")
    except InvalidPrincipalError:
        return
    allowed = set(string.ascii_lowercase + string.digits + "._-@")
    assert set(normal) <= allowed and normal[0].isalnum() and 1 <= len(normal) <= MAX_ID_LENGTH
    assert normal_id(normal, "user") == normal and normal == text.lower()


@given(
    st.text(max_size=20),
    st.sampled_from(list(" \t\n\x00\x1b\x9b:/*%\\\u202e")),
    st.text(max_size=20),
)
def test_an_id_with_whitespace_a_control_a_wildcard_or_a_separator_is_always_refused(
    before: str, bad: str, after: str
) -> None:
    with pytest.raises(InvalidPrincipalError):
        normal_id(before + bad + after, "user")


def test_settings_name_where_a_bad_id_came_from() -> None:
    cases = [
        ({"ANALYST_USER": "alice "}, {}, "ANALYST_USER 'alice '"),
        ({"ANALYST_TENANT": "a:b"}, {}, "ANALYST_TENANT 'a:b'"),
        ({"ANALYST_USER": "alice"}, {"user_id": "*"}, "--user '*'"),
        ({}, {"tenant_id": "%"}, "--tenant '%'"),
        ({"USER": "John Smith"}, {}, "$USER 'John Smith'"),
    ]
    for env, flags, named in cases:
        with pytest.raises(ConfigurationError) as refused:
            Settings.from_env(env, **flags)
        assert str(refused.value).startswith(named), str(refused.value)
        assert ID_RULE in str(refused.value)
    assert "Set ANALYST_USER or pass --user." in _refusal({"USER": "John Smith"})


class Who(TypedDict):
    who: str


def _refusal(env: dict[str, str]) -> str:
    with pytest.raises(InvalidPrincipalError) as refused:
        Settings.from_env(env)
    return str(refused.value)


def test_settings_hold_the_normal_ids_every_tier_and_command_uses() -> None:
    settings = Settings.from_env({"ANALYST_TENANT": "ACME", "ANALYST_USER": "Alice"})
    assert (settings.tenant_id, settings.user_id) == ("acme", "alice")
    assert settings.principal == Principal("acme", "alice")
    assert Settings.from_env({"ANALYST_USER": "x"}, user_id="Bob").user_id == "bob"
    assert Settings(user_id="Carol").user_id == "carol"  # made in code: the same rule
    with pytest.raises(InvalidPrincipalError):
        Settings(user_id="carol ")


def test_a_graph_run_s_context_with_a_bad_id_raises_the_identity_error() -> None:
    """The server builds the principal from the run's context (agent.nodes.base.principal),
    inside a real graph run."""

    def whoami(state: Who, runtime: Runtime[Context]) -> dict[str, Any]:
        who = principal(runtime)
        return {"who": f"{who.tenant_id}/{who.user_id}"}

    builder = StateGraph(Who, context_schema=Context)
    builder.add_node("whoami", whoami)
    builder.add_edge(START, "whoami")
    graph = builder.compile()
    ran = graph.invoke({"who": ""}, context=Context(tenant_id="Acme", user_id="Alice"))
    assert ran["who"] == "acme/alice"
    for tenant, user in (("acme", "alice:bob"), ("*", "alice"), ("acme", " alice")):
        with pytest.raises(InvalidPrincipalError):
            graph.invoke({"who": ""}, context=Context(tenant_id=tenant, user_id=user))


def test_the_fact_ledger_names_grantees_by_the_same_rule() -> None:
    """A grant names its user as a principal would: ``Bob`` is bob, ``'bob '`` is refused
    (the ledger used to trim it into bob while the other tiers kept the space)."""
    now = datetime(2026, 12, 2, tzinfo=UTC)
    assert grant_of("acme", "root", "Bob", "team:research", False, False, now).user_id == "bob"
    assert grant_of("acme", "root", "ALICE", None, True, False, now).user_id == "alice"
    for bad in ("bob ", "user:bob", "*"):
        with pytest.raises(InvalidPrincipalError):
            grant_of("acme", "root", bad, "team:research", False, False, now)
