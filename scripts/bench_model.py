"""The model path on a real local server: per-node latency and tokens, and grounding's share.

    python scripts/bench_model.py [--runs 3] [--url http://127.0.0.1:PORT/v1]

Runs ``analyst run "Analyze NVDA"`` on the model path against llama.cpp's ``llama-server``
(SmolLM2-135M-Instruct; started with ``bash scripts/model_server.sh start`` when no ``--url``
is given) through a recording proxy, so every model call is attributed to the node that made
it: router (RouteDecision), planner (PlanDecision, and its memory look-ups), executor (the
tool loop), reporter (ReportNarrative), critic (CriticVerdict). Prints, per node, the median
seconds and tokens per run with their spread, the runs' outcomes, and then memory extraction
over a few short conversations: items proposed, accepted and rejected by grounding, and the
rejected share (not measured when the model proposes nothing). Not a test: the figures depend
on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.model_proxy import Exchange, ModelProxy  # noqa: E402

NODE_OF_SCHEMA = {
    "RouteDecision": "router",
    "PlanDecision": "planner",
    "ReportNarrative": "reporter",
    "CriticVerdict": "critic",
    "Extraction": "extraction",
    "ConversationSummary": "history",
    "MemoryAnswerDecision": "answer",
}
ITEM_FIELDS = ("new_facts", "preference_signals", "notable_events", "open_items")
CONVERSATIONS = [
    ["I am saving for retirement in about 25 years.", "Please keep reports short."],
    ["My brother thinks I should buy crypto, but I won't.", "Never include TSLA."],
]


def node_of(x: Exchange) -> str:
    if x.schema_name:
        return NODE_OF_SCHEMA.get(x.schema_name, x.schema_name)
    return "planner (look-up)" if "memory" in json.dumps(x.request.get("tools", [])) else "executor"


def tokens(x: Exchange) -> int:
    return int((x.response.get("usage") or {}).get("total_tokens") or 0)


def server_url(given: str | None) -> str:
    if given:
        return given
    subprocess.run(["bash", str(ROOT / "scripts" / "model_server.sh"), "start"], check=True)
    port = (ROOT / ".services" / "llama.port").read_text().strip()
    return f"http://127.0.0.1:{port}/v1"


def environ(base_url: str, folder: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANALYST_", "OPENAI_"))}
    return {
        **keep,
        "ANALYST_DATA_DIR": f"{folder}/data",
        "ANALYST_MEMORY_DIR": f"{folder}/memory",
        "ANALYST_USER": "bench",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "not-needed",
        "ANALYST_MODEL": "openai:smollm2-135m-instruct",
        "ANALYST_STRUCTURED_OUTPUT": "json_schema",
        "ANALYST_MODEL_TIMEOUT": "900",
        "ANALYST_EXTRACT_INLINE": "0",
    }


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})"


def bench_runs(url: str, runs: int) -> None:
    seconds: dict[str, list[float]] = defaultdict(list)
    used: dict[str, list[float]] = defaultdict(list)
    outcomes = []
    for _ in range(runs):
        with ModelProxy(url).running() as proxy, tempfile.TemporaryDirectory() as folder:
            run = subprocess.run(
                [str(Path(sys.executable).parent / "analyst"), "run", "Analyze NVDA", "--json"],
                env=environ(proxy.base_url, folder),
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            status = json.loads(run.stdout)["status"] if run.returncode == 0 else None
            outcomes.append(status or f"exit {run.returncode}: {run.stderr.strip()[:120]}")
            per_node_s: dict[str, float] = defaultdict(float)
            per_node_t: dict[str, float] = defaultdict(float)
            for x in proxy.chat():
                per_node_s[node_of(x)] += x.seconds
                per_node_t[node_of(x)] += tokens(x)
            for node in per_node_s:
                seconds[node].append(per_node_s[node])
                used[node].append(per_node_t[node])
    print(f'"Analyze NVDA" on the model path, {runs} runs (per run: seconds, tokens)')
    for node in ("router", "planner (look-up)", "planner", "executor", "reporter", "critic"):
        if node in seconds:
            print(f"  {node:18} {spread(seconds[node]):>30} s   {spread(used[node]):>32} tokens")
    for i, outcome in enumerate(outcomes, 1):
        print(f"  run {i}: {outcome}")


async def bench_grounding(url: str) -> None:
    from agent.errors import ModelError
    from agent.learning.grounding import ground
    from agent.learning.model_extraction import ModelExtractor
    from agent.reasoning.chat_model import ModelChoice, build_chat_model
    from agent.settings import Settings
    from memory.journal.records import Episode

    settings = Settings.from_env(environ(url, tempfile.gettempdir()))
    extractor = ModelExtractor(
        lambda: build_chat_model(settings, ModelChoice("openai", "smollm2")), "smollm2"
    )
    proposed = accepted = rejected = failed = 0
    for n, turns in enumerate(CONVERSATIONS):
        episodes = [
            Episode(
                "t",
                f"e{n}-{i}",
                "u",
                f"c{n}",
                datetime(2026, 12, 1, 9, i, tzinfo=UTC),
                "user",
                "message",
                text,
            )
            for i, text in enumerate(turns)
        ]
        try:
            extraction, _ = await extractor.extract(episodes)
        except ModelError:
            failed += 1
            continue
        grounded = ground(extraction, episodes)
        proposed += items(extraction)
        accepted += items(grounded.accepted)
        rejected += len(grounded.rejected)
    print(grounding_line(len(CONVERSATIONS), proposed, accepted, rejected, failed))


def items(extraction: Any) -> int:
    """How many items an extraction holds (facts, preferences, events, open items)."""
    return sum(len(getattr(extraction, f)) for f in ITEM_FIELDS)


def grounding_line(
    conversations: int, proposed: int, accepted: int, rejected: int, failed: int
) -> str:
    """The grounding figures as measured: proposed = accepted + rejected, and the share
    rejected only when something was proposed (a model that proposes nothing gives no share,
    and saying 0% would claim grounding rejected nothing it was shown)."""
    if proposed != accepted + rejected:
        raise ValueError(
            f"grounding lost items: {proposed} proposed but {accepted} accepted and "
            f"{rejected} rejected"
        )
    share = (
        f"{rejected / proposed:.0%} rejected by grounding"
        if proposed
        else "rejected share not measured: the model proposed 0 items"
    )
    return (
        f"extraction over {conversations} conversations: {proposed} items proposed = "
        f"{accepted} accepted + {rejected} rejected; {share}; {failed} extraction(s) ended in "
        "the documented ModelOutputError"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--url", help="the server's OpenAI base URL (default: start one)")
    args = parser.parse_args()
    url = server_url(args.url)
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    bench_runs(url, args.runs)
    asyncio.run(bench_grounding(url))
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
