"""Personal data typed into the analyst never reaches storage, a prompt or a listing.

A card number, an IBAN, an e-mail address and a phone number (valid ones: the card passes
Luhn, the IBAN its mod-97 check) are typed into ``analyst run``, a rejection's feedback,
``analyst chat``, ``analyst memory add`` and ``analyst memory remember``; then every file of
the data and memory folders (SQLite files with their WAL, the Qdrant Edge shard, the
checkpoints, the journal, the Markdown documents) is scanned byte by byte for each value: none
is found, and the listings show the placeholders. On the model path the fake OpenAI server
records every request: none holds a value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.model_script import ScriptedAnalyst, fake_model
from tests.support.personal_data import CARD, EMAIL, IBAN, PHONE, PLACEHOLDERS, SAID, hits, named

#: About ten processes of the real console script, each loading the app: slow on a busy machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]
#: Seconds one command may take (a generous bound, not a timing assumption).
SLOW = 300


def test_values_typed_into_the_cli_and_chat_are_in_no_byte_and_listings_show_placeholders(
    analyst: Any,
) -> None:
    view = analyst("run", f"Analyze NVDA. {SAID}", "--json", timeout=SLOW).json()
    thread_id = view["thread_id"]
    assert view["status"] == "awaiting_approval", view
    approved = analyst("approve", thread_id, timeout=SLOW)
    assert approved.code == 0, str(approved)
    added = analyst("memory", "add", f"My card is {CARD} and my phone {PHONE}", timeout=SLOW)
    assert added.code == 0, str(added)
    remembered = analyst("memory", "remember", f"Send alerts to {EMAIL}, IBAN {IBAN}", timeout=SLOW)
    assert remembered.code == 0, str(remembered)
    chat = analyst("chat", input=f"My e-mail is {EMAIL} and my card {CARD}\n/quit\n", timeout=SLOW)
    assert chat.code == 0, str(chat)
    assert EMAIL not in chat.out and "[e-mail]" in chat.out  # the turn is shown redacted

    listing = analyst("memory", "list", timeout=SLOW)
    shown = analyst("memory", "show", timeout=SLOW)
    thread = analyst("show", thread_id, timeout=SLOW)
    for run in (listing, shown, thread):
        assert run.code == 0, str(run)
        assert not named(run.out), run.out
    assert all(p in listing.out for p in PLACEHOLDERS), listing.out
    assert "[e-mail]" in shown.out, shown.out
    assert analyst.research_notes(), "the approved report was published"

    assert hits(analyst.data_dir, analyst.memory_dir) == {}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    with fake_model(monkeypatch) as server:
        yield server


async def test_the_model_is_never_sent_a_typed_value_and_nothing_stores_one(
    fake: FakeOpenAI, open_app: Any, isolated_env: Path
) -> None:
    fake.respond_with(ScriptedAnalyst())
    async with open_app() as app:
        noted = await app.start(f"My e-mail is {EMAIL}.", thread_id="p-1", keep_session=True)
        assert noted.status == "noted", noted
        drafted = await app.start(f"Analyze NVDA. {SAID}", thread_id="p-1", keep_session=True)
        assert drafted.status == "awaiting_approval", drafted
        decision = {"approver": "tester", "draft_hash": drafted.draft_hash}
        feedback = f"Compare peers; my card is {CARD}"
        revised = await app.decide(
            "p-1", {**decision, "action": "reject", "feedback": feedback}, keep_session=True
        )
        approve = {**decision, "draft_hash": revised.draft_hash, "action": "approve"}
        published = await app.decide("p-1", approve, keep_session=True)
        assert published.status == "published", published
        await app.memory.end_session("p-1")
        await app.memory.remember(f"Call {PHONE} before trading", as_="preference")
        await app.memory.add_memory(f"Bank account {IBAN}")
        learner = await app.memory.learner()
        texts = [e.text for e in await learner.journal.list_episodes()]
        summaries = [s.summary for s in await learner.journal.summaries()]
        memories = [m.text for m in await app.memory.memories()]

    requests = fake.chat_requests()
    assert requests, "the model path was used"
    sent = json.dumps(requests, ensure_ascii=False)
    assert not named(sent)
    assert "[e-mail]" in sent and "[card number]" in sent  # the placeholders were sent instead
    assert any("[bank account]" in t for t in texts) and summaries
    assert not named(json.dumps([texts, summaries, memories]))
    assert hits(isolated_env / "data", isolated_env / "memory") == {}
