"""``analyst facts``: inspect (and try) the typed fact ledger at ``ANALYST_FACTS``.

A thin layer: parse, call the fact ledger that :class:`~agent.app.AnalystApp` opens for the
principal (``--user``, ``--tenant``; only the ledger is opened), render. Only typer and the
standard library are imported at module level so ``analyst --help`` stays fast.

``SUBJECT`` is any subject string; ``me`` stands for your own, ``user:<your user id>``. Times
are ISO-8601 (``2026-06-03``, ``2026-06-03T10:00``, ``2026-06-03T10:00:00+02:00``) or ``now``;
a time without a zone is UTC, a date alone is midnight UTC. ``VALUE`` is read as JSON when it
parses (``42``, ``true``, ``{"a": 1}``) and as text otherwise; ``--text`` forces text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO, TypeVar

import typer

import agent.cli.common as common
from agent.cli.common import CommandError, JsonOpt, TenantOpt, UserOpt, group
from agent.cli.terminal import say

if TYPE_CHECKING:
    from pydantic import ValidationError

    from agent.app import AnalystApp
    from agent.settings import Settings
    from memory.facts import ConflictPolicy, FactRecord, FactStore, ImportReport

T = TypeVar("T")

app = group("facts", "The typed fact ledger: what is true now, what was true then, who said it.")
SubjectArg = Annotated[
    str, typer.Argument(help="Subject, e.g. user:alice or ticker:NVDA; 'me' is user:<you>.")
]
AttributeArg = Annotated[str, typer.Argument(help="Attribute, e.g. risk_tolerance.")]
PersonalOpt = Annotated[
    bool,
    typer.Option(
        "--include-personal",
        help="Tenant admin: also show another user's personal data (full_name, address, age); "
        "the read is written to that user's memory audit.",
    ),
]
PolicyOpt = Annotated[
    str,
    typer.Option(
        "--policy",
        help="On an equal valid_from: reject, source_precedence or confirmed_revision.",
    ),
]


# -- plumbing -------------------------------------------------------------------------------


def _subject(subject: str, settings: Settings) -> str:
    return f"user:{settings.user_id}" if subject == "me" else subject


def _principal(subject: str, user: str | None, tenant: str | None) -> tuple[Settings, str]:
    """The settings for --user and --tenant, and SUBJECT with ``me`` read as that user."""
    settings = common.settings(user, tenant)
    return settings, _subject(subject, settings)


def _when(text: str, option: str) -> datetime:
    if text.strip().lower() == "now":
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(
            f"{option} '{text}' is not an ISO-8601 time; use e.g. 2026-06-03 or "
            "2026-06-03T10:00:00+00:00 (or 'now')."
        ) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _run(
    settings: Settings,
    body: Callable[[FactStore], Coroutine[Any, Any, T]],
    *,
    create: bool = True,
) -> T:
    """Run ``body`` on the app's fact ledger for the principal in ``settings``; a read
    (``create=False``) never creates the ledger file."""

    async def go(app: AnalystApp) -> T:
        return await body(await app.tiers.facts(create=create))

    return common.call(settings, go)


def _read(
    settings: Settings,
    body: Callable[[FactStore], Coroutine[Any, Any, T]],
    include_personal: bool,
) -> T:
    """Run the read ``body`` for the principal; with ``include_personal`` the ledger writes
    an admin's read of another user's personal facts to that user's memory audit (the journal
    refuses it, and the read with it, unless the principal is the tenant's admin)."""
    if not include_personal:
        return _run(settings, body, create=False)

    async def go(app: AnalystApp) -> T:
        journal = await app.tiers.journal()

        async def audit(owner: str, memory_ids: list[str]) -> None:
            await journal.audit(
                "read",
                "facts",
                memory_ids,
                reason="admin read of personal facts (--include-personal)",
                subject_user=owner,
            )

        return await body((await app.tiers.facts()).with_auditor(audit))

    return common.call(settings, go)


