"""The ledger's rules, written once as generators that ask for seeks and writes by name.

A rule yields ``(operation, arguments)`` requests (:data:`Request`) and receives the answers;
:func:`run_sync` and :func:`run_async` drive it over a backend's plain or ``async`` methods of
those names (:class:`KeyOps` for writes, :class:`ReadOps` for reads). SQLite and Postgres
answer the same requests, so their semantics cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal, Protocol, TypeVar, cast

from memory.errors import (
    FactAuthorityError,
    FactConflictError,
    FactNotFoundError,
    InvalidFactError,
)
from memory.facts.records import (
    PERSONAL_ATTRIBUTES,
    RECORD_SCHEMA_VERSION,
    ConflictPolicy,
    FactRecord,
    Grant,
    MemoryDelta,
    WriteOutcome,
    canonical_json,
    check_name,
    new_memory_id,
)
from memory.identity import normal_id

T = TypeVar("T")

Key = tuple[str, str, str]
"""(tenant_id, subject, attribute): one timeline."""

#: What a rule asks of the database: an operation name on :class:`KeyOps` and its arguments.
Request = tuple[str, tuple[Any, ...]]
#: The rules are written once, as generators that yield :data:`Request` s and receive the
#: answers; :func:`run_sync` and :func:`run_async` drive them over a backend's operations.
Rules = Generator[Request, Any, T]


class KeyOps(Protocol):
    """What the write rules need, inside one open write transaction (sync or async).

    Backends implement these with the same names, as plain or ``async`` methods. "Active"
    means not withdrawn. Every method is a seek on the key's ``(valid_from)`` order.
    """

    def neighbours(self, key: Key, at: datetime) -> tuple[FactRecord | None, datetime | None]:
        """The active fact starting last at or before ``at``, and the next active start."""
        ...

    def before(self, key: Key, at: datetime) -> FactRecord | None:
        """The active fact starting last strictly before ``at``."""
        ...

    def insert(self, record: FactRecord) -> None: ...

    def set_end(
        self,
        key: Key,
        memory_id: str,
        valid_to: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        """Close an active fact at ``valid_to`` and record why its end is where it is."""
        ...

    def withdraw(
        self,
        key: Key,
        memory_id: str,
        withdrawn_at: datetime,
        retracted_at: datetime | None,
        retraction_episode_id: str | None,
    ) -> None:
        """Take a fact out of the active set, keeping the row for history."""
        ...

    def restate(self, key: Key, memory_id: str, episode_id: str) -> None:
        """Append ``episode_id`` to the fact's ``restated_in`` provenance."""
        ...

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        """The user's grants in the tenant, as ``(role, subject)`` rows, read in the write
        transaction (so a revocation committed before it is seen)."""
        ...


def run_sync(rules: Rules[T], ops: Any) -> T:
    """Drive ``rules`` over ``ops``' plain methods."""
    try:
        name, args = next(rules)
        while True:
            name, args = rules.send(getattr(ops, name)(*args))
    except StopIteration as done:
        return cast(T, done.value)


async def run_async(rules: Rules[T], ops: Any) -> T:
    """Drive ``rules`` over ``ops``' ``async`` methods."""
    try:
        name, args = next(rules)
        while True:
            name, args = rules.send(await getattr(ops, name)(*args))
    except StopIteration as done:
        return cast(T, done.value)


# -- the read rules ------------------------------------------------------------------------------


def as_of_rules(key: Key, when: datetime) -> Rules[FactRecord | None]:
    """One seek: the active fact starting last at or before ``when``, if it still holds then.

    Safe because active intervals never overlap: no earlier fact can hold at ``when``.
    """
    fact = yield ("last_from", (key, when))
    return fact if fact is not None and (fact.valid_to is None or when < fact.valid_to) else None


def current_rules(key: Key, now: datetime) -> Rules[FactRecord | None]:
    """The open fact (one seek on the open-fact index) if it has started; else :func:`as_of_rules`.

    The fallback covers a fact dated in the future (the open one has not started yet) and a
    fact closed at a future time (nothing is open, something still holds).
    """
    fact = yield ("open_fact", (key,))
    if fact is not None and fact.valid_from <= now:
        return cast(FactRecord, fact)
    return (yield from as_of_rules(key, now))


