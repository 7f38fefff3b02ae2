"""The Pregel names the product copies (:mod:`agent.pregel_names`) are still LangGraph's.

The test may import LangGraph's private module; the product may not
(``tests/unit/test_structure.py``). A failure here means an upgrade renamed one: copy the new
value into ``agent/pregel_names.py`` (and check the rules of :mod:`graphs.reading`)."""

from __future__ import annotations

import pytest
from langgraph._internal import _constants as upstream

from agent import pregel_names

COPIED = sorted(name for name in vars(pregel_names) if name.isupper())


def test_every_copied_name_is_checked() -> None:
    assert COPIED == [
        "CONFIG_KEY_RESUMING",
        "ERROR",
        "ERROR_SOURCE_NODE",
        "INTERRUPT",
        "NULL_TASK_ID",
        "PULL",
        "RESUME",
    ]


@pytest.mark.parametrize("name", COPIED)
def test_the_copy_equals_langgraphs_value(name: str) -> None:
    assert getattr(pregel_names, name) == getattr(upstream, name), (
        f"agent/pregel_names.py: {name} is {getattr(pregel_names, name)!r}, LangGraph's is now "
        f"{getattr(upstream, name)!r}; copy LangGraph's value"
    )