def _policy(policy: str) -> ConflictPolicy:
    """The --policy named; a usage error listing the policies for any other name."""
    from memory.facts import ConflictPolicy

    try:
        return ConflictPolicy(policy)
    except ValueError:
        raise CommandError(
            f"--policy '{policy}' is not one of {', '.join(p.value for p in ConflictPolicy)}."
        ) from None


def _problems(error: ValidationError) -> str:
    """What is wrong with a fact, field by field: ``confidence: Input should be ...; ...``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in error.errors()
    )


def _value_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _line(text: str) -> None:
    """One line of the listing, printed as it is: stored text is never read as markup."""
    common.console().print(text, markup=False, soft_wrap=True)


def _emit_one(record: FactRecord | None, json_mode: bool, label: str) -> None:
    if json_mode:
        common.print_json(None if record is None else record.to_json())
        return
    if record is None:
        _line(f"{label}: no value")
        return
    until = "" if record.valid_to is None else f" until {record.valid_to.isoformat()}"
    episode = f", episode {record.source_episode_id}" if record.source_episode_id else ""
    _line(f"{record.subject}.{record.attribute} = {_value_text(record.value)}")
    _line(
        f"  since {record.valid_from.isoformat()}{until} [{record.status}] "
        f"source {record.source}{episode}, fact {record.memory_id}"
    )
    if record.candidate and record.outcome is not None:
        _line(
            f"  stored as a candidate by {record.recorded_by}: it does not count until "
            f"{record.subject.removeprefix('user:')} records it themselves."
        )


def _id(memory_id: str | None) -> str:
    """A fact id as shown in listings: whole, so it can be copied."""
    return memory_id or ""


def _iso(value: datetime | None) -> str:
    """Compact UTC for tables: 2026-06-03 10:00Z, with seconds/microseconds only if present."""
    if value is None:
        return ""
    value = value.astimezone(UTC)
    if value.microsecond:
        return value.strftime("%Y-%m-%d %H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%d %H:%M:%SZ" if value.second else "%Y-%m-%d %H:%MZ")


def _history_line(record: FactRecord) -> str:
    """One record of a key's history: its interval, value and status, where it came from, what
    it replaced and what retracted it."""
    interval = f"[{_iso(record.valid_from)}, {_iso(record.valid_to) or 'open'})"
    parts = [interval, _value_text(record.value), record.status, f"source {record.source}"]
    if record.source_episode_id:
        parts.append(f"episode {record.source_episode_id}")
    parts.append(f"fact {_id(record.memory_id)}")
    if record.supersedes_memory_id:
        parts.append(f"replaces {_id(record.supersedes_memory_id)}")
    if record.retraction_episode_id:
        parts.append(f"retracted by {record.retraction_episode_id}")
    return "  " + "  ".join(parts)


# -- commands -------------------------------------------------------------------------------


@app.command()
def current(
    subject: SubjectArg,
    attribute: AttributeArg,
    include_personal: PersonalOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """The value that holds now (JSON: the record, or null)."""
    settings, subject = _principal(subject, user, tenant)
    record = _read(
        settings,
        lambda s: s.current(subject, attribute, include_personal=include_personal),
        include_personal,
    )
    _emit_one(record, json_mode, f"{subject}.{attribute}")


@app.command("as-of")
def as_of(
    subject: SubjectArg,
    attribute: AttributeArg,
    when: Annotated[str, typer.Argument(help="The time to look at, e.g. 2026-06-02.")],
    include_personal: PersonalOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """The value that held at WHEN (JSON: the record, or null)."""
    settings, subject = _principal(subject, user, tenant)
    at = _when(when, "WHEN")
    record = _read(
        settings,
        lambda s: s.as_of(subject, attribute, at, include_personal=include_personal),
        include_personal,
    )
    _emit_one(record, json_mode, f"{subject}.{attribute} at {at.isoformat()}")


@app.command()
def history(
    subject: SubjectArg,
    attribute: AttributeArg,
    include_personal: PersonalOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Every record of the key: intervals, what each superseded, source episodes."""
    settings, subject = _principal(subject, user, tenant)
    records = _read(
        settings,
        lambda s: s.history(subject, attribute, include_personal=include_personal),
        include_personal,
    )
    if json_mode:
        common.print_json([r.to_json() for r in records])
        return
    _line(f"{subject}.{attribute}: {len(records)} record(s)")
    for r in records:
        _line(_history_line(r))


