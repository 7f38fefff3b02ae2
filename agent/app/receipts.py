"""What a forget, an account deletion or a retention sweep did: the :class:`Receipt`, and the
statements every receipt carries (what is kept on purpose and why, the backups that still
hold the data, what the backend leaves until it reclaims it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.errors import AnalystError

if TYPE_CHECKING:
    from agent.app.tiers import Tiers

#: The fixed reason every audit entry of an account deletion carries.
REASON = "account deleted by the user"
#: The fixed reason every audit entry of a forget carries.
FORGET_REASON = "forgotten at the user's request"
#: Research notes live here in document memory (see agent.research.publishing).
NOTES = "research/**/*.md"


@dataclass
class Tier:
    """What one tier deleted: how many, and which ids."""

    ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"count": len(self.ids), "ids": self.ids}


@dataclass
class Receipt:
    """What an account deletion did (or, unconfirmed, would do)."""

    tenant_id: str
    user_id: str
    confirmed: bool
    deleted: dict[str, Tier] = field(default_factory=dict)
    kept: list[dict[str, Any]] = field(default_factory=list)
    compacted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backups: str = ""
    #: What was asked to be forgotten (a forget; empty for account deletion).
    scope: dict[str, Any] = field(default_factory=dict)
    #: The items a topic or range found, listed for confirmation: ``{tier, id, text}``.
    found: list[dict[str, Any]] = field(default_factory=list)
    #: How many tombstones the forget stored (keyed hashes, never text).
    tombstones: int = 0
    #: Documents the forget could not read (not UTF-8, bad front matter ...): left as they are,
    #: each explained in ``kept``; the rest of the forget went ahead.
    damaged: list[str] = field(default_factory=list)
    #: What a forget rewrote rather than deleted: summaries without a forgotten value, and
    #: the new version of a list an element was forgotten from (``facts``).
    rewritten: dict[str, Tier] = field(default_factory=dict)
    #: Threads the forget takes whose draft awaits a decision (``thread_id``, ``ticker``,
    #: ``hash``): deleted only when the user says so.
    drafts: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "confirmed": self.confirmed,
            "scope": self.scope,
            "found": self.found,
            "tombstones": self.tombstones,
            "damaged": self.damaged,
            "deleted": {tier: found.to_json() for tier, found in self.deleted.items()},
            "rewritten": {tier: found.to_json() for tier, found in self.rewritten.items()},
            "drafts": self.drafts,
            "kept": self.kept,
            "compacted": self.compacted,
            "notes": self.notes,
            "backups": self.backups,
        }


def kept_records(tiers: Tiers, threads: set[str]) -> list[dict[str, Any]]:
    """What a forget or an account deletion keeps on purpose, each with its reason: the
    research notes the user published or approved (or that ``threads`` produced), and the
    memory audit."""
    user = tiers.principal.user_id
    notes: list[str] = []
    documents = tiers.documents
    for path in documents.list(NOTES):
        try:
            meta = documents.read(path).metadata
        except AnalystError:  # unreadable (too large, not UTF-8, bad front matter): skip
            continue
        if meta.get("approver") == user or meta.get("thread_id") in threads:
            notes.append(path)
    return [
        {
            "tier": "documents",
            "what": "published research notes",
            "paths": sorted(notes),
            "why": "business records: a published research report is kept (and so is its "
            "chart); the analyst never deletes or replaces one (an edit is a revision that "
            "supersedes it): remove the file by hand if policy allows",
        },
        {
            "tier": "audit",
            "what": "memory audit entries about this user",
            "why": "append-only: entries hold ids, actions, times and keyed hashes, never "
            "content; this deletion is recorded there too",
        },
    ]


def damaged_document(path: str, problem: str) -> dict[str, Any]:
    """The receipt's note on a document a forget could not read: kept as it is, and why."""
    return {
        "tier": "documents",
        "what": "a document that could not be read",
        "paths": [path],
        "problem": problem,
        "why": f"{problem} The rest of the forget went ahead, but this document was neither "
        "searched nor rewritten: repair or delete it, then forget again to clear its lines",
    }


def backend_notes(tiers: Tiers) -> list[str]:
    """What the backends keep of deleted data until they reclaim it: the ledger's dead rows
    on Postgres, and the long-term store's shard while its background rewrite runs."""
    notes: list[str] = []
    store = tiers.opened_store
    pending = getattr(store, "erasure_pending", None)
    if callable(pending) and pending():
        notes.append(
            f"Long-term store: the deleted memories are gone from every search and listing; "
            f"their bytes leave the files of {getattr(store, 'path', 'the store')} when its "
            "background rewrite finishes, in about a second per few thousand memories "
            "(`analyst db check` says whether one is still pending)."
        )
    facts_url = tiers.settings.facts.lower()
    if facts_url.startswith(("postgres://", "postgresql://")):
        notes.append(
            "Postgres: deleted rows stay as dead tuples until autovacuum or the owner's VACUUM "
            "reclaims them; the application role may not VACUUM the owner's tables."
        )
    return notes


def backups_statement(tiers: Tiers) -> str:
    """The backups that still hold what a deletion removed."""
    folder = tiers.settings.data_dir / "backups"
    return (
        "Backups made before this deletion (`analyst db snapshot DEST`, in the folders you chose) "
        f"and the copies a restore keeps in {folder} still hold this data until they are "
        "deleted; delete them, or restore none of them, to complete the erasure."
    )
