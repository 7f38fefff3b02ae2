"""A thread's draft chart files: in the thread's folder, or (for an id earlier versions named
another folder) found through its checkpoints; removed with the thread.

Published notes and their charts live elsewhere (document memory) and are never touched here.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.settings import Settings
from agent.thread_ids import legacy_folder, thread_folder

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver


async def draft_charts(
    saver: BaseCheckpointSaver[Any], settings: Settings, thread_ids: Iterable[str]
) -> dict[str, set[Path]]:
    """Draft charts of each of ``thread_ids`` outside the thread's own folder (which
    :func:`remove_charts` removes whole), by thread. Only an id whose folder earlier versions
    named otherwise (:func:`~agent.thread_ids.legacy_folder`) can have such charts; they are
    what its checkpoints point at inside the artifacts folder, read from the checkpointer
    alone, no graph: every checkpoint's ``draft`` channel and the drafts in its pending
    writes, a superset of what the thread's state history shows. An ordinary id reads no
    checkpoint (decoding a thread's every checkpoint was most of deleting it)."""
    root = settings.artifacts_dir.resolve()
    found: dict[str, set[Path]] = {}
    for thread_id in thread_ids:
        charts = found.setdefault(thread_id, set())
        if legacy_folder(thread_id) == thread_folder(thread_id):
            continue
        async for saved in saver.alist({"configurable": {"thread_id": thread_id}}):
            drafts = [saved.checkpoint.get("channel_values", {}).get("draft")]
            drafts += [
                value for _, channel, value in saved.pending_writes or () if channel == "draft"
            ]
            for draft in drafts:
                chart = draft.get("chart_path") if isinstance(draft, dict) else None
                if chart and Path(chart).resolve().is_relative_to(root):
                    charts.add(Path(chart))
    return found


def remove_charts(settings: Settings, thread_id: str, charts: set[Path]) -> None:
    """Delete ``charts`` and the thread's own folder in the artifacts folder."""
    for chart in charts:
        chart.unlink(missing_ok=True)
    shutil.rmtree(settings.artifacts_dir / thread_folder(thread_id), ignore_errors=True)