class ReadOps(Protocol):
    """The reads a backend answers, as plain or ``async`` methods of the same names."""

    def open_fact(self, key: Key) -> FactRecord | None: ...

    def last_from(self, key: Key, at: datetime) -> FactRecord | None: ...

    def profile(self, tenant_id: str, subject: str, at: datetime) -> list[FactRecord]: ...

    def history(self, key: Key) -> list[FactRecord]: ...

    def related(
        self, tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
    ) -> list[FactRecord]:
        """The subject's records among ``ids`` (memory ids) or citing one of ``episodes``
        (``source_episode_id`` or ``restated_in``), withdrawn ones included."""
        ...

    def grants(self, tenant_id: str, user_id: str) -> list[tuple[str, str]]:
        """The reader's grants in the tenant, as ``(role, subject)`` rows."""
        ...

    def grants_and(
        self, tenant_id: str, user_id: str, request: Request
    ) -> tuple[list[tuple[str, str]], Any]:
        """:meth:`grants`, and the answer to ``request`` (a read's first seek) or
        :data:`NOT_READ` (see :func:`read_authority_rules`)."""
        ...


def profile_rules(tenant_id: str, subject: str, at: datetime) -> Rules[list[FactRecord]]:
    """One statement: every attribute of ``subject`` holding at ``at``."""
    return cast(list[FactRecord], (yield ("profile", (tenant_id, subject, at))))


def history_rules(key: Key) -> Rules[list[FactRecord]]:
    """One statement: every record of the key, withdrawn ones included."""
    return cast(list[FactRecord], (yield ("history", (key,))))


def related_rules(
    tenant_id: str, subject: str, ids: Sequence[str], episodes: Sequence[str]
) -> Rules[list[FactRecord]]:
    """One statement: the subject's records named by ``ids`` or citing one of ``episodes``."""
    found = yield ("related", (tenant_id, subject, list(ids), list(episodes)))
    return cast(list[FactRecord], found)


# -- authority ----------------------------------------------------------------------------------

#: What a principal may do to a subject: ``own`` (its own ``user:<id>``), ``granted`` (a
#: shared subject it holds a grant for), ``candidate`` (another user's subject it holds a grant
#: for: stored only as a candidate that user must confirm), or ``None`` (nothing).
Authority = Literal["own", "granted", "candidate"] | None

#: Grant roles: ``writer`` (writes and reads) or ``reader`` (reads only) of one subject (or a
#: ``prefix*`` pattern), ``admin`` of the tenant.
GRANT_ROLES = ("writer", "reader", "admin")


def subject_matches(pattern: str, subject: str) -> bool:
    """``team:*`` matches every subject starting ``team:``; anything else only itself."""
    if pattern.endswith("*"):
        return subject.startswith(pattern[:-1])
    return subject == pattern


def authority_of(user_id: str, subject: str, grants: list[tuple[str, str]]) -> Authority:
    """The rule (Postgres enforces the same one in ``analyst_facts.may_write``)."""
    if not user_id:
        return None
    if subject == f"user:{user_id}":
        return "own"
    if not any(
        role == "admin" or (role == "writer" and subject_matches(pattern, subject))
        for role, pattern in grants
    ):
        return None
    return "candidate" if subject.startswith("user:") else "granted"


#: What a principal may read of a subject: ``own`` (its own ``user:<id>``: everything),
#: ``admin`` (the tenant's admin: every subject, but another user's personal attributes only
#: on request, audited), ``granted`` (a shared, non-user subject one of its grants covers), or
#: ``None`` (nothing). Postgres enforces the same rule in ``analyst_facts.may_read``.
ReadAuthority = Literal["own", "admin", "granted"] | None


def read_authority_of(user_id: str, subject: str, grants: list[tuple[str, str]]) -> ReadAuthority:
    """Who reads what: yourself; as admin, anyone; with a grant, the shared subjects it covers
    (a grant on ``user:*`` lets one propose candidates, never read another user's facts)."""
    if not user_id:
        return None
    if subject == f"user:{user_id}":
        return "own"
    if any(role == "admin" for role, _ in grants):
        return "admin"
    if subject.startswith("user:"):
        return None
    return "granted" if any(subject_matches(p, subject) for _, p in grants) else None


def is_personal(subject: str, attribute: str) -> bool:
    """Whether ``attribute`` of ``subject`` is personal data (a user's identifying detail)."""
    return subject.startswith("user:") and attribute in PERSONAL_ATTRIBUTES


class NotRead:
    """A backend's answer to ``grants_and`` for a seek it did not make (see
    :func:`read_authority_rules`): the rules ask it once the grants allow the read."""

    def __repr__(self) -> str:
        return "NOT_READ"


NOT_READ = NotRead()

