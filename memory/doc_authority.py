"""Who may read and write which document, and the audit of every write.

Document memory (:class:`memory.documents.FileMemory`) is one folder every user of a project
shares. :class:`OwnedDocuments` is that folder as one principal may use it; the application
reads and writes documents for a person only through it, so the rules below hold whatever the
caller (the CLI, a graph node, a forget) and are judged on the path a link really leads to:

- **Profile documents** (``user-profiles/<user>.md``; ``user-profiles/<tenant>/<user>.md``
  outside the ``default`` tenant) are read and written only by their user, or by an admin of
  that tenant (the fact ledger's admin grant, resolved by the application). Listing and search
  leave out the ones the principal may not read.
- **Research notes** (``research/``) are records: created once, never replaced or deleted
  here. An edit is a *revision*: a new note ``<stem>.r<N>.md`` whose front matter names the
  note it supersedes (``supersedes``) and that note's SHA-256 (``supersedes_sha256``), and who
  made it; the predecessor stays byte for byte. Those fields and a publication's (who
  approved what, from which thread) are :data:`memory.authorship.CODE_FIELDS`: set here and
  by the publisher from the principal, never read from a person's text, which is refused if
  it states one (whatever its case, spelling or position; nothing is written).
- **Everything else** (conventions, learnings, the progress log) is project Markdown a person
  edits, as before.

Every write and delete goes to the memory audit (who, the document's real path, the keyed hash
of the text) before the call returns; a profile document's owner finds an admin's edit in their own audit.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from memory.authorship import refuse_code_fields
from memory.errors import DocumentNotFoundError, DocumentPathError
from memory.identity import Principal
from memory.markdown import join_front_matter, split_front_matter

if TYPE_CHECKING:
    from memory.doc_search import SearchHit
    from memory.documents import Document, FileMemory
    from memory.journal.base import Journal

#: The folder of profile documents, and the tenant whose profiles sit directly in it.
PROFILES = "user-profiles"
DEFAULT_TENANT = "default"
#: The folder of research notes (records).
RESEARCH = "research"

_DONE = {"read": "read", "write": "written", "delete": "deleted"}
_REVISION = re.compile(r"^(?P<stem>.+?)\.r(?P<n>\d+)$")


class DocumentAccessError(DocumentPathError):
    """A document the principal may not read or write, or a record it may not replace."""


@dataclass(frozen=True)
class Authority:
    """Who acts on documents: the principal, and whether the fact ledger makes it an admin of
    its tenant (the application resolves that; a document never grants it)."""

    principal: Principal
    admin: bool = False


@dataclass(frozen=True)
class DocumentAudit:
    """One document write for the memory audit. ``text`` is what was written (the audit
    keeps only its keyed hash); ``owner`` is the user whose profile document it is (their
    audit gets the entry), ``None`` for a project document (the writer's audit)."""

    action: Literal["write", "delete"]
    path: str
    text: str | None
    owner: str | None
    reason: str


#: Appends one entry to the memory audit; raises if it cannot (nothing goes unaudited).
AuditSink = Callable[[DocumentAudit], Awaitable[None]]


def journal_audit(journal: Journal) -> AuditSink:
    """The sink writing to ``journal``'s audit (scoped to the acting principal): tier
    ``documents``, the path as the item, the text as its keyed hash, and the profile's owner
    as the user whose memory it is (the journal lets only the tenant's admin name another)."""

    async def audit(entry: DocumentAudit) -> None:
        await journal.audit(
            entry.action,
            "documents",
            [entry.path],
            reason=entry.reason,
            content=entry.text,
            subject_user=entry.owner,
        )

    return audit


def profile_document(principal: Principal) -> str:
    """The principal's profile document: ``user-profiles/<user>.md`` in the default tenant,
    ``user-profiles/<tenant>/<user>.md`` in any other."""
    if principal.tenant_id == DEFAULT_TENANT:
        return f"{PROFILES}/{principal.user_id}.md"
    return f"{PROFILES}/{principal.tenant_id}/{principal.user_id}.md"


class Owner(NamedTuple):
    """Whose a path under ``user-profiles/`` is: a user of a tenant, or (``user_id`` None)
    no user, only that tenant's admin. Plain strings, compared as the path spells them."""

    tenant_id: str
    user_id: str | None


def profile_owner(relpath: str) -> Owner | None:
    """Whose profile document ``relpath`` is (``None``: not under ``user-profiles/``). A path
    there that is no profile document (a file deeper down, a folder named after the default
    tenant, a file that is not Markdown) belongs to no user: only an admin may write it."""
    parts = _parts(relpath)
    if not parts or parts[0] != PROFILES:
        return None
    rest = parts[1:]
    if len(rest) == 1 and rest[0].endswith(".md"):
        return Owner(DEFAULT_TENANT, rest[0][: -len(".md")])
    if len(rest) == 2 and rest[1].endswith(".md") and rest[0] != DEFAULT_TENANT:
        return Owner(rest[0], rest[1][: -len(".md")])
    return Owner(rest[0] if len(rest) > 1 else DEFAULT_TENANT, None)


def is_record(relpath: str) -> bool:
    """Whether ``relpath`` is under ``research/`` (created once, revised, never replaced)."""
    parts = _parts(relpath)
    return bool(parts) and parts[0] == RESEARCH


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parses(text: str) -> bool:
    """Whether ``text``'s front matter (if any) is valid YAML."""
    try:
        split_front_matter(text)
    except ValueError:
        return False
    return True


def _parts(relpath: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(relpath).parts if p not in ("", "."))


class OwnedDocuments:
    """Document memory as one :class:`Authority` may use it: reads are checked, writes are
    checked and audited (through ``audit``; ``None`` only where no journal exists, e.g. a graph
    built without one). Reads are plain calls; writes are coroutines because the audit is."""

    def __init__(self, files: FileMemory, authority: Authority, audit: AuditSink | None) -> None:
        self.files = files
        self.authority = authority
        self._audit = audit

    @property
    def principal(self) -> Principal:
        return self.authority.principal

    @property
    def root(self) -> Path:
        return self.files.root

    # -- the rules ------------------------------------------------------------------------

    def may_read(self, relpath: str) -> bool:
        """Profile documents: their owner and the tenant's admin; anything else: anyone."""
        owner = profile_owner(relpath)
        return owner is None or self._owns(owner)

    def _owns(self, owner: Owner) -> bool:
        me = self.principal
        if owner.tenant_id != me.tenant_id:
            return False
        return self.authority.admin or owner.user_id == me.user_id

    def _check(self, relpath: str, doing: str, *, follow: bool = True) -> Owner | None:
        """Refuse ``doing`` on ``relpath`` (as spelled and where it really leads) unless the
        principal may; the profile owner (for the audit), if it is a profile document."""
        owner: Owner | None = None
        for path in dict.fromkeys((relpath, self.files.real_path(relpath, follow=follow))):
            found = profile_owner(path)
            if found is None:
                continue
            if not self._owns(found):
                raise self._refused(path, found, doing)
            owner = found
        return owner

    def _refused(self, path: str, owner: Owner, doing: str) -> DocumentAccessError:
        me = self.principal
        whose = f"{owner.user_id}'s profile document" if owner.user_id else "a reserved path"
        who = f"{owner.user_id} or an admin" if owner.user_id else "an admin"
        return DocumentAccessError(
            f"'{path}' is {whose}: only {who} of tenant '{owner.tenant_id}' may {doing} it, "
            f"not {me.user_id} of tenant '{me.tenant_id}'. Nothing was {_DONE[doing]}."
        )

    def check_write(self, relpath: str) -> None:
        """Refuse (:class:`DocumentAccessError`) a write the principal may not make; a
        research note that exists is written as a revision (:meth:`save`)."""
        self._check(relpath, "write")

    def _check_record(self, relpath: str) -> None:
        """A record that exists is never replaced: say how to revise it instead."""
        if any(map(is_record, {relpath, self.files.real_path(relpath)})) and self.files.exists(
            relpath
        ):
            raise DocumentAccessError(
                f"'{relpath}' is a published research note, a record that is never replaced; "
                f"edit it to create a revision that supersedes it (analyst notes edit {relpath})."
            )

    # -- reading --------------------------------------------------------------------------

    def exists(self, relpath: str) -> bool:
        self._check(relpath, "read")
        return self.files.exists(relpath)

    def read(self, relpath: str) -> Document:
        self._check(relpath, "read")
        return self.files.read(relpath)

    def read_text(self, relpath: str) -> str:
        self._check(relpath, "read")
        return self.files.read_text(relpath)

    def read_bytes(self, relpath: str) -> bytes:
        """A file's exact bytes (a note's chart), under the same read check."""
        self._check(relpath, "read")
        return self.files.read_raw(relpath).data

    def resolve(self, relpath: str) -> Path:
        return self.files.resolve(relpath)

    def list(self, pattern: str = "**/*.md") -> list[str]:
        """The paths matching ``pattern`` the principal may read."""
        return [p for p in self.files.list(pattern) if self.may_read(p)]

    def search(
        self, query: str, *, limit: int | None = 10, pattern: str | None = None
    ) -> builtins.list[SearchHit]:
        """Ranked search over the documents the principal may read."""
        return self.files.search(query, limit=limit, pattern=pattern, readable=self.may_read)

    # -- writing --------------------------------------------------------------------------

    async def write(
        self,
        relpath: str,
        body: str,
        metadata: dict[str, Any] | None = None,
        *,
        reason: str,
        exclusive: bool = False,
    ) -> Path:
        """Write a Markdown document, checked and audited. ``metadata`` is its front matter
        as code builds it, the only way a code field reaches a file
        (:meth:`memory.documents.FileMemory.write`)."""
        text = join_front_matter(metadata or {}, body)
        return await self._put(
            relpath,
            lambda record: self.files.write(relpath, body, metadata, exclusive=exclusive or record),
            text,
            reason=reason,
            exclusive=exclusive,
        )

    async def write_bytes(
        self, relpath: str, data: bytes, *, reason: str, exclusive: bool = False
    ) -> Path:
        """Write exact bytes, checked and audited. Under ``research/`` only a new document
        is written (the write is exclusive there: :class:`FileExistsError` if it exists).
        Markdown that states a code field is refused
        (:class:`~memory.authorship.CodeFieldError`).

        The file work runs in a worker thread, as everywhere in this class: the API server
        (``langgraph dev``) refuses blocking I/O on its event loop."""
        return await self._put(
            relpath,
            lambda record: self.files.write_bytes(relpath, data, exclusive=exclusive or record),
            data.decode("utf-8", "replace"),
            reason=reason,
            exclusive=exclusive,
        )

    async def _put(
        self,
        relpath: str,
        store: Callable[[bool], Path],
        text: str,
        *,
        reason: str,
        exclusive: bool,
    ) -> Path:
        """Check, ``store(is a record)`` in a worker thread, audit ``text``."""

        def put() -> tuple[Owner | None, Path, str]:
            owner = self._check(relpath, "write")
            if not exclusive:
                self._check_record(relpath)
            written = store(is_record(relpath) or is_record(self.files.real_path(relpath)))
            return owner, written, self.files.real_path(relpath)

        owner, written, real = await asyncio.to_thread(put)
        await self._audited("write", real, text, owner, reason)
        return written

    async def update(
        self, relpath: str, change: Callable[[str | None], str], *, reason: str
    ) -> Path:
        """Read-modify-write under the document's lock (:meth:`FileMemory.update`), checked
        and audited with the text written."""
        written: list[str] = []

        def keep(current: str | None) -> str:
            written.append(change(current))
            return written[-1]

        def put() -> tuple[Owner | None, Path, str]:
            owner = self._check(relpath, "write")
            self._check_record(relpath)
            path = self.files.update(relpath, keep)
            return owner, path, self.files.real_path(relpath)

        owner, path, real = await asyncio.to_thread(put)
        await self._audited("write", real, written[-1], owner, reason)
        return path

    async def delete(self, relpath: str, *, reason: str) -> bool:
        """Remove a document (not a record), checked and audited; whether it existed."""

        def remove() -> tuple[Owner | None, str, bool]:
            owner = self._check(relpath, "delete", follow=False)
            real = self.files.real_path(relpath, follow=False)
            if is_record(relpath) or is_record(real):
                raise DocumentAccessError(
                    f"'{relpath}' is a published research note, a record: it is not deleted "
                    "through the analyst; remove the file by hand if your policy allows."
                )
            return owner, real, self.files.delete(relpath)

        owner, real, gone = await asyncio.to_thread(remove)
        if gone:
            await self._audited("delete", real, None, owner, reason)
        return gone

    async def revise(self, relpath: str, text: str, *, reason: str) -> str:
        """A new revision of the research note ``relpath`` holding ``text``; its path.

        The revision is ``<stem>.r<N>.md`` (the first free ``N`` from 2, created exclusively)
        beside the note; its front matter is ``text``'s (which may state no code field:
        :class:`~memory.authorship.CodeFieldError`) plus ``supersedes`` (``relpath``),
        ``supersedes_sha256`` (of ``relpath``'s bytes now), ``revised_by`` and ``tenant``.
        ``relpath`` is not touched."""
        if not is_record(relpath):
            raise DocumentAccessError(
                f"'{relpath}' is not a research note; only notes under {RESEARCH}/ are revised."
            )

        def read() -> bytes:
            self._check(relpath, "read")
            return self.files.read_raw(relpath).data

        predecessor = await asyncio.to_thread(read)
        refuse_code_fields(relpath, text)
        try:
            metadata, body = split_front_matter(text)
        except ValueError as e:
            raise DocumentAccessError(
                f"The new text of '{relpath}' has front matter that is not valid YAML ({e}); "
                "fix the block between the '---' lines."
            ) from e
        metadata.update(
            supersedes=relpath,
            supersedes_sha256=sha256_hex(predecessor),
            revised_by=self.principal.user_id,
            tenant=self.principal.tenant_id,
        )
        folder, stem = PurePosixPath(relpath).parent, PurePosixPath(relpath).stem
        match = _REVISION.match(stem)
        base = match.group("stem") if match else stem
        for n in range(2, 10_000):
            candidate = str(folder / f"{base}.r{n}.md")
            try:
                await self.write(candidate, body, metadata, reason=reason, exclusive=True)
            except FileExistsError:
                continue
            return candidate
        raise DocumentAccessError(f"'{relpath}' has too many revisions; start a new note.")

    async def save(self, relpath: str, text: str, *, reason: str) -> tuple[str, str]:
        """Write ``text`` to ``relpath`` the way a person's edit is kept: a research note that
        exists gets a revision, anything else is written. ``(path written, what happened:
        created, updated or revised)``."""

        def look() -> tuple[bool, bool]:
            self._check(relpath, "write")
            record = is_record(relpath) or is_record(self.files.real_path(relpath))
            return self.files.exists(relpath), record

        existed, record = await asyncio.to_thread(look)
        refuse_code_fields(relpath, text)
        if existed and record:
            return await self.revise(relpath, text, reason=reason), "revised"
        if record and not _parses(text):
            raise DocumentAccessError(
                f"'{relpath}' would be a research note whose front matter is not valid YAML; "
                "fix the block between the '---' lines."
            )
        await self.write_bytes(relpath, text.encode("utf-8"), reason=reason)
        return relpath, "updated" if existed else "created"

    async def record_write(self, relpath: str, *, reason: str) -> None:
        """Audit a write another component made to ``relpath`` (the progress log's line,
        appended under its own lock): the text there now."""

        def read() -> tuple[Owner | None, str, str] | None:
            owner = self._check(relpath, "write")
            try:
                text = self.files.read_text(relpath)
            except DocumentNotFoundError:
                return None
            return owner, self.files.real_path(relpath), text

        found = await asyncio.to_thread(read)
        if found is not None:
            owner, real, text = found
            await self._audited("write", real, text, owner, reason)

    async def _audited(
        self,
        action: Literal["write", "delete"],
        path: str,
        text: str | None,
        owner: Owner | None,
        reason: str,
    ) -> None:
        if self._audit is not None:
            user = None if owner is None else owner.user_id
            await self._audit(DocumentAudit(action, path, text, user, reason))
