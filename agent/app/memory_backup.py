"""A principal's memory backed up to one file, and restored without what was forgotten since.

:func:`backup` (``analyst memory backup FILE``) writes everything kept of the principal, on
any backend, to one JSON file (mode 0600; its content sealed with ``ANALYST_MEMORY_KEY`` when
memory is encrypted at rest, so a restore needs the same key): the journal (episodes, extraction jobs,
candidates, session summaries, procedures) and every fact row with its history, exactly as
stored (ids, states, validity and times); the cold-store items under the principal's
namespace (values; the vectors are derived and are computed again on restore); the user's
profile document (``user-profiles/<user>.md``); and every thread with each of its
checkpoints and pending writes, serialised by the saver's own serializer (so a thread waiting
for approval still resumes after a restore). It is a logical backup: a file of one user,
restorable into SQLite or Postgres, SQLite, Postgres or Redis checkpoints alike -- the
embedded files as a whole are copied by ``analyst db backup``.

:func:`restore` (``analyst memory restore FILE``) puts the file back **without what the user
has forgotten since it was made** (seed 003: a restore must not bring forgotten data back).
Before anything is written it takes what the file holds as the memory a forget chooses from
(:class:`agent.recollection.forgettable.Remembered`) and picks:

- every item whose text hashes to one of the user's tombstones (each episode's text and
  sentences, each candidate's quote and payload, each fact's value, each memory's text);
- every item whose id the memory audit records as deleted at the user's request (a forget,
  or an account deletion) -- which covers what has no tombstone, such as a summary forgotten
  by its id;

and runs forgetting's own cascade over them, so what was derived from a forgotten episode
(facts whose every source is forgotten, summaries, candidates, procedures and memories citing
it, the threads holding it) is skipped with it, and the lines of the profile document that
contain forgotten text are left out. Nothing skipped is written, so no forgotten byte reaches
a database file, a vector or the embedding cache. What is already stored is kept as it is
(the journal and the ledger insert only missing ids; a thread that exists is not
overwritten). The receipt says, per tier, what was restored and what was skipped (ids, never
text), and the restore is audited.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.app.forgetting import _SENTENCE, FORGET_REASON, REASON, _cascade, _items, _strings
from agent.recollection.forgettable import Remembered, item_key, known_ids, profile_path
from memory.errors import InvalidMemoryError
from memory.facts import FactRecord, subject_for
from memory.journal.records import Candidate, Episode, ExtractionJob, Procedure, SessionSummary
from memory.serde import record_from_json
from memory.store.scoped import scoped

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import Item

    from agent.app.service import AnalystApp

FORMAT = "analyst-memory-backup"
VERSION = 1
#: Why a restore writes (the audit's reason).
RESTORED = "restored from a backup"
_ALL = 1_000_000
_JOURNAL: dict[str, type[Any]] = {
    "episodes": Episode,
    "extraction_jobs": ExtractionJob,
    "candidates": Candidate,
    "summaries": SessionSummary,
    "procedures": Procedure,
}


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


async def backup(app: AnalystApp, dest: str | os.PathLike[str]) -> dict[str, Any]:
    """Write the principal's memory to ``dest`` (a new file); answer counts per tier."""
    target = Path(dest)
    if target.exists():
        raise InvalidMemoryError(
            f"{target} exists; choose a new file for the backup (nothing is overwritten)."
        )
    from agent.learning.profile import REGISTRY

    learner = await app.memory.learner()
    journal, facts = learner.journal, learner.facts
    subject = subject_for(app.principal)
    names = sorted({*await facts.profile(subject), *REGISTRY})
    fact_rows = [r.to_json() for a in names for r in await facts.history(subject, a)]
    doc = profile_path(app.principal)
    documents = {doc: app.documents.read_text(doc)} if app.documents.exists(doc) else {}
    tiers: dict[str, list[dict[str, Any]]] = {
        "episodes": [e.to_json() for e in await journal.list_episodes(limit=_ALL)],
        "extraction_jobs": [j.to_json() for j in await journal.jobs(limit=_ALL)],
        "candidates": [c.to_json() for c in await journal.candidates(status=None, limit=_ALL)],
        "summaries": [s.to_json() for s in await journal.summaries(limit=_ALL)],
        "procedures": [p.to_json() for p in await journal.procedures(status=None)],
    }
    items = [
        {"namespace": list(i.namespace), "key": i.key, "value": i.value} for i in await _items(app)
    ]
    threads = await _threads(app)
    content = {
        "format": FORMAT,
        "version": VERSION,
        "made_at": learner.clock().isoformat(),
        "tenant_id": app.principal.tenant_id,
        "user_id": app.principal.user_id,
        "journal": tiers,
        "facts": fact_rows,
        "store": items,
        "documents": documents,
        "threads": threads,
    }
    cipher = app.memory_cipher
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
    counts = {tier: len(found) for tier, found in tiers.items()}
    counts |= {
        "facts": len(fact_rows),
        "store": len(items),
        "documents": len(documents),
        "threads": len(threads),
    }
    await app._audit("read", "backup", [str(target.name)], "memory backed up by the user")
    return {"backup": str(target), "bytes": len(data), "counts": counts}


