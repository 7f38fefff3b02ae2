"""A principal's memory backed up to one file, and restored without what was forgotten since.

:func:`backup` writes everything kept of the principal, on any backend, to one JSON file
(mode 0600; sealed with ``ANALYST_MEMORY_KEY`` when memory is encrypted at rest): every memory
kind of :mod:`agent.app.kinds` as stored, the profile document, and every thread with its
checkpoints and pending writes in the saver's own serialisation. :func:`restore` puts a file
back **without what the user has forgotten since** (tombstoned texts, ids the audit records as
deleted at the user's request, and what the forget cascade derives from them), never
overwriting what is stored. :func:`carry`, :func:`put_back` and :func:`reapply_forgets` keep
the forgets made since a backup of the embedded files when those files are restored. The
details are in ``docs/memory-lifecycle.md``.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.app.forgetting import apply, cascade, read
from agent.app.kinds import FACTS, JOURNAL_KINDS, STORE, TOMBSTONED, by_tier
from agent.app.memory_kind import ALL
from agent.app.receipts import FORGET_REASON, REASON, Receipt, Tier
from agent.recollection.forgettable import Remembered, item_key, known_ids, profile_path
from memory.errors import InvalidMemoryError
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from agent.app.tiers import Tiers
    from agent.learning.learner import Learner

FORMAT = "analyst-memory-backup"
VERSION = 1
#: Why a restore writes (the audit's reason).
RESTORED = "restored from a backup"


@dataclass
class RestoreReceipt:
    """What a restore wrote and what it skipped, by tier (ids only)."""

    source: str
    made_at: str
    restored: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    already_stored: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "made_at": self.made_at,
            "restored": {t: {"count": len(ids), "ids": ids} for t, ids in self.restored.items()},
            "skipped": {t: {"count": len(ids), "ids": ids} for t, ids in self.skipped.items()},
            "already_stored": self.already_stored,
            "why_skipped": "forgotten since the backup was made (a tombstone, or a delete the "
            "audit records at the user's request), or derived from what was forgotten",
        }


def check_target(dest: str | os.PathLike[str]) -> Path:
    """The new file a backup goes to; refused if it exists (nothing is overwritten)."""
    target = Path(dest)
    if target.exists():
        raise InvalidMemoryError(
            f"{target} exists; choose a new file for the backup (nothing is overwritten)."
        )
    return target


async def backup(tiers: Tiers, learner: Learner, dest: str | os.PathLike[str]) -> dict[str, Any]:
    """Write the principal's memory to ``dest`` (a new file); answer counts per tier."""
    target = check_target(dest)
    principal = tiers.principal
    fact_rows = [FACTS.to_json(r) for r in await FACTS.fetch(tiers, learner)]
    doc = profile_path(principal)
    documents = tiers.documents
    profile = {doc: documents.read_text(doc)} if documents.exists(doc) else {}
    journal: dict[str, list[dict[str, Any]]] = {
        kind.tier: [kind.to_json(r) for r in await kind.fetch(tiers, learner)]
        for kind in JOURNAL_KINDS
    }
    items = [STORE.to_json(i) for i in await STORE.fetch(tiers)]
    threads = await _threads(tiers)
    content = {
        "format": FORMAT,
        "version": VERSION,
        "made_at": learner.clock().isoformat(),
        "tenant_id": principal.tenant_id,
        "user_id": principal.user_id,
        "journal": journal,
        "facts": fact_rows,
        "store": items,
        "documents": profile,
        "threads": threads,
    }
    cipher = tiers.memory_cipher
    if cipher.sealing:  # memory is encrypted at rest: so is its backup (same key)
        head = {k: content[k] for k in ("format", "version", "made_at", "tenant_id", "user_id")}
        body = {k: v for k, v in content.items() if k not in head}
        content = {**head, "sealed": cipher.seal(json.dumps(body, default=str))}
    data = json.dumps(content, sort_keys=True, default=str).encode()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    counts = {tier: len(found) for tier, found in journal.items()}
    counts |= {
        "facts": len(fact_rows),
        "store": len(items),
        "documents": len(profile),
        "threads": len(threads),
    }
    await tiers.audit("read", "backup", [str(target.name)], "memory backed up by the user")
    return {"backup": str(target), "bytes": len(data), "counts": counts}