#: What :func:`read_authority_rules` leaves of the read it was given: its first seek and that
#: seek's answer (:data:`NOT_READ` if the backend did not make it), or None (not started).
Started = tuple[Request, Any] | None


def read_authority_rules(
    tenant_id: str, user_id: str, subject: str, read: Rules[Any]
) -> Rules[tuple[ReadAuthority, Started]]:
    """The reader's authority over ``subject``, then :func:`read_authority_of`.

    The reader's own subject needs no seek (the graph's every read). Any other subject needs
    the reader's grants, asked together with ``read``'s first seek (``grants_and``): a backend
    whose storage already limits what a reader sees to what these rules allow (Postgres's row
    security) answers both in one statement; the others answer :data:`NOT_READ`, and the seek
    is made only once the grants allow it (:func:`resumed`). A refused read's answer is
    dropped unseen.
    """
    if user_id and subject == f"user:{user_id}":
        return "own", None
    request = next(read)
    grants, answer = yield ("grants_and", (tenant_id, user_id, request))
    return read_authority_of(user_id, subject, list(grants)), (request, answer)


def resumed(read: Rules[T], started: Started) -> Rules[T]:
    """``read`` to its end, from where :func:`read_authority_rules` left it."""
    if started is None:
        return (yield from read)
    request, answer = started
    if answer is NOT_READ:
        answer = yield request
    try:
        while True:
            answer = yield read.send(answer)
    except StopIteration as done:
        return cast(T, done.value)


def no_read_authority(tenant_id: str, user: str, subject: str) -> FactAuthorityError:
    """Why ``user`` may not read facts about ``subject``, and the fix."""
    if subject.startswith("user:"):
        fix = (
            f"Facts about {subject} are read by {subject.removeprefix('user:')} and the "
            "tenant's admin only"
        )
    else:
        fix = f"Ask the tenant's admin for a grant: analyst facts grant {user} {subject}"
    return FactAuthorityError(
        f"user '{user}' of tenant '{tenant_id}' may not read facts about {subject}. {fix}.",
        subject=subject,
        tenant_id=tenant_id,
        user_id=user,
    )


def personal_refused(tenant_id: str, user: str, subject: str, attribute: str) -> FactAuthorityError:
    """An admin asked for another user's personal attribute without saying so explicitly."""
    return FactAuthorityError(
        f"{subject}.{attribute} is personal data, shown only to "
        f"{subject.removeprefix('user:')}. As the tenant's admin, ask for it explicitly (the "
        "read is written to that user's memory audit): add --include-personal (API: "
        "include_personal=True).",
        subject=subject,
        tenant_id=tenant_id,
        user_id=user,
    )


def authority_rules(key: Key, user_id: str) -> Rules[Authority]:
    """One read in the write transaction: the writer's grants; then :func:`authority_of`."""
    grants = yield ("grants", (key[0], user_id))
    return write_authority(key, user_id, grants)


def write_authority(key: Key, user_id: str, grants: Iterable[Sequence[str]]) -> Authority:
    """:func:`authority_of` on ``key``'s subject, from the grants as the database returns them."""
    return _authority(user_id, key[1], tuple(map(tuple, grants)))


@lru_cache(maxsize=4096)
def _authority(user_id: str, subject: str, grants: tuple[tuple[str, str], ...]) -> Authority:
    """:func:`authority_of`, remembered: a group's writes ask it of the same few subjects."""
    return authority_of(user_id, subject, list(grants))


# -- the write rules -----------------------------------------------------------------------------


