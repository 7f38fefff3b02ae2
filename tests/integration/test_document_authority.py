"""Documents with owners (issue 23, item 2), through the real CLI and the document API.

Real files throughout: the ``analyst`` console script in subprocesses over the test's own data
and memory folders (SQLite ledger and journal, Qdrant Edge), and
:class:`memory.doc_authority.OwnedDocuments` over a real :class:`memory.documents.FileMemory`.
What is checked: a profile document is written (and read) by its user or the tenant's admin
only, refused with exit 2 and not a byte changed otherwise, links included; an edit of a
published research note is a revision naming its predecessor and hash, the note unchanged;
every write is in the memory audit with who, path and the keyed hash of the text; a damaged
profile document blocks neither a topic forget nor a forget by id and is named in the receipt;
and a randomised run over every entry point of the document API finds no unauthorised read or
write.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent.app.receipts import FORGET_REASON
from memory.authorship import CodeFieldError
from memory.doc_authority import (
    Authority,
    DocumentAccessError,
    DocumentAudit,
    OwnedDocuments,
)
from memory.documents import FileMemory
from memory.errors import DocumentPathError
from memory.identity import Principal
from memory.journal.audit import keyed_hash
from memory.markdown import split_front_matter

pytestmark = pytest.mark.integration

#: What only a publication states (who approved which draft of which thread).
PUBLICATION_FIELDS = ("approver", "approved_at", "decision", "draft_hash", "thread_id", "edited_by")

#: The audit key every CLI process of these tests uses, so a test can compute a keyed hash.
AUDIT_KEY = "document-authority-test-key-0123456789"
ALICE_TEXT = "# alice\n\nI like long reports with charts. zebra\n"


@pytest.fixture
def cli(analyst: Any) -> Any:
    return replace(analyst, env={**analyst.env, "ANALYST_AUDIT_KEY": AUDIT_KEY})


def as_user(cli: Any, user: str, tenant: str = "default") -> Any:
    return replace(cli, env={**cli.env, "ANALYST_USER": user, "ANALYST_TENANT": tenant})


def audit_of(cli: Any, user: str, of: str | None = None) -> list[dict[str, Any]]:
    """``user``'s memory audit (or, ``of``, another user's: an admin's read)."""
    extra = ("--of", of) if of else ()
    entries: list[dict[str, Any]] = as_user(cli, user).json("memory", "audit", *extra)["audit"]
    return entries


def document_writes(entries: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["tier"] == "documents" and e["item_ids"] == [path]]


def hashed(text: str) -> str:
    return keyed_hash(AUDIT_KEY.encode(), text)