async def restore(
    tiers: Tiers, learner: Learner, content: dict[str, Any], src: str | os.PathLike[str]
) -> RestoreReceipt:
    """Put back what ``content`` (:func:`load` of ``src``) holds, except what was forgotten
    since."""
    journal, facts = learner.journal, learner.facts
    records = {
        kind.tier: [kind.from_json(row) for row in content["journal"].get(kind.tier, [])]
        for kind in JOURNAL_KINDS
    }
    fact_rows = [FACTS.from_json(row) for row in content.get("facts", [])]
    items = [STORE.from_json(row) for row in content.get("store", [])]
    mem = Remembered(
        episodes=records["episodes"],
        summaries=records["summaries"],
        candidates=records["candidates"],
        procedures=records["procedures"],
        facts=fact_rows,
        items=items,
    )
    chosen = await _forgotten(learner, mem)
    plan = cascade(tiers, mem, chosen)
    gone = plan.deleted
    skipped_threads = {e.thread_id for e in mem.episodes if e.episode_id in gone["episodes"]}
    receipt = RestoreReceipt(str(src), str(content.get("made_at", "")))

    jobs = records["extraction_jobs"]
    gone["extraction_jobs"] = {
        j.job_id for j in jobs if gone["episodes"].intersection(j.episode_ids)
    }
    keep = {
        tier: [r for r in rows if by_tier(tier).id(r) not in gone[tier]]
        for tier, rows in records.items()
    }
    written = await journal.restore(keep)
    for kind in JOURNAL_KINDS:
        receipt.restored[kind.tier] = written.get(kind.tier, [])
        receipt.skipped[kind.tier] = sorted(gone[kind.tier])
        receipt.already_stored[kind.tier] = len(keep[kind.tier]) - len(receipt.restored[kind.tier])

    facts_kept = [r for r in fact_rows if r.memory_id not in gone["facts"]]
    receipt.restored["facts"] = await facts.restore(facts_kept)
    receipt.skipped["facts"] = sorted(gone["facts"])
    receipt.already_stored["facts"] = len(facts_kept) - len(receipt.restored["facts"])
    if receipt.restored["facts"]:
        await tiers.audit("write", "facts", receipt.restored["facts"], RESTORED)

    stored = {item_key(i) for i in await STORE.fetch(tiers)}
    fresh = [i for i in items if item_key(i) not in gone["store"] and item_key(i) not in stored]
    if fresh:
        view = scoped(await tiers.store(), tiers.principal)
        for i in fresh:
            await view.aput(tuple(i.namespace), i.key, dict(i.value))
        await tiers.audit("write", "store", [item_key(i) for i in fresh], RESTORED)
    receipt.restored["store"] = sorted(item_key(i) for i in fresh)
    receipt.skipped["store"] = sorted(gone["store"])
    receipt.already_stored["store"] = len(items) - len(fresh) - len(gone["store"])

    threads = content.get("threads", [])
    receipt.restored["threads"] = await _put_threads(
        tiers, [t for t in threads if t["thread_id"] not in skipped_threads]
    )
    receipt.skipped["threads"] = sorted(skipped_threads & {t["thread_id"] for t in threads})

    forgotten_texts = [t for t in plan.tombstone if len(t.strip()) >= 3]
    receipt.restored["documents"], receipt.skipped["documents"] = await _put_documents(
        tiers, content.get("documents", {}), forgotten_texts
    )
    return receipt


def load(path: Path, tiers: Tiers) -> dict[str, Any]:
    """The content of the backup file ``path``, opened (a sealed one with the memory key);
    :class:`InvalidMemoryError` for a missing file, another format or version, or another
    user's backup."""
    try:
        content = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InvalidMemoryError(
            f"No backup at {path}; make one with `analyst memory backup FILE`."
        ) from None
    except (OSError, ValueError) as e:
        raise InvalidMemoryError(f"{path} is not a memory backup ({e}).") from None
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        raise InvalidMemoryError(
            f"{path} is not a memory backup made by `analyst memory backup` (no "
            f"'format: {FORMAT}')."
        )
    if content.get("version") != VERSION:
        raise InvalidMemoryError(
            f"{path} is a version {content.get('version')} backup; this analyst restores "
            f"version {VERSION}."
        )
    if "sealed" in content:  # written with ANALYST_MEMORY_KEY set: opened with the same key
        content |= json.loads(tiers.memory_cipher.open(content.pop("sealed")))
    who = (content.get("tenant_id"), content.get("user_id"))
    if who != (tiers.principal.tenant_id, tiers.principal.user_id):
        raise InvalidMemoryError(
            f"{path} is the backup of {who[0]}/{who[1]}; restore it as that user "
            "(ANALYST_TENANT / ANALYST_USER), never into another user's memory."
        )
    return content