def record_rules(
    key: Key,
    delta: MemoryDelta,
    policy: ConflictPolicy,
    user: str,
    *,
    now: Callable[[], datetime],
    source_ranks: Mapping[str, int],
) -> Rules[FactRecord]:
    """Store ``delta`` on ``key``'s timeline as ``user`` (see ``docs/memory-lifecycle.md``,
    The fact ledger): close what covers its start, inherit the old end, or refuse."""
    at = now()
    authority = yield from authority_rules(key, user)
    if authority is None:
        raise no_authority(key, user, "write")
    if authority == "candidate":
        # Someone else's word about a user: kept for that user to review, outside the
        # timeline (withdrawn, source inferred), so it never changes what they are told.
        candidate = replace(
            new_record(key[0], delta, at, None, None, "recorded", user),
            source="inferred",
            withdrawn_at=at,
        )
        yield ("insert", (candidate,))
        return candidate
    start = delta.valid_from
    before, next_start = yield ("neighbours", (key, start))
    cover = before if before is not None and before.holds_at(start) else None
    if cover is not None and cover.valid_from == start:
        why = refusal(policy, delta, cover, source_ranks)
        same = (
            canonical_json(cover.value) == canonical_json(delta.value)
            and cover.memory_type == delta.memory_type
        )
        if same and (why is not None or delta.source == cover.source):
            # A restatement: nothing new holds, but the episode that said it again is
            # provenance worth keeping.
            episode = delta.source_episode_id
            if episode is None or episode == cover.source_episode_id:
                return replace(cover, outcome="duplicate")
            if episode in cover.restated_in:
                return replace(cover, outcome="duplicate")
            yield ("restate", (key, cover.memory_id, episode))
            return replace(cover, restated_in=(*cover.restated_in, episode), outcome="duplicate")
        if why is not None:
            raise FactConflictError(
                delta.subject, delta.attribute, start.isoformat(), cover.memory_id, cover.value, why
            )
        yield (
            "withdraw",
            (key, cover.memory_id, at, cover.retracted_at, cover.retraction_episode_id),
        )
        new = new_record(key[0], delta, at, cover.valid_to, cover, "replaced", user)
    elif cover is not None:
        yield ("set_end", (key, cover.memory_id, start, None, None))
        new = new_record(key[0], delta, at, cover.valid_to, cover, "recorded", user)
    else:
        new = new_record(key[0], delta, at, next_start, None, "recorded", user)
    yield ("insert", (new,))
    return new


def appended(
    key: Key,
    delta: MemoryDelta,
    user: str,
    now: Callable[[], datetime],
    cover: FactRecord | None,
) -> FactRecord:
    """What :func:`record_rules` makes of a write landing after every active fact of its key,
    by a writer with write authority (``own`` or ``granted``): the new open fact, superseding
    ``cover`` (the key's open fact, which the caller closes at the new start) or, on a key
    with no active fact, nothing. One clock reading, as the rules take.

    It is the last branch of :func:`record_rules` for that case (``cover`` holds the start
    and ends never, or nothing starts at or after it), written out for a planned group
    (:meth:`memory.facts.batch.Plan.run`) that checks the case set-wise first."""
    return new_record(key[0], delta, now(), None, cover, "recorded", user)


def retract_rules(
    key: Key,
    given_at: datetime | None,
    source_episode_id: str | None,
    user: str,
    *,
    now: Callable[[], datetime],
) -> Rules[FactRecord]:
    """Close the fact holding at ``given_at`` (default: now) without a successor; a fact
    retracted at its own start is withdrawn, and its predecessor then ends by retraction."""
    at = now()
    authority = yield from authority_rules(key, user)
    if authority is None or authority == "candidate":
        raise no_authority(key, user, "retract")
    when = at if given_at is None else given_at
    before, _ = yield ("neighbours", (key, when))
    if before is None or not before.holds_at(when):
        raise FactNotFoundError(key[1], key[2], when.isoformat())
    cover: FactRecord = before
    if cover.valid_from < when:
        yield ("set_end", (key, cover.memory_id, when, at, source_episode_id))
        return replace(
            cover, valid_to=when, retracted_at=at, retraction_episode_id=source_episode_id
        )
    yield ("withdraw", (key, cover.memory_id, at, at, source_episode_id))
    previous = yield ("before", (key, when))
    if previous is not None and previous.valid_to == when:
        # Its end now marks the retraction, not a successor that no longer counts.
        yield ("set_end", (key, previous.memory_id, when, at, source_episode_id))
    return replace(cover, withdrawn_at=at, retracted_at=at, retraction_episode_id=source_episode_id)


def insert_rules(record: FactRecord) -> Rules[FactRecord]:
    """Insert ``record`` as it is (a restore: the backup's rows already obey the rules)."""
    yield ("insert", (record,))
    return record


def refusal(
    policy: ConflictPolicy,
    delta: MemoryDelta,
    existing: FactRecord,
    source_ranks: Mapping[str, int],
) -> str | None:
    """Why ``delta`` may not replace ``existing`` at the same ``valid_from``; None if it may."""
    if policy is ConflictPolicy.SOURCE_PRECEDENCE:
        new_rank = source_ranks.get(delta.source, -1)
        old_rank = source_ranks.get(existing.source, -1)
        if new_rank > old_rank:
            return None
        return (
            f"under the source_precedence policy a '{delta.source}' fact does not outrank "
            f"the stored '{existing.source}' fact. Nothing was changed."
        )
    if policy is ConflictPolicy.CONFIRMED_REVISION:
        if delta.source == "confirmed":
            return None
        return (
            "under the confirmed_revision policy only a fact with source 'confirmed' (the "
            f"user confirmed the correction) replaces it; this one is '{delta.source}'. "
            "Nothing was changed."
        )
    return (
        "a different value (or memory type) with the same valid_from is a conflict (policy "
        "'reject'). Give the correction its own valid_from, retract the stored fact, or "
        "record it under the source_precedence or confirmed_revision policy. Nothing was "
        "changed."
    )