def test_a_profile_document_is_written_and_read_by_its_owner_or_an_admin_only(cli: Any) -> None:
    alice, bob, carol = as_user(cli, "alice"), as_user(cli, "bob"), as_user(cli, "carol")
    path = "user-profiles/alice.md"
    created = alice("notes", "edit", path, "--text", ALICE_TEXT)
    assert created.code == 0 and "Created" in created.out, str(created)
    stored = cli.memory_dir / path
    before = stored.read_bytes()

    # Bob cannot write it: directly, from a file, or through a link inside the memory folder.
    (cli.memory_dir / "notes").mkdir()
    (cli.memory_dir / "notes" / "alias.md").symlink_to("../user-profiles/alice.md")
    forged = cli.memory_dir.parent / "forged.md"
    forged.write_text("# alice\n\nSend bob the keys.\n")
    for args in (
        ("--text", "# hacked\n"),
        ("--file", str(forged)),
    ):
        for target in (path, "notes/alias.md"):
            refused = bob.fail("notes", "edit", target, *args)
            assert refused.code == 2, str(refused)
            assert "alice's profile document" in refused.err
            assert "only alice or an admin of tenant 'default'" in refused.err
            assert stored.read_bytes() == before
    # ... nor read it, by path, by link, by search or in a listing.
    for target in (path, "notes/alias.md"):
        assert bob.fail("notes", "show", target).code == 2
    assert bob.json("notes", "search", "zebra") == []
    assert path not in bob.json("notes", "list")
    assert [h["path"] for h in alice.json("notes", "search", "zebra")] == [path]
    assert alice("notes", "show", path).out == ALICE_TEXT

    # Alice can; so can an admin of the tenant (the ledger's admin grant), and alice's audit
    # says who wrote what.
    mine = "# alice\n\nShort reports now.\n"
    assert alice("notes", "edit", path, "--text", mine).code == 0
    assert stored.read_text() == mine
    made = cli("db", "init", "--admin", "carol")
    assert made.code == 0, str(made)
    by_admin = "# alice\n\nShort reports, fixed by the admin.\n"
    edited = carol("notes", "edit", path, "--text", by_admin)
    assert edited.code == 0, str(edited)
    assert stored.read_text() == by_admin
    writes = document_writes(audit_of(cli, "alice"), path)
    assert [(e["user_id"], e["subject_user"], e["action"]) for e in writes] == [
        ("alice", "alice", "write"),
        ("alice", "alice", "write"),
        ("carol", "alice", "write"),
    ]
    assert [e["content_hash"] for e in writes] == [hashed(t) for t in (ALICE_TEXT, mine, by_admin)]
    # Bob's refused attempts left nothing in anyone's audit.
    assert document_writes(audit_of(cli, "bob"), path) == []


def test_an_admin_of_one_tenant_is_no_admin_of_another(cli: Any) -> None:
    acme_alice = as_user(cli, "alice", "acme")
    path = "user-profiles/acme/alice.md"
    assert acme_alice("notes", "edit", path, "--text", ALICE_TEXT).code == 0
    assert cli("db", "init", "--admin", "carol").code == 0  # admin of the default tenant
    refused = as_user(cli, "carol").fail("notes", "edit", path, "--text", "# mine\n")
    assert refused.code == 2 and "tenant 'acme'" in refused.err
    # alice of the default tenant is another person than alice of acme.
    assert as_user(cli, "alice").fail("notes", "show", path).code == 2
    assert (cli.memory_dir / path).read_text() == ALICE_TEXT


