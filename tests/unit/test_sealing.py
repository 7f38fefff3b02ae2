"""Memory sealing (``ANALYST_MEMORY_KEY``): tokens, JSON shapes, keys, and the journal's rows."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from memory.errors import ConfigurationError, MemoryKeyError
from memory.journal.records import Candidate, Episode, SessionSummary
from memory.journal.sqlite import QUERIES
from memory.sealing import PLAIN, SEALED_KEY, MemoryCipher, is_sealed, memory_cipher

KEY = base64.b64encode(bytes(range(32))).decode()
OTHER = base64.b64encode(bytes(range(1, 33))).decode()
AT = datetime(2026, 9, 2, 9, tzinfo=UTC)


def test_values_round_trip_and_keep_their_json_type() -> None:
    cipher = MemoryCipher(KEY)
    token = cipher.seal("Vexaltrine")
    assert is_sealed(token) and "Vexaltrine" not in token
    assert cipher.open(token) == "Vexaltrine"
    assert cipher.seal(None) is None
    sealed = cipher.seal_object({"attribute": "full_name", "value": "Vexaltrine"})
    assert list(sealed) == [SEALED_KEY] and "Vexaltrine" not in json.dumps(sealed)
    assert cipher.open_object(sealed) == {"attribute": "full_name", "value": "Vexaltrine"}
    array = cipher.seal_array(["ask about Vexaltrine", "second"])
    assert len(array) == 1 and "Vexaltrine" not in json.dumps(array)
    assert cipher.open_array(array) == ["ask about Vexaltrine", "second"]


def test_plain_values_read_unchanged_with_or_without_a_key() -> None:
    for cipher in (PLAIN, MemoryCipher(KEY)):
        assert cipher.open("plain text") == "plain text"
        assert cipher.open_object({"a": 1}) == {"a": 1}
        assert cipher.open_array(["x"]) == ["x"]
    assert PLAIN.seal("plain") == "plain" and not PLAIN.sealing
    assert memory_cipher(None) is PLAIN and memory_cipher(KEY).sealing


def test_a_missing_or_wrong_key_names_the_variable() -> None:
    token = MemoryCipher(KEY).seal("Vexaltrine")
    with pytest.raises(MemoryKeyError, match="ANALYST_MEMORY_KEY is not set"):
        PLAIN.open(token)
    with pytest.raises(MemoryKeyError, match="cannot be decrypted with ANALYST_MEMORY_KEY"):
        MemoryCipher(OTHER).open(token)
    with pytest.raises(ConfigurationError, match="ANALYST_MEMORY_KEY has 5 bytes"):
        MemoryCipher("short")


def test_the_journal_codec_seals_content_columns_only() -> None:
    queries = QUERIES.sealed_with(MemoryCipher(KEY))
    codec = queries.codec
    episode = Episode(
        tenant_id="t",
        episode_id="e1",
        user_id="u",
        thread_id="th",
        at=AT,
        role="user",
        kind="message",
        text="My name is Vexaltrine.",
        meta={"feedback": "Vexaltrine"},
    )
    row = codec.episode_row(episode)
    assert "Vexaltrine" not in repr(row)
    assert row[:4] == ("t", "e1", "u", "th")  # ids and owners stay in clear
    assert codec.episode(row) == episode
    candidate = Candidate(
        tenant_id="t",
        candidate_id="c1",
        user_id="u",
        kind="fact",
        payload={"attribute": "full_name", "value": "Vexaltrine"},
        quote="My name is Vexaltrine.",
        episode_ids=("e1",),
        status="pending",
        reason="inferred",
        created_at=AT,
    )
    row = codec.candidate_row(candidate)
    assert "Vexaltrine" not in repr(row) and "pending" in row
    assert codec.candidate(row) == candidate
    summary = SessionSummary(
        tenant_id="t",
        session_id="s1",
        user_id="u",
        thread_id="th",
        started=AT,
        ended=AT,
        topic="Vexaltrine",
        summary="Vexaltrine said",
        facts_learned=("f1",),
        open_items=("ask Vexaltrine",),
        episode_ids=("e1",),
    )
    row = codec.summary_row(summary)
    assert "Vexaltrine" not in repr(row) and '["f1"]' in row
    assert codec.summary(row) == summary
    # The unsealed dialect reads the plaintext rows written before the key was set.
    plain_row = QUERIES.codec.episode_row(episode)
    assert codec.episode(plain_row) == episode
    with pytest.raises(MemoryKeyError):
        QUERIES.codec.episode(codec.episode_row(episode))
