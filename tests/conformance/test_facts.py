"""One contract, every backend: the fact ledger's semantics on SQLite and on Postgres.

Each test gets its own ledger: a fresh SQLite file, or a fresh Postgres database set up by a
non-superuser owner and used through an application role (NOSUPERUSER, NOBYPASSRLS), the way
a deployment runs it. The passport-deadline trace is the one from the design article: two
episodes, then a delayed extraction that predates both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from pydantic import ValidationError

from agent.errors import (
    FactAuthorityError,
    FactConflictError,
    FactNotFoundError,
    FactTenantError,
    InvalidFactError,
    InvalidPrincipalError,
)
from memory.facts import (
    RECORD_SCHEMA_VERSION,
    ConflictPolicy,
    FactRecord,
    FactStore,
    MemoryDelta,
    open_fact_store,
    setup_fact_store,
    subject_for,
)
from memory.facts.migrations import LATEST_VERSION
from memory.identity import Principal
from memory.sealing import MemoryCipher
from tests.support.servers import postgres_ledger

pytestmark = pytest.mark.integration

ACME = Principal("acme", "mira")
GLOBEX = Principal("globex", "mira")
#: Mira writes her own subject; other subjects would need a grant (see test_facts_authority).
MIRA = subject_for(ACME)
NOW = datetime(2026, 6, 4, tzinfo=UTC)


def t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- ledgers ---------------------------------------------------------------------------------


OpenStore = Callable[..., AbstractAsyncContextManager[FactStore]]


@dataclass(frozen=True)
class Backend:
    name: str
    url: str
    #: URL that may run setup (SQLite: the same file; Postgres: the owner).
    owner_url: str


@pytest.fixture(params=["sqlite", "sqlite-sealed", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'facts.sqlite'}"
        yield Backend(request.param, url, url)
        return
    with postgres_ledger() as ledger:
        yield Backend("postgres", ledger.app_url, ledger.owner_url)


@pytest.fixture
def open_store(backend: Backend) -> OpenStore:
    """``open_store(principal=ACME, **options)``: the ledger under test, clock fixed at NOW."""

    @asynccontextmanager
    async def opener(
        principal: Principal | None = ACME, **options: Any
    ) -> AsyncIterator[FactStore]:
        options.setdefault("clock", lambda: NOW)
        if backend.name.endswith("-sealed"):  # values sealed (ANALYST_MEMORY_KEY)
            options.setdefault("cipher", MemoryCipher(bytes(range(32))))
        async with open_fact_store(backend.url, principal, **options) as store:
            yield store

    return opener


def delta(
    value: Any,
    valid_from: str,
    episode: str | None = None,
    *,
    subject: str = MIRA,
    attribute: str = "passport_deadline",
    **fields: Any,
) -> MemoryDelta:
    return MemoryDelta(
        subject=subject,
        attribute=attribute,
        value=value,
        valid_from=t(valid_from),
        source_episode_id=episode,
        **fields,
    )


def active_intervals(records: list[FactRecord]) -> list[tuple[datetime, datetime | None]]:
    return [(r.valid_from, r.valid_to) for r in records if r.active]


def assert_well_formed(records: list[FactRecord]) -> None:
    """Active intervals are non-empty, never overlap, and at most one is open."""
    spans = sorted(active_intervals(records), key=lambda span: span[0])
    assert sum(end is None for _, end in spans) <= 1, spans
    for start, end in spans:
        assert end is None or start < end, spans
    for (_, end), (next_start, _) in pairwise(spans):
        assert end is not None and end <= next_start, spans


# -- the passport-deadline trace --------------------------------------------------------------


async def test_passport_trace_current_historical_and_delayed(open_store: OpenStore) -> None:
    async with open_store() as facts:
        e1 = await facts.record(delta("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        e2 = await facts.record(delta("2026-06-30", "2026-06-03T10:00:00Z", "e2"))

        current = await facts.current(MIRA, "passport_deadline")
        assert current is not None
        assert (current.value, current.source_episode_id) == ("2026-06-30", "e2")
        assert current.supersedes_memory_id == e1.memory_id

        june_2 = await facts.as_of(MIRA, "passport_deadline", t("2026-06-02T00:00:00Z"))
        assert june_2 is not None
        assert (june_2.value, june_2.source_episode_id) == ("2026-07-15", "e1")
        assert june_2.valid_to == t("2026-06-03T10:00:00Z")

        # A delayed extraction predates e1: it ends where e1 begins and leaves e2 current.
        e0 = await facts.record(delta("2026-08-01", "2026-05-30T08:00:00Z", "e0"))
        assert (e0.valid_from, e0.valid_to) == (t("2026-05-30T08:00:00Z"), e1.valid_from)
        assert e0.supersedes_memory_id is None
        delayed = await facts.as_of(MIRA, "passport_deadline", t("2026-05-31T00:00:00Z"))
        assert delayed is not None
        assert (delayed.value, delayed.source_episode_id) == ("2026-08-01", "e0")
        current = await facts.current(MIRA, "passport_deadline")
        assert current is not None and current.memory_id == e2.memory_id
        assert await facts.as_of(MIRA, "passport_deadline", t("2026-05-29T00:00:00Z")) is None

        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.source_episode_id, r.status) for r in history] == [
            ("e0", "superseded"),
            ("e1", "superseded"),
            ("e2", "open"),
        ]
        assert [r.supersedes_memory_id for r in history] == [None, None, e1.memory_id]
        assert_well_formed(history)


async def test_correction_inside_history_inherits_the_interval_end(open_store: OpenStore) -> None:
    async with open_store() as facts:
        a = await facts.record(delta("a", "2026-01-01T00:00:00Z", "e1"))
        c = await facts.record(delta("c", "2026-03-01T00:00:00Z", "e3"))
        b = await facts.record(delta("b", "2026-02-01T00:00:00Z", "e2"))
        assert b.valid_to == c.valid_from and b.supersedes_memory_id == a.memory_id
        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.value, r.valid_from, r.valid_to) for r in history] == [
            ("a", a.valid_from, b.valid_from),
            ("b", b.valid_from, c.valid_from),
            ("c", c.valid_from, None),
        ]
        current = await facts.current(MIRA, "passport_deadline")
        assert current is not None and current.value == "c"


async def test_records_carry_every_field_and_survive_reopening(open_store: OpenStore) -> None:
    async with open_store() as facts:
        stored = await facts.record(
            delta(
                {"currency": "EUR", "limits": [1, 2.5, None, True]},
                "2026-06-01T09:00:00+02:00",
                "ep-7",
                subject=subject_for(ACME),
                attribute="preferences",
                memory_type="profile",
                source="confirmed",
                confidence=0.75,
                retention_policy="until_forgotten",
            )
        )
    async with open_store() as facts:
        [again] = await facts.history("user:mira", "preferences")
    assert again == stored
    assert again.tenant_id == "acme" and again.subject == "user:mira"
    assert again.value == {"currency": "EUR", "limits": [1, 2.5, None, True]}
    assert again.valid_from == t("2026-06-01T07:00:00Z") and again.valid_from.tzinfo == UTC
    assert (again.memory_type, again.source, again.confidence) == ("profile", "confirmed", 0.75)
    assert again.retention_policy == "until_forgotten"
    assert again.schema_version == RECORD_SCHEMA_VERSION
    assert again.recorded_at == NOW


# -- equal valid_from: a stated policy, never a silent overwrite ------------------------------


async def test_equal_valid_from_is_rejected_by_default(open_store: OpenStore) -> None:
    async with open_store() as facts:
        first = await facts.record(delta("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        with pytest.raises(FactConflictError) as caught:
            await facts.record(delta("2026-06-30", "2026-06-01T09:00:00Z", "e2"))
        error = caught.value
        assert error.existing_memory_id == first.memory_id
        assert error.existing_value == "2026-07-15"
        assert "policy" in str(error) and "Nothing was changed" in str(error)
        assert await facts.history(MIRA, "passport_deadline") == [first]


async def test_repeating_a_fact_is_a_duplicate_not_a_conflict(open_store: OpenStore) -> None:
    async with open_store() as facts:
        first = await facts.record(delta({"a": 1, "b": [1, 2]}, "2026-06-01T09:00:00Z", "e1"))
        assert (first.outcome, first.duplicate, first.restated_in) == ("recorded", False, ())
        again = await facts.record(delta({"b": [1, 2], "a": 1}, "2026-06-01T09:00:00Z", "e1b"))
        # Never a silent success: the result says it was a duplicate, and the restating
        # episode is kept as provenance on the stored record.
        assert again.duplicate and again.outcome == "duplicate"
        assert again.memory_id == first.memory_id and again.restated_in == ("e1b",)
        # The same episode again, or one without an episode, adds nothing more.
        for episode in ("e1b", "e1", None):
            same = await facts.record(delta({"a": 1, "b": [1, 2]}, "2026-06-01T09:00:00Z", episode))
            assert same.duplicate and same.restated_in == ("e1b",)
        third = await facts.record(delta({"a": 1, "b": [1, 2]}, "2026-06-01T09:00:00Z", "e1c"))
        assert third.restated_in == ("e1b", "e1c")
        [stored] = await facts.history(MIRA, "passport_deadline")
        assert stored == third and stored.outcome is None  # reads carry no write outcome
        assert stored.to_json()["restated_in"] == ["e1b", "e1c"]
        assert facts.sync.history(MIRA, "passport_deadline") == [stored]
        # JSON equality is exact: true is not 1, and 1 is not "1".
        await facts.record(delta(1, "2026-06-03T00:00:00Z"))
        for other in (True, "1", 1.5):
            with pytest.raises(FactConflictError):
                await facts.record(delta(other, "2026-06-03T00:00:00Z"))


async def test_related_reads_the_rows_ids_name_or_episodes_cite(open_store: OpenStore) -> None:
    """What a forget of some ids reads of the ledger: the subject's rows those ids name, and
    those whose source or restatement is one of the episodes, withdrawn ones included; not
    the rest of the history, and nothing of another subject."""
    zed = Principal("acme", "zed")
    async with open_store() as facts, open_store(zed) as theirs:
        first = await facts.record(delta("2026-09-01", "2026-06-01T09:00:00Z", "e1"))
        restated = await facts.record(delta("2026-09-01", "2026-06-01T09:00:00Z", "e2"))
        later = await facts.record(delta("2026-10-01", "2026-06-05T09:00:00Z", "e3"))
        other = await facts.record(delta("x", "2026-06-01T09:00:00Z", "e1", attribute="city"))
        zeds = delta("y", "2026-06-01T09:00:00Z", "e1", subject=subject_for(zed))
        elsewhere = await theirs.record(zeds)
        assert restated.memory_id == first.memory_id  # e2 restated the first fact

        by_episode = await facts.related(MIRA, [], ["e2"])
        assert [r.memory_id for r in by_episode] == [first.memory_id]
        by_source = await facts.related(MIRA, [], ["e1"])
        assert {r.memory_id for r in by_source} == {first.memory_id, other.memory_id}
        assert elsewhere.memory_id not in {r.memory_id for r in by_source}
        named = await facts.related(MIRA, [later.memory_id, "no-such-id"])
        assert named == [
            r
            for r in await facts.history(MIRA, "passport_deadline")
            if r.memory_id == later.memory_id
        ]
        assert await facts.related(MIRA, [], []) == []


async def test_source_precedence_replaces_only_a_weaker_source(open_store: OpenStore) -> None:
    async with open_store(policy=ConflictPolicy.SOURCE_PRECEDENCE) as facts:
        inferred = await facts.record(delta("low", "2026-06-01T00:00:00Z", "e1", source="inferred"))
        later = await facts.record(delta("medium", "2026-07-01T00:00:00Z", "e3", source="stated"))
        with pytest.raises(FactConflictError, match="does not outrank"):
            await facts.record(delta("high", "2026-06-01T00:00:00Z", "e2", source="inferred"))
        stated = await facts.record(delta("high", "2026-06-01T00:00:00Z", "e2", source="stated"))

        assert stated.supersedes_memory_id == inferred.memory_id
        assert (stated.valid_from, stated.valid_to) == (inferred.valid_from, later.valid_from)
        now = await facts.as_of(MIRA, "passport_deadline", t("2026-06-15T00:00:00Z"))
        assert now is not None and now.value == "high"

        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.value, r.status) for r in history] == [
            ("low", "withdrawn"),
            ("high", "superseded"),
            ("medium", "open"),
        ]
        assert history[0].withdrawn_at == NOW
        assert_well_formed(history)
        # The store's default can be overridden per write.
        with pytest.raises(FactConflictError, match="policy 'reject'"):
            await facts.record(
                delta("x", "2026-06-01T00:00:00Z", source="confirmed"), policy=ConflictPolicy.REJECT
            )


async def test_confirmed_revision_needs_a_confirmed_source(open_store: OpenStore) -> None:
    async with open_store() as facts:
        original = await facts.record(delta("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        policy = ConflictPolicy.CONFIRMED_REVISION
        with pytest.raises(FactConflictError, match="confirmed_revision"):
            await facts.record(delta("2026-06-30", "2026-06-01T09:00:00Z", "e2"), policy=policy)
        revised = await facts.record(
            delta("2026-06-30", "2026-06-01T09:00:00Z", "e2", source="confirmed"), policy=policy
        )
        assert revised.supersedes_memory_id == original.memory_id and revised.is_open
        current = await facts.current(MIRA, "passport_deadline")
        assert current is not None and current.memory_id == revised.memory_id
        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.value, r.status) for r in history] == [
            ("2026-07-15", "withdrawn"),
            ("2026-06-30", "open"),
        ]


async def test_a_confirmation_of_the_same_value_upgrades_provenance_only_by_policy(
    open_store: OpenStore,
) -> None:
    async with open_store() as facts:
        said = await facts.record(
            delta("long-term", "2026-06-01T00:00:00Z", "e1", source="inferred")
        )
        confirmed = delta("long-term", "2026-06-01T00:00:00Z", "e2", source="confirmed")
        # reject: a duplicate; the value is unchanged, the confirming episode is kept.
        kept = await facts.record(confirmed)
        assert kept.duplicate and kept.memory_id == said.memory_id
        assert (kept.source, kept.restated_in) == ("inferred", ("e2",))
        upgraded = await facts.record(confirmed, policy=ConflictPolicy.CONFIRMED_REVISION)
        assert upgraded.outcome == "replaced"
        assert (upgraded.source, upgraded.source_episode_id) == ("confirmed", "e2")
        assert upgraded.supersedes_memory_id == said.memory_id
        # Confirming again changes nothing; neither does a weaker source under precedence.
        again = await facts.record(confirmed, policy=ConflictPolicy.CONFIRMED_REVISION)
        assert again == upgraded and again.duplicate
        weaker = delta("long-term", "2026-06-01T00:00:00Z", "e3", source="stated")
        kept = await facts.record(weaker, policy=ConflictPolicy.SOURCE_PRECEDENCE)
        assert kept.duplicate and kept.memory_id == upgraded.memory_id
        assert kept.restated_in == ("e3",)
        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.source, r.status) for r in history] == [
            ("inferred", "withdrawn"),
            ("confirmed", "open"),
        ]


# -- retraction ------------------------------------------------------------------------------


async def test_retraction_closes_a_fact_without_a_successor(open_store: OpenStore) -> None:
    async with open_store() as facts:
        stored = await facts.record(delta("long-term", "2026-01-01T00:00:00Z", "e1"))
        closed = await facts.retract(
            MIRA, "passport_deadline", at=t("2026-05-01T00:00:00Z"), source_episode_id="e2"
        )
        assert closed.memory_id == stored.memory_id
        assert (closed.valid_to, closed.status, closed.retraction_episode_id) == (
            t("2026-05-01T00:00:00Z"),
            "retracted",
            "e2",
        )
        assert closed.retracted_at == NOW
        assert await facts.current(MIRA, "passport_deadline") is None
        before = await facts.as_of(MIRA, "passport_deadline", t("2026-04-30T00:00:00Z"))
        assert before is not None and before.value == "long-term"
        assert await facts.history(MIRA, "passport_deadline") == [closed]

        with pytest.raises(FactNotFoundError, match="nothing to retract"):
            await facts.retract(MIRA, "passport_deadline")
        with pytest.raises(FactNotFoundError):
            await facts.retract(MIRA, "unknown_attribute", at=t("2026-02-01T00:00:00Z"))

        # A new statement after the retraction starts fresh: it superseded nothing.
        fresh = await facts.record(delta("short-term", "2026-05-10T00:00:00Z", "e3"))
        assert fresh.supersedes_memory_id is None and fresh.is_open


async def test_retraction_defaults_to_now_and_at_a_start_withdraws(open_store: OpenStore) -> None:
    async with open_store() as facts:
        a = await facts.record(delta("a", "2026-01-01T00:00:00Z", "e1"))
        b = await facts.record(delta("b", "2026-03-01T00:00:00Z", "e2"))
        closed = await facts.retract(MIRA, "passport_deadline", source_episode_id="e3")
        assert closed.memory_id == b.memory_id and closed.valid_to == NOW

        # Retracting exactly at a fact's start: it never held; its predecessor ends there.
        withdrawn = await facts.retract(MIRA, "passport_deadline", at=b.valid_from)
        assert withdrawn.status == "withdrawn" and withdrawn.memory_id == b.memory_id
        assert await facts.as_of(MIRA, "passport_deadline", t("2026-03-02T00:00:00Z")) is None
        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.value, r.status, r.valid_to) for r in history] == [
            ("a", "retracted", b.valid_from),
            ("b", "withdrawn", NOW),
        ]
        assert history[0].memory_id == a.memory_id
        assert_well_formed(history)


async def test_fact_inside_a_retracted_interval_ends_at_the_retraction(
    open_store: OpenStore,
) -> None:
    async with open_store() as facts:
        await facts.record(delta("a", "2026-01-01T00:00:00Z", "e1"))
        await facts.retract(
            MIRA, "passport_deadline", at=t("2026-05-01T00:00:00Z"), source_episode_id="r1"
        )
        late = await facts.record(delta("b", "2026-03-01T00:00:00Z", "e2"))
        assert late.valid_to == t("2026-05-01T00:00:00Z")
        assert (late.status, late.retraction_episode_id) == ("retracted", "r1")
        in_gap = await facts.record(delta("c", "2026-06-01T00:00:00Z", "e3"))
        assert in_gap.is_open and in_gap.supersedes_memory_id is None
        gap_filler = await facts.record(delta("d", "2026-05-15T00:00:00Z", "e4"))
        assert gap_filler.valid_to == in_gap.valid_from
        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.value, r.status) for r in history] == [
            ("a", "superseded"),
            ("b", "retracted"),
            ("d", "superseded"),
            ("c", "open"),
        ]
        assert_well_formed(history)
        assert await facts.as_of(MIRA, "passport_deadline", t("2026-05-10T00:00:00Z")) is None


# -- reads -----------------------------------------------------------------------------------


async def test_profile_now_and_as_of(open_store: OpenStore) -> None:
    me = subject_for(ACME)
    async with open_store() as facts:
        for attribute, value, start in [
            ("risk_tolerance", "low", "2026-01-01T00:00:00Z"),
            ("horizon", "5y", "2026-01-01T00:00:00Z"),
            ("risk_tolerance", "medium", "2026-04-01T00:00:00Z"),
            ("sectors", ["semis", "cloud"], "2026-05-01T00:00:00Z"),
            ("newsletter", True, "2026-07-01T00:00:00Z"),  # starts after NOW
        ]:
            await facts.record(delta(value, start, subject=me, attribute=attribute))
        await facts.retract(me, "horizon", at=t("2026-05-15T00:00:00Z"))
        someone = facts.with_principal(Principal("acme", "someone-else"))
        await someone.record(delta("other", "2026-01-01T00:00:00Z", subject="user:someone-else"))

        now = await facts.profile(me)
        assert {name: r.value for name, r in now.items()} == {
            "risk_tolerance": "medium",
            "sectors": ["semis", "cloud"],
        }
        assert list(now) == sorted(now)
        march = await facts.profile(me, as_of=t("2026-03-01T00:00:00Z"))
        assert {name: r.value for name, r in march.items()} == {
            "horizon": "5y",
            "risk_tolerance": "low",
        }
        july = await facts.profile(me, as_of=t("2026-07-02T00:00:00Z"))
        assert july["newsletter"].value is True
        assert await facts.current(me, "newsletter") is None  # a future fact is not current
        nobody = facts.with_principal(Principal("acme", "nobody"))
        assert await nobody.profile("user:nobody") == {}
        # Someone else's facts are theirs (memory.facts.rules.read_authority_of).
        assert await someone.profile("user:someone-else") != {}
        with pytest.raises(FactAuthorityError, match="may not read"):
            await facts.profile("user:someone-else")


async def test_times_must_be_aware_and_are_compared_as_instants(open_store: OpenStore) -> None:
    async with open_store() as facts:
        await facts.record(delta("x", "2026-06-01T09:00:00+02:00"))
        with pytest.raises(InvalidFactError, match="no time zone"):
            await facts.as_of(MIRA, "passport_deadline", datetime(2026, 6, 2))
        with pytest.raises(InvalidFactError, match="no time zone"):
            await facts.retract(MIRA, "passport_deadline", at=datetime(2026, 6, 2))
        with pytest.raises(ValidationError):
            MemoryDelta(subject=MIRA, attribute="a", value=1, valid_from=datetime(2026, 6, 1))
        with pytest.raises(InvalidFactError, match="subject"):
            await facts.current("  ", "passport_deadline")
        tokyo = timezone(timedelta(hours=9))
        assert await facts.as_of(MIRA, "passport_deadline", t("2026-06-01T06:59:59Z")) is None
        found = await facts.as_of(
            MIRA, "passport_deadline", datetime(2026, 6, 1, 16, 0, tzinfo=tokyo)
        )
        assert found is not None and found.value == "x"


async def test_microsecond_boundaries_are_half_open(open_store: OpenStore) -> None:
    async with open_store() as facts:
        await facts.record(delta("a", "2026-06-01T00:00:00.000001Z"))
        await facts.record(delta("b", "2026-06-01T00:00:00.000002Z"))
        at = await facts.as_of(MIRA, "passport_deadline", t("2026-06-01T00:00:00.000001Z"))
        assert at is not None and at.value == "a"
        at = await facts.as_of(MIRA, "passport_deadline", t("2026-06-01T00:00:00.000002Z"))
        assert at is not None and at.value == "b"
        assert await facts.as_of(MIRA, "passport_deadline", t("2026-06-01T00:00:00Z")) is None


# -- tenancy ---------------------------------------------------------------------------------


async def test_every_read_and_write_is_scoped_by_the_principals_tenant(
    open_store: OpenStore,
) -> None:
    async with open_store(ACME) as acme:
        mine = await acme.record(delta("2026-06-30", "2026-06-01T00:00:00Z", "e1"))
        globex = acme.with_principal(GLOBEX)
        assert await globex.current(MIRA, "passport_deadline") is None
        assert await globex.history(MIRA, "passport_deadline") == []
        assert await globex.profile(MIRA) == {}
        with pytest.raises(FactNotFoundError):
            await globex.retract(MIRA, "passport_deadline")

        # The same key in another tenant is a separate ledger: no conflict, no supersession.
        theirs = await globex.record(delta("1999-01-01", "2026-06-01T00:00:00Z", "g1"))
        assert theirs.tenant_id == "globex" and theirs.supersedes_memory_id is None
        current = await acme.current(MIRA, "passport_deadline")
        assert current == mine

        with pytest.raises(FactTenantError, match="globex"):
            await acme.record(delta("x", "2026-06-02T00:00:00Z", tenant_id="globex"))
        asserted = await acme.record(delta("y", "2026-06-02T00:00:00Z", tenant_id="acme"))
        assert asserted.tenant_id == "acme"

    async with open_store(None) as anonymous:
        with pytest.raises(FactTenantError, match="with_principal"):
            await anonymous.current(MIRA, "passport_deadline")
        with pytest.raises(InvalidPrincipalError, match="empty tenant"):
            anonymous.with_principal(Principal("", "mira"))
        reader = anonymous.with_principal(GLOBEX)
        found = await reader.current(MIRA, "passport_deadline")
        assert found is not None and found.value == "1999-01-01"


# -- migrations: rows written by an older schema ----------------------------------------------


async def test_rows_written_by_schema_v1_are_upgraded(backend: Backend) -> None:
    if backend.name.startswith("sqlite"):
        await setup_fact_store(backend.owner_url, target=1)
        import sqlite3

        path = backend.url[len("sqlite:///") :]
        with sqlite3.connect(path) as conn:
            conn.executemany(
                "INSERT INTO facts (tenant_id, memory_id, subject, attribute, value, valid_from,"
                " valid_to, recorded_at, supersedes_memory_id, source_episode_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        "acme",
                        "old-1",
                        MIRA,
                        "passport_deadline",
                        "2026-07-15",
                        "2026-06-01T09:00:00.000000+00:00",
                        "2026-06-03T10:00:00.000000+00:00",
                        "2026-06-01T09:00:01.000000+00:00",
                        None,
                        "e1",
                    ),
                    (
                        "acme",
                        "old-2",
                        MIRA,
                        "passport_deadline",
                        "2026-06-30",
                        "2026-06-03T10:00:00.000000+00:00",
                        None,
                        "2026-06-03T10:00:01.000000+00:00",
                        "old-1",
                        "e2",
                    ),
                ],
            )
        conn.close()
        await setup_fact_store(backend.owner_url)
    else:
        # The v1 table exists only after an owner ran migration 1; rebuild from scratch.
        with psycopg.connect(backend.owner_url, autocommit=True) as owner:
            owner.execute("DROP SCHEMA analyst_facts CASCADE")
        await setup_fact_store(backend.owner_url, target=1)
        with psycopg.connect(backend.owner_url) as owner:
            owner.execute("SELECT set_config('app.tenant_id', 'acme', true)")
            owner.execute(
                "INSERT INTO analyst_facts.facts (tenant_id, memory_id, subject, attribute, value,"
                " valid_from, valid_to, recorded_at, supersedes_memory_id, source_episode_id)"
                " VALUES ('acme', 'old-1', 'user:mira', 'passport_deadline', '2026-07-15',"
                " '2026-06-01T09:00:00Z', '2026-06-03T10:00:00Z', '2026-06-01T09:00:01Z', NULL,"
                " 'e1'), ('acme', 'old-2', 'user:mira', 'passport_deadline', '2026-06-30',"
                " '2026-06-03T10:00:00Z', NULL, '2026-06-03T10:00:01Z', 'old-1', 'e2')"
            )
        app_role = urlsplit(backend.url).username
        assert app_role is not None
        upgraded = await setup_fact_store(backend.owner_url, app_roles=[app_role])
        assert upgraded == list(range(2, LATEST_VERSION + 1))

    async with open_fact_store(backend.url, ACME, clock=lambda: NOW) as facts:
        history = await facts.history(MIRA, "passport_deadline")
        assert [(r.memory_id, r.value, r.schema_version) for r in history] == [
            ("old-1", "2026-07-15", RECORD_SCHEMA_VERSION),
            ("old-2", "2026-06-30", RECORD_SCHEMA_VERSION),
        ]
        assert {(r.memory_type, r.source, r.confidence, r.retention_policy) for r in history} == {
            ("semantic", "stated", 1.0, "default")
        }
        assert history[1].supersedes_memory_id == "old-1" and history[1].is_open
        june_2 = await facts.as_of(MIRA, "passport_deadline", t("2026-06-02T00:00:00Z"))
        assert june_2 is not None and june_2.source_episode_id == "e1"
        # The upgraded ledger keeps working under the new rules, guards included.
        e0 = await facts.record(delta("2026-08-01", "2026-05-30T08:00:00Z", "e0"))
        assert e0.valid_to == t("2026-06-01T09:00:00Z")
        e3 = await facts.record(delta({"date": "2026-06-28"}, "2026-06-04T00:00:00Z", "e3"))
        assert e3.supersedes_memory_id == "old-2"
        assert_well_formed(await facts.history(MIRA, "passport_deadline"))