async def _forgotten(learner: Learner, mem: Remembered) -> list[tuple[str, str]]:
    """The items of ``mem`` forgotten since: tombstoned texts and ids deleted on request."""
    journal = learner.journal
    units: dict[str, list[tuple[str, str]]] = {}

    def add(tier: str, item_id: str, texts: Sequence[str]) -> None:
        for text in texts:
            if text and text.strip():
                units.setdefault(text, []).append((tier, item_id))

    for kind in TOMBSTONED:
        for item in kind.items(mem):
            add(kind.tier, kind.id(item), kind.tombstones(item))
    chosen = {found for text in await journal.tombstoned(list(units)) for found in units[text]}
    deleted = {
        item_id
        for entry in await journal.audit_log(limit=ALL)
        if entry.action == "delete" and entry.reason in (FORGET_REASON, REASON)
        for item_id in entry.item_ids
    }
    if deleted:
        chosen |= {
            (tier, item_id) for item_id, tier in known_ids(mem).items() if item_id in deleted
        }
    return sorted(chosen)


# -- threads: every checkpoint and pending write, through the saver's own API -------------


def _seal(saver: BaseCheckpointSaver[Any], value: Any) -> list[str]:
    type_, data = saver.serde.dumps_typed(value)
    return [type_, base64.b64encode(data).decode("ascii")]


def _unseal(saver: BaseCheckpointSaver[Any], value: list[str]) -> Any:
    return saver.serde.loads_typed((value[0], base64.b64decode(value[1])))


async def _threads(tiers: Tiers) -> list[dict[str, Any]]:
    saver = await tiers.checkpointer()
    found = []
    for record in tiers.index.list(tiers.principal, limit=ALL):
        config: RunnableConfig = {"configurable": {"thread_id": record.storage_id}}
        tuples = [t async for t in saver.alist(config)]
        checkpoints = []
        for t in reversed(tuples):  # oldest first: each one's parent is put before it
            conf = t.config["configurable"]
            parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            checkpoints.append(
                {
                    "checkpoint_ns": conf.get("checkpoint_ns", ""),
                    "parent_id": parent,
                    "state": _seal(saver, (t.checkpoint, t.metadata)),
                    "writes": [
                        [task, channel, _seal(saver, value)]
                        for task, channel, value in (t.pending_writes or [])
                    ],
                }
            )
        found.append(
            {"thread_id": record.thread_id, "query": record.query, "checkpoints": checkpoints}
        )
    return found


async def _put_threads(tiers: Tiers, threads: list[dict[str, Any]]) -> list[str]:
    saver = await tiers.checkpointer()
    restored = []
    for thread in threads:
        thread_id = thread["thread_id"]
        if tiers.index.get(tiers.principal, thread_id) is not None:
            continue  # a thread that exists is never overwritten
        # Kept where no thread is (another owner's thread of this id is another thread).
        storage = tiers.index.free_storage_id(tiers.principal, thread_id)
        for cp in thread["checkpoints"]:
            checkpoint, metadata = _unseal(saver, cp["state"])
            conf: dict[str, Any] = {"thread_id": storage, "checkpoint_ns": cp["checkpoint_ns"]}
            if cp["parent_id"]:
                conf["checkpoint_id"] = cp["parent_id"]
            saved = await saver.aput(
                {"configurable": conf}, checkpoint, metadata, dict(checkpoint["channel_versions"])
            )
            by_task: dict[str, list[tuple[str, Any]]] = {}
            for task, channel, value in cp["writes"]:
                by_task.setdefault(task, []).append((channel, _unseal(saver, value)))
            for task, writes in by_task.items():
                await saver.aput_writes(saved, writes, task)
        tiers.index.register(tiers.principal, thread_id, thread["query"], storage)
        restored.append(thread_id)
    return sorted(restored)