@app.command()
def profile(
    subject: SubjectArg,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Show the profile at this time (default: now).")
    ] = None,
    include_personal: PersonalOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Every attribute of SUBJECT that holds now (or at --as-of). Another user's personal
    attributes are left out (a tenant admin adds --include-personal; audited)."""
    settings, subject = _principal(subject, user, tenant)
    at = None if as_of is None else _when(as_of, "--as-of")
    records = _read(
        settings,
        lambda s: s.profile(subject, as_of=at, include_personal=include_personal),
        include_personal,
    )
    if json_mode:
        common.print_json({name: r.to_json() for name, r in records.items()})
        return
    when = "now" if at is None else at.isoformat()
    from agent.cli.render import Column, listing

    _line(f"{subject} ({when}): {len(records)} attribute(s)")
    if records:
        rows = list(records.items())
        listing(
            common.console(),
            [
                Column("attribute", [name for name, _ in rows]),
                Column(
                    "value", [_value_text(r.value) for _, r in rows], elastic=True, min_width=20
                ),
                Column("since", [_iso(r.valid_from) for _, r in rows], drop=2),
                Column("source", [r.source for _, r in rows], drop=1),
                Column("episode", [r.source_episode_id or "" for _, r in rows], drop=3),
            ],
        )


@app.command()
def record(
    subject: SubjectArg,
    attribute: AttributeArg,
    value: Annotated[str, typer.Argument(help="The value: JSON if it parses, else text.")],
    valid_from: Annotated[
        str, typer.Option("--valid-from", help="When the value starts to hold.")
    ] = "now",
    source_episode: Annotated[
        str | None,
        typer.Option("--source-episode", help="Episode id the fact came from (provenance)."),
    ] = None,
    source: Annotated[
        str, typer.Option("--source", help="inferred, observed, stated or confirmed.")
    ] = "stated",
    memory_type: Annotated[
        str, typer.Option("--type", help="semantic, episodic, procedural or profile.")
    ] = "semantic",
    confidence: Annotated[float, typer.Option("--confidence", help="0..1.")] = 1.0,
    retention: Annotated[
        str, typer.Option("--retention", help="Retention policy name.")
    ] = "default",
    policy: PolicyOpt = "reject",
    text: Annotated[bool, typer.Option("--text", help="Store VALUE as text, never JSON.")] = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Record a fact; it supersedes the fact holding at --valid-from (never silently)."""
    from pydantic import ValidationError

    from memory.facts import MemoryDelta

    settings, subject = _principal(subject, user, tenant)
    parsed: Any = value
    if not text:
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
    chosen = _policy(policy)
    try:
        delta = MemoryDelta(
            subject=subject,
            attribute=attribute,
            value=parsed,
            valid_from=_when(valid_from, "--valid-from"),
            source_episode_id=source_episode,
            source=source,  # type: ignore[arg-type]
            memory_type=memory_type,  # type: ignore[arg-type]
            confidence=confidence,
            retention_policy=retention,
        )
    except ValidationError as e:
        raise CommandError(f"Invalid fact: {_problems(e)}.") from None
    stored = _run(settings, lambda s: s.record(delta, policy=chosen))
    _emit_one(stored, json_mode, f"{subject}.{attribute}")


