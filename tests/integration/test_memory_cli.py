"""``analyst memory`` end to end, as a user types it: the real console script, embedded
defaults. A standing instruction becomes a candidate, is confirmed into a procedure that holds
in every later run, and is retired; bad ids are refused with the command that lists good ones.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.integration


def test_confirm_a_standing_instruction_enforce_it_and_retire_it(analyst: Any) -> None:
    noted = analyst("run", "Never analyse TSLA from now on.", "--json").json()
    assert noted["status"] == "noted"  # a run asks nothing: the candidate waits for review

    (candidate,) = analyst("memory", "review", "--json").json()["candidates"]
    assert candidate["kind"] == "procedure"
    assert candidate["payload"]["rule"] == {"exclude_ticker": "TSLA"}

    unknown = analyst("memory", "confirm", "cand-nope")
    assert unknown.refused and unknown.code == 3
    assert "analyst memory review" in unknown.err

    confirmed = analyst("memory", "confirm", candidate["candidate_id"], "--json").json()
    procedure = confirmed["procedure"]
    again = analyst("memory", "confirm", candidate["candidate_id"])
    assert again.refused and "not pending" in again.err

    declined = analyst("run", "Analyze TSLA", "--json").json()
    assert declined["status"] == "declined"
    assert procedure["procedure_id"] in declined["reply"]
    loaded = analyst("memory", "context", "--json").json()["context_loaded"]
    assert [p["procedure_id"] for p in loaded["procedures"]] == [procedure["procedure_id"]]

    retired = analyst("memory", "procedures", "--retire", procedure["procedure_id"], "--json")
    assert retired.json()["status"] == "retired"
    drafted = analyst("run", "Analyze TSLA", "--json").json()
    assert drafted["status"] == "awaiting_approval" and drafted["procedures"] == []
