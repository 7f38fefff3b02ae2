"""A thread's draft chart files: found through its checkpoints, removed with the thread.

Published notes and their charts live elsewhere (document memory) and are never touched here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from agent.settings import Settings
from agent.thread_ids import thread_folder


async def chart_files(graph: Any, settings: Settings, thread_id: str) -> set[Path]:
    """Draft charts the thread's checkpoints point at inside the artifacts folder (older
    versions named folders differently, so the folder alone is not enough)."""
    root = settings.artifacts_dir.resolve()
    found: set[Path] = set()
    async for snap in graph.aget_state_history({"configurable": {"thread_id": thread_id}}):
        chart = ((snap.values or {}).get("draft") or {}).get("chart_path")
        if chart and Path(chart).resolve().is_relative_to(root):
            found.add(Path(chart))
    return found


def remove_charts(settings: Settings, thread_id: str, charts: set[Path]) -> None:
    """Delete ``charts`` and the thread's own folder in the artifacts folder."""
    for chart in charts:
        chart.unlink(missing_ok=True)
    shutil.rmtree(settings.artifacts_dir / thread_folder(thread_id), ignore_errors=True)