# -- the profile document ------------------------------------------------------------------


async def _put_documents(
    tiers: Tiers, documents: dict[str, str], forgotten: list[str]
) -> tuple[list[str], list[str]]:
    """Write the profile document back without its lines holding forgotten text; a document
    that exists is not overwritten (the write is the principal's, audited)."""
    mine = profile_path(tiers.principal)
    owned = await tiers.owned_documents()
    restored: list[str] = []
    skipped: list[str] = []
    for path, text in documents.items():
        if path != mine or tiers.documents.exists(path):
            continue
        lines = text.splitlines(keepends=True)
        kept = [ln for ln in lines if not any(f.lower() in ln.lower() for f in forgotten)]
        skipped += [f"{path}#L{n}" for n, ln in enumerate(lines, 1) if ln not in kept]
        await owned.write_bytes(path, "".join(kept).encode(), reason=RESTORED)
        restored.append(path)
    return restored, skipped


# -- a restore of the embedded files (`analyst db restore-snapshot`) --------------------------------

#: What a restore of the ledger file must not lose: the forgets made since its backup.
_CARRIED = ("memory_tombstones", "memory_audit")


@dataclass
class Carried:
    """The tombstone and audit rows of the ledger file a ``db restore-snapshot`` replaces."""

    path: Path
    rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = field(default_factory=dict)

    def principals(self) -> list[tuple[str, str]]:
        """Every (tenant, user) with a tombstone or a delete made at their request."""
        found: set[tuple[str, str]] = set()
        for table, (columns, rows) in self.rows.items():
            t, u = columns.index("tenant_id"), columns.index("user_id")
            for row in rows:
                if table == "memory_tombstones" or (
                    row[columns.index("action")] == "delete"
                    and row[columns.index("reason")] in (FORGET_REASON, REASON)
                ):
                    found.add((str(row[t]), str(row[u])))
        return sorted(found)


def carry(ledger: Path | None) -> Carried | None:
    """Read the tombstones and the audit of the embedded ledger file before it is replaced
    (``None`` when the ledger is not an embedded file, or there is none yet)."""
    import sqlite3

    if ledger is None or not ledger.exists():
        return None
    carried = Carried(ledger)
    with sqlite3.connect(ledger) as conn:
        tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table in _CARRIED:
            if table in tables:
                cursor = conn.execute(f"SELECT * FROM {table}")
                columns = [d[0] for d in cursor.description]
                carried.rows[table] = (columns, cursor.fetchall())
    return carried


def put_back(carried: Carried | None) -> int:
    """Insert the carried rows the restored ledger file lacks (the audit is append-only:
    entries are only ever added); answer how many were added."""
    import sqlite3

    if carried is None or not carried.path.exists():
        return 0
    added = 0
    with sqlite3.connect(carried.path) as conn:
        tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table, (columns, rows) in carried.rows.items():
            if table not in tables:
                continue  # a backup older than the table: migrations add it on the next open
            have = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
            shared = [c for c in columns if c in have]
            picks = [columns.index(c) for c in shared]
            sql = (
                f"INSERT OR IGNORE INTO {table} ({', '.join(shared)}) "
                f"VALUES ({', '.join('?' * len(shared))})"
            )
            for row in rows:
                added += conn.execute(sql, [row[i] for i in picks]).rowcount
    return added


async def reapply_forgets(tiers: Tiers, learner: Learner) -> dict[str, int]:
    """Forget again, for ``tiers.principal``, what the restored files hold that the user had
    forgotten (tombstones, and deletes the audit records at their request), with forgetting's
    cascade. Answers the count deleted per tier."""
    mem = await read(tiers, learner)
    chosen = await _forgotten(learner, mem)
    if not chosen:
        return {}
    plan = cascade(tiers, mem, chosen)
    receipt = Receipt(tiers.principal.tenant_id, tiers.principal.user_id, True)
    receipt.deleted = {tier: Tier(sorted(found)) for tier, found in plan.deleted.items()}
    await apply(tiers, learner, plan, receipt)
    return {tier: len(found.ids) for tier, found in receipt.deleted.items() if found.ids}