def test_editing_a_published_note_creates_a_revision_naming_its_predecessor(cli: Any) -> None:
    alice, bob = as_user(cli, "alice"), as_user(cli, "bob")
    drafted = alice.json("run", "Analyze NVDA", "--thread", "T")
    assert drafted["status"] == "awaiting_approval"
    published = alice.json("approve", "T")
    assert published["status"] == "published"
    [note] = cli.research_notes()
    rel = f"research/{note.name}"
    original = note.read_bytes()
    # The publication is in alice's audit: the note (and the progress log line).
    writes = document_writes(audit_of(cli, "alice"), rel)
    assert [e["content_hash"] for e in writes] == [hashed(original.decode())]
    assert document_writes(audit_of(cli, "alice"), "PROGRESS.md")

    forged = "# NVDA: Strong Sell (forged)\n"
    revised = bob("notes", "edit", rel, "--text", forged)
    assert revised.code == 0, str(revised)
    assert "Revised" in revised.out and "unchanged" in revised.out
    assert note.read_bytes() == original  # byte for byte
    revision = note.with_name(f"{note.stem}.r2.md")
    meta, body = split_front_matter(revision.read_text())
    assert body == forged
    assert meta["supersedes"] == rel
    assert meta["supersedes_sha256"] == hashlib.sha256(original).hexdigest()
    assert meta["revised_by"] == "bob" and meta["tenant"] == "default"
    assert not set(PUBLICATION_FIELDS) & set(meta)  # a revision never claims the approval
    rev_rel = f"research/{revision.name}"
    [entry] = document_writes(audit_of(cli, "bob"), rev_rel)
    assert entry["user_id"] == "bob" and entry["content_hash"] == hashed(revision.read_text())

    # The note as shown (its approval included) is refused as an edit: the approval is not
    # the editor's to state. The editor is given the note without those fields, keeps the
    # ones that describe it, and the next revision is r3, its authorship set from alice.
    shown = alice("notes", "show", rel).out
    restated = alice.fail("notes", "edit", rel, "--text", shown.replace("\n## ", "\n## X ", 1))
    assert restated.code == 2 and "'approver'" in restated.err and "Remove" in restated.err
    assert not note.with_name(f"{note.stem}.r3.md").exists()
    editor = replace(alice, env={**alice.env, "EDITOR": "sh -c 'echo Edited. >> \"$0\"'"})
    again = editor("notes", "edit", rel)
    assert again.code == 0, str(again)
    meta3, body3 = split_front_matter(note.with_name(f"{note.stem}.r3.md").read_text())
    assert meta3["ticker"] == "NVDA" and meta3["supersedes"] == rel
    assert meta3["revised_by"] == "alice" and body3.endswith("Edited.\n")
    assert not set(PUBLICATION_FIELDS) & set(meta3)
    assert note.read_bytes() == original

    # A new note under research/ may not claim an approval it does not have.
    claim = "---\napprover: alice\ndraft_hash: abc\n---\n# NVDA: Buy\n"
    refused = bob.fail("notes", "edit", "research/NVDA-2099-01-01.md", "--text", claim)
    assert refused.code == 2 and "'approver'" in refused.err and "'draft_hash'" in refused.err
    assert not (cli.memory_dir / "research" / "NVDA-2099-01-01.md").exists()


#: Front matter stating who revised a note, spelled every way a reader might still take it:
#: (case, what precedes the block, YAML spelling, lookalike letters).
FORGED_HEADS = {
    "as written": "---\nsupersedes: {rel}\nrevised_by: alice\n---\n",
    "capital letter": "---\nApprover: alice\n---\n",
    "byte order mark": "\ufeff---\napprover: alice\n---\n",
    "blank line": "\n---\napprover: alice\n---\n",
    "blank lines and spaces": "  \n\n---\nrevised_by: alice\n---\n",
    "quoted key": '---\n"revised_by": alice\n---\n',
    "explicit key": "---\n? revised_by\n: alice\n---\n",
    "flow mapping": "---\n{title: x, revised_by: alice}\n---\n",
    "content on the fence": "--- {approver: alice}\n---\n",
    "merge key": "---\nbase: &b {approver: alice}\n<<: *b\n---\n",
    "YAML directive": "%YAML 1.1\n---\napproved_at: 2026-01-01\n...\n",
    "separator and case": "---\nRevised-By: alice\n---\n",
    "full width": "---\n\uff41\uff50\uff50\uff52\uff4f\uff56\uff45\uff52: alice\n---\n",
    "Cyrillic a": "---\n\u0430pprover: alice\n---\n",
    "zero-width space": "\u200b---\nthread\u200b_id: T\n---\n",
    "invalid YAML": "---\nrevised_by: alice\nbad: [\n---\n",
    "TOML block": "+++\nrevised_by = 'alice'\n+++\n",
    "owner": "---\nowner: alice\n---\n",
    "Unicode line separators": "---\u2028approver: alice\u2028---\n",
    "carriage returns": "---\r\nApproved_At: now\r\n---\r\n",
}


