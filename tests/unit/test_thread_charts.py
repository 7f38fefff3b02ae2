"""Finding a thread's draft charts when it is deleted: an ordinary id's charts are all in its
folder (no checkpoint is read); an id earlier versions named another folder for
(:func:`agent.thread_ids.legacy_folder`) has its charts found through its checkpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from agent.app.charts import draft_charts, remove_charts
from agent.settings import Settings
from agent.thread_ids import legacy_folder, thread_folder


class CountingSaver(InMemorySaver):
    """Counts the threads whose checkpoints were listed."""

    listed: list[str]

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        self.listed.append(config["configurable"]["thread_id"])
        async for saved in super().alist(config, **kwargs):
            yield saved


async def saved_draft(saver: InMemorySaver, thread_id: str, chart: Path) -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"draft": {"chart_path": str(chart)}}
    checkpoint["channel_versions"] = {"draft": 1}
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    await saver.aput(config, checkpoint, {}, {"draft": 1})


async def test_only_an_id_with_a_legacy_folder_reads_its_checkpoints(tmp_path: Path) -> None:
    settings = Settings.from_env({"ANALYST_DATA_DIR": str(tmp_path)})
    saver = CountingSaver()
    saver.listed = []
    plain, odd = "my-nvda", "my nvda"
    assert legacy_folder(plain) == thread_folder(plain)
    assert legacy_folder(odd) == "my_nvda" != thread_folder(odd)
    charts = {}
    for thread_id, folder in ((plain, thread_folder(plain)), (odd, legacy_folder(odd))):
        charts[thread_id] = settings.artifacts_dir / folder / "0123456789abcdef.png"
        charts[thread_id].parent.mkdir(parents=True)
        charts[thread_id].write_bytes(b"png")
        await saved_draft(saver, thread_id, charts[thread_id])

    found = await draft_charts(saver, settings, [plain, odd])

    assert found == {plain: set(), odd: {charts[odd]}}
    assert saver.listed == [odd]
    for thread_id, paths in found.items():
        remove_charts(settings, thread_id, paths)
    assert not any(chart.exists() for chart in charts.values())
    assert not (settings.artifacts_dir / plain).exists()