async def restore(app: AnalystApp, src: str | os.PathLike[str]) -> RestoreReceipt:
    """Put back what ``src`` holds, except what was forgotten since (module docstring)."""
    content = _load(Path(src), app)
    learner = await app.memory.learner()
    journal, facts = learner.journal, learner.facts
    records = {
        tier: [record_from_json(cls, row) for row in content["journal"].get(tier, [])]
        for tier, cls in _JOURNAL.items()
    }
    fact_rows = [record_from_json(FactRecord, row) for row in content.get("facts", [])]
    items = [_item(row) for row in content.get("store", [])]
    mem = Remembered(
        episodes=records["episodes"],
        summaries=records["summaries"],
        candidates=records["candidates"],
        procedures=records["procedures"],
        facts=fact_rows,
        items=items,
    )
    chosen = await _forgotten(app, mem)
    plan = _cascade(app, mem, chosen)
    gone = plan.deleted
    skipped_threads = {e.thread_id for e in mem.episodes if e.episode_id in gone["episodes"]}
    receipt = RestoreReceipt(str(src), str(content.get("made_at", "")))

    jobs = records["extraction_jobs"]
    gone["extraction_jobs"] = {
        j.job_id for j in jobs if gone["episodes"].intersection(j.episode_ids)
    }
    keep = {
        tier: [r for r in rows if _id(tier, r) not in gone[tier]] for tier, rows in records.items()
    }
    written = await journal.restore(keep)
    for tier in _JOURNAL:
        receipt.restored[tier] = written.get(tier, [])
        receipt.skipped[tier] = sorted(gone[tier])
        receipt.already_stored[tier] = len(keep[tier]) - len(receipt.restored[tier])

    facts_kept = [r for r in fact_rows if r.memory_id not in gone["facts"]]
    receipt.restored["facts"] = await facts.restore(facts_kept)
    receipt.skipped["facts"] = sorted(gone["facts"])
    receipt.already_stored["facts"] = len(facts_kept) - len(receipt.restored["facts"])
    if receipt.restored["facts"]:
        await app._audit("write", "facts", receipt.restored["facts"], RESTORED)

    stored = {item_key(i) for i in await _items(app)}
    fresh = [i for i in items if item_key(i) not in gone["store"] and item_key(i) not in stored]
    if fresh:
        view = scoped(await app.store(), app.principal)
        for i in fresh:
            await view.aput(tuple(i.namespace), i.key, dict(i.value))
        await app._audit("write", "store", [item_key(i) for i in fresh], RESTORED)
    receipt.restored["store"] = sorted(item_key(i) for i in fresh)
    receipt.skipped["store"] = sorted(gone["store"])
    receipt.already_stored["store"] = len(items) - len(fresh) - len(gone["store"])

    threads = content.get("threads", [])
    receipt.restored["threads"] = await _put_threads(
        app, [t for t in threads if t["thread_id"] not in skipped_threads]
    )
    receipt.skipped["threads"] = sorted(skipped_threads & {t["thread_id"] for t in threads})

    forgotten_texts = [t for t in plan.tombstone if len(t.strip()) >= 3]
    receipt.restored["documents"], receipt.skipped["documents"] = _put_documents(
        app, content.get("documents", {}), forgotten_texts
    )
    return receipt


def _load(path: Path, app: AnalystApp) -> dict[str, Any]:
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
        content |= json.loads(app.memory_cipher.open(content.pop("sealed")))
    who = (content.get("tenant_id"), content.get("user_id"))
    if who != (app.principal.tenant_id, app.principal.user_id):
        raise InvalidMemoryError(
            f"{path} is the backup of {who[0]}/{who[1]}; restore it as that user "
            "(ANALYST_TENANT / ANALYST_USER), never into another user's memory."
        )
    return content