def test_no_one_writes_front_matter_only_the_analyst_writes(cli: Any) -> None:
    """Another user's forged revision of alice's note (and every spelling of such a field,
    in a new note, a profile document or a file) is refused naming the field and the fix;
    nothing is written or audited. The publication still states its approval."""
    alice, bob = as_user(cli, "alice"), as_user(cli, "bob")
    assert alice.json("run", "Analyze NVDA", "--thread", "T")["status"] == "awaiting_approval"
    assert alice.json("approve", "T")["status"] == "published"
    [note] = cli.research_notes()
    rel = f"research/{note.name}"
    meta, _ = split_front_matter(note.read_text())
    assert meta["approver"] == "alice" and meta["thread_id"] == "T"
    before = _tree(cli.memory_dir)
    audited = len(audit_of(cli, "bob"))
    attempts: list[tuple[str, tuple[str, ...]]] = []
    for n, (case, head) in enumerate(FORGED_HEADS.items()):
        text = head.replace("{rel}", rel) + "# NVDA: Strong Sell\n"
        targets = [f"research/{note.stem}.r9.md", "research/NEW-2099-01-01.md", rel]
        targets.append("user-profiles/bob.md")
        attempts += [(case, ("notes", "edit", t, "--text", text)) for t in targets]
        forged_file = cli.memory_dir.parent / f"forged-{n}.md"
        forged_file.write_text(text, encoding="utf-8")
        attempts.append((case, ("notes", "edit", targets[0], "--file", str(forged_file))))
    for (case, _), refused in zip(attempts, bob.many(*(a for _, a in attempts)), strict=True):
        assert refused.code == 2 and refused.refused, (case, str(refused))
        assert "only the analyst writes" in refused.err, (case, str(refused))
        assert "Remove" in refused.err and "nothing was written" in refused.err
    named = bob.fail(
        "notes", "edit", f"research/{note.stem}.r9.md", "--text", "---\nApprover: a\n---\n"
    )
    assert "'Approver' (read as 'approver')" in named.err
    assert _tree(cli.memory_dir) == before  # not a byte written
    assert len(audit_of(cli, "bob")) == audited

    # The same rule holds under the CLI: the document API and the file API refuse it too.
    files = FileMemory(cli.memory_dir)
    docs = OwnedDocuments(files, Authority(Principal("default", "bob")), None)
    forged = FORGED_HEADS["byte order mark"] + "# x\n"
    for write in (
        lambda: files.write_bytes("research/API-1.md", forged.encode()),
        lambda: files.write("research/API-2.md", forged),
        lambda: asyncio.run(docs.write_bytes("research/API-3.md", forged.encode(), reason="t")),
        lambda: asyncio.run(docs.save("research/API-4.md", forged, reason="t")),
        lambda: asyncio.run(docs.revise(rel, forged, reason="t")),
    ):
        with pytest.raises(CodeFieldError, match="'approver'"):
            write()
    files.close()
    assert _tree(cli.memory_dir) == before

    # Front matter of a person's own (title, tags) is kept as before.
    mine = "---\ntitle: 'Decision: hold'\ntags: [owner-operated]\n---\n# Bob's notes\n"
    assert bob("notes", "edit", "research/BOB-2099-01-01.md", "--text", mine).code == 0
    assert (cli.memory_dir / "research" / "BOB-2099-01-01.md").read_text() == mine