def new_record(
    tenant_id: str,
    delta: MemoryDelta,
    now: datetime,
    valid_to: datetime | None,
    superseded: FactRecord | None,
    outcome: WriteOutcome,
    user: str,
) -> FactRecord:
    """The record ``delta`` becomes, recorded ``now`` by ``user``."""
    return FactRecord(
        tenant_id=tenant_id,
        memory_id=new_memory_id(),
        subject=delta.subject,
        attribute=delta.attribute,
        value=delta.value,
        memory_type=delta.memory_type,
        schema_version=RECORD_SCHEMA_VERSION,
        valid_from=delta.valid_from,
        valid_to=valid_to,
        recorded_at=now,
        supersedes_memory_id=None if superseded is None else superseded.memory_id,
        source_episode_id=delta.source_episode_id,
        source=delta.source,
        confidence=delta.confidence,
        retention_policy=delta.retention_policy,
        # An inherited end keeps its cause: a fact dropped inside a retracted interval
        # ends at that retraction.
        retracted_at=None if superseded is None else superseded.retracted_at,
        retraction_episode_id=None if superseded is None else superseded.retraction_episode_id,
        recorded_by=user,
        outcome=outcome,
    )


def no_authority(key: Key, user: str, action: str) -> FactAuthorityError:
    """Why ``user`` may not ``action`` (write, retract) facts on ``key``, and the fix."""
    tenant, subject = key[0], key[1]
    who = f"user '{user}' of tenant '{tenant}'"
    if action == "retract" and subject.startswith("user:"):
        fix = (
            f"Only {subject.removeprefix('user:')} may retract facts about {subject}; "
            "others can only propose candidates"
        )
    else:
        fix = (
            f"A principal writes its own subject (user:{user}) freely; for {subject} ask the "
            f"tenant's admin to run: analyst facts grant {user} {subject}"
        )
    return FactAuthorityError(
        f"{who} may not {action} facts about {subject}. {fix}. Nothing was written.",
        subject=subject,
        tenant_id=tenant,
        user_id=user,
    )


def may_administer(grants: list[tuple[str, str]]) -> bool:
    """Whether a user holding ``grants`` may grant or revoke: only the tenant's admin. A
    tenant's first admin is made by the ledger's owner (``FactStore.bootstrap_admin``), never by
    whoever asks first."""
    return any(r == "admin" for r, _ in grants)


#: How a tenant gets its first admin, on either backend (``agent/cli/db.py``).
BOOTSTRAP_HINT = (
    "a tenant's first admin is made by the ledger's owner: analyst db init --admin USER "
    "(SQLite: run by the OS user owning the data folder; Postgres: with ANALYST_FACTS set to "
    "the owner's URL)"
)


def grant_refused(grant: Grant, user: str) -> FactAuthorityError:
    """``user`` may not change grants: only the tenant's admin (or the ledger's owner) may."""
    return FactAuthorityError(
        f"user '{user}' of tenant '{grant.tenant_id}' may not change grants: only the tenant's "
        f"admin may; {BOOTSTRAP_HINT}. Nothing was changed.",
        subject=grant.subject,
        tenant_id=grant.tenant_id,
        user_id=user,
    )


def grant_of(
    tenant_id: str,
    grantor: str,
    user_id: str,
    subject: str | None,
    admin: bool,
    read_only: bool,
    now: datetime,
) -> Grant:
    """The grant ``analyst facts grant`` describes: admin of the tenant, or writer (reader,
    ``read_only``) of one subject or ``prefix*`` pattern."""
    user = normal_id(user_id, "user")  # the one identity rule: grants name users as principals do
    if admin:
        if read_only:
            raise InvalidFactError("An admin grant reads and writes; drop read-only.")
        if subject not in (None, "*"):
            raise InvalidFactError("An admin grant covers every subject; give no subject.")
        return Grant(tenant_id, user, "admin", "*", grantor, now)
    if subject is None:
        raise InvalidFactError("Name the subject to grant (e.g. team:research), or admin.")
    pattern = check_name(subject, "subject")
    return Grant(tenant_id, user, "reader" if read_only else "writer", pattern, grantor, now)
