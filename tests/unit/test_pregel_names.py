"""The values the product copies from LangGraph are still LangGraph's: Pregel's names
(:mod:`agent.pregel_names`) and the serializer's safe types (:mod:`memory.serde_safe_types`).

The test may import LangGraph's private modules; the product may not
(``tests/unit/test_structure.py``). A failure here means an upgrade changed one: copy the new
value (and check the rules of :mod:`graphs.reading` or :mod:`memory.serde` that read it)."""

from __future__ import annotations

import pytest
from langgraph._internal import _constants as upstream

from agent import pregel_names
from memory.serde_safe_types import SAFE_MSGPACK_TYPES

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


def test_the_safe_types_copy_equals_langgraphs_set() -> None:
    """memory/serde_safe_types.py is LangGraph's security allowlist, exactly: no more, no less."""
    from langgraph.checkpoint.serde import _msgpack

    ours, theirs = SAFE_MSGPACK_TYPES, _msgpack.SAFE_MSGPACK_TYPES
    assert ours == theirs, (
        f"memory/serde_safe_types.py differs from LangGraph's SAFE_MSGPACK_TYPES: only ours "
        f"{sorted(ours - theirs)}, only LangGraph's {sorted(theirs - ours)}; copy LangGraph's set"
    )