def test_a_damaged_profile_document_blocks_no_forget_and_is_named_in_the_receipt(
    cli: Any,
) -> None:
    alice = as_user(cli, "alice")
    added = [
        alice.json("memory", "add", "I prefer companies with low debt.")["key"],
        alice.json("memory", "add", "I follow semiconductor stocks closely.")["key"],
    ]
    profile = cli.memory_dir / "user-profiles" / "alice.md"
    profile.parent.mkdir(parents=True)
    damaged = b"# alice\n\xff\xfe low debt\n"
    profile.write_bytes(damaged)

    by_topic = alice("memory", "forget", "--topic", "debt", "--yes", "--json").json()
    assert by_topic["deleted"]["store"]["ids"] == [f"memories/{added[0]}"]
    assert by_topic["damaged"] == ["user-profiles/alice.md"]
    [note] = [k for k in by_topic["kept"] if k.get("problem")]
    assert note["paths"] == ["user-profiles/alice.md"] and "not UTF-8" in note["problem"]

    by_id = alice("memory", "forget", f"memories/{added[1]}", "--yes", "--json").json()
    assert by_id["deleted"]["store"]["ids"] == [f"memories/{added[1]}"]
    assert by_id["damaged"] == ["user-profiles/alice.md"]
    assert profile.read_bytes() == damaged  # reported, never rewritten blindly

    # The fix the receipt names: an edit cannot load it, a whole replacement can; then a
    # forget rewrites it, and the rewrite (and the deletion of what is left) is audited.
    assert "--text or --file" in alice.fail("notes", "edit", "user-profiles/alice.md").err
    repaired = "# alice\n\nStill wary of high debt.\nI read every footnote.\n"
    fixed = alice("notes", "edit", "user-profiles/alice.md", "--text", repaired)
    assert fixed.code == 0 and "Updated" in fixed.out, str(fixed)
    again = alice("memory", "forget", "--topic", "debt", "--yes", "--json").json()
    assert again["damaged"] == [] and again["deleted"]["documents"]["ids"] == [
        "user-profiles/alice.md#L3"
    ]
    assert profile.read_text() == "# alice\n\nI read every footnote.\n"
    writes = document_writes(audit_of(cli, "alice"), "user-profiles/alice.md")
    assert [(e["action"], e["reason"], e["content_hash"]) for e in writes[-2:]] == [
        ("write", "edited with analyst notes", hashed(repaired)),
        ("write", FORGET_REASON, hashed(profile.read_text())),
    ]


# -- the randomised cross-user check over the document API ------------------------------------

TENANTS = ("default", "acme")
USERS = ("alice", "bob", "carol", "dave")
ADMINS = {("default", "carol"), ("acme", "dave")}
NOTE = "research/NVDA-2026-12-01.md"
PUBLISHED = "---\nticker: NVDA\napprover: alice\ndraft_hash: h1\n---\n# NVDA: Buy zebra\n"


def _profile(tenant: str, user: str) -> str:
    return (
        f"user-profiles/{user}.md" if tenant == "default" else f"user-profiles/{tenant}/{user}.md"
    )


def _expected_owner(root: Path, path: str, *, follow: bool = True) -> list[tuple[str, str | None]]:
    """The oracle, written from the documented rule, independently of the implementation:
    whose the file ``path`` (as it really is) is."""
    full = root / path
    real = (
        os.path.realpath(full) if follow else os.path.join(os.path.realpath(full.parent), full.name)
    )
    owners: list[tuple[str, str | None]] = []
    for rel in {path, os.path.relpath(real, os.path.realpath(root))}:
        parts = rel.split("/")
        if parts[0] != "user-profiles":
            continue
        if len(parts) == 2 and parts[1].endswith(".md"):
            owners.append(("default", parts[1][:-3]))
        elif len(parts) == 3 and parts[2].endswith(".md") and parts[1] != "default":
            owners.append((parts[1], parts[2][:-3]))
        else:
            owners.append((parts[1] if len(parts) > 2 else "default", None))
    return owners


def _allowed(who: Principal, owners: list[tuple[str, str | None]]) -> bool:
    admin = (who.tenant_id, who.user_id) in ADMINS
    return all(t == who.tenant_id and (admin or u == who.user_id) for t, u in owners)


