"""Memory encrypted at rest (``ANALYST_MEMORY_KEY``) and personal data out of logs, on the embedded defaults and with the ledger and journal on Postgres.

Real parts throughout: the compiled graph, SQLite checkpoints (sealed with
``ANALYST_CHECKPOINT_KEY``) and thread index, the ledger and journal (SQLite file or Postgres
through its application role), Qdrant Edge with MiniLM and the embedding cache file. A canary
said in a conversation reaches an episode, a fact, a session summary, a candidate and a
long-term memory; with the key set none of its bytes is on disk or in any Postgres row, while
every read path returns it in clear.
"""

from __future__ import annotations

import base64
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from agent.app import AnalystApp
from agent.settings import Settings
from memory.errors import ConfigurationError, FactConflictError, MemoryKeyError
from memory.facts import MemoryDelta, subject_for
from memory.identity import Principal
from memory.journal import Candidate
from tests.integration.test_memory_forget import pg_text
from tests.support.raw_bytes import raw_hits
from tests.support.servers import PgLedger

pytestmark = pytest.mark.integration

KEY = base64.b64encode(bytes(range(32))).decode()
OTHER_KEY = base64.b64encode(bytes(range(1, 33))).decode()
#: The canary name (first, last) said in the conversation, and one in a remembered preference.
NAME = ("Vexaltrine", "Quorbisk")
PREFERENCE = "I prefer Grelvoxan style companies with low debt and steady cash flow."
PREF_CANARY = "Grelvoxan"
#: Said before the key was set: stays plaintext, must still read back.
OLD = "I prefer Tamblewick style dividend payers for the income sleeve."
OLD_CANARY = "Tamblewick"


def _open(user: str = "mira") -> AbstractAsyncContextManager[AnalystApp]:
    """The application over this test's storage, with the environment as it is now."""
    settings = Settings.from_env()
    return AnalystApp.open(settings, Principal(settings.tenant_id, user))


async def _say_everything(app: AnalystApp) -> None:
    """The canaries into an episode, a fact, a summary, a candidate and a store value."""
    first, last = NAME
    said = await app.start(f"My name is {first} {last}.", thread_id="enc-1", keep_session=True)
    assert [f["attribute"] for f in said.learned] == ["full_name"]
    await app.memory.end_session("enc-1")
    await app.memory.remember(PREFERENCE, as_="preference")
    learner = await app.memory.learner()
    (episode,) = [e for e in await learner.journal.list_episodes() if first in e.text]
    await learner.journal.add_candidates(
        [
            Candidate(
                tenant_id=app.principal.tenant_id,
                candidate_id="cand-enc-1",
                user_id=app.principal.user_id,
                kind="fact",
                payload={"attribute": "full_name", "value": f"{first} {last}"},
                quote=f"My name is {first} {last}.",
                episode_ids=(episode.episode_id,),
                status="pending",
                reason="inferred",
                created_at=learner.clock(),
            )
        ]
    )


async def _read_back(app: AnalystApp) -> str:
    """Everything the read paths return, as one text: show, export, recall, the journal."""
    learner = await app.memory.learner()
    shown = await app.memory.show()
    exported = await app.memory.export()
    recalled = await app.memory.recall("companies with low debt")
    summaries = await learner.journal.summaries()
    candidates = await learner.journal.candidates(status=None, limit=100)
    return repr((shown, exported, [r.text for r in recalled], summaries, candidates))


async def test_memory_is_sealed_at_rest_and_read_in_clear(
    backend: PgLedger | None, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = isolated_env / "data"
    first, last = NAME

    # Before the key: a plaintext preference (journal episode and store value).
    async with _open() as app:
        await app.memory.remember(OLD, as_="preference")
    assert raw_hits(data, OLD_CANARY), "without a key memory is stored as it was"

    monkeypatch.setenv("ANALYST_MEMORY_KEY", KEY)
    monkeypatch.setenv("ANALYST_CHECKPOINT_KEY", KEY)
    async with _open() as app:
        await _say_everything(app)
        learner = await app.memory.learner()
        # Each tier holds the canary (read back in clear) ...
        assert any(first in e.text for e in await learner.journal.list_episodes())
        fact = await learner.facts.current(subject_for(app.principal), "full_name")
        assert fact is not None and fact.value == f"{first} {last}"
        (summary,) = await learner.journal.summaries()
        assert first in repr((summary.topic, summary.summary, summary.open_items))
        (candidate,) = [
            c for c in await learner.journal.candidates(status=None) if c.quote.startswith("My")
        ]
        assert candidate.payload["value"] == f"{first} {last}"
        assert any(PREF_CANARY in m.text for m in await app.memory.memories())

    # ... and no byte of it is on disk: databases with their WAL, Qdrant Edge segments and
    # WAL, checkpoints, the thread index, the embedding cache (hashes and vectors only).
    for canary in (first, last, PREF_CANARY):
        assert raw_hits(data, canary) == [], canary
        assert canary.lower() not in pg_text(backend).lower(), canary
    cache = [p for p in data.rglob("*") if p.is_file() and "embed" in p.name.lower()]
    assert cache, "the embedding cache is in the data folder"

    # Every read path returns it in clear, the plaintext written before the key included.
    async with _open() as app:
        everything = await _read_back(app)
        for canary in (first, last, PREF_CANARY, OLD_CANARY):
            assert canary in everything, canary
        # Sealing moves comparisons into Python: the same value at the same instant is still
        # a duplicate, another value a conflict, and a preference remembered again one memory.
        learner = await app.memory.learner()
        stored = await learner.facts.current(subject_for(app.principal), "full_name")
        assert stored is not None
        same = MemoryDelta(
            subject=stored.subject,
            attribute="full_name",
            value=f"{first} {last}",
            valid_from=stored.valid_from,
            memory_type=stored.memory_type,
            source="stated",
        )
        assert (await learner.facts.record(same)).outcome == "duplicate"
        with pytest.raises(FactConflictError):
            await learner.facts.record(same.model_copy(update={"value": "Other Name"}))
        await app.memory.remember(PREFERENCE, as_="preference")
        assert sum(PREF_CANARY in m.text for m in await app.memory.memories()) == 1

    # A wrong key, or none, is a clear error naming the variable.
    for key in (OTHER_KEY, None):
        if key is None:
            monkeypatch.delenv("ANALYST_MEMORY_KEY")
        else:
            monkeypatch.setenv("ANALYST_MEMORY_KEY", key)
        async with _open() as app:
            with pytest.raises(MemoryKeyError, match="ANALYST_MEMORY_KEY"):
                await app.memory.show()


async def test_a_bad_memory_key_is_refused_with_the_fix(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALYST_MEMORY_KEY", "too-short")
    with pytest.raises(ConfigurationError, match="ANALYST_MEMORY_KEY has 9 bytes"):
        async with _open():
            pass


async def test_personal_values_stay_out_of_logs_and_audit(
    backend: PgLedger | None, isolated_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, last = NAME
    caplog.set_level(logging.DEBUG)
    async with _open() as app:
        said = await app.start(f"My name is {first} {last}.", thread_id="log-1", keep_session=True)
        assert [f["attribute"] for f in said.learned] == ["full_name"]
        await app.memory.end_session("log-1")
        # A run whose planner reads the profile (the name among it) into its prompt.
        await app.start("Analyze NVDA", thread_id="log-2")
        entries = await app.memory.audit()
    assert entries, "the run was audited"
    leaked = [r.getMessage() for r in caplog.records if first.lower() in r.getMessage().lower()]
    assert leaked == []
    assert first.lower() not in repr(entries).lower()
    assert last.lower() not in repr(entries).lower()