@app.command()
def retract(
    subject: SubjectArg,
    attribute: AttributeArg,
    at: Annotated[str, typer.Option("--at", help="When the fact stops holding.")] = "now",
    source_episode: Annotated[
        str | None, typer.Option("--source-episode", help="Episode id of the retraction.")
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Close the fact holding at --at without a successor (it stays in history)."""
    settings, subject = _principal(subject, user, tenant)
    when = _when(at, "--at")
    closed = _run(
        settings,
        lambda s: s.retract(subject, attribute, at=when, source_episode_id=source_episode),
    )
    _emit_one(closed, json_mode, f"{subject}.{attribute}")


@app.command()
def setup(
    app_role: Annotated[
        list[str] | None,
        typer.Option(
            "--app-role",
            help="Postgres: grant this application role access (repeatable). It must be "
            "NOSUPERUSER NOBYPASSRLS.",
        ),
    ] = None,
    json_mode: JsonOpt = False,
) -> None:
    """Create or upgrade the ledger schema at ANALYST_FACTS (Postgres: run as the owner)."""
    settings = common.settings()
    applied = common.call(settings, lambda a: a.storage.setup_facts(app_role or ()))
    if json_mode:
        common.print_json({"applied": applied}, indent=None)
        return
    from memory.facts.migrations import LATEST_VERSION

    done = f"applied migrations {', '.join(map(str, applied))}" if applied else "already current"
    say(f"Fact ledger schema version {LATEST_VERSION}: {done}.")


GranteeArg = Annotated[str, typer.Argument(help="The user id the grant is for.")]
GrantSubjectArg = Annotated[
    str | None,
    typer.Argument(help="Subject, or a prefix pattern such as team:*; omit with --admin."),
]
AdminOpt = Annotated[
    bool, typer.Option("--admin", help="Admin of the tenant: any subject, and grants.")
]
ReadOnlyOpt = Annotated[
    bool, typer.Option("--read-only", help="Read SUBJECT only (a reader), never write it.")
]


def _what(admin: bool, read_only: bool, subject: str | None) -> str:
    return "admin" if admin else f"{'reader' if read_only else 'writer'} of {subject}"


#: What ``grant`` and ``revoke`` say: the JSON key, then the words for a change made and for
#: none needed.
_GRANT_WORDS = {
    False: ("granted", "granted", "already granted"),
    True: ("revoked", "revoked", "was not granted"),
}


def _change_grant(
    revoke: bool,
    grantee: str,
    subject: str | None,
    admin: bool,
    read_only: bool,
    user: str | None,
    tenant: str | None,
    json_mode: bool,
) -> None:
    """Grant (or revoke) GRANTEE the role the arguments name, and say whether that changed
    anything."""
    settings = common.settings(user, tenant)
    if admin == (subject is not None):
        raise CommandError("Name a SUBJECT (e.g. team:research or team:*) or give --admin.")
    if admin and read_only:
        raise CommandError("--read-only names a SUBJECT to read; an admin reads everything.")
    from memory.errors import FactAuthorityError

    about = None if subject is None else _subject(subject, settings)
    try:
        changed = _run(
            settings,
            lambda s: (s.revoke if revoke else s.grant)(
                grantee, about, admin=admin, read_only=read_only
            ),
        )
    except FactAuthorityError as e:
        # Not an admin: a usage error (exit 2), with the way a first admin is made.
        raise CommandError(str(e)) from None
    what = _what(admin, read_only, subject)
    key, done, not_done = _GRANT_WORDS[revoke]
    if json_mode:
        common.print_json({key: changed, "user": grantee, "grant": what}, indent=None)
        return
    say(f"{grantee}: {what} ({done if changed else not_done}).")


@app.command()
def grant(
    grantee: GranteeArg,
    subject: GrantSubjectArg = None,
    admin: AdminOpt = False,
    read_only: ReadOnlyOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Let USER write and read facts about SUBJECT (--read-only: only read it; --admin: any
    subject) in your tenant.

    Only the tenant's admin may grant (exit 2 otherwise); a tenant's first admin is made by
    the ledger's owner with `analyst db init --admin USER`. Facts about another user stay
    candidates that user must confirm, and a grant never lets one read another user's facts."""
    _change_grant(False, grantee, subject, admin, read_only, user, tenant, json_mode)


@app.command()
def revoke(
    grantee: GranteeArg,
    subject: GrantSubjectArg = None,
    admin: AdminOpt = False,
    read_only: ReadOnlyOpt = False,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Withdraw a grant made with `analyst facts grant` (same arguments)."""
    _change_grant(True, grantee, subject, admin, read_only, user, tenant, json_mode)


@app.command()
def grants(user: UserOpt = None, tenant: TenantOpt = None, json_mode: JsonOpt = False) -> None:
    """List who may write or read which subjects in your tenant (besides their own)."""
    settings = common.settings(user, tenant)
    found = _run(settings, lambda s: s.grants(), create=False)
    if json_mode:
        common.print_json([g.to_json() for g in found])
        return
    if not found:
        say("No grants: everyone writes only their own subject (user:<id>).")
        return
    for g in found:
        by = f" (by {g.granted_by})" if g.granted_by else ""
        say(f"{g.user_id}\t{g.role}\t{g.subject}{by}")


@app.command("import")
def import_(
    file: Annotated[
        str, typer.Argument(help="A JSON Lines file of facts ('-' reads standard input).")
    ],
    policy: PolicyOpt = "reject",
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            min=1,
            help="Facts per durable transaction (default: the ledger's, 50,000).",
        ),
    ] = None,
    user: UserOpt = None,
    tenant: TenantOpt = None,
    json_mode: JsonOpt = False,
) -> None:
    """Load many facts at once, under the same rules as `record` (one per line).

    Each line is an object: subject ('me' is yours), attribute, value, valid_from (ISO-8601;
    no zone means UTC), and optionally source_episode_id, source, memory_type, confidence,
    retention_policy. Lines the ledger refuses (a conflict, a malformed line) are reported
    with their line number and the rest are loaded; the exit code is then 3.
    """
    settings = common.settings(user, tenant)
    chosen = _policy(policy)
    lines: list[int] = []  # the line number of each fact read, for the report
    with _opened(file) as stream:
        report = _run(
            settings,
            lambda s: s.import_facts(
                _read_facts(stream, settings, lines), policy=chosen, batch_size=batch_size
            ),
        )
    _report_import(report, [(lines[index], why) for index, why in report.refused], file, json_mode)


@contextmanager
def _opened(file: str) -> Iterator[TextIO]:
    """FILE open for reading, closed after; ``-`` is standard input, left open."""
    if file == "-":
        yield sys.stdin
        return
    try:
        stream = Path(file).open(encoding="utf-8")  # noqa: SIM115 (closed by the with below)
    except OSError as e:
        raise CommandError(f"Cannot read {file}: {e.strerror or e}.") from None
    with stream:
        yield stream


def _report_import(
    report: ImportReport, refused: list[tuple[int, str]], file: str, json_mode: bool
) -> None:
    """What an import did, with the line number and reason of each line refused (the first 20
    of them as text); exit code 3 if any was."""
    if json_mode:
        common.print_json(
            {**report.to_json(), "refused": [{"line": n, "reason": r} for n, r in refused]}
        )
    else:
        say(
            f"Imported {report.total:,} line(s) in {report.seconds:.1f} s: "
            f"{report.recorded:,} recorded, {report.replaced:,} replaced, "
            f"{report.duplicates:,} duplicate(s), {len(refused):,} refused."
        )
        for number, reason in refused[:20]:
            say(f"  line {number}: {reason}")
        if len(refused) > 20:
            say(f"  ... and {len(refused) - 20} more (--json lists them all)")
    if refused:
        raise CommandError(
            f"{len(refused)} of {report.total} fact(s) in {file} were refused; the "
            "others are stored.",
            exit_code=3,
        )


def _read_facts(text: Iterable[str], settings: Settings, lines: list[int]) -> Iterator[Any]:
    """Each non-blank line as a ``MemoryDelta``, or the error that says why it is not one;
    ``lines`` receives the line number of each."""
    from pydantic import ValidationError

    from memory.facts import MemoryDelta

    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        lines.append(number)
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise ValueError("expected a JSON object")
            if item.get("subject") == "me":
                item["subject"] = f"user:{settings.user_id}"
            if isinstance(item.get("valid_from"), str):
                item["valid_from"] = _when(item["valid_from"], "valid_from")
            yield MemoryDelta(**item)
        except (ValueError, TypeError, CommandError) as e:
            yield ValueError(_problems(e) if isinstance(e, ValidationError) else str(e))