def _appended(text: str, current: str | None) -> str:
    return (current or "") + text


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _seed(root: Path) -> list[str]:
    """Profiles of every user of every tenant, reserved paths, a published note, project
    documents and links into the profiles; the paths the random operations pick from."""
    files = FileMemory(root)
    paths = [_profile(t, u) for t in TENANTS for u in USERS]
    for path in paths:
        files.write_bytes(path, f"# {path}\n\nzebra {path}\n".encode())
    reserved = [
        "user-profiles/default/alice.md",
        "user-profiles/acme/deep/x.md",
        "user-profiles/x.txt",
    ]
    for path in reserved:
        files.write_bytes(path, b"# reserved zebra\n")
    # A publication's front matter, as code writes it (metadata, never text).
    files.write(
        NOTE, "# NVDA: Buy zebra\n", {"ticker": "NVDA", "approver": "alice", "draft_hash": "h1"}
    )
    assert (root / NOTE).read_text() == PUBLISHED
    files.write_bytes("conventions/a.md", b"# conventions zebra\n")
    (root / "links").mkdir()
    for user in USERS:
        (root / "links" / f"{user}.md").symlink_to(f"../user-profiles/{user}.md")
    links = [f"links/{u}.md" for u in USERS]
    return [
        *paths,
        *reserved,
        NOTE,
        "conventions/a.md",
        *links,
        "conventions/new.md",
        "user-profiles/zed.md",
    ]


async def test_randomised_cross_user_document_access_finds_no_unauthorised_read_or_write(
    tmp_path: Path,
) -> None:
    root = tmp_path / "mem"
    paths = _seed(root)
    files = FileMemory(root)
    audit: list[tuple[Principal, DocumentAudit]] = []
    rng = random.Random(23)
    denied = allowed = 0
    ops = (
        "exists",
        "read",
        "read_text",
        "write",
        "write_bytes",
        "update",
        "delete",
        "save",
        "revise",
        "record_write",
        "check_write",
    )
    for step in range(600):
        who = Principal(rng.choice(TENANTS), rng.choice(USERS))

        async def sink(entry: DocumentAudit, who: Principal = who) -> None:
            audit.append((who, entry))

        docs = OwnedDocuments(files, Authority(who, (who.tenant_id, who.user_id) in ADMINS), sink)
        # Every listing and search shows only what the principal may read.
        for listed in (docs.list(), [h.path for h in docs.search("zebra", limit=None)]):
            for path in listed:
                assert _allowed(who, _expected_owner(root, path)), (who, path)
        path, op = rng.choice(paths), rng.choice(ops)
        follow = op != "delete"
        may = _allowed(who, _expected_owner(root, path, follow=follow))
        before, logged = _tree(root), len(audit)
        text = f"# step {step} by {who.user_id}\n"
        try:
            if op in ("exists", "read", "read_text", "check_write"):
                getattr(docs, op)(path)
            elif op == "write":
                await docs.write(path, text, reason="test")
            elif op == "write_bytes":
                await docs.write_bytes(path, text.encode(), reason="test")
            elif op == "update":
                await docs.update(path, functools.partial(_appended, text), reason="test")
            elif op == "delete":
                await docs.delete(path, reason="test")
            elif op == "save":
                await docs.save(path, text, reason="test")
            elif op == "revise":
                await docs.revise(path, text, reason="test")
            else:
                await docs.record_write(path, reason="test")
        except DocumentAccessError:
            denied += 1
            assert _tree(root) == before, (who, op, path)
            assert len(audit) == logged, (who, op, path)
            continue
        except (DocumentPathError, FileNotFoundError, FileExistsError):
            # Not an authority refusal (no such document, a record's exclusive create).
            assert _tree(root) == before
            continue
        assert may, f"{who} was allowed {op} on {path}"
        allowed += 1
        after = _tree(root)
        changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        for p in changed:  # whatever changed, the principal may write it and it is audited
            assert _allowed(who, _expected_owner(root, p)), (who, op, p)
            assert any(w == who and e.path == p for w, e in audit[logged:]), (who, op, p)
        assert (root / NOTE).read_text() == PUBLISHED  # a record is never replaced
    # Both outcomes were exercised, and the audit names only the acting principal's writes.
    assert denied > 50 and allowed > 50
    for who, entry in audit:
        if entry.owner is not None:
            assert (who.tenant_id, who.user_id) in ADMINS or entry.owner == who.user_id
    files.close()
    await asyncio.sleep(0)
