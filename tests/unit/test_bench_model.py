"""bench_model reports grounding as measured: proposed = accepted + rejected, and a rejected
share only when the model proposed something (SmolLM2 often proposes nothing)."""

from __future__ import annotations

import pytest

from scripts.bench_model import grounding_line


def test_a_share_is_printed_only_for_proposals() -> None:
    line = grounding_line(2, proposed=4, accepted=1, rejected=3, failed=0)
    assert "4 items proposed = 1 accepted + 3 rejected" in line
    assert "75% rejected by grounding" in line


def test_no_proposals_is_not_measured_never_a_share() -> None:
    line = grounding_line(2, proposed=0, accepted=0, rejected=0, failed=1)
    assert "not measured: the model proposed 0 items" in line
    assert "%" not in line and "1 extraction(s) ended" in line


def test_counts_that_do_not_add_up_are_an_error() -> None:
    with pytest.raises(ValueError, match="grounding lost items"):
        grounding_line(1, proposed=3, accepted=1, rejected=1, failed=0)