async def _forgotten(app: AnalystApp, mem: Remembered) -> list[tuple[str, str]]:
    """The items of ``mem`` forgotten since: tombstoned texts and ids deleted on request."""
    journal = (await app.memory.learner()).journal
    units: dict[str, list[tuple[str, str]]] = {}

    def add(tier: str, item_id: str, texts: Sequence[str]) -> None:
        for text in texts:
            if text and text.strip():
                units.setdefault(text, []).append((tier, item_id))

    for e in mem.episodes:
        add("episodes", e.episode_id, [e.text, *_SENTENCE.split(e.text)])
    for c in mem.candidates:
        add("candidates", c.candidate_id, [c.quote, *_strings(c.payload.values())])
    for r in mem.facts:
        add("facts", r.memory_id, _strings([r.value]))
    for i in mem.items:
        add("store", item_key(i), [str(i.value.get("text", ""))])
    chosen = {found for text in await journal.tombstoned(list(units)) for found in units[text]}
    deleted = {
        item_id
        for entry in await journal.audit_log(limit=_ALL)
        if entry.action == "delete" and entry.reason in (FORGET_REASON, REASON)
        for item_id in entry.item_ids
    }
    if deleted:
        chosen |= {
            (tier, item_id) for item_id, tier in known_ids(mem).items() if item_id in deleted
        }
    return sorted(chosen)


_ID = {
    "episodes": "episode_id",
    "extraction_jobs": "job_id",
    "candidates": "candidate_id",
    "summaries": "session_id",
    "procedures": "procedure_id",
}


def _id(tier: str, record: Any) -> str:
    return str(getattr(record, _ID[tier]))


def _item(row: dict[str, Any]) -> Item:
    from langgraph.store.base import Item

    now = datetime.now(UTC)
    return Item(
        value=row["value"],
        key=row["key"],
        namespace=tuple(row["namespace"]),
        created_at=now,
        updated_at=now,
    )


# -- threads: every checkpoint and pending write, through the saver's own API -------------


def _seal(saver: BaseCheckpointSaver[Any], value: Any) -> list[str]:
    type_, data = saver.serde.dumps_typed(value)
    return [type_, base64.b64encode(data).decode("ascii")]


def _unseal(saver: BaseCheckpointSaver[Any], value: list[str]) -> Any:
    return saver.serde.loads_typed((value[0], base64.b64decode(value[1])))


async def _threads(app: AnalystApp) -> list[dict[str, Any]]:
    saver = await app.checkpointer()
    found = []
    for record in app.index.list(app.principal, limit=_ALL):
        config: RunnableConfig = {"configurable": {"thread_id": record.thread_id}}
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


async def _put_threads(app: AnalystApp, threads: list[dict[str, Any]]) -> list[str]:
    saver = await app.checkpointer()
    restored = []
    for thread in threads:
        thread_id = thread["thread_id"]
        if app.index.exists(thread_id):
            continue  # a thread that exists is never overwritten
        for cp in thread["checkpoints"]:
            checkpoint, metadata = _unseal(saver, cp["state"])
            conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": cp["checkpoint_ns"]}
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
        app.index.register(app.principal, thread_id, thread["query"])
        restored.append(thread_id)
    return sorted(restored)


# -- the profile document ------------------------------------------------------------------


def _put_documents(
    app: AnalystApp, documents: dict[str, str], forgotten: list[str]
) -> tuple[list[str], list[str]]:
    """Write the profile document back without its lines holding forgotten text; a document
    that exists is not overwritten."""
    mine = profile_path(app.principal)
    restored: list[str] = []
    skipped: list[str] = []
    for path, text in documents.items():
        if path != mine or app.documents.exists(path):
            continue
        lines = text.splitlines(keepends=True)
        kept = [ln for ln in lines if not any(f.lower() in ln.lower() for f in forgotten)]
        skipped += [f"{path}#L{n}" for n, ln in enumerate(lines, 1) if ln not in kept]
        app.documents.write_bytes(path, "".join(kept).encode())
        restored.append(path)
    return restored, skipped


# -- a restore of the embedded files (`analyst db restore`) --------------------------------

#: What a restore of the ledger file must not lose: the forgets made since its backup.
_CARRIED = ("memory_tombstones", "memory_audit")


@dataclass
class Carried:
    """The tombstone and audit rows of the ledger file a ``db restore`` replaces."""

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


async def reapply_forgets(app: AnalystApp) -> dict[str, int]:
    """Forget again, for ``app.principal``, what the restored files hold that the user had
    forgotten (tombstones, and deletes the audit records at their request), with forgetting's
    cascade. Answers the count deleted per tier."""
    from agent.app.forgetting import Receipt, Tier, _apply, _read

    mem = await _read(app)
    chosen = await _forgotten(app, mem)
    if not chosen:
        return {}
    plan = _cascade(app, mem, chosen)
    receipt = Receipt(app.principal.tenant_id, app.principal.user_id, True)
    receipt.deleted = {tier: Tier(sorted(found)) for tier, found in plan.deleted.items()}
    await _apply(app, plan, receipt)
    return {tier: len(found.ids) for tier, found in receipt.deleted.items() if found.ids}
